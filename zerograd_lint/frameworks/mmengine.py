"""OpenMMLab's mmengine: `optim_wrapper.update_params(loss)` runs the backward, steps and clears
in one call (an UPDATE event, `events`), and its optimizer wrappers are optimizers. Both spellings
go into the one vocabulary (`vocabulary.CALLS`, `vocabulary.OPTIMIZER_CLASSES`), which every stage
reads: this module imports nothing, so that the vocabulary can read it."""

from __future__ import annotations

UPDATE_METHOD = "update_params"
OPTIMIZER_WRAPPERS = frozenset({"OptimWrapper", "AmpOptimWrapper"})
