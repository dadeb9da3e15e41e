"""Branch conditions as facts, so two tests of one condition in one iteration agree.

`if (i + 1) % k == 0: opt.step()` followed later by `if (i + 1) % k == 0: opt.zero_grad()` can
only take both branches or neither; without this the analysis would also walk the impossible
path that steps without clearing. Facts are keyed by the condition's normalised source text.

Counter windows get one more rule: `(E + 1) % K == 0` in one iteration is `E % K == 0` in the
next, once `E` advances by one (a `for` target at the back edge, or `E += 1`). That keeps the
classic "clear at the start of a window, step at its end" loop quiet.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import libcst as cst

from zerograd_lint import walk
from zerograd_lint.positions import code_for
from zerograd_lint.scopes import dotted_name

_SPACE = re.compile(r"\s+")
EVERY = "*"  # in a loop's counters: every counter advances (a per-batch callback)


class Fact(NamedTuple):
    """A condition. A named tuple, not a dataclass: the dataflow hashes sets of facts hundreds of
    thousands of times, and a tuple's hash needs no Python call."""

    key: tuple
    names: frozenset[str]  # dotted names the condition reads
    stable: bool  # may survive a loop's back edge (no call, no subscript)

    @property
    def counter(self) -> tuple[str, str, int] | None:
        """(E, K, offset) for `(E + offset) % K == 0`."""
        return self.key[1:] if self.key[0] == "mod" else None


def compact_text(module: cst.Module, node: cst.CSTNode) -> str:
    """A node's code without spaces: how two spellings of one test are found equal."""
    return _SPACE.sub("", code_for(module, node))


def _strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    """The expression without its outer parentheses, unless they belong to it (`()`)."""
    if getattr(node, "lpar", None):
        try:
            return node.with_changes(lpar=[], rpar=[])
        except cst.CSTValidationError:
            return node
    return node


def _reads(nodes: list[cst.CSTNode]) -> tuple[frozenset[str], bool]:
    """The dotted names a condition reads, and whether it may survive a back edge (no call, no
    subscript, nothing Accelerate changes per step)."""
    names: set[str] = set()
    stable = True
    for root in nodes:
        for node in walk.nodes(root):
            if isinstance(node, (cst.Call, cst.Subscript)):
                stable = False
            elif isinstance(node, (cst.Name, cst.Attribute)):
                dotted = dotted_name(node)
                if dotted:
                    names.add(dotted)
                    names.add(dotted.split(".")[0])
                    stable = stable and "sync_gradients" not in dotted
    return frozenset(names), stable


class FactMaker:
    def __init__(self, module: cst.Module, last_iteration=None, cycle_of=None) -> None:
        self.module = module
        # the counter of an enclosing loop whose last iteration a test tells, if it does (`graphs/loops.py`)
        self.last_iteration = last_iteration
        # for a loop target that cycles (`cycle(range(k))`): the length of its cycle and its first
        # value; None for any other name
        self.cycle_of = cycle_of

    def _fact(self, key: tuple, nodes: list[cst.CSTNode]) -> Fact:
        names, stable = _reads(nodes)
        return Fact(key, names, stable)

    def facts(self, test: cst.BaseExpression, truth: bool) -> list[tuple[Fact, bool]]:
        """Facts that hold when `test` evaluates to `truth`."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.facts(test.expression, not truth)
        shifted = self._window_start(test)
        if shifted is not None:
            return self.facts(shifted, truth)
        if isinstance(test, cst.BooleanOperation):
            # the whole test is a fact of its own: `if need_update:` and `if not need_update:` agree
            # (spelt out, `last or (i + 1) % k == 0`) even where no part of it is known
            conjunct = isinstance(test.operator, cst.And)  # the truth value that fixes both parts
            parts = self.facts(test.left, conjunct) + self.facts(test.right, conjunct)
            # a window's test (`last or (i + 1) % k == 0`) is kept as long as counters are
            window = any(fact.key[0] in ("mod", "last", "window") for fact, _ in parts)
            whole = [(self._fact(("window" if window else "expr", compact_text(self.module, _strip_parens(test))), [test]), truth)]
            return whole + parts if truth == conjunct else whole
        counter = self.last_iteration(test) if self.last_iteration is not None else None
        if counter is not None:
            return [(Fact(("last", counter), frozenset({counter}), True), truth)]
        cycled = self._in_the_cycle(test)
        if cycled is not None:  # before `_first`: a cycle's 0 comes back every k iterations
            fact, positive = cycled
            return [(fact, truth == positive)]
        first = _first(test)
        if first is not None:
            expr, positive = first
            return [(self._fact(("first", compact_text(self.module, expr)), [expr]), truth == positive)]
        unit = _unit(test)
        if unit is not None:  # `k == 1`, `k > 1`: every window is one iteration long, or none is
            expr, positive = unit
            return [(self._fact(("unit", compact_text(self.module, expr)), [expr]), truth == positive)]
        counter = self._counter(test)
        if counter is not None:
            (expr, modulus, offset, residue), positive = counter
            divisor = compact_text(self.module, _strip_parens(modulus))
            cycle = self._cycle(expr)
            if cycle is not None and cycle[1] == divisor:  # `step % k` of `step` in `cycle(range(1, k + 1))`
                offset += cycle[2]
            key = ("mod", compact_text(self.module, _strip_parens(expr)), divisor, offset - residue)
            window = (self._fact(key, [expr, modulus]), truth == positive)
            if not residue:
                return [window]
            # `i % k == 1` is `(i - 1) % k == 0` only where k > 1: true, it says so; false, nothing
            return [window, (self._fact(("unit", divisor), [modulus]), False)] if truth == positive else []
        return [(self._fact(("expr", compact_text(self.module, _strip_parens(test))), [test]), truth)]

    def _window_start(self, test: cst.BaseExpression) -> cst.BaseExpression | None:
        """`i % k == 1 or k == 1` is `(i - 1) % k == 0` for every k: the start of each window."""
        if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or)):
            return None
        for window, unit in ((test.left, test.right), (test.right, test.left)):
            counter, one = self._counter(_strip_parens(window)), _unit(_strip_parens(unit))
            if counter is None or one is None or not one[1]:
                continue
            (expr, modulus, offset, residue), positive = counter
            if residue == 1 and offset == 0 and positive and compact_text(self.module, one[0]) == compact_text(self.module, _strip_parens(modulus)):
                return cst.Comparison(
                    cst.BinaryOperation(
                        cst.BinaryOperation(expr, cst.Subtract(), cst.Integer("1"), lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
                        cst.Modulo(), modulus,
                    ),
                    [cst.ComparisonTarget(cst.Equal(), cst.Integer("0"))],
                )
        return None

    def _in_the_cycle(self, test: cst.BaseExpression) -> tuple[Fact, bool] | None:
        """`step == c` for a loop target that cycles from `s` over `k` values: the window fact
        `(j + s - c) % k == 0` of its place `j` in the loop (which the facts call `step`), and
        whether the test says it holds (`!=`: it does not)."""
        compared = _integer_comparison(test)
        if compared is None or not isinstance(compared[1], (cst.Equal, cst.NotEqual)) or not compared[2].isdigit():
            return None
        left, operator, value = compared
        cycle = self._cycle(left)
        if cycle is None:
            return None
        modulus, divisor, start = cycle  # named as `step % k == 0` names it, so that the two are one fact
        return self._fact(("mod", left.value, divisor, start - int(value)), [left, modulus]), isinstance(operator, cst.Equal)

    def _cycle(self, expr: cst.BaseExpression) -> tuple[cst.BaseExpression, str, int] | None:
        """For a loop target that cycles: the length of its cycle, and as the facts spell it, and
        its first value."""
        found = self.cycle_of(expr.value) if self.cycle_of is not None and isinstance(expr, cst.Name) else None
        if found is None:
            return None
        modulus, start = found
        return modulus, compact_text(self.module, _strip_parens(modulus)), start

    @staticmethod
    def first_iteration(counter: str) -> Fact:
        """`counter == 0`: true on a loop's first iteration when the counter starts at 0."""
        return Fact(("first", counter), frozenset({counter}), True)

    @staticmethod
    def was_last(counter: str) -> Fact:
        """After the back edge: the iteration that just ended was the loop's last (see `advance`)."""
        return Fact(("was_last", counter), frozenset({counter}), True)

    def named(self, text: str) -> Fact:
        """A fact that no source condition spells exactly (e.g. Accelerate's sync step)."""
        names = frozenset({text, text.split(".")[0]})
        return Fact(("expr", text), names, False)

    def _counter(self, test: cst.BaseExpression):
        """`(E + 1) % K == 0` -> ((E, K, 1, 0), True); `E % K != 0` -> ((E, K, 0, 0), False);
        `E % K == 1` -> ((E, K, 0, 1), True), the last being the residue; `E % K` -> ..."""
        if isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.Modulo):
            parts = self._mod(test)
            return (parts + (0,), False) if parts else None
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        comparison = test.comparisons[0]
        if not isinstance(comparison.operator, (cst.Equal, cst.NotEqual)):
            return None
        left = _strip_parens(test.left)
        if not (isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Modulo)):
            return None
        parts = self._mod(left)
        if parts is None:
            return None
        expr, modulus, offset = parts
        right = comparison.comparator
        residue = 0
        if isinstance(right, cst.Integer) and right.value == "0":
            pass
        elif isinstance(right, cst.Integer) and right.value in ("1", "2", "3"):
            residue = int(right.value)
        elif (
            isinstance(right, cst.BinaryOperation) and isinstance(right.operator, cst.Subtract)
            and isinstance(right.right, cst.Integer) and right.right.value == "1"
            and compact_text(self.module, right.left) == compact_text(self.module, modulus)
        ):
            offset += 1
        else:
            return None
        return (expr, modulus, offset, residue), isinstance(comparison.operator, cst.Equal)

    @staticmethod
    def _mod(node: cst.BinaryOperation):
        expr = _strip_parens(node.left)
        offset = 0
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
            if isinstance(expr.right, cst.Integer) and expr.right.value.isdigit():
                offset = int(expr.right.value) * (1 if isinstance(expr.operator, cst.Add) else -1)
                expr = _strip_parens(expr.left)
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        return expr, node.right, offset


def _first(test: cst.BaseExpression):
    """`E == 0` -> (E, True); `E != 0`, `E > 0`, `E >= 1` -> (E, False)."""
    return _compared_with(test, 0)


def _unit(test: cst.BaseExpression):
    """`K == 1` -> (K, True); `K != 1`, `K > 1`, `K >= 2` -> (K, False), for a name or attribute K."""
    return _compared_with(test, 1)


def _compared_with(test: cst.BaseExpression, n: int):
    """`E == n` -> (E, True); `E != n`, `E > n`, `E >= n + 1` -> (E, False), for a name or attribute E."""
    compared = _integer_comparison(test)
    if compared is None:
        return None
    expr, operator, value = compared
    if value == str(n) and isinstance(operator, (cst.Equal, cst.NotEqual, cst.GreaterThan)):
        return expr, isinstance(operator, cst.Equal)
    if value == str(n + 1) and isinstance(operator, cst.GreaterThanEqual):
        return expr, False
    return None


def _integer_comparison(test: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseCompOp, str] | None:
    """`E <op> n` for a name or attribute E and an integer n: E, the operator, and n as written."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    expr, comparison = _strip_parens(test.left), test.comparisons[0]
    if not isinstance(expr, (cst.Name, cst.Attribute)) or not isinstance(comparison.comparator, cst.Integer):
        return None
    return expr, comparison.operator, comparison.comparator.value


def contradicts(fact: Fact, value: bool, facts: frozenset) -> bool:
    """Whether assuming `fact` is `value` contradicts what `facts` hold, beyond the fact itself: a
    window of one iteration (`k == 1`) is full on every iteration (`(i + 1) % k == 0`), and a
    counter at 0 (`i == 0`, a loop's first iteration) starts a window (`i % k == 0`)."""
    if fact.key[0] == "unit" and value:
        return any(f.key[0] == "mod" and f.key[2] == fact.key[1] and not v for f, v in facts)
    if fact.key[0] == "first" and value:
        return any(f.key[0] == "mod" and f.key[1] == fact.key[1] and f.key[3] == 0 and not v for f, v in facts)
    if fact.key[0] == "mod" and not value:
        starts = fact.key[3] == 0  # `i % k == 0`, false, where `i == 0` holds
        return any(v and (f.key == ("unit", fact.key[2]) or starts and f.key == ("first", fact.key[1])) for f, v in facts)
    return False


def advance(facts: frozenset, counter_names: frozenset[str], drop) -> frozenset:
    """Facts after the counters in `counter_names` advance by one (`EVERY`: any counter, as in a
    callback the framework calls once per batch with `batch_idx` or `engine.state.iteration`);
    `drop(fact)` removes the others. A counter that advanced is no longer 0, and what was
    `(E + 1) % K == 0` is now `E % K == 0` (what was `E % K == 0` is `(E - 1) % K == 0`)."""

    def advances(name: str) -> bool:
        return name in counter_names or EVERY in counter_names

    out = {(fact, False) for fact, _ in facts if fact.key[0] == "first" and advances(fact.key[1])}
    for fact, value in facts:
        if fact.key[0] == "first" and advances(fact.key[1]):
            continue
        if fact.key[0] == "last" and advances(fact.key[1]):  # what the iteration that ended said
            out.add((Fact(("was_last", fact.key[1]), fact.names, True), value))
            continue
        counter = fact.counter
        if counter is not None and advances(counter[0]):
            expr, modulus, offset = counter
            if offset > -3:  # keep a few windows' worth
                out.add((Fact(("mod", expr, modulus, offset - 1), fact.names, fact.stable), value))
            continue
        if not drop(fact):
            out.add((fact, value))
    return frozenset(out)
