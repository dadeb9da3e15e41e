"""The guard: torch hooks and the gradient state they keep (the package docstring explains it)."""

from __future__ import annotations

import functools
import warnings
import weakref
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
    finding,
)
from zerograd_lint.runtime._state import (
    Models,
    OptState,
    ParamState,
    PassState,
    names_of,
    parameter_names,
)

StepArgs = tuple[tuple[Any, ...], dict[str, Any]]

_ON_ERROR = ("raise", "warn", "record")


class Guard:
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

    def _watching_backward(self, backward: Callable[..., None]) -> Callable[..., None]:
        """``torch.autograd.backward`` that first has the guard watch, as updated by hand, the
        leaves it accumulates into that no guarded optimizer holds."""

        @functools.wraps(backward)
        def watched(*args: Any, **kwargs: Any) -> None:
            self._watch_by_hand(_reading.leaves(args[0] if args else kwargs["tensors"]))
            return backward(*args, **kwargs)

        return watched

    # Backward passes: a hook runs before each guarded parameter accumulates, another after.

    def _before_accumulate(self, grad: torch.Tensor) -> None:
        if self._pass is None:
            self._open_pass()

    def _after_accumulate(self, param: ParamState, tensor: torch.Tensor) -> None:
        current = self._pass or self._open_pass()
        if param.fresh and param.fresh[-1] is current:
            return
        param.fresh.append(current)
        current.params.append(param)
        for opt in param.owners:
            if opt.in_closure and opt in param.applied:
                opt.reaccumulated.append(param)

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

    # Steps.

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
                    names_of(p for _, dropped in mine for p in dropped),
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
                        self._emit(_accumulation_discarded(opt, *held))
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
                    self._discards.setdefault((opt, gone), []).append(param)
        param.fresh = []
        param.applied = set()

    def _judge(self) -> None:
        """ZG003 for each discarded pass meant for a step; hold the others until that is known."""
        discards, self._discards = self._discards, {}
        for (opt, gone), params in discards.items():
            if gone.key in opt.feeds or (self._accumulating and not gone.stepped):
                self._emit(_accumulation_discarded(opt, gone, params))
            else:
                opt.held.setdefault(gone.key, (gone, set()))[1].update(params)

    # Reporting.

    def _emit(self, found: Finding) -> None:
        if found in self.findings:
            return
        self.findings.append(found)
        if self._on_error == "warn":
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


def _accumulation_discarded(
    opt: OptState, gone: PassState, params: Iterable[ParamState]
) -> Finding:
    return finding(
        "ZG003",
        opt.name,
        f"clear discarded gradients from the backward at {gone.where} that no {opt.step} applied",
        names_of(params),
        f"clear only after the {opt.step} that applies them",
    )


class Removable(Protocol):
    def remove(self) -> None: ...


class _Replaced:
    """``owner.name`` replaced by ``wrap(owner.name)`` until :meth:`remove` puts it back."""

    def __init__(
        self, owner: object, name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
    ) -> None:
        self._owner, self._name = owner, name
        self._original = getattr(owner, name)
        setattr(owner, name, wrap(self._original))

    def remove(self) -> None:
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
