"""Loops that apply one gradient operation to each element of a collection.

`for p in model.parameters(): p.grad = None` clears a model; `for opt in optimizers: opt.step()`
steps a list of optimizers. Such a loop is one event of the training, not a loop of it: its body
is classified as a whole, ignoring its branches (`if p.grad is not None:` only skips what is
already clear), and its events are emitted once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint import walk

if TYPE_CHECKING:
    from zerograd_lint.bindings import Frame
    from zerograd_lint.cfg import Builder

Actions = list[tuple[list[ev.Action], cst.CSTNode, "Frame"]]
_GRADIENT_OPS = (ev.STEP, ev.CLEAR, ev.CLEAR_MODELS, ev.STEP_CLEAR, ev.OVERWRITE)


def body_actions(builder: Builder, body: cst.CSTNode) -> Actions:
    """What every call and assignment of a loop body does, in source order, ignoring control flow."""
    classify = builder.classifier
    frame = builder.frame
    out: Actions = []

    def record(actions: list[ev.Action], node: cst.CSTNode, where: Frame) -> None:
        if actions:
            out.append((actions, node, where))

    def expression(expr: cst.CSTNode | None) -> None:
        if expr is not None:
            for call, where in builder.calls(expr):
                record(classify.classify_call(call, where), call, where)

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
                        record(classify.classify_assign(target, small.value, frame), small, frame)
                elif isinstance(small, cst.AugAssign):
                    record(classify.classify_augassign(small, frame), small, frame)
                elif isinstance(small, cst.Del):
                    record(classify.classify_assign(small.target, None, frame), small, frame)
    return out


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


def _mentions(node: cst.CSTNode, names: frozenset[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in walk.nodes(node))
