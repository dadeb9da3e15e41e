"""Branches in the graph: `if`/`elif`/`else` and `match`. Each side assumes what its test makes
true (`assumptions.py`); a side that does nothing to gradients leaves its facts idle. A test that
checks whether the gradients or the loss are usable excuses what the side skipping the step gives
up (docs/contract.md, "Deliberate discards are not ZG003").

`Branches` is a part of `Builder` (`builder.py`): it uses the state the builder keeps.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint import vocabulary, walk
from zerograd_lint.graphs.nodes import ASSUME, EVENT, EXCUSE, NOP
from zerograd_lint.scopes import dotted_name


class Branches:
    def stmt_If(self, node: cst.If) -> None:
        """An `elif` chain is built in a loop, not by recursion: generated code has hundreds."""
        taken: list[list[int]] = []  # the exits of each test's true branch
        chained: list[tuple[int, int, int]] = []  # (first, start, level) of each false branch going on
        while True:
            self.expr(node.test)
            before = self.preds
            # a check of the gradients or the loss, as the code spells it (`skip = torch.isnan(loss)`),
            # on the last test of a chain: the branch that skips the step gives up what is pending
            checked = not isinstance(node.orelse, cst.If) and _gives_up_when_skipped(
                self._spelt(node.test, self.frame.scope), self._counters()
            )
            starts = self.window_starts.get(node, [])  # `if i // k >= n: break` (`Loops._truncated`)
            on_true = self._branch(node.test, True, lambda: self._block_assuming(starts, node.body), checked)
            taken.append(self.preds)
            self.preds = before
            if not isinstance(node.orelse, cst.If):
                break
            first = len(self.graph.ops)
            self.assume(node.test, False)
            chained.append((first, len(self.graph.ops), len(taken)))
            node = node.orelse
        if isinstance(node.orelse, cst.Else):
            on_false = self._branch(node.test, False, lambda: self.block(node.orelse.body), checked)
        else:
            on_false = self._branch(node.test, False, lambda: None, checked)
        last = self.preds
        for first, start, level in chained:  # once the rest of the chain is built, as `_branch` does
            self._idle_unless_acting(first, start, falls_through=bool(last) or any(taken[level:]))
        if checked:
            self._excuse_the_skipping_branch(on_true, on_false)
        self.preds = [n for exits in taken for n in exits] + last

    def _counters(self) -> frozenset[str]:
        """The names the innermost loop's body moves by a constant (`n += 1`, `left -= 1`): a test
        that reads one counts the iterations of a window (pytorch-cifar100's
        `if acc_batches > 1: acc_batches -= 1; continue`)."""
        if not self.loops:
            return frozenset()
        loop = self.graph.loops[self.loops[-1]].node
        if not isinstance(loop, (cst.For, cst.While)):
            return frozenset()
        if loop not in self._advanced:
            self._advanced[loop] = frozenset(
                name for node in walk.nodes(loop.body)
                if isinstance(node, cst.AugAssign) and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign))
                and isinstance(node.value, cst.Integer) and (name := dotted_name(node.target)) is not None
            )
        return self._advanced[loop]

    def _block_assuming(self, facts: list, body: cst.BaseSuite) -> None:
        for fact, value in facts:
            self.emit(ASSUME, (fact, value))
        self.block(body)

    def _branch(self, test: cst.BaseExpression, truth: bool, body, checked: bool = False) -> "_Built":
        first = len(self.graph.ops)
        self.assume(test, truth)
        excuse = self.emit(EXCUSE) if checked and self.preds else None
        start = len(self.graph.ops)
        body()
        self._idle_unless_acting(first, start, falls_through=bool(self.preds))
        return _Built(excuse, start, len(self.graph.ops), not self.preds)

    def _excuse_the_skipping_branch(self, on_true: "_Built", on_false: "_Built") -> None:
        """A check on the gradients or the loss (`if torch.isfinite(norm): opt.step()`,
        `if not math.isfinite(loss.item()): continue`): the branch that skips the step gives up the
        pending gradients on purpose, and the next clear discards them deliberately (docs/contract.md,
        "Deliberate discards are not ZG003"). The other branch's mark is taken out again."""
        steps = [self._steps_in(b) for b in (on_true, on_false)]
        jumps = [on_true.jumps, on_false.jumps]
        skipping = None
        for i, j in ((0, 1), (1, 0)):
            if (jumps[i] and not jumps[j]) or (steps[j] and not steps[i]):
                skipping = i if skipping is None else -1
        for index, built in enumerate((on_true, on_false)):
            if built.excuse is not None and index != skipping:
                self.graph.ops[built.excuse] = NOP

    def _steps_in(self, built: "_Built") -> bool:
        graph = self.graph
        return any(
            graph.ops[n] == EVENT and graph.args[n].event.op in (ev.STEP, ev.STEP_CLEAR, ev.UPDATE)
            for n in range(built.start, built.end)
        )

    def _idle_unless_acting(self, first: int, start: int, falls_through: bool) -> None:
        """A branch (its facts assumed from `first`, its code built from `start`) that runs no
        event and falls through (logging, metrics) makes its facts idle: not worth tracking."""
        graph = self.graph
        acts = any(op == EVENT and graph.args[n].event.op in ACTS for n, op in enumerate(graph.ops[start:], start))
        if falls_through and not acts:
            graph.idle.update(n for n in range(first, start) if graph.ops[n] == ASSUME)

    def stmt_Match(self, node) -> None:
        self.expr(node.subject)
        before = self.preds
        exits: list[int] = []
        irrefutable = False
        for case in node.cases:
            self.preds = before
            self.expr(case.guard)
            self.block(case.body)
            exits += self.preds
            pattern = case.pattern
            if case.guard is None and isinstance(pattern, cst.MatchAs) and pattern.pattern is None:
                irrefutable = True
        self.preds = exits + ([] if irrefutable else before)


# Events whose being run or not is worth a correlated condition (not renames, not unknown calls).
ACTS = frozenset({ev.ACC, ev.STEP, ev.STEP_CLEAR, ev.UPDATE, ev.CLEAR, ev.CLEAR_MODELS, ev.OVERWRITE})


class _Built(NamedTuple):
    """One branch of an `if` as built: its EXCUSE node (if any), its nodes, whether it jumps away."""

    excuse: int | None
    start: int
    end: int
    jumps: bool


# Words of a condition that checks whether the gradients or the loss are usable.
_USABILITY = re.compile(
    r"(?i)finite|^isnan$|^isinf$|^nan$|_nan$|^nan_|^inf$|_inf$|^inf_|overflow|_ok$|^ok$|^valid$|^is_valid|healthy|spike|diverg"
)


# Words of a condition that (also) tells whether an accumulation window is full.
_WINDOW = re.compile(r"(?i)accum|sync_grad|micro|should_step|do_step|update_step|step_now")


def _empty(node: cst.CSTNode) -> bool:
    """`len(x) == 0`, `len(x) <= 0`, `len(x) < 1`."""
    if not (isinstance(node, cst.Comparison) and len(node.comparisons) == 1):
        return False
    left, target = node.left, node.comparisons[0]
    counted = isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "len"
    bound = target.comparator.value if isinstance(target.comparator, cst.Integer) else None
    return counted and (
        bound == "0" and isinstance(target.operator, (cst.Equal, cst.LessThanEqual))
        or bound == "1" and isinstance(target.operator, cst.LessThan)
    )


_WINDOW_WORDS = frozenset({"step", "steps", "update", "updates", "window", "boundary", "sync", "synced"})


def _gives_up_when_skipped(test: cst.BaseExpression, counters: frozenset[str] = frozenset()) -> bool:
    """Does a step this test guards give up what is pending when it is skipped? Yes, unless the
    test tells whether an accumulation window is full (ZG003 is about a step skipped *because
    gradients are still being accumulated*: docs/contract.md, "Deliberate discards are not ZG003"):
    a modulo, one of the loop's `counters`, a name about accumulating or syncing, or about the
    step or update itself (`should_step`, `need_update`). A check that the gradients or the loss
    are usable (`torch.isfinite(norm)`, `found_inf`, `gradients_ok(model)`, an iteration that
    produced nothing) gives up what is pending even beside a word about the step or a counter,
    and so does a step skipped for another reason (`if not skip_points:`)."""
    usable = window = False
    for node in walk.nodes(test):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return False
        usable = usable or _empty(node)  # `if len(outputs) <= 0: continue`
        word = node.value if isinstance(node, cst.Name) else node.attr.value if isinstance(node, cst.Attribute) else None
        if word is not None:
            if _WINDOW.search(word):
                return False
            usable = usable or bool(_USABILITY.search(word))
            window = window or not _WINDOW_WORDS.isdisjoint(vocabulary.tokens(word)) or dotted_name(node) in counters
    return usable or not window
