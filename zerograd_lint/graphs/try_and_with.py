"""`try` and `with` in the graph. A `try` body may fail in any of its statements but a bare clear
(`optimizer.zero_grad()`, taken to complete): each handler starts from the points before those
statements and from its end, and an iteration that failed gives up what it accumulated (an EXCUSE
node; `except StopIteration:` is an epoch's end, nothing failed). A `finally` block runs on every
way out, jumps included (`statements.py`). A `with` block may turn grad mode off
(`torch.no_grad()`) or gate the optimizers on Accelerate's sync step (`accelerate.py`).

`TryAndWith` is a part of `Builder` (`builder.py`): it uses the state the builder keeps.
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint.graphs.assumptions import constant_truth
from zerograd_lint.graphs.nodes import EVENT, EXCUSE
from zerograd_lint.graphs.statements import FinallyBlock, TryJumps
from zerograd_lint.scopes import dotted_name
from zerograd_lint.walk import nodes


class TryAndWith:
    def stmt_Try(self, node) -> None:
        final = FinallyBlock(node.finalbody.body) if node.finalbody else None
        if final:
            self.jump_targets.append(final)
        raised = TryJumps()
        self.jump_targets.append(raised)
        sources: list[int] = []
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]
        for statement in body:
            before, first = self.preds, len(self.graph.ops)
            if not before:
                break
            self.statement(statement)
            if not self._only_clears(statement, first):
                sources += before
        sources += self.preds + raised.raises
        self.jump_targets.pop()
        if node.orelse is not None:
            self.block(node.orelse.body)
        exits = self.preds
        for handler in node.handlers:
            self.preds = list(dict.fromkeys(sources))
            failed = not _ends_an_iterator(handler)  # `except StopIteration:` is an epoch's end
            if failed:
                self.emit(EXCUSE)  # an iteration that failed gives up what it accumulated
            self.handlers += failed
            self.block(handler.body)
            self.handlers -= failed
            exits = exits + self.preds
        self.preds = exits
        if final:
            self.jump_targets.pop()
            if self.preds:
                self.block(final.body)

    stmt_TryStar = stmt_Try

    def _only_clears(self, statement: cst.BaseStatement, first: int) -> bool:
        """A statement that is a clear and nothing else (`optimizer.zero_grad()`, no other call in
        it; its nodes from `first` on) is taken to complete: a `try` fails before or after it."""
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(call := statement.body[0], cst.Expr) and isinstance(call.value, cst.Call)):
            return False
        made = range(first, len(self.graph.ops))
        return (bool(made) and all(self.graph.ops[n] == EVENT and self.graph.args[n].event.op == ev.CLEAR  # type: ignore[union-attr]
                                   for n in made)
                and sum(isinstance(node, cst.Call) for node in nodes(call.value, skip=())) == 1)

    def stmt_With(self, node: cst.With) -> None:
        gate = None
        grad_mode = self.grad_mode
        for item in node.items:
            self.expr(item.item)
            gate = gate or self._accumulate_gate(item.item)
            grad_mode = _grad_mode(item.item, grad_mode)
        if gate is None:
            saved_mode, self.grad_mode = self.grad_mode, grad_mode
            try:
                self.block(node.body)
            finally:
                self.grad_mode = saved_mode
        else:
            self._gated_block(gate, node.body)


_NO_GRAD = frozenset({"no_grad", "inference_mode"})


def _ends_an_iterator(handler: cst.ExceptHandler) -> bool:
    """`except StopIteration:`: the data ran out, an epoch's end, nothing failed."""
    return isinstance(handler.type, (cst.Name, cst.Attribute)) and (dotted_name(handler.type) or "").endswith("StopIteration")


def decorated_grad_mode(func: cst.CSTNode, mode: bool) -> bool:
    """Grad mode inside a function decorated as `with` would set it (`@torch.no_grad()`,
    `@torch.inference_mode()`, `@torch.no_grad` without parentheses, `@torch.enable_grad()`)."""
    for decorator in getattr(func, "decorators", ()):
        item = decorator.decorator
        if isinstance(item, (cst.Name, cst.Attribute)):  # `@torch.no_grad`: the same as called bare
            item = cst.Call(func=item)
        mode = _grad_mode(item, mode)
    return mode


def _grad_mode(item: cst.BaseExpression, mode: bool) -> bool:
    """Grad mode inside `with item:`: off under `torch.no_grad()`, `torch.inference_mode()` (not
    `inference_mode(False)`), back on under `torch.enable_grad()`."""
    if not isinstance(item, cst.Call):
        return mode
    last = (dotted_name(item.func) or "").rsplit(".", 1)[-1]
    if last == "enable_grad":
        return True
    if last == "set_grad_enabled":  # `torch.set_grad_enabled(phase == "train")`: as given, if shown
        given = constant_truth(item.args[0].value) if item.args else None
        return mode if given is None else given
    if last in _NO_GRAD:
        disabled = item.args and isinstance(item.args[0].value, cst.Name) and item.args[0].value.value == "False"
        return mode if disabled else False
    return mode
