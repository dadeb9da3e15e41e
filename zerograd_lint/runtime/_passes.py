"""Backward passes, and the clears the guard finds between them: a hook runs before each guarded
parameter accumulates, another after, and the pass ends when autograd has run; a clear is a
``.grad`` found None or all zeros whenever the guard looks. A clear that drops the contributions
of a pass meant for a step is a ZG003.

`Passes` is a part of `Guard` (`_guard.py`): it uses the state the guard keeps.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Iterable

import torch

from zerograd_lint.runtime import _reading
from zerograd_lint.runtime._findings import Finding, finding
from zerograd_lint.runtime._state import Discard, OptState, ParamState, PassState, names_of


class Passes:
    """The part of `Guard` that follows backward passes, and notices clears and judges them."""

    # Backward passes: a hook runs before each guarded parameter accumulates, another after.

    def _before_accumulate(self, grad: torch.Tensor) -> None:
        if self._pass is None:
            self._open_pass()

    def _after_accumulate(self, param: ParamState, tensor: torch.Tensor) -> None:
        current = self._pass or self._open_pass()
        param.cleared_by = None
        if param.fresh and param.fresh[-1] is current:
            return
        param.fresh.append(current)
        current.params.append(param)
        for opt in param.owners:
            if opt.in_closure and opt in param.applied:
                opt.reaccumulated.append(param)
        if param.applied:  # added to what a step applied: any owner's step would apply that too
            param.applied.update(param.owners)

    def _open_pass(self) -> PassState:
        """Start a pass, after a full look at what was updated by hand and cleared: until the pass
        ends only autograd runs, so this is what each parameter holds when it accumulates."""
        rewritten = self._updates_by_hand()
        self._observe(self._params.values(), trust_versions=False)
        emptied = [p for p in rewritten if not (p.fresh or p.applied)]
        if emptied:  # cleared, then updated with nothing
            self._check_step(self._by_hand, emptied)
        self._pass = PassState(_reading.call_site())
        engine = torch.autograd.Variable._execution_engine  # type: ignore[attr-defined]
        engine.queue_callback(functools.partial(self._pass_ended, self._pass))
        return self._pass

    def _pass_ended(self, ended: PassState) -> None:
        self._end(ended)
        self._judge()
        self._raise()

    def _end(self, ended: PassState) -> None:
        if self._pass is not ended:
            return
        self._pass = None
        if not ended.params:
            return
        ended.key = (ended.site, frozenset(o for p in ended.params for o in p.owners))
        grads = [p.tensor.grad for p in ended.params]
        for param, grad, norm in zip(ended.params, grads, _reading.norms(grads), strict=True):
            param.norm = norm
            param.seen = None if grad is None else (weakref.ref(grad), grad._version)
            if len(param.fresh) > 1 and any(p.key == ended.key for p in param.fresh[:-1]):
                param.fresh.pop()  # one pass per key keeps .fresh small in step-less loops
        self._last = ended

    # Clears: seen as a .grad that is None or all zeros, whenever the guard looks at a parameter.

    def _observe(self, params: Iterable[ParamState], *, trust_versions: bool) -> None:
        """Notice the clears of ``params`` since the guard last looked.

        With ``trust_versions``, a .grad whose tensor and version are those the last pass left is
        taken as uncleared: cheap, and only blind to clears through ``.data``, which skip the
        version counter. Passes open with a full look, so that blindness can only hide a ZG002.
        """
        suspects = []
        for param in params:
            if not (param.fresh or param.applied):
                continue
            grad = param.tensor.grad
            if grad is None:
                self._clear(param)
            elif not (trust_versions and _reading.unchanged(param.seen, grad)):
                suspects.append(param)
        norms = _reading.norms([p.tensor.grad for p in suspects])
        for param, norm in zip(suspects, norms, strict=True):
            if norm.item() == 0:
                self._clear(param)

    def _clear(self, param: ParamState) -> None:
        if param.fresh and param.norm is not None and _reading.carries(param.norm):
            for opt in param.owners:
                for gone in param.fresh:
                    discard = self._discards.setdefault((opt, gone), Discard())
                    discard.params.add(param)
                    discard.cleared_by = discard.cleared_by or param.cleared_by
        param.fresh = []
        param.applied = set()
        param.cleared_by = None

    def _judge(self) -> None:
        """ZG003 for each discarded pass meant for a step; hold the others until that is known."""
        discards, self._discards = self._discards, {}
        for (opt, gone), discard in discards.items():
            if gone.key in opt.feeds or (self._accumulating and not gone.stepped):
                self._emit(accumulation_discarded(opt, gone, discard))
            else:
                held = opt.held.setdefault(gone.key, (gone, Discard()))[1]
                held.params |= discard.params
                held.cleared_by = held.cleared_by or discard.cleared_by


def accumulation_discarded(opt: OptState, gone: PassState, discard: Discard) -> Finding:
    """ZG003: a clear dropped what the pass ``gone`` gave ``discard.params`` for a step of
    ``opt``. It is about the clear: when the clear is known (a guarded ``zero_grad()``), the
    message names its line and a warning points there."""
    if discard.cleared_by is None:
        clear = "clear"
    else:
        file, line = discard.cleared_by
        clear = f"zero_grad() at {os.path.basename(file)}:{line}"
    return finding(
        "ZG003",
        opt.name,
        f"{clear} discarded gradients from the backward at {gone.where} that no {opt.step} applied",
        names_of(discard.params),
        f"clear only after the {opt.step} that applies them",
        at=discard.cleared_by,
    )
