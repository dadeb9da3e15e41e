"""The guard: the object :func:`attach` and :func:`guard_all` make. It watches the parameters of
optimizers and the tensors updated by hand, keeps their gradient state and reports what it finds
(the package docstring explains it). What its hooks do is in its parts: `_passes.py` (backward
passes, and the clears seen between them) and `_steps.py` (steps: of an optimizer, of one
evaluating a closure, by hand)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import torch
from torch.optim import Optimizer
from torch.optim.optimizer import register_optimizer_step_post_hook

from zerograd_lint.runtime import _reading
from zerograd_lint.runtime._findings import (
    Finding,
    GradientMisuseError,
    GradientMisuseWarning,
    OnError,
)
from zerograd_lint.runtime._passes import Passes
from zerograd_lint.runtime._state import (
    Models,
    OptState,
    ParamState,
    PassState,
    parameter_names,
)
from zerograd_lint.runtime._steps import Steps

_ON_ERROR = ("raise", "warn", "record")


class Guard(Passes, Steps):
    """Watches optimizers and tensors updated by hand while training runs. Made by
    :func:`zerograd_lint.runtime.attach` and :func:`zerograd_lint.runtime.guard_all`."""

    def __init__(
        self,
        optimizers: Sequence[Optimizer],
        *,
        params: Sequence[torch.Tensor] | None,
        models: Models | None,
        names: Sequence[str] | None,
        on_error: OnError,
        accumulation_steps: int,
        watch_all: bool = False,
    ) -> None:
        _check_arguments(optimizers, params, names, on_error, accumulation_steps, watch_all)
        self.findings: list[Finding] = []
        """Everything found so far, each distinct finding once, in the order found."""
        self._on_error = on_error
        self._accumulating = accumulation_steps > 1
        self._pass: PassState | None = None  # the pass under way
        self._last: PassState | None = None  # the latest pass that accumulated anything
        self._discards: dict[tuple[OptState, PassState], list[ParamState]] = {}  # not judged yet
        self._unraised: list[Finding] = []
        self._labels = parameter_names(models)
        self._params: dict[int, ParamState] = {}  # by id of the tensor
        self._optimizers = 0
        self._by_hand = OptState(None, "hand-written", step="update", clear="p.grad = None")
        self._handles: list[Removable] = [register_optimizer_step_post_hook(self._after_any_step)]
        for index, optimizer in enumerate(optimizers):
            self._watch(optimizer, names[index] if names else None)
        self._watch_by_hand(params or ())
        if watch_all:
            self._handles += (
                _Replaced(Optimizer, "__init__", self._watching_init),
                _Replaced(torch.autograd, "backward", self._watching_backward),
            )

    def detach(self) -> None:
        """Remove every hook this guard added. Findings stay in :attr:`findings`."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    # What is watched: the parameters of optimizers, and tensors updated by hand.

    def _watch(self, optimizer: Optimizer, name: str | None) -> None:
        opt = OptState(optimizer, name or f"{type(optimizer).__name__} #{self._optimizers}")
        self._optimizers += 1
        for g, group in enumerate(optimizer.param_groups):
            for i, tensor in enumerate(group["params"]):
                if not tensor.requires_grad:
                    continue
                param = self._param(tensor, f"param_groups[{g}][{i}] {tuple(tensor.shape)}")
                if param.snapshot is not None:  # updated by hand so far: by the optimizer now
                    param.owners.remove(self._by_hand)
                    self._by_hand.params.remove(param)
                    param.snapshot = None
                param.owners.append(opt)
                opt.params.append(param)
                if param.applied:  # `.grad` belongs to the tensor: a new optimizer over it inherits
                    param.applied.add(opt)  # what an earlier step applied and nothing cleared
        self._handles += (
            optimizer.register_step_pre_hook(functools.partial(self._before_step, opt)),
            optimizer.register_step_post_hook(functools.partial(self._after_step, opt)),
            _Replaced(optimizer, "zero_grad", functools.partial(self._watching_zero_grad, opt)),
        )

    def _watch_by_hand(self, tensors: Iterable[torch.Tensor]) -> None:
        """Watch those of ``tensors`` that require grad and that no guarded optimizer holds."""
        for tensor in tensors:
            if tensor.requires_grad and id(tensor) not in self._params:
                label = f"params[{len(self._by_hand.params)}] {tuple(tensor.shape)}"
                param = self._param(tensor, label)
                param.snapshot = _reading.snapshot(tensor)
                param.owners.append(self._by_hand)
                self._by_hand.params.append(param)

    def _param(self, tensor: torch.Tensor, label: str) -> ParamState:
        """The state of ``tensor``, made and hooked the first time."""
        param = self._params.get(id(tensor))
        if param is None:
            param = ParamState(tensor, self._labels.get(id(tensor), label), len(self._params))
            self._params[id(tensor)] = param
            self._handles += (
                tensor.register_hook(self._before_accumulate),
                tensor.register_post_accumulate_grad_hook(
                    functools.partial(self._after_accumulate, param)
                ),
            )
        return param

    def _watching_init(self, init: Callable[..., None]) -> Callable[..., None]:
        """``Optimizer.__init__`` that has the guard watch each optimizer it makes."""

        @functools.wraps(init)
        def __init__(optimizer: Optimizer, *args: Any, **kwargs: Any) -> None:
            init(optimizer, *args, **kwargs)
            self._watch(optimizer, None)

        return __init__

    def _watching_zero_grad(
        self, opt: OptState, zero_grad: Callable[..., None]
    ) -> Callable[..., None]:
        """The optimizer's ``zero_grad`` that first notes the user's line on its parameters: a
        clear is noticed later, from the values, and a ZG003 is about where it was made."""

        @functools.wraps(zero_grad)
        def watched(*args: Any, **kwargs: Any) -> None:
            line = _reading.user_line()
            if line is not None:
                for param in opt.params:
                    param.cleared_by = line
            return zero_grad(*args, **kwargs)

        return watched

    def _watching_backward(self, backward: Callable[..., None]) -> Callable[..., None]:
        """``torch.autograd.backward`` that first has the guard watch, as updated by hand, the
        leaves it accumulates into that no guarded optimizer holds."""

        @functools.wraps(backward)
        def watched(*args: Any, **kwargs: Any) -> None:
            self._watch_by_hand(_reading.leaves(args[0] if args else kwargs["tensors"]))
            return backward(*args, **kwargs)

        return watched

    # Reporting.

    def _emit(self, found: Finding) -> None:
        if found in self.findings:
            return
        self.findings.append(found)
        if self._on_error == "warn" and found.at is not None:
            warnings.warn_explicit(found.message, GradientMisuseWarning, *found.at)
        elif self._on_error == "warn":
            warnings.warn(
                found.message, GradientMisuseWarning, stacklevel=_reading.user_stacklevel()
            )
        elif self._on_error == "raise":
            self._unraised.append(found)

    def _raise(self) -> None:
        """Raise what was found; called only where raising leaves torch and the guard consistent."""
        if self._unraised:
            found, self._unraised = self._unraised, []
            raise GradientMisuseError(found)


class Removable(Protocol):
    def remove(self) -> None: ...


class _Replaced:
    """``owner.name`` replaced by ``wrap(owner.name)`` until :meth:`remove` puts it back. On an
    instance, the replacement shadows the class's method, and removing it uncovers that again."""

    def __init__(
        self, owner: object, name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
    ) -> None:
        self._owner, self._name = owner, name
        self._shadowed = not isinstance(owner, type) and name not in vars(owner)
        self._original = getattr(owner, name)
        setattr(owner, name, wrap(self._original))

    def remove(self) -> None:
        if self._shadowed:
            delattr(self._owner, self._name)
        else:
            setattr(self._owner, self._name, self._original)


def _check_arguments(
    optimizers: Sequence[Optimizer],
    params: Sequence[torch.Tensor] | None,
    names: Sequence[str] | None,
    on_error: str,
    accumulation_steps: int,
    watch_all: bool,
) -> None:
    if not (optimizers or params or watch_all):
        raise TypeError("attach() needs an optimizer or params")
    for optimizer in optimizers:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"not a torch.optim.Optimizer: {optimizer!r}")
    for tensor in params or ():
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"not a tensor: {tensor!r}")
    if len({id(o) for o in optimizers}) != len(optimizers):
        raise ValueError("the same optimizer was given twice")
    if names is not None and len(names) != len(optimizers):
        raise ValueError(f"{len(names)} names for {len(optimizers)} optimizers")
    if on_error not in _ON_ERROR:
        raise ValueError(
            f"on_error must be one of {', '.join(map(repr, _ON_ERROR))}, not {on_error!r}"
        )
    if (
        isinstance(accumulation_steps, bool)
        or not isinstance(accumulation_steps, int)
        or accumulation_steps < 1
    ):
        raise ValueError(f"accumulation_steps must be a positive int, not {accumulation_steps!r}")
