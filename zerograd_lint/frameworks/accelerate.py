"""Hugging Face Accelerate: the `Accelerator` and what it prepares.

- An `Accelerator` (or an object named `accelerator`) is of the kind ACCELERATOR: its methods
  are bookkeeping, except `backward(loss)` (a backward) and `optimizer_step(opt)` (a step).
- `accelerator.prepare(model, optimizer, ...)` gives back what it is given, prepared: a prepared
  optimizer's `step()` and `zero_grad()` follow Accelerate's gradient state.
- `with accelerator.accumulate(model):` gates the prepared optimizers' step and zero_grad on the
  sync step (the fact `accelerator.sync_gradients`), inside the block and after it: Accelerate
  keeps the state (`AccelerateGate`, a part of the graph builder).

The first look (`survey`) reads this module, and it never imports LibCST: what runs on LibCST's
trees imports it where it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerograd_lint.vocabulary import ACCELERATOR

if TYPE_CHECKING:
    import libcst as cst

    from zerograd_lint import events as ev
    from zerograd_lint.bindings.keys import Key
    from zerograd_lint.conditions import Fact

CLASSES = {"Accelerator": ACCELERATOR}
NAMES = {"accelerator": ACCELERATOR}
# calls that give back the objects they are given, prepared
PREPARE_METHODS = frozenset({"prepare", "prepare_optimizer", "prepare_model"})
# the two of them a function's first look notes (`survey`): what such a function returns is prepared
PREPARES_WHAT_IT_RETURNS = frozenset({"prepare", "prepare_optimizer"})


def prepares(value: cst.BaseExpression | None) -> bool:
    """`accelerator.prepare(...)`, `accelerator.prepare_optimizer(...)`."""
    import libcst as cst  # (this module is read by the first look too, which never imports LibCST)

    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in PREPARES_WHAT_IT_RETURNS
    )


class Prepared:
    """Resolver part: which objects Accelerate prepared."""

    def prepared(self, key: Key, seen: frozenset[Key] = frozenset()) -> bool:
        """Was the object passed through `accelerator.prepare(...)` (its step and zero_grad then
        follow Accelerate's gradient state), here or in a project function that returns it
        (`model, opt = training_setup(accelerator)`)?"""
        import libcst as cst

        if key in seen:
            return False
        for binding, frame in self.bindings_of(key):  # `self.optimizer` too
            if prepares(binding.value):
                return True
            if isinstance(binding.value, cst.Call) and any(
                # `prepare` returns its arguments, so the returned name's key is the argument's:
                # whether it was prepared is in the returned name's own bindings
                prepares(part)
                or isinstance(part, cst.Name) and any(prepares(b.value) for b in inner.scope.bindings.get(part.value, []))
                or any(self.prepared(inner_key, seen | {key}) for inner_key in self.keys(part, inner))
                for part, inner in self._returned(binding.value, binding.path, frame)
            ):
                return True
        return False


class AccelerateGate:
    """Graph builder part (`graphs.builder.Builder`): Accelerate's gate. It uses the state the
    builder keeps: `gate`, the block's fact inside one; `synced`, the last block's fact after it."""

    def _accumulate_gate(self, item: cst.BaseExpression) -> Fact | None:
        """`with accelerator.accumulate(model):` gates the prepared optimizers' step and zero_grad."""
        import libcst as cst

        from zerograd_lint.bindings.keys import last_name
        from zerograd_lint.scopes import dotted_name

        if not (isinstance(item, cst.Call) and isinstance(item.func, cst.Attribute)):
            return None
        if item.func.attr.value != "accumulate":
            return None
        keys = self.resolver.keys(item.func.value, self.frame)
        if not any(self.resolver.info(k).kind == ACCELERATOR or "accelerat" in last_name(k) for k in keys):
            return None
        receiver = dotted_name(item.func.value) or "accelerator"
        return self.facts.named(f"{receiver}.sync_gradients")

    def _gated_block(self, gate: Fact, body: cst.BaseSuite) -> None:
        """The body of `with accelerator.accumulate(...)`, entered on a sync step or not."""
        from zerograd_lint.graphs.nodes import ASSUME

        self._kill(gate.names)
        before = self.preds
        self.preds = before
        self.emit(ASSUME, (gate, True))
        synced = self.preds
        self.preds = before
        self.emit(ASSUME, (gate, False))
        self.preds = synced + self.preds
        saved, self.gate = self.gate, gate
        self.block(body)
        self.gate, self.synced = saved, gate

    def _gate_of(self, event: ev.Event) -> Fact | None:
        """The fact a step or a clear runs under: the enclosing block's, or for a prepared
        optimizer the last block's."""
        if self.gate is not None:
            return self.gate
        if self.synced is not None and any(self.resolver.prepared(k) for k in event.keys):
            return self.synced
        return None
