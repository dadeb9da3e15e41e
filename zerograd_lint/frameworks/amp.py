"""Automatic mixed precision: a `GradScaler` (or `ShardedGradScaler`, or an object named
`scaler`) is of the kind SCALER: `scaler.scale(loss).backward()` is a backward, and
`scaler.step(opt)` steps `opt` (or skips it, when the gradients are not finite: a deliberate
discard); its other methods are bookkeeping."""

from __future__ import annotations

from zerograd_lint.vocabulary import SCALER

CLASSES = {"GradScaler": SCALER, "ShardedGradScaler": SCALER}
NAMES = {"scaler": SCALER, "grad_scaler": SCALER, "amp_scaler": SCALER}
