"""What each framework means in the analysis's terms, one module per framework: the kinds of the
objects its API makes, the events its calls are, the functions it runs once per batch, and the
gates it puts on a step. The binding (`bindings`), survey, event (`events`) and graph (`graphs`)
stages consult them; none of those names a framework otherwise. How a framework's spellings are
classified (`backward`, `manual_backward`, `update_params`) is in the one vocabulary
(`vocabulary.CALLS`).

- `accelerate`: `Accelerator`, what `prepare` gives back, the `accumulate()` gate;
- `fabric`: `Fabric`, an accelerator, and its `setup` calls;
- `deepspeed`: the engine `deepspeed.initialize` makes, whose `step()` clears;
- `lightning`: `training_step` with manual optimization, `self.optimizers()`;
- `ignite`: the process function an `Engine` runs once per batch;
- `mmengine`: `optim_wrapper.update_params(loss)`;
- `amp`: `GradScaler`, whose `step(opt)` steps `opt`;
- `apex`: apex's fused optimizers and `amp.scale_loss`, fairseq's `optimizer.backward(loss)`;
- `distributed_autograd`: a backward into a distributed autograd context, not `.grad`.

A new framework is a module here, its tables added below, and its fixtures in
`tests/fixtures/frameworks/<name>/`.
"""

from __future__ import annotations

# (the modules holding the tables below, none of which imports LibCST: the first look reads
# this package too; the others are imported where they are consulted)
from zerograd_lint.frameworks import accelerate, amp, deepspeed, fabric

__all__ = ["KIND_OF_ANNOTATION", "KIND_OF_CLASS", "KIND_OF_NAME", "PREPARE_METHODS"]

# The classes whose call builds an object of a framework's kind (checked after the optimizers'),
# those an annotation names, and the names that say a kind when nothing else does.
KIND_OF_CLASS = {**amp.CLASSES, **accelerate.CLASSES, **fabric.CLASSES}
KIND_OF_ANNOTATION = {**KIND_OF_CLASS, **deepspeed.ANNOTATIONS}
KIND_OF_NAME = {**deepspeed.NAMES, **amp.NAMES, **accelerate.NAMES, **fabric.NAMES}
# The calls that give back the objects they are given, prepared (Accelerate's and Fabric's).
PREPARE_METHODS = accelerate.PREPARE_METHODS | fabric.SETUP_METHODS
