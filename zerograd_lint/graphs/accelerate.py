"""Accelerate's gate in the graph: inside `with accelerator.accumulate(model):` the prepared
optimizers' step and zero_grad run only on a sync step (the fact `accelerator.sync_gradients`);
after such a block a prepared optimizer's stay gated on the last block's fact (Accelerate keeps
the state). All the graph stage knows of Accelerate is here.

`AccelerateGate` is a part of `Builder` (`builder.py`): it uses the state the builder keeps
(`gate`: the block's fact inside one; `synced`: the last block's fact after it).
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint.bindings import ACCELERATOR, last_name
from zerograd_lint.conditions import Fact
from zerograd_lint.graphs.nodes import ASSUME
from zerograd_lint.scopes import dotted_name


class AccelerateGate:
    def _accumulate_gate(self, item: cst.BaseExpression) -> Fact | None:
        """`with accelerator.accumulate(model):` gates the prepared optimizers' step and zero_grad."""
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
