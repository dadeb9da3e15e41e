"""Lightning Fabric: a `Fabric` is an accelerator (`fabric.backward(loss)` is a backward) whose
`setup` calls give back what they are given, as Accelerate's `prepare` does."""

from __future__ import annotations

from zerograd_lint.vocabulary import ACCELERATOR

CLASSES = {"Fabric": ACCELERATOR}
NAMES = {"fabric": ACCELERATOR}
SETUP_METHODS = frozenset({"setup", "setup_optimizers", "setup_module"})
