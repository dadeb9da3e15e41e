"""Steps, as the guard sees them: an optimizer's (a hook before it, another after), one that
evaluates a closure (the closure makes the gradients the step applies), and updates by hand (seen
in the values of the tensors when a pass opens). A step that applies gradients an earlier step
already applied is a ZG001; one that applies none, because a clear came between the backward and
it, a ZG002.

`Steps` is a part of `Guard` (`_guard.py`): it uses the state the guard keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.optim import Optimizer

from zerograd_lint.runtime import _reading
from zerograd_lint.runtime._findings import finding
from zerograd_lint.runtime._passes import accumulation_discarded
from zerograd_lint.runtime._state import OptState, ParamState, names_of

StepArgs = tuple[tuple[Any, ...], dict[str, Any]]


class Steps:
    """The part of `Guard` that judges steps and learns which passes feed each optimizer."""

    def _before_step(
        self, opt: OptState, optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> StepArgs | None:
        if self._pass is not None:
            # A step is never part of a pass: its backward raised, or a hook of it steps.
            self._end(self._pass)
        self._observe(opt.params, trust_versions=True)
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if closure is None:
            self._check_step(opt, opt.params)
            changed = None
        else:  # the closure makes the gradients this step applies: watch it instead
            evaluate = self._watch_closure(opt, closure)
            if "closure" in kwargs:
                changed = args, {**kwargs, "closure": evaluate}
            else:
                changed = (args[0], evaluate, *args[2:]), kwargs
        self._judge()
        self._raise()
        return changed

    def _check_step(self, opt: OptState, params: list[ParamState]) -> None:
        """Judge a step of ``params`` (of ``opt``) that is about to apply their ``.grad``."""
        stale = [p for p in params if opt in p.applied]
        mine = [(gone, dropped) for (o, gone), dropped in self._discards.items() if o is opt]
        if stale:
            self._emit(
                finding(
                    "ZG001",
                    opt.name,
                    f"{opt.step} applies gradients an earlier {opt.step} already applied",
                    names_of(stale),
                    f"clear them after each {opt.step} with {opt.clear}",
                )
            )
        elif mine and not any(p.fresh for p in params):
            for gone, _ in mine:
                del self._discards[opt, gone]
            self._emit(
                finding(
                    "ZG002",
                    opt.name,
                    f"{opt.step} applies no gradient: those of the backward at"
                    f" {mine[-1][0].where} were cleared before it",
                    names_of(p for _, dropped in mine for p in dropped.params),
                    f"clear before backward or after {opt.step}, not between them",
                )
            )

    def _after_step(
        self, opt: OptState, optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self._apply(opt, opt.params)
        self._raise()

    def _after_any_step(
        self, optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        if self._last is not None:
            self._last.stepped = True

    def _watch_closure(self, opt: OptState, closure: Callable[[], Any]) -> Callable[[], Any]:
        evaluations = 0

        def evaluate() -> Any:
            nonlocal evaluations
            if evaluations:  # the step has read what the previous evaluation left in .grad
                self._apply(opt, opt.params)
            evaluations += 1
            opt.in_closure = True
            try:
                loss = closure()
            finally:
                opt.in_closure = False
            if opt.reaccumulated:
                self._emit(
                    finding(
                        "ZG001",
                        opt.name,
                        "step(closure) evaluates a closure whose backward adds to gradients"
                        " the step already used",
                        names_of(opt.reaccumulated),
                        "call optimizer.zero_grad() in the closure before backward",
                    )
                )
                opt.reaccumulated.clear()
            self._raise()
            return loss

        return evaluate

    def _apply(self, opt: OptState, params: Iterable[ParamState]) -> None:
        """A step of ``opt`` applied the fresh contributions of ``params``: learn which passes
        feed it."""
        for param in params:
            for applied in param.fresh:
                if applied.key not in opt.feeds:
                    opt.feeds.add(applied.key)
                    held = opt.held.pop(applied.key, None)
                    if held is not None:
                        self._emit(accumulation_discarded(opt, *held))
            if param.fresh:
                param.fresh = []
                param.applied.add(opt)

    # Updates by hand: seen in the values of the tensors, when a pass opens.

    def _updates_by_hand(self) -> list[ParamState]:
        """Judge and apply the updates by hand since the guard last looked, before the clears: a
        changed value took what .grad held (after a clear nothing is left to apply). Return the
        tensors written but left unchanged: if cleared, an update came after the clear."""
        changed, rewritten = [], []
        for param in self._by_hand.params:
            copy, version = param.snapshot
            if not torch.equal(param.tensor, copy):
                changed.append(param)
            elif param.tensor._version != version:
                rewritten.append(param)
            else:
                continue
            param.snapshot = _reading.snapshot(param.tensor)
        if changed:
            self._check_step(self._by_hand, changed)
            self._apply(self._by_hand, changed)
            if self._last is not None:
                self._last.stepped = True
        return rewritten
