"""The call policy for a call whose body the analysis cannot see (docs/contract.md, "Calls whose
body the analysis cannot see"): a function of another package, a method of an object whose class
is not in the project. Most such calls are forward passes, losses, metrics and logging, so it is
a clear only where something says so:

- its name says it clears (`reset_grads(model)`, `self.clear_grad()`): a clear of what it is
  given, for certain;
- its name says it is harmless (`adjust_learning_rate(opt)`, `log_metrics(...)`): nothing;
- it is given an optimizer, or is a method of an object that may hold one, or is given such an
  object (`train_step(model, optimizer)`, `self.trainer_step()`): it *may* clear them (MAY_CLEAR:
  cures staleness, never causes a ZG002 or ZG003);
- otherwise (given a model, its parameters, tensors computed from it): nothing.
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint.bindings import (
    ACCELERATOR, ENGINE, ENV, OPTIMIZER, SCALER, SCHEDULER, Frame, Key, Resolver, last_name, param_root,
)
from zerograd_lint.events import CLEAR, CLEAR_MODELS, MAY_CLEAR, Action, Event
from zerograd_lint.settings import Vocabulary
from zerograd_lint.vocabulary import reads_as_model, says_clears, says_harmless


def unseen_call(
    call: cst.Call, name: str, receiver: list[Key], frame: Frame, resolver: Resolver, vocabulary: Vocabulary,
) -> list[Action]:
    """What the call `name(...)` (a method of `receiver`, if any) does to gradients, its body unseen."""
    if says_clears(name):
        targets = [a.value for a in call.args]
        keys = list(receiver) + [k for t in targets for k in resolver.keys(t, frame)]
        optimizers = tuple(k for k in keys if resolver.info(k).kind == OPTIMIZER)
        if optimizers:
            return [Event(CLEAR, optimizers)]
        return [Event(CLEAR_MODELS, tuple(dict.fromkeys(param_root(k) for k in keys)))] if keys else []
    if says_harmless(name) or name in vocabulary.harmless:
        return []
    given = [k for k in _argument_keys(call, frame, resolver) if _may_hold_optimizer(k, resolver)]
    holder = [k for k in receiver if _may_hold_optimizer(k, resolver)]  # not `model.encode(x)`
    reached = tuple(dict.fromkeys(holder + given))
    return [Event(MAY_CLEAR, reached)] if reached else []


def _may_hold_optimizer(key: Key, resolver: Resolver) -> bool:
    """An argument that is an optimizer, or an object that may hold one (`self`, `trainer`), as
    opposed to a model, its parameters or a tensor: a function given those never clears."""
    kind = resolver.info(key).kind
    if kind == OPTIMIZER:
        return True
    if kind in (SCHEDULER, SCALER, ENV, ACCELERATOR, ENGINE):
        return False
    name = last_name(key)
    return not reads_as_model(name) and not name.endswith("()")


def _argument_keys(call: cst.Call, frame: Frame, resolver: Resolver) -> tuple[Key, ...]:
    """What the arguments refer to; `model.parameters()` is `model`."""
    out: list[Key] = []
    for arg in call.args:
        value = arg.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("parameters", "named_parameters"):
            value = value.func.value
        out.extend(resolver.keys(value, frame))
    return tuple(dict.fromkeys(out))
