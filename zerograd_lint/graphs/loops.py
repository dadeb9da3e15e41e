"""Loops in the graph: `for` (async too) and `while` with their `else`, the loops over a collection
(one event for every element), and the counters a loop keeps (`for i, x in enumerate(loader)`):
whether an iteration is the first or the last, and how many the loop runs, as texts.

A `for` loop is taken to run at least once (see `builder.py`).

`Loops` is a part of `Builder` (`builder.py`): it uses the state the builder keeps.
"""

from __future__ import annotations

from itertools import groupby
from typing import NamedTuple

import libcst as cst

from zerograd_lint import walk
from zerograd_lint.bindings import Frame
from zerograd_lint.conditions import Fact, FactMaker, advance, compact_text as _text
from zerograd_lint.graphs import elementwise
from zerograd_lint.graphs.nodes import ASSUME, BACK, ENTER, NOP
from zerograd_lint.graphs.statements import LoopJumps, target_names, target_paths
from zerograd_lint.graphs.whole_windows import truncation, window_end, window_start
from zerograd_lint.scopes import ELEMENT, dotted_name
from zerograd_lint.sites import Loop


class Loops:
    def _new_loop(self, keyword: str, line: int, column: int, length: int, node, counters, path: str | None = None) -> Loop:
        parent = self.loops[-1] if self.loops else None
        loop = Loop(len(self.graph.loops), keyword, path or self.module.path, line, column, length, parent, counters, node)
        self.graph.loops.append(loop)
        return loop

    def _loop_body(
        self, loop: Loop, body, infinite: bool, test: cst.BaseExpression | None = None, at_least_once: bool = False
    ) -> list[int]:
        """Head, body, back edge; leaves normally through `self.preds`, returns the breaks."""
        self.emit(ENTER, loop.id)
        head = self.emit(NOP)
        outer_loops = self.loops
        self.loops = outer_loops + (loop.id,)
        jumps = LoopJumps()
        self.jump_targets.append(jumps)
        if test is not None:
            self.expr(test)
            self.assume(test, True)
        body()
        self.preds += jumps.continues
        back = self.emit(BACK, loop.id)
        self.graph.succ[back].append(head)
        self.jump_targets.pop()
        self.loops = outer_loops
        exits: list[int] = []
        if not infinite:
            self.preds = [back] if at_least_once else [head]
            if test is not None:
                self.expr(test)
                self.assume(test, False)
            exits = self.preds
        self.preds = exits
        return jumps.breaks

    def stmt_For(self, node: cst.For) -> None:
        self.expr(node.iter)
        # In its own body, a collection loop's target is an element of what it iterates, whatever
        # else the name is bound to in the function (`for p in encoder.parameters(): p.grad = None`
        # clears the encoder, even if `p` walks the head's parameters elsewhere), as a
        # comprehension's target is (`Builder.calls`).
        self.frames.append(self._element_frame(node))
        try:
            collection = self._collection_loop(node)
            if collection is not None:
                self.flat(collection, elementwise.branches(node.body, target_names(node.target)))
        finally:
            self.frames.pop()
        if collection is not None:
            return
        targets = target_names(node.target)
        self._kill(targets)
        line, column = self.module.start(node)
        if node.asynchronous is not None:
            column += len("async") + len(node.asynchronous.whitespace_after.value)
        loop = self._new_loop("for", line, column, 3, node, targets)
        counter = _counter_from_zero(node)
        if counter is not None:
            self.emit(ASSUME, (FactMaker.first_iteration(counter), True))
        counter = counter or _counter_from_one(node)
        truncated: list[tuple[Fact, bool]] = []
        if counter is not None:
            from_one = _counter_from_one(node) is not None
            self.counted.append(Counted(self.frame, counter, *self._lengths(node, from_one), from_one))
            truncated = self._truncated(node, self.counted[-1])
        cycled = _cycled(node)
        if cycled is not None:  # its position in the cycle is 0 on the first iteration
            name, modulus, start = cycled
            self.emit(ASSUME, (FactMaker.first_iteration(name), True))
            self.cycled.append(Cycled(self.frame, name, modulus, start))

        def body() -> None:
            self._rebind(node.target, node)
            self.block(node.body)

        breaks = self._loop_body(loop, body, False, at_least_once=True)
        ended = self._ends_with_a_window(node, counter or (cycled[0] if cycled is not None else None))
        if cycled is not None:
            self.cycled.pop()
        if counter is not None:
            self.counted.pop()
            # leaving normally, the last iteration made its last-iteration tests true (`i + 1 == n`)
            self.emit(ASSUME, (FactMaker.was_last(counter), True))
        for fact, value in ended + truncated:
            self.emit(ASSUME, (fact, value))
        if node.orelse is not None:
            self.block(node.orelse.body)
        self.preds += breaks

    def _ends_with_a_window(self, node: cst.For, counter: str | None) -> list[tuple[Fact, bool]]:
        """What leaving `node` normally says when it can only leave at the end of a window
        (`whole_windows`): its last iteration's window-end test held, one iteration before."""
        iterable = node.iter
        if counter is None or not (isinstance(iterable, cst.Call) and dotted_name(iterable.func) in ("zip", "enumerate")
                                   and iterable.args):
            return []
        test = window_end(node, iterable.args[0].value, self.frame.scope, self.module.cst)
        if test is None:
            return []
        held = FactMaker(self.module.cst, None, self._cycle_of if self.cycled else None).facts(test, True)
        return sorted(advance(frozenset(held), frozenset({counter}), lambda fact: True), key=repr)

    def _truncated(self, node: cst.For, counted: Counted) -> list[tuple[Fact, bool]]:
        """What leaving `node` says, by its break or normally, when it keeps whole windows only
        (`whole_windows.truncation`, tested on every iteration before anything can skip it): the
        iteration that ended was the last of a window, so the counter now starts one. The break's
        branch assumes it too (`window_starts`)."""
        if counted.from_one or not isinstance(node.body, cst.IndentedBlock):
            return []
        for statement in node.body.body:
            modulus = truncation(statement, counted.counter, counted.lengths, self.frame.scope, self.module.cst)
            if modulus is not None:
                facts = self.facts.facts(window_start(counted.counter, modulus), True)
                self.window_starts[statement] = facts
                return facts
            if not isinstance(statement, cst.SimpleStatementLine) or any(
                isinstance(small, (cst.Break, cst.Continue, cst.Return, cst.Raise)) for small in statement.body
            ):
                return []
        return []

    def _lengths(self, node: cst.For, from_one: bool) -> tuple[frozenset[str], frozenset[str]]:
        """How many iterations a counted loop runs (`len(loader)` for `enumerate(loader)`, `n` for
        `range(n)`), and the last value of its counter, as texts, with the names of the function
        bound to them (`num_batches = len(loader)`, `last_idx = len(loader) - 1`). A progress bar
        has its loader's length (`enumerate(tqdm(loader))`, `pbar = tqdm(loader)`)."""
        call = node.iter
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
        if call.func.value == "range" and len(call.args) > 2:
            return frozenset(), frozenset()  # a step other than 1: no last value worth telling
        if call.func.value == "range":
            lengths = {_text(self.module.cst, call.args[-1].value)}
        else:
            iterable = call.args[0].value
            if isinstance(iterable, cst.Name):
                found = self.frame.scope.bindings.get(iterable.value, [])
                if len(found) == 1 and found[0].value is not None and not found[0].path:
                    iterable = found[0].value if _is_progress_bar(found[0].value) else iterable
            lengths = {f"len({_text(self.module.cst, iterable)})"}
            if _is_progress_bar(iterable):
                lengths.add(f"len({_text(self.module.cst, iterable.args[0].value)})")
        lasts = set(lengths) if from_one else {f"{length}-1" for length in lengths}
        for name, bindings in self.frame.scope.bindings.items():
            if len(bindings) == 1 and _a_length(bindings[0].value) and not bindings[0].path:
                value = _text(self.module.cst, bindings[0].value)
                if value in lengths:
                    lengths.add(name)
                    if from_one:
                        lasts.add(name)
                    else:
                        lasts.add(f"{name}-1")
                elif value in lasts:
                    lasts.add(name)
        return frozenset(lengths), frozenset(lasts)

    def _cycle_of(self, name: str) -> tuple[cst.BaseExpression, int] | None:
        """For a target of an enclosing loop of this function that cycles (`_cycled`): the length
        of its cycle and its first value."""
        found = next((c for c in reversed(self.cycled) if c.frame is self.frame and c.name == name), None)
        return None if found is None else (found.modulus, found.start)

    def _last_iteration(self, test: cst.BaseExpression) -> str | None:
        """The counter of an enclosing loop of this function whose last iteration `test` tells:
        `i + 1 == len(loader)`, `i + 1 == num_batches`, `step == last_idx`, or a name bound to such
        a test (`is_last = i + 1 == len(loader)`)."""
        if not self.counted:
            return None
        if isinstance(test, cst.Name):
            _, found = self.frame.scope.lookup(test.value) or (None, [])
            if len(found) != 1 or not isinstance(found[0].value, cst.Comparison):
                return None
            test = found[0].value
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        test, frame = _as_the_caller_wrote(test, self.frame)
        enclosing = []  # a nested function reads the names of the functions around it
        while frame is not None:
            enclosing.append(frame)
            frame = frame.parent
        counted = [c for c in self.counted if any(c.frame is f for f in enclosing)]
        if not counted:
            return None
        operator = test.comparisons[0].operator
        if not isinstance(operator, (cst.Equal, cst.GreaterThanEqual)):
            return None
        names = {n.value for n in walk.nodes(test) if isinstance(n, cst.Name)}
        if not any(c.counter in names for c in self.counted):
            return None  # no counter of an enclosing loop in it: no text to make
        left, right = _text(self.module.cst, test.left), _text(self.module.cst, test.comparisons[0].comparator)
        pairs = [(left, right), (right, left)] if isinstance(operator, cst.Equal) else [(left, right)]
        for c in reversed(counted):
            for ours, theirs in pairs:
                plus_one = not c.from_one and ours in (f"{c.counter}+1", f"({c.counter}+1)") and theirs in c.lengths
                if plus_one or ours == c.counter and theirs in c.lasts:
                    return c.counter
        return None

    def stmt_While(self, node: cst.While) -> None:
        loop = self._new_loop("while", *self.module.start(node), 5, node, frozenset())
        test = node.test
        infinite = isinstance(test, (cst.Name, cst.Integer)) and getattr(test, "value", None) in ("True", "1")
        breaks = self._loop_body(loop, lambda: self.block(node.body), infinite, None if infinite else test)
        if node.orelse is not None:
            self.block(node.orelse.body)
        self.preds += breaks

    # ---------------------------------------------------------------- loops over collections

    def _element_frame(self, node: cst.For) -> Frame:
        frame = self.frame
        return frame.child_locals({
            name: self.resolver.value_keys(node.iter, (ELEMENT,) + path, frame) for name, path in target_paths(node.target)
        })

    def _collection_loop(self, node: cst.For) -> elementwise.Actions | None:
        """What the body does, if the loop applies one operation to every element of a collection
        (`for p in model.parameters(): p.grad = None`, `for opt in optimizers: opt.step()`): it is
        one event, not a loop of the training, and it runs for every element (no "zero
        iterations" path). None for any other loop.
        """
        names = target_names(node.target)
        if not names:
            return None
        actions = elementwise.body_actions(self, node.body, names)
        return elementwise.each(actions) if elementwise.applies_to_each(actions, names) else None

    def flat(self, body_actions: elementwise.Actions, branches: elementwise.Branches, depth: int = 0) -> None:
        """Emit the events of a collection loop's body (`_collection_loop`) once, in source order,
        ignoring the branches that choose elements; those of a test that does not read the
        element (`elementwise.branches`) are branches of the training, built as any `if` is."""
        def branch_at(done) -> cst.If | None:  # the `if` at this depth around an action, if any
            arms = branches.get(done[1], ())
            return arms[depth][0] if len(arms) > depth else None

        for _, run in groupby(body_actions, key=lambda done: id(branch_at(done))):
            run = list(run)
            branch = branch_at(run[0])
            if branch is None:
                for actions, node, frame in run:
                    self.frames.append(frame)
                    try:
                        self.actions(actions, node)
                    finally:
                        self.frames.pop()
                continue
            before, exits = self.preds, []
            for arm in (0, 1):  # its body, then what follows `else` (an `elif` in turn)
                self.preds = before
                part = [done for done in run if branches[done[1]][depth][1] == arm]
                self._branch(branch.test, arm == 0, lambda: self.flat(part, branches, depth + 1))
                exits += self.preds
            self.preds = exits


def _counter_from_zero(node: cst.For) -> str | None:
    """`for i, x in enumerate(xs)` and `for i in range(n)`: `i` is 0 on the first iteration."""
    iterable, target = node.iter, node.target
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
        return None
    args = iterable.args
    if iterable.func.value == "enumerate" and len(args) == 1 and isinstance(target, cst.Tuple):
        first = target.elements[0].value
        return first.value if isinstance(first, cst.Name) else None
    if iterable.func.value == "range" and isinstance(target, cst.Name):
        if len(args) == 1 or len(args) >= 2 and isinstance(args[0].value, cst.Integer) and args[0].value.value == "0":
            return target.value
    return None


def _cycled(node: cst.For) -> tuple[str, cst.BaseExpression, int] | None:
    """`for batch, step in zip(loader, cycle(range(k)))`: `step` runs 0, 1, ..., k - 1 and again
    (1, ..., k for `cycle(range(1, k + 1))`): its name, `k`, and its first value."""
    iterable, target = node.iter, node.target
    if not (isinstance(iterable, cst.Call) and dotted_name(iterable.func) == "zip" and isinstance(target, cst.Tuple)
            and len(target.elements) == len(iterable.args) and all(a.keyword is None and not a.star for a in iterable.args)):
        return None
    for argument, element in zip(iterable.args, target.elements):
        cycle, name = argument.value, element.value
        if not (isinstance(cycle, cst.Call) and dotted_name(cycle.func) in ("cycle", "itertools.cycle")
                and len(cycle.args) == 1 and isinstance(name, cst.Name)):
            continue
        span = cycle.args[0].value
        if not (isinstance(span, cst.Call) and dotted_name(span.func) == "range" and all(a.keyword is None for a in span.args)):
            continue
        bounds = [a.value for a in span.args]
        if len(bounds) == 1:
            return name.value, bounds[0], 0
        if (len(bounds) == 2 and isinstance(bounds[0], cst.Integer) and bounds[0].value == "1"
                and isinstance(bounds[1], cst.BinaryOperation) and isinstance(bounds[1].operator, cst.Add)
                and isinstance(bounds[1].right, cst.Integer) and bounds[1].right.value == "1"):
            return name.value, bounds[1].left, 1
    return None


def _counter_from_one(node: cst.For) -> str | None:
    """`for i, x in enumerate(xs, start=1)` (or `enumerate(xs, 1)`): `i` runs from 1 to `len(xs)`."""
    iterable, target = node.iter, node.target
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate"):
        return None
    args = iterable.args
    if len(args) != 2 or not isinstance(args[1].value, cst.Integer) or args[1].value.value != "1":
        return None
    if args[1].keyword is not None and args[1].keyword.value != "start" or not isinstance(target, cst.Tuple):
        return None
    first = target.elements[0].value
    return first.value if isinstance(first, cst.Name) else None


def _is_progress_bar(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Call) and bool(expr.args) and expr.args[0].keyword is None
        and (dotted_name(expr.func) or "").rsplit(".", 1)[-1] in ("tqdm", "track", "Bar", "progress_bar")
    )


def _a_length(value: cst.BaseExpression | None) -> bool:
    """`len(x)` or `len(x) - 1`, before its text is made."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract):
        value = value.left
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "len"


class Cycled(NamedTuple):
    """A loop target that runs through `range(...)` over and over (`_cycled`)."""

    frame: Frame
    name: str
    modulus: cst.BaseExpression  # how many values it takes
    start: int  # its first value


class Counted(NamedTuple):
    """A loop counting its iterations from 0 (or from 1): how many it runs and the counter's last
    value, as texts."""

    frame: Frame
    counter: str
    lengths: frozenset[str]
    lasts: frozenset[str]
    from_one: bool = False


class _Substitute(cst.CSTTransformer):
    def __init__(self, arguments: dict[str, cst.BaseExpression]) -> None:
        self.arguments = arguments

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.arguments.get(original.value, updated)


def _as_the_caller_wrote(test: cst.BaseExpression, frame: Frame) -> tuple[cst.BaseExpression, Frame]:
    """A test of an inlined function with its parameters replaced by the arguments its callers
    passed (`batch_index + 1 == last` called with `len(loader)`), and the frame it then reads in."""
    while frame.caller is not None and frame.arguments:
        names = {n.value for n in walk.nodes(test) if isinstance(n, cst.Name)} & frame.arguments.keys()
        params = {n for n in names if all(b.is_param for b in frame.scope.bindings.get(n, []))}
        if not params:
            break
        test = test.visit(_Substitute({n: frame.arguments[n] for n in params}))
        frame = frame.caller
    return test, frame
