"""Catch gradient misuse while training runs: the run-time side of zerograd-lint's rules.

Usage::

    from zerograd_lint import runtime

    with runtime.guard(optimizer, models=model) as g:   # or g = runtime.attach(...) ... g.detach()
        train()

With ``on_error="raise"`` (the default) a :class:`GradientMisuseError` (``.code``, ``.findings``) comes
out of the call where the misuse became certain: ``optimizer.step()``, ``loss.backward()`` or the
closure's return. ``"warn"`` issues a :class:`GradientMisuseWarning` pointing at that line instead, and
``"record"`` only collects. Every mode collects :class:`Finding` records (``.code``, ``.message``,
``.optimizer``, ``.parameters``) in ``g.findings``, each distinct finding once. In a test, run a few
iterations of the training loop inside ``with runtime.guard(optimizer):`` and the test fails with the
finding's message; or use ``on_error="record"`` and assert on ``{f.code for f in g.findings}``.
Importing this module does not import torch: :func:`attach` does.

The state kept
--------------
For each parameter of the guarded optimizers: the *fresh* contributions in its ``.grad`` (backward passes
since the last clear that no step has applied), and whether it holds *applied* ones (a step used them and
no clear followed). These are the FRESH and CONSUMED states of rules.md; CLEAN is neither.

How each event is observed
--------------------------
ACCUMULATE: on each parameter, ``Tensor.register_hook`` runs before a backward pass adds into ``.grad``
(which still shows what was there) and ``register_post_accumulate_grad_hook`` after. The first hook of a
pass opens it, records the user's call stack and queues an autograd-engine callback that closes it.
``torch.autograd.grad`` runs the first hook only: it accumulates nothing and counts for nothing.

STEP: ``register_step_pre_hook`` / ``register_step_post_hook`` on each optimizer. A step that
``GradScaler.step`` skips for inf/nan runs no hook: it is no step. For ``step(closure)`` the pre-hook wraps
the closure: each evaluation after the first marks what the previous one left in ``.grad`` as applied.

CLEAR: inferred, not hooked. Whenever the guard looks at a parameter (in its backward hook, and for every
parameter of an optimizer at its step), a ``.grad`` that is None or all zeros was cleared since it last
looked. That covers every spelling: ``zero_grad()`` with either ``set_to_none``, ``model.zero_grad()``,
``p.grad = None``, ``p.grad.zero_()``, ``p.grad.data.zero_()``, ``torch._foreach_zero_``. In-place edits
that leave anything non-zero are not clears: ``clip_grad_norm_`` and ``GradScaler.unscale_`` rescale,
masking zeroes some rows. The tensor's version counter cannot tell them apart: every one of them bumps it
(``clip_grad_norm_`` even when its factor is 1), and ``p.grad.data.zero_()`` does not bump it at all.

The findings
------------
ZG001 at a step: some parameter still holds contributions a step applied. With ``step(closure)``: a
backward in the closure added to what an earlier evaluation (or step) left; LBFGS evaluates the closure
several times per step.

ZG002 at a step: nothing is left to apply and, since the parameters were last seen, a clear dropped fresh
contributions: the clear sits between the backward and the step.

ZG003 when a clear dropped fresh contributions of a pass *meant for* a step. rules.md: "a backward counts
toward the set(s) whose step can follow it". At run time only one path is seen, so the guard learns it:
two passes are "the same backward" when they come from the same call stack and reach the same optimizers,
and a backward feeds an optimizer once a step of that optimizer has applied its contributions. A discard
is reported as soon as its backward is known to feed the optimizer, else held until (if ever) a step
applies the same backward. So in the DCGAN loop, ``errG.backward()`` never feeds ``optD``, and the residue
it leaves in netD that ``netD.zero_grad()`` drops is quiet; in ``zero_grad(); backward(); if (i + 1) % k
== 0: step()`` the dropped backward is the one every k-th step applies: ZG003 at that step.
``accumulation_steps=k`` (k > 1) declares that k backward passes feed each step: then a dropped pass that
no step of any optimizer followed before the next pass was an accumulation micro-step, and the drop is
ZG003 at once, from the next ``backward()``. Dropping gradients that are all zero or not finite is never
reported: nothing is lost, and GradScaler or skip-on-nan loops drop inf/nan gradients on purpose.

Known limits
------------
- Clears are seen late: at the parameter's next backward or its optimizer's next step. A clear after the
  last of those is never seen. A gradient edited to all zeros reads as a clear.
- The parameters are those in the optimizers' param groups at attach time that required grad then.
- On an accelerator, hooks run on a device thread that does not see the caller's Python stack: passes are
  told apart only by the optimizers they reach. Reading whether ``.grad`` is zero syncs with the host.
- Hand-written updates (``p.data -= lr * p.grad``) are no steps to the guard. Training must run on one
  thread: the hooks share unsynchronised state.
- Cost: two Python hooks per parameter per pass, a max-|grad| reduction per parameter at the end of each
  pass and at each step (benchmarks/guard_overhead.py measures it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from zerograd_lint.runtime._findings import Finding, GradientMisuseError, GradientMisuseWarning, OnError

if TYPE_CHECKING:
    from torch.optim import Optimizer

    from zerograd_lint.runtime._guard import Guard, Models

__all__ = ["Finding", "GradientMisuseError", "GradientMisuseWarning", "Guard", "attach", "guard"]


def attach(
    *optimizers: Optimizer,
    models: Models | None = None,
    names: Sequence[str] | None = None,
    on_error: OnError = "raise",
    accumulation_steps: int = 1,
) -> Guard:
    """Start watching ``optimizers`` and their parameters; ``Guard.detach()`` stops.

    ``models`` (a module, several, or a mapping of prefixes to modules) names the parameters in
    messages; ``names`` names the optimizers, one per optimizer; ``accumulation_steps`` is the number of
    backward passes meant to feed each step.
    """
    from zerograd_lint.runtime._guard import Guard

    return Guard(
        optimizers,
        models=models,
        names=names,
        on_error=on_error,
        accumulation_steps=accumulation_steps,
    )


@contextlib.contextmanager
def guard(
    *optimizers: Optimizer,
    models: Models | None = None,
    names: Sequence[str] | None = None,
    on_error: OnError = "raise",
    accumulation_steps: int = 1,
) -> Iterator[Guard]:
    """:func:`attach` for the duration of a ``with`` block."""
    attached = attach(
        *optimizers,
        models=models,
        names=names,
        on_error=on_error,
        accumulation_steps=accumulation_steps,
    )
    try:
        yield attached
    finally:
        attached.detach()


def __getattr__(name: str) -> object:
    if name == "Guard":  # imports torch, so only on demand
        from zerograd_lint.runtime._guard import Guard

        return Guard
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
