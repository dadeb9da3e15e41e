"""PyTorch Lightning: a `LightningModule`'s `training_step` runs once per batch. With automatic
optimization Lightning clears, steps and runs the backward itself, and the step is not a loop the
analysis checks; with manual optimization (`automatic_optimization = False`, or a
`self.manual_backward(loss)` in it) it is a loop body, whose optimizers are what
`configure_optimizers` returns (`self.optimizers()`, or its element `[i]`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from zerograd_lint import walk
from zerograd_lint.scopes import Binding, Scope, dotted_name

if TYPE_CHECKING:
    from zerograd_lint.bindings.keys import Frame, Key

PER_BATCH = "training_step"


def optimizers_call(call: cst.Call, last: str) -> bool:
    """`self.optimizers()`."""
    return last in ("optimizers",) and isinstance(call.func, cst.Attribute)


def manual_training_step(scope: Scope, chain: list[Scope]) -> bool:
    """Is this `training_step` (of a class whose chain of project classes is `chain`) run with
    manual optimization, so that its body is a loop body?"""
    manual = any(
        isinstance(value, cst.Name) and value.value == "False"
        for klass in chain
        for value in [klass.class_attrs.get("automatic_optimization")]
        + [b.value for b, _ in klass.self_attrs.get("automatic_optimization", [])]
    )
    return manual or "manual_backward" in _names_called(scope.node)


def _names_called(node: cst.CSTNode) -> set[str]:
    return {
        name.rsplit(".", 1)[-1]
        for call in walk.nodes(node)
        if isinstance(call, cst.Call) and (name := dotted_name(call.func))
    }


class ConfiguredOptimizers:
    """Resolver part: what `self.optimizers()` stands for."""

    def _configured_optimizers(self, key: Key) -> list[tuple[Binding, Frame]]:
        """`self.optimizers()` (or its element `[i]`) is what `configure_optimizers` returns: an
        optimizer, a list of them, `(optimizers, schedulers)`, or dicts of them."""
        from zerograd_lint.bindings.keys import Frame  # (the bindings are made of this part)
        from zerograd_lint.bindings.names import returns

        cls = self.instance_class(key[:1])
        found = self.method(cls, "configure_optimizers") if cls is not None else None
        if found is None:
            return []
        scope = self.scope_of(found[1])
        frame = Frame(scope, {scope.self_name: [key[:1]]} if scope.self_name else {}, cls=cls)
        index = int(key[2][1:-1]) if len(key) == 3 and key[2][1:-1].isdigit() else None
        values = []
        for returned in returns(found[1]):
            optimizers = _optimizers_returned(returned)
            if index is not None:
                optimizers = optimizers[index : index + 1]
            values.extend((Binding(value), frame) for value in optimizers)
        return values


def _optimizers_returned(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The optimizers in what `configure_optimizers` returns, in order."""
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement) and _is_key(e.key, "optimizer")]
    if isinstance(value, (cst.List, cst.Tuple)):
        elements = [e.value for e in value.elements]
        if len(elements) == 2 and all(isinstance(e, (cst.List, cst.Tuple)) for e in elements):
            return _optimizers_returned(elements[0])  # ([optimizers], [schedulers])
        return [o for e in elements for o in _optimizers_returned(e)]
    return [value]


def _is_key(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.SimpleString) and node.value.strip("'\"") == name
