"""Loops that apply one gradient operation to each element of a collection.

`for p in model.parameters(): p.grad = None` clears a model; `for opt in optimizers: opt.step()`
steps a list of optimizers. Such a loop is one event of the training, not a loop of it: its body
is classified as a whole, ignoring the branches that pick elements (`if p.grad is not None:` only
skips what is already clear), and its events are emitted once. A test that reads no element is
the same for each (`if use_amp: scaler.step(opt) else: opt.step()`): its branches are built as
any `if`'s are (`branches`, `Loops.flat`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint import walk
from zerograd_lint.bindings.keys import EACH
from zerograd_lint.vocabulary import GRADIENTS

if TYPE_CHECKING:
    from zerograd_lint.bindings import Frame
    from zerograd_lint.graphs.builder import Builder

Actions = list[tuple[list[ev.Action], cst.CSTNode, "Frame"]]
_GRADIENT_OPS = (ev.STEP, ev.CLEAR, ev.CLEAR_MODELS, ev.STEP_CLEAR, ev.OVERWRITE, ev.PARTIAL)
# What a condition may test and still leave the clear applying to every element: whether it has
# a gradient to clear (`if p.grad is not None:`, `if p.requires_grad:`).
_ABOUT_THE_GRADIENT = GRADIENTS | {"requires_grad", "data", "is_leaf"}


def body_actions(builder: Builder, body: cst.CSTNode, elements: frozenset[str]) -> Actions:
    """What every call and assignment of a loop body does, in source order, ignoring control flow
    (`elements`: the names of the loop's targets, by which a condition picks elements)."""
    classify = builder.classifier
    frame = builder.frame
    out: Actions = []

    def record(actions: list[ev.Action], node: cst.CSTNode, where: Frame) -> None:
        if actions:
            out.append((actions, node, where))

    def assigned(actions: list[ev.Action], small: cst.CSTNode) -> None:
        """`p.grad = None`: a clear, unless a condition picks the elements it runs for."""
        if any(isinstance(a, ev.Event) and a.op == ev.CLEAR_MODELS for a in actions):
            clears.append(len(out))
        record(actions, small, frame)

    def expression(expr: cst.CSTNode | None) -> None:
        if expr is not None:
            for call, where in builder.calls(expr):
                record(classify.classify_call(call, where), call, where)

    clears: list[int] = []  # where in `out` a clear by assignment was recorded

    for node in walk.nodes(body, skip=(cst.Lambda, cst.FunctionDef, cst.ClassDef, cst.SimpleStatementLine)):
        if isinstance(node, (cst.If, cst.While)):
            expression(node.test)
        elif isinstance(node, cst.For):
            expression(node.iter)
        elif isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                expression(small)
                if isinstance(small, (cst.Assign, cst.AnnAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    for target in targets:
                        assigned(classify.classify_assign(target, small.value, frame), small)
                elif isinstance(small, cst.AugAssign):
                    record(classify.classify_augassign(small, frame), small, frame)
                elif isinstance(small, cst.Del):
                    assigned(classify.classify_assign(small.target, None, frame), small)
    if clears:  # only then: which statements a condition picks (a training loop's body is large)
        picked = {small for line in _picked_by_a_condition(body, elements) for small in line.body}
        for i in clears:
            actions, small, where = out[i]
            if small in picked:
                out[i] = (_partial(actions), small, where)
    return out


def _picked_by_a_condition(body: cst.CSTNode, elements: frozenset[str]) -> set[cst.CSTNode]:
    """The statements of the body that run only for the elements a condition picks, other than
    one about having a gradient at all (`if "last_layer" in name:`, `if not name.startswith(...)`).
    A test that reads no element picks none: its arms are branches of the training (`branches`),
    unless one leaves the iteration (`continue`), which `Loops.flat` does not build."""
    picked: set[cst.CSTNode] = set()
    for node in walk.nodes(body, skip=(cst.Lambda, cst.FunctionDef, cst.ClassDef)):
        if isinstance(node, cst.If) and not _about_the_gradient(node.test) and not _same_for_each(node, elements):
            picked.update(n for n in walk.nodes(node) if isinstance(n, cst.SimpleStatementLine))
            if _leaves(node):
                # `if "head" not in name: continue`: what follows runs for the elements it lets by
                picked.update(n for n in walk.nodes(body) if isinstance(n, cst.SimpleStatementLine))
    return picked


def _about_the_gradient(test: cst.BaseExpression) -> bool:
    """`p.grad is not None`, `p.requires_grad and p.grad is not None`: attributes about the
    gradient only, compared with None if at all; no call, no string, no other attribute."""
    attributes = 0
    for node in walk.nodes(test):
        if isinstance(node, cst.Attribute):
            if node.attr.value not in _ABOUT_THE_GRADIENT:
                return False
            attributes += 1
        elif isinstance(node, cst.ComparisonTarget):
            if not (isinstance(node.comparator, cst.Name) and node.comparator.value == "None"):
                return False
        elif isinstance(node, (cst.Call, cst.SimpleString, cst.Subscript)):
            return False
    return attributes > 0


def _partial(actions: list[ev.Action]) -> list[ev.Action]:
    return [ev.Event(ev.PARTIAL, a.keys) if isinstance(a, ev.Event) and a.op == ev.CLEAR_MODELS else a for a in actions]


Branches = dict[cst.CSTNode, tuple[tuple[cst.If, int], ...]]


def branches(body: cst.CSTNode, elements: frozenset[str]) -> Branches:
    """The nodes of a collection loop's body under an `if` whose test reads none of the loop's
    targets (`elements`), each with the arms it is in, outermost first: (the `if`, 0 for its body,
    1 for what follows `else`). Such a test is the same for every element (`if use_amp:
    scaler.step(opt) else: opt.step()`, `if iteration % k == 1: opt.zero_grad()`): a branch of the
    training, not a choice of elements (`if p.grad is not None:`, `if "head" in name:`), which is
    ignored, as is an `if` that leaves the iteration (`_picked_by_a_condition` reads it)."""
    found: Branches = {}
    for node in walk.nodes(body, skip=(cst.Lambda, cst.FunctionDef, cst.ClassDef)):
        if isinstance(node, cst.If) and _same_for_each(node, elements):
            outer = found.get(node, ())
            for arm, part in enumerate((node.body, node.orelse)):
                if part is not None:  # an inner `if` comes later (pre-order): its arms are added then
                    for inner in walk.nodes(part):
                        found[inner] = (*outer, (node, arm))
    return found


def _same_for_each(node: cst.If, elements: frozenset[str]) -> bool:
    """An `if` of a collection loop's body whose test reads no element and which does not leave
    the iteration: a branch of the training, taken alike for every element."""
    return not _mentions(node.test, elements) and not _leaves(node)


def _leaves(node: cst.If) -> bool:
    """The `if` leaves the iteration (`continue`) when its test is true."""
    return any(isinstance(n, cst.Continue) for n in walk.nodes(node.body))


def applies_to_each(actions: Actions, targets: frozenset[str]) -> bool:
    """The body does something to gradients, only through the loop's targets, and runs no backward."""
    touched = False
    for found, node, _ in actions:
        for action in found:
            if not isinstance(action, ev.Event) or action.op in (ev.ACC, ev.UPDATE):
                return False
            if action.op in _GRADIENT_OPS:
                if not _mentions(node, targets):
                    return False
                touched = True
    return touched


def each(actions: Actions) -> Actions:
    """The clears of a loop over a collection reach every element: `for opt in opts.values():
    opt.zero_grad()` clears `opts["g"]` and `opts["d"]` (an `EACH` element `covers` any)."""
    def every(action: ev.Action) -> ev.Action:
        if not isinstance(action, ev.Event) or action.op != ev.CLEAR:
            return action
        keys = tuple(tuple(EACH if part == "[*]" else part for part in key) for key in action.keys)
        return replace(action, keys=keys)

    return [([every(action) for action in found], node, frame) for found, node, frame in actions]


def _mentions(node: cst.CSTNode, names: frozenset[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in walk.nodes(node))
