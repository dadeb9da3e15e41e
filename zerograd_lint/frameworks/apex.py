"""NVIDIA apex, and fairseq: apex's fused optimizers are optimizers, and in
`with amp.scale_loss(loss, optimizer) as scaled: scaled.backward()` the backward is a backward like
any other while `scale_loss` itself is bookkeeping; fairseq's `optimizer.backward(loss)` is a
backward too (the call name says so). The spellings go into the one vocabulary
(`vocabulary.OPTIMIZER_CLASSES`, `vocabulary.HARMLESS_METHODS`): this module imports nothing, so
that the vocabulary can read it."""

from __future__ import annotations

FUSED_OPTIMIZERS = frozenset({"FusedAdam", "FusedLAMB", "FusedSGD"})
HARMLESS_METHODS = frozenset({"scale_loss"})
