"""DeepSpeed: `engine, optimizer, *_ = deepspeed.initialize(...)` makes an engine, whose
`backward(loss)` is a backward and whose `step()` steps and then clears (the engine zeroes the
gradients itself: no `zero_grad` is missing after it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerograd_lint.vocabulary import ENGINE, OPTIMIZER

if TYPE_CHECKING:
    import libcst as cst

    from zerograd_lint.bindings.keys import Frame, Key
    from zerograd_lint.events import Event

ANNOTATIONS = {"DeepSpeedEngine": ENGINE}
NAMES = {"engine": ENGINE, "model_engine": ENGINE, "ds_engine": ENGINE, "deepspeed_engine": ENGINE}
# what `deepspeed.initialize(...)` gives, by the place in the tuple
INITIALIZED = {(0,): ENGINE, (1,): OPTIMIZER}


def initializes(callee: str, frame: Frame) -> bool:
    """`deepspeed.initialize(...)`, or `initialize(...)` imported from DeepSpeed."""
    return callee.endswith("deepspeed.initialize") or (
        callee == "initialize" and "deepspeed" in str(frame.scope.lookup_import("initialize"))
    )


def step_event(keys: tuple[Key, ...], receiver: cst.BaseExpression) -> Event:
    """`engine.step()`: a step that clears after stepping (the engine handles accumulation)."""
    from zerograd_lint.events import STEP_CLEAR, Event  # (the bindings read this module, and events read them)

    return Event(STEP_CLEAR, keys, receiver)
