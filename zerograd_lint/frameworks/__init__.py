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

A module here imports LibCST only where its code runs on LibCST's trees, never at its top: the
first look (`survey`), which never imports LibCST, reads some of them. A new framework is a module
here, consulted where its knowledge is needed, and its fixtures in `tests/fixtures/frameworks/<name>/`.
"""
