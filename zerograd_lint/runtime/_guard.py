"""The guard: torch hooks and the per-parameter gradient state they keep (see the package docstring)."""

from __future__ import annotations

import functools
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any, Union

import torch
from torch.optim import Optimizer
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.hooks import RemovableHandle

from zerograd_lint.runtime._findings import (
    Finding,
    GradientMisuseError,
    GradientMisuseWarning,
    OnError,
    finding,
)

Models = Union[torch.nn.Module, Iterable[torch.nn.Module], Mapping[str, torch.nn.Module]]
StepArgs = tuple[tuple[Any, ...], dict[str, Any]]

# Frames from these directories are never the user's code.
_INTERNAL = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep)
_ON_ERROR = ("raise", "warn", "record")


@dataclass(eq=False)
class _Pass:
    """One backward pass that accumulated into guarded parameters."""

    site: tuple[tuple[CodeType, int], ...]
    """The user's frames (code, line) when backward ran, innermost first."""
    where: str
    params: list[_Param] = field(default_factory=list)
    key: object = None
    """Set when the pass ends: its site and the optimizers it reached. Passes with equal keys are
    "the same backward" in different iterations, which is what the guard learns about."""
    stepped: bool = False
    """Some optimizer stepped after this pass and before the next one."""


@dataclass(eq=False)
class _Param:
    tensor: torch.Tensor
    name: str
    index: int
    """Position among the guarded parameters: messages list them in this order."""
    owners: list[_Opt] = field(default_factory=list)
    fresh: list[_Pass] = field(default_factory=list)
    """Passes that added to ``.grad`` since it was last cleared and that no step has applied."""
    applied: bool = False
    """``.grad`` holds contributions a step already applied (it was not cleared since)."""
    peak: torch.Tensor | None = None
    """max |.grad| when the last pass ended: a clear of a zero or non-finite gradient loses nothing."""


@dataclass(eq=False)
class _Opt:
    optimizer: Optimizer
    name: str
    params: list[_Param] = field(default_factory=list)
    feeds: set[object] = field(default_factory=set)
    """Keys of the passes whose contributions a step of this optimizer applied."""
    held: dict[object, tuple[_Pass, set[_Param]]] = field(default_factory=dict)
    """Discards of passes not (yet) known to feed this optimizer, one per pass key."""
    in_closure: bool = False
    reaccumulated: list[_Param] = field(default_factory=list)


class Guard:
    """Watches optimizers while training runs. Made by :func:`zerograd_lint.runtime.attach`."""

    def __init__(
        self,
        optimizers: Sequence[Optimizer],
        *,
        models: Models | None,
        names: Sequence[str] | None,
        on_error: OnError,
        accumulation_steps: int,
    ) -> None:
        _check_arguments(optimizers, names, on_error, accumulation_steps)
        self.findings: list[Finding] = []
        """Everything found so far, each distinct finding once, in the order found."""
        self._on_error = on_error
        self._accumulating = accumulation_steps > 1
        self._opts: list[_Opt] = []
        self._pass: _Pass | None = None  # the pass under way
        self._last: _Pass | None = None  # the latest pass that accumulated anything
        self._discards: dict[tuple[_Opt, _Pass], list[_Param]] = {}  # not judged yet
        self._unraised: list[Finding] = []
        self._handles: list[RemovableHandle] = []

        labels = _parameter_names(models)
        params: dict[int, _Param] = {}
        for index, optimizer in enumerate(optimizers):
            opt = _Opt(optimizer, names[index] if names else f"{type(optimizer).__name__} #{index}")
            for g, group in enumerate(optimizer.param_groups):
                for i, tensor in enumerate(group["params"]):
                    if not tensor.requires_grad or not tensor.numel():
                        continue
                    if id(tensor) not in params:
                        label = labels.get(id(tensor), f"param_groups[{g}][{i}] {tuple(tensor.shape)}")
                        params[id(tensor)] = _Param(tensor, label, len(params))
                    params[id(tensor)].owners.append(opt)
                    opt.params.append(params[id(tensor)])
            self._opts.append(opt)

        for opt in self._opts:
            self._handles += (
                opt.optimizer.register_step_pre_hook(functools.partial(self._before_step, opt)),
                opt.optimizer.register_step_post_hook(functools.partial(self._after_step, opt)),
            )
        for param in params.values():
            self._handles += (
                param.tensor.register_hook(functools.partial(self._before_accumulate, param)),
                param.tensor.register_post_accumulate_grad_hook(
                    functools.partial(self._after_accumulate, param)
                ),
            )
        self._handles.append(register_optimizer_step_post_hook(self._after_any_step))

    def detach(self) -> None:
        """Remove every hook this guard added. Findings stay in :attr:`findings`."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    # Backward passes: a tensor hook runs before each guarded parameter accumulates, another after.

    def _before_accumulate(self, param: _Param, grad: torch.Tensor) -> None:
        self._current_pass()
        self._observe([param])

    def _after_accumulate(self, param: _Param, tensor: torch.Tensor) -> None:
        current = self._current_pass()
        if param.fresh and param.fresh[-1] is current:
            return
        param.fresh.append(current)
        current.params.append(param)
        for opt in param.owners:
            if opt.in_closure and param.applied:
                opt.reaccumulated.append(param)

    def _current_pass(self) -> _Pass:
        if self._pass is None:
            self._pass = _Pass(*_call_site())
            engine = torch.autograd.Variable._execution_engine  # type: ignore[attr-defined]
            engine.queue_callback(functools.partial(self._pass_ended, self._pass))
        return self._pass

    def _pass_ended(self, ended: _Pass) -> None:
        self._end(ended)
        self._judge()
        self._raise()

    @torch.no_grad()
    def _end(self, ended: _Pass) -> None:
        if self._pass is not ended:
            return
        self._pass = None
        if ended.params:
            ended.key = (ended.site, frozenset(o for p in ended.params for o in p.owners))
            for param in ended.params:
                grad = param.tensor.grad
                param.peak = None if grad is None else _peak(grad)
            self._last = ended

    # Steps.

    def _before_step(
        self, opt: _Opt, optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> StepArgs | None:
        if self._pass is not None:  # no step runs inside a pass: its backward raised, or a hook steps
            self._end(self._pass)
        self._observe(opt.params)
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if closure is not None:
            self._judge()
            self._raise()
            evaluate = self._watch_closure(opt, closure)
            if "closure" in kwargs:
                return args, {**kwargs, "closure": evaluate}
            return (args[0], evaluate, *args[2:]), kwargs

        stale = [p for p in opt.params if p.applied]
        mine = [(discarded, params) for (o, discarded), params in self._discards.items() if o is opt]
        if stale:
            self._emit(
                finding(
                    "ZG001",
                    opt.name,
                    "step applies gradients an earlier step already applied",
                    _names(stale),
                    "clear them after each step with optimizer.zero_grad()",
                )
            )
        elif mine and not any(p.fresh for p in opt.params):
            for discarded, _ in mine:
                del self._discards[opt, discarded]
            self._emit(
                finding(
                    "ZG002",
                    opt.name,
                    f"step applies nothing: the gradients of the backward at {mine[-1][0].where}"
                    " were cleared before it",
                    _names(p for _, params in mine for p in params),
                    "clear before backward or after step, not between them",
                )
            )
        self._judge()
        self._raise()
        return None

    def _after_step(
        self, opt: _Opt, optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self._apply(opt)
        self._raise()

    def _after_any_step(self, optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self._last is not None:
            self._last.stepped = True

    def _watch_closure(self, opt: _Opt, closure: Callable[[], Any]) -> Callable[[], Any]:
        evaluations = 0

        def evaluate() -> Any:
            nonlocal evaluations
            if evaluations:  # the step has read what the previous evaluation left in .grad
                self._apply(opt)
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
                        _names(opt.reaccumulated),
                        "call optimizer.zero_grad() in the closure before backward",
                    )
                )
                opt.reaccumulated.clear()
            self._raise()
            return loss

        return evaluate

    def _apply(self, opt: _Opt) -> None:
        """The step of ``opt`` applied its fresh contributions: learn which passes feed it."""
        for param in opt.params:
            for applied in param.fresh:
                if applied.key not in opt.feeds:
                    opt.feeds.add(applied.key)
                    held = opt.held.pop(applied.key, None)
                    if held is not None:
                        self._emit(_accumulation_discarded(opt, *held))
            if param.fresh:
                param.fresh = []
                param.applied = True

    # Clears: seen as a .grad that is None or all zeros, whenever the guard looks at a parameter.

    @torch.no_grad()
    def _observe(self, params: Iterable[_Param]) -> None:
        for param in params:
            if not (param.fresh or param.applied):
                continue
            grad = param.tensor.grad
            if grad is None or _peak(grad) == 0:
                if param.fresh and param.peak is not None and _carries(param.peak):
                    for opt in param.owners:
                        for discarded in param.fresh:
                            self._discards.setdefault((opt, discarded), []).append(param)
                param.fresh = []
                param.applied = False

    def _judge(self) -> None:
        """ZG003 for each discarded pass meant for a step; hold the others until that is known."""
        discards, self._discards = self._discards, {}
        for (opt, discarded), params in discards.items():
            if discarded.key in opt.feeds or (self._accumulating and not discarded.stepped):
                self._emit(_accumulation_discarded(opt, discarded, params))
            else:
                opt.held.setdefault(discarded.key, (discarded, set()))[1].update(params)

    # Reporting.

    def _emit(self, found: Finding) -> None:
        if found in self.findings:
            return
        self.findings.append(found)
        if self._on_error == "warn":
            warnings.warn(found.message, GradientMisuseWarning, stacklevel=_user_stacklevel())
        elif self._on_error == "raise":
            self._unraised.append(found)

    def _raise(self) -> None:
        """Raise what was found; called only where raising leaves torch and the guard consistent."""
        if self._unraised:
            found, self._unraised = self._unraised, []
            raise GradientMisuseError(found)


def _accumulation_discarded(opt: _Opt, discarded: _Pass, params: Iterable[_Param]) -> Finding:
    return finding(
        "ZG003",
        opt.name,
        f"clear discarded gradients from the backward at {discarded.where} that no step applied",
        _names(params),
        "clear only after the step that applies them",
    )


def _check_arguments(
    optimizers: Sequence[Optimizer],
    names: Sequence[str] | None,
    on_error: str,
    accumulation_steps: int,
) -> None:
    if not optimizers:
        raise TypeError("attach() needs at least one optimizer")
    for optimizer in optimizers:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"not a torch.optim.Optimizer: {optimizer!r}")
    if len({id(o) for o in optimizers}) != len(optimizers):
        raise ValueError("the same optimizer was given twice")
    if names is not None and len(names) != len(optimizers):
        raise ValueError(f"{len(names)} names for {len(optimizers)} optimizers")
    if on_error not in _ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(map(repr, _ON_ERROR))}, not {on_error!r}")
    if isinstance(accumulation_steps, bool) or not isinstance(accumulation_steps, int) or accumulation_steps < 1:
        raise ValueError(f"accumulation_steps must be a positive int, not {accumulation_steps!r}")


def _parameter_names(models: Models | None) -> dict[int, str]:
    """``id(parameter) -> name`` from ``named_parameters()``, prefixed by the key of a mapping."""
    if models is None:
        return {}
    if isinstance(models, torch.nn.Module):
        named = [("", models)]
    elif isinstance(models, Mapping):
        named = [(f"{key}.", model) for key, model in models.items()]
    else:
        named = [("", model) for model in models]
    names: dict[int, str] = {}
    for prefix, model in named:
        for name, tensor in model.named_parameters():
            names.setdefault(id(tensor), prefix + name)
    return names


def _names(params: Iterable[_Param]) -> list[str]:
    return [p.name for p in sorted(set(params), key=lambda p: p.index)]


def _peak(grad: torch.Tensor) -> torch.Tensor:
    """max |grad| as a 0-dim tensor on grad's device: 0 for all zeros, inf or nan if not finite."""
    return torch.linalg.vector_norm(grad.coalesce().values() if grad.is_sparse else grad, math.inf)


def _carries(peak: torch.Tensor) -> bool:
    """A gradient with this peak holds something a step should apply: not all zero, finite."""
    value = peak.item()
    return value != 0 and math.isfinite(value)


def _user_frames(frame: FrameType | None) -> Iterator[FrameType]:
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_INTERNAL):
            yield frame
        frame = frame.f_back


def _call_site() -> tuple[tuple[tuple[CodeType, int], ...], str]:
    """The user's stack where backward was called, and its innermost frame as ``file.py:line``."""
    site = tuple((f.f_code, f.f_lineno) for f in _user_frames(sys._getframe()))
    if not site:  # the pass runs on a device thread: no Python caller to see
        return site, "an unknown line"
    code, line = site[0]
    return site, f"{os.path.basename(code.co_filename)}:{line}"


def _user_stacklevel() -> int:
    """The ``stacklevel`` for a warning issued by the caller, pointing at the user's code."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        level, frame = level + 1, frame.f_back
    return level
