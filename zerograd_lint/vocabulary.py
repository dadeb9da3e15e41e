"""The words training code uses: which names read as optimizers, schedulers, models, harmless calls.

Everything here is data or a pure test on a name. `classifier.py` decides what a call *does*; this
module only knows what things are *called*. A new spelling of an optimizer class, a scheduler
factory or a logging call goes here.
"""

from __future__ import annotations

import re

from zerograd_lint.frameworks import apex, mmengine

# The kinds of object the analysis tells apart (`bindings.kinds` tells which a key stands for).
OPTIMIZER = "optimizer"
ENGINE = "engine"  # DeepSpeed: its step() clears after stepping
SCHEDULER = "scheduler"
SCALER = "scaler"
ACCELERATOR = "accelerator"
ENV = "env"
OTHER = "other"
UNKNOWN = "unknown"

# The calls the analysis knows by name and what each does to gradients. The prefilter's cues
# (`prefilter/`), the survey's sets (`survey.py`) and the event classifier (`classifier.py`) all read this
# one table, so that a spelling learnt once is known everywhere (`tests/test_vocabulary.py`).
ACCUMULATES = "accumulates"  # adds into .grad
STEPS = "steps"  # applies .grad (of an optimizer's parameters)
CLEARS = "clears"  # sets .grad to None or zero
UPDATES = "updates"  # accumulates, steps and clears in one call (mmengine)
CALLS: dict[str, str] = {
    "backward": ACCUMULATES,  # loss.backward(), accelerator.backward(loss), torch.autograd.backward(t)
    "manual_backward": ACCUMULATES,  # Lightning
    "step": STEPS,  # optimizer.step(), scaler.step(optimizer), engine.step()
    "optimizer_step": STEPS,  # torch_xla's xm.optimizer_step(optimizer)
    "zero_grad": CLEARS,  # optimizer.zero_grad(), model.zero_grad()
    "_foreach_zero_": CLEARS,  # torch._foreach_zero_(grads)
    mmengine.UPDATE_METHOD: UPDATES,  # mmengine's optim_wrapper.update_params(loss)
}
# The attribute (`p.grad = None`, `p.grad.zero_()`, `w -= lr * w.grad`), and its private spelling,
# which skips the setter's checks: A3C code hands a worker's gradients to the shared model with
# `shared_param._grad = param.grad`
GRADIENTS = frozenset({"grad", "_grad"})
# Calls that step (or clear) the optimizer they are given, whatever their receiver.
STEPS_WHAT_IT_IS_GIVEN = frozenset({"optimizer_step"})


def calls_that(*effects: str) -> frozenset[str]:
    """The known call names with one of these effects."""
    return frozenset(name for name, effect in CALLS.items() if effect in effects)


# Classes and factories whose result is an optimizer (matched on the last component of the callee).
OPTIMIZER_CLASSES = frozenset(
    {
        "SGD", "Adam", "AdamW", "Adamax", "Adagrad", "Adadelta", "ASGD", "LBFGS", "NAdam",
        "RAdam", "RMSprop", "Rprop", "SparseAdam", "Adafactor", "Muon", "Lion", "LAMB", "Lamb",
        "LARS", "Shampoo", "SophiaG", "Prodigy", "DAdaptAdam", "AdaBelief", "Ranger", "Lookahead",
        "DeepSpeedCPUAdam", "ZeroRedundancyOptimizer",
        "DistributedOptimizer", "PostLocalSGDOptimizer", "ScheduleFreeAdamW", "AdamW8bit",
        "Adam8bit", "PagedAdamW", "PagedAdamW8bit",
    }
) | apex.FUSED_OPTIMIZERS | mmengine.OPTIMIZER_WRAPPERS
# Optimizers that evaluate step()'s closure more than once per step; the others call it once.
CLOSURE_REEVALUATING = frozenset({"LBFGS"})
_OPTIMIZER_FACTORY = re.compile(
    r"(?i)^(create|build|make|get|init|setup|configure|load)_?optim(izer|iser)?s?$|^configure_optimizers$"
)

# Schedulers and other objects with a `.step()` that is not an optimizer step.
_SCHEDULER_CALLEE = re.compile(
    r"(?i)(sched|scheduler|schedule_with_warmup|_schedule$|LR$|^ReduceLROnPlateau$|^SWALR$)"
)
_NOT_OPTIMIZER_NAME = re.compile(
    r"(?i)(sched|scheduler|warmup|^env|env$|_env_|^envs$|environment|^prof(iler)?$|profiler|"
    r"^ema$|^ema_|_ema$|noise|sampler|^timer$|^stepper$|^pbar$|^progress|^bar$|^counter$)"
)
ENV_FACTORIES = frozenset({"make", "make_vec", "make_vec_env", "SyncVectorEnv", "AsyncVectorEnv"})

_OPT_TOKENS = frozenset(
    {"opt", "opts", "optim", "optims", "optimizer", "optimizers", "optimiser", "optimisers"}
)
_CAMEL = re.compile(r"_|(?<=[a-z0-9])(?=[A-Z])")

# Names that read as modules (models) whose parameters an optimizer may hold.
_MODEL_TOKENS = frozenset(
    {
        "model", "models", "net", "nets", "network", "module", "modules", "encoder", "decoder",
        "generator", "discriminator", "critic", "actor", "policy", "backbone", "head", "classifier",
        "layer", "layers", "transformer", "unet", "vae", "gpt", "bert", "g", "d", "disc", "gen",
        "mlp", "cnn", "rnn", "lstm", "student", "teacher", "agent", "q", "qnet", "embedding",
    }
)

# Methods that never clear gradients, whatever object they are called on.
HARMLESS_METHODS = frozenset(
    {
        # nn.Module housekeeping and forward
        "forward", "train", "eval", "to", "cuda", "cpu", "half", "float", "double", "bfloat16",
        "parameters", "named_parameters", "buffers", "named_buffers", "modules", "children",
        "named_modules", "named_children", "state_dict", "load_state_dict", "requires_grad_",
        "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
        "register_buffer", "register_parameter", "get_submodule", "extra_repr", "apply",
        # optimizers, schedulers and scalers (the events themselves are classified before this list)
        "param_groups", "add_param_group", "unscale_", "update", "scale", "get_scale",
        "get_last_lr", "get_lr", "clip_grad_norm_", "clip_grad_value_", "clip_gradients", "clip_grad_norm",
        "multiply_grads", "unscale_grads", "consolidate_state_dict",
        # logging, metrics, progress
        "log", "log_dict", "log_metrics", "log_hyperparams", "info", "debug", "warning", "warn",
        "error", "exception", "print", "write", "flush", "add_scalar", "add_scalars",
        "add_histogram", "add_image", "add_images", "add_figure", "add_text", "add_graph",
        "set_postfix", "set_postfix_str", "set_description", "refresh", "close", "append",
        "extend", "item", "tolist", "numpy", "detach", "clone", "mean", "sum", "size", "dim",
        "backward_hook", "wait", "barrier", "synchronize", "all_reduce", "gather", "reduce",
        "join", "format", "keys", "values", "items", "get", "pop", "copy", "reset", "record",
        "compute", "save", "save_state", "save_model", "save_pretrained", "wait_for_everyone",
        "gather_for_metrics", "unwrap_model", "is_main_process", "print_trainable_parameters",
        # Lightning, Accelerate, Fabric getters and bookkeeping
        "optimizers", "lr_schedulers", "toggle_optimizer", "untoggle_optimizer", "all_gather",
        "save_hyperparameters", "no_backward_sync", "accumulate", "autocast", "no_sync",
    }
) | apex.HARMLESS_METHODS

# Plain functions (matched on the last component of the callee) that never clear gradients.
_HARMLESS_FUNCTION = re.compile(
    r"(?i)^(print|len|range|enumerate|zip|map|filter|isinstance|issubclass|hasattr|getattr|"
    r"setattr|iter|next|min|max|sum|abs|round|int|float|str|repr|bool|list|dict|set|tuple|"
    r"sorted|reversed|any|all|open|super|type|id|vars|dir|divmod|pow|"
    r"deepcopy|copy|clip_grad_norm_|clip_grad_value_|no_grad|enable_grad|autocast|"
    r"(.*_)?(eval|evaluate|evaluation|validate|validation|val|test|predict|infer|inference|"
    r"sample|generate|save|checkpoint|load|plot|show|display|visuali[sz]e|log|report|summary|"
    r"summari[sz]e|accuracy|metric|metrics|estimate_loss|get_batch|get_lr|lr_lambda|"
    r"set_seed|seed|tqdm|trange|sleep|time|perf_counter)(_.*)?)$"
)
# Modules whose functions never clear gradients (first component of the callee).
HARMLESS_MODULES = frozenset(
    {
        "math", "np", "numpy", "os", "sys", "time", "json", "random", "logging", "logger", "log",
        "wandb", "mlflow", "tensorboard", "writer", "tb_writer", "summary_writer", "pbar",
        "tqdm", "pickle", "shutil", "itertools", "functools", "collections", "re", "pathlib",
        "warnings", "datetime", "F", "nn", "dist", "xm", "plt", "string", "operator",
    }
)


# Frameworks whose backward, step and zero_grad are not PyTorch's (MXNet's backward overwrites by
# default; Paddle clears with clear_grad()). A file that imports one of them and not torch is skipped.
OTHER_FRAMEWORKS = ("mxnet", "tensorflow", "jax", "flax", "paddle", "mindspore", "oneflow", "keras", "chainer", "tinygrad", "mlx")


def tokens(name: str) -> list[str]:
    """The lower-cased words of a name: `reset_grads` and `resetGrads` give reset, grads."""
    return [t.lower() for t in _CAMEL.split(name) if t]


# A call the analysis cannot see into clears only when its name says so (docs/contract.md,
# "What a name says"): it contains `zero_grad`, or `zero`, `clear`, `reset` or `free` together
# with `grad`.
_CLEARING = frozenset({"zero", "zeros", "clear", "clears", "reset", "resets", "free", "frees"})
_GRADIENTS = frozenset({"grad", "grads", "gradient", "gradients"})
# what a gradient word names when followed by one of these: not the gradients themselves
_NOT_THE_GRADIENTS = frozenset({"scaler", "hook", "hooks", "norm", "norms", "ratio", "clip", "fn", "mode"})
# Names that say a call given the optimizer leaves its gradients alone: learning rates, schedules,
# logging, saving and loading, losses and contexts (`self.loss_fn(out, y)`, `with self.train_context():`).
_SAYS_HARMLESS = re.compile(
    r"(?i)(^|_)lr($|_)|learning_rate|schedul|^_*log(_|$|ging)|^_*save(_|$)|^_*load(_|$)|checkpoint|^state_dict$"
    r"|^_*print|^_*(get|set)_lr|^loss(es)?(_|$)|^compute_loss(es)?$|loss_fn$|criterion|^(train_|eval_)?context$|(^|_)ctx$"
)


def says_clears(name: str) -> bool:
    """`reset_grads`, `zero_gradients`, `clear_grad`, `free_grads`, `zero_grad`; not `freeze_grads`,
    `reset_grad_scaler` nor `clear_grad_hooks`."""
    if "zero_grad" in name.lower() or "zerograd" in name.lower():
        return True
    words = tokens(name)
    for i, word in enumerate(words):
        if word in _GRADIENTS and not (i + 1 < len(words) and words[i + 1] in _NOT_THE_GRADIENTS):
            # the verb before its object (`reset_grads`), or last (`grads_reset`)
            return any(w in _CLEARING for w in words[:i]) or words[-1] in _CLEARING
    return False


def says_harmless(name: str) -> bool:
    """`adjust_learning_rate`, `update_lr`, `step_scheduler`, `log_metrics`, `save_checkpoint`, ..."""
    return bool(_SAYS_HARMLESS.search(name)) or name in HARMLESS_METHODS or is_harmless_function(name)


def reads_as_optimizer(name: str) -> bool:
    """`opt`, `optimizer`, `optimizer_g`, `d_opt`, `optD`, `g_optim`, `self.policy.optimizer`..."""
    if _NOT_OPTIMIZER_NAME.search(name):
        return False
    lower = name.lower()
    if lower.startswith("optimi") or lower.endswith(("optimizer", "optimiser")):
        return True
    return any(t in _OPT_TOKENS for t in tokens(name))


def reads_as_not_optimizer(name: str) -> bool:
    """A scheduler, an environment, a profiler, an EMA: their `.step()` never is an optimizer's."""
    return bool(_NOT_OPTIMIZER_NAME.search(name))


def reads_as_model(name: str) -> bool:
    return any(t in _MODEL_TOKENS for t in tokens(name)) or name.lower().endswith(
        ("model", "net", "module")
    )


def is_optimizer_callee(last: str, dotted: str) -> bool:
    if is_scheduler_callee(last, dotted):
        return False
    if last in OPTIMIZER_CLASSES or _OPTIMIZER_FACTORY.match(last):
        return True
    parts = dotted.split(".")
    return "optim" in parts[:-1] and last[:1].isupper() or last.endswith(("Optimizer", "Optimiser"))


def is_scheduler_callee(last: str, dotted: str) -> bool:
    return "lr_scheduler" in dotted.split(".") or bool(_SCHEDULER_CALLEE.search(last))


def is_harmless_function(last: str) -> bool:
    return bool(_HARMLESS_FUNCTION.match(last))
