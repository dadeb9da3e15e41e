"""Catch gradient misuse while training runs: the run-time side of zerograd-lint's rules.

Usage::

    from zerograd_lint import runtime

    with runtime.guard(optimizer, models=model) as g:  # or g = runtime.attach(...); g.detach()
        train()

    with runtime.guard(params=[w, b]):  # tensors updated by hand: w -= lr * w.grad
        train()

    with runtime.guard_all():  # every optimizer made in it, every tensor updated by hand
        runpy.run_path("train.py", run_name="__main__")

With ``on_error="raise"`` (the default), a :class:`GradientMisuseError` (``.code``,
``.findings``) comes out of the call where the misuse became certain: ``optimizer.step()``,
``loss.backward()`` or the return of a step's closure. ``"warn"`` issues a
:class:`GradientMisuseWarning` pointing at that line instead (for a ZG003, at the
``zero_grad()`` that discarded, when a guarded optimizer's made the clear); ``"record"`` only
collects. Every mode collects :class:`Finding` records (``.code``, ``.message``, ``.optimizer``,
``.parameters``, ``.at``) in ``g.findings``, each distinct finding once. In a test, run a few iterations
of the training loop inside ``with runtime.guard(optimizer):`` and the test fails with the
finding's message; or pass ``on_error="record"`` and assert on ``{f.code for f in g.findings}``.
Importing this module does not import torch; :func:`attach` does (where torch is missing, it
raises a ``ModuleNotFoundError`` that says what to install).

The state kept
--------------
For each parameter of the guarded optimizers: the *fresh* contributions in its ``.grad``
(backward passes since the last clear that no step has applied), and whether it holds *applied*
ones (a step used them and no clear followed): the FRESH and CONSUMED states of
docs/contract.md, "States".

Tensors updated by hand are a gradient set of their own, named ``"hand-written"``: those given as
``params``, and under :func:`guard_all` every leaf a backward pass reaches (found by walking its
graph) that no guarded optimizer holds. For these the guard also keeps a copy of each value.
:func:`guard_all` replaces ``torch.optim.Optimizer.__init__`` and ``torch.autograd.backward``
until the block ends, to see optimizers made and backward passes started.

How each event is observed
--------------------------
ACCUMULATE: on each parameter, ``Tensor.register_hook`` runs before a backward pass adds into
``.grad``, ``register_post_accumulate_grad_hook`` after. The first hook of a pass opens it:
records the user's call stack and queues an autograd-engine callback that closes the pass.
``torch.autograd.grad`` runs only the first kind of hook: it accumulates nothing, and counts
for nothing.

STEP: ``register_step_pre_hook`` and ``register_step_post_hook`` on each optimizer. A step that
``GradScaler.step`` skips for inf/nan runs no hook: it is no step. For ``step(closure)`` the
pre-hook wraps the closure: each evaluation after the first marks what the one before left in
``.grad`` as applied.

An update by hand (``w -= lr * w.grad``, ``p.data.add_(p.grad, alpha=-lr)``) runs no hook: it is
inferred when a pass opens, from each tensor updated by hand against its copy. A changed value
applied what ``.grad`` held, and came before any clear (after a clear nothing is left to apply).
A tensor written (its version counter moved) but left as it was, while its ``.grad`` was
cleared, was updated after the clear, with nothing.

CLEAR: inferred, not hooked: a ``.grad`` that is None or all zeros where the guard knew of
contributions was cleared. That covers every spelling: ``zero_grad()`` with either
``set_to_none``, ``model.zero_grad()``, ``p.grad = None``, ``p.grad = torch.zeros_like(p)``,
``p.grad.zero_()``, ``p.grad.data.zero_()``, ``torch._foreach_zero_``. In-place edits that
leave anything non-zero are not clears: ``clip_grad_norm_`` and ``GradScaler.unscale_``
rescale, masking zeroes rows. The version counter of the tensor cannot tell edits from clears
(``clip_grad_norm_`` bumps it even when its factor is 1; ``p.grad.data.zero_()`` and, on CPU,
``unscale_`` leave it as it was), so the guard reads values: when a pass opens it looks at
every guarded ``.grad`` (nothing else runs until the pass ends), and at a step at the
optimizer's, where it takes a ``.grad`` still the tensor the last pass left, at the same
version, as uncleared.

The findings
------------
ZG001 at a step (for an update by hand: out of the next ``backward()``): some parameter still
holds contributions a step applied. With ``step(closure)`` (LBFGS evaluates the closure several
times per step): a backward in the closure added to what an earlier evaluation, or step, left.

ZG002 at a step (for an update by hand: out of the next ``backward()``): no gradient is left to
apply, and since the guard last looked a clear dropped fresh contributions: the clear sits
between the backward and the step.

ZG003 when a clear dropped fresh contributions of a pass *meant for* a step. A backward
counts toward the sets whose step can follow it (docs/contract.md, "Which set a backward
counts toward"). At run time only one path is seen, so the guard learns it: two passes are
"the same backward" when they come from the same call stack and reach the same optimizers,
and a backward feeds an optimizer once a step of it has
applied the backward's contributions. A dropped pass is reported as soon as its backward is
known to feed the optimizer, else held until (if ever) a step applies the same backward. So in
the DCGAN loop ``errG.backward()`` never feeds ``optD``, and dropping the residue it leaves in
netD is quiet; while in ``zero_grad(); backward(); if (i + 1) % k == 0: step()`` the dropped
backward is the one every k-th step applies: ZG003 at that step. ``accumulation_steps=k > 1``
declares that k backward passes feed each step, so a dropped pass that no step (of any
optimizer) followed before the next pass was an accumulation micro-step: ZG003 at once, out of
the next ``backward()``. Dropping gradients that are all zero or not finite is never reported:
nothing is lost, and GradScaler and skip-on-nan loops drop inf/nan gradients on purpose.

Known limits
------------
- Clears are seen late: when the next pass opens or the optimizer next steps; a clear after the
  last of those is never seen. A gradient edited to all zeros reads as a clear.
  Where a clear was made is known only for a guarded optimizer's ``zero_grad()`` (the guard
  wraps it on the instance while attached); a ZG003 from ``model.zero_grad()`` or
  ``p.grad = None`` says "clear" and points where it was noticed.
- At a step, ``p.grad.data.zero_()`` since the last backward goes unseen: ``.data`` skips the
  version counter the guard trusts there. So no ZG002 for it, and should a second step follow
  with no backward between, a ZG001.
- "All zeros" is a 2-norm of 0: gradients below about 1e-23 read as zeros, above about 1e19 as
  not finite. Either way a finding is missed, never made up.
- The parameters are those of the optimizers' param groups at attach time that required grad.
- On an accelerator, hooks run on a device thread that does not see the caller's Python stack:
  passes are told apart by the optimizers they reach only. Reading a norm syncs with the host.
- Updates by hand are seen when the next pass opens, never after the last one, and findings
  about them come out of that ``backward()``: with ``"raise"``, after the faulty update.
  Any change to the value of a tensor updated by hand counts as an update (decay or clamping
  too: harmless when ``.grad`` is cleared). An update through ``.data`` after a clear leaves
  value and version as they were: unseen, no ZG002. A tensor an optimizer holds is watched
  through that optimizer's steps only, even if it is updated by hand.
- :func:`guard_all` sees the optimizers made in the block, with the param groups they have when
  ``Optimizer.__init__`` returns; those made before it are not guarded, and their parameters
  count as updated by hand. It does not see a backward through a ``torch.autograd.backward``
  imported before the block. It keeps every leaf it meets until the block ends: inputs made to
  require grad on each iteration pile up, a copy each, compared at every pass.
- Training must run on one thread: the hooks share unsynchronised state.
- Cost per pass: two Python hooks per parameter, one batched norm of the gradients at its end,
  and, for loops that zero in place, a norm per gradient when it opens; per step: a norm per
  gradient edited since the pass (clipping). benchmarks/guard_overhead.py measures it. For
  tensors updated by hand, a comparison with the copy per pass and a new copy per update; under
  :func:`guard_all`, a walk of the graph per ``backward()``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from zerograd_lint.runtime._findings import (
    Finding,
    GradientMisuseError,
    GradientMisuseWarning,
    OnError,
)

if TYPE_CHECKING:
    from torch import Tensor
    from torch.optim import Optimizer

    from zerograd_lint.runtime._guard import Guard
    from zerograd_lint.runtime._state import Models

__all__ = [
    "Finding",
    "GradientMisuseError",
    "GradientMisuseWarning",
    "Guard",
    "attach",
    "guard",
    "guard_all",
]


def attach(
    *optimizers: Optimizer,
    params: Iterable[Tensor] | None = None,
    models: Models | None = None,
    names: Sequence[str] | None = None,
    on_error: OnError = "raise",
    accumulation_steps: int = 1,
) -> Guard:
    """Start watching ``optimizers`` and their parameters; ``Guard.detach()`` stops.

    ``params`` are tensors updated by hand (``p -= lr * p.grad``); one that a given optimizer
    holds is watched through that optimizer's steps instead.
    ``models`` (a module, several, or a mapping of prefixes to modules) names the parameters in
    messages, ``names`` the optimizers (one name each). ``accumulation_steps`` is the number of
    backward passes meant to feed each step.
    """
    Guard = _guard_class()

    return Guard(
        optimizers,
        params=None if params is None else list(params),
        models=models,
        names=names,
        on_error=on_error,
        accumulation_steps=accumulation_steps,
    )


@contextlib.contextmanager
def guard(
    *optimizers: Optimizer,
    params: Iterable[Tensor] | None = None,
    models: Models | None = None,
    names: Sequence[str] | None = None,
    on_error: OnError = "raise",
    accumulation_steps: int = 1,
) -> Iterator[Guard]:
    """:func:`attach` for the duration of a ``with`` block."""
    attached = attach(
        *optimizers,
        params=params,
        models=models,
        names=names,
        on_error=on_error,
        accumulation_steps=accumulation_steps,
    )
    try:
        yield attached
    finally:
        attached.detach()


@contextlib.contextmanager
def guard_all(*, on_error: OnError = "raise", accumulation_steps: int = 1) -> Iterator[Guard]:
    """Guard everything that trains in the ``with`` block, all detached when it ends.

    Every optimizer constructed in the block is guarded, named by class and order (``"SGD #0"``),
    and so is every tensor a backward pass in it accumulates into that none of them holds, as
    updated by hand.
    """
    Guard = _guard_class()

    attached = Guard(
        (),
        params=None,
        models=None,
        names=None,
        on_error=on_error,
        accumulation_steps=accumulation_steps,
        watch_all=True,
    )
    try:
        yield attached
    finally:
        attached.detach()


def __getattr__(name: str) -> object:
    if name == "Guard":  # imports torch, so only on demand
        return _guard_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _guard_class() -> type[Guard]:
    """``Guard``, whose module imports torch; where torch is missing, an error that says what to install."""
    try:
        from zerograd_lint.runtime._guard import Guard
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "torch":
            raise
        raise ModuleNotFoundError(f"{__name__} needs torch, which is not installed: pip install torch",
                                  name="torch") from None
    return Guard
