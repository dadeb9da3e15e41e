"""The kind of a key (optimizer, scheduler, DeepSpeed engine, ...) and what it was built from.

The kind comes from how the object was built (`torch.optim.Adam(...)`, a project function that
returns one, `deepspeed.initialize(...)`), its annotation, or, failing both, from how it is named
(`vocabulary.py`). An optimizer's links (`links.py`) come with its kind when the call that built
it shows them. What the frameworks' APIs make of an object (DeepSpeed, Accelerate and Fabric,
Lightning, GradScaler) is theirs to say (`zerograd_lint.frameworks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from zerograd_lint import vocabulary
from zerograd_lint.frameworks import accelerate, amp, deepspeed, fabric, lightning
from zerograd_lint.bindings.keys import Frame, Key, last_name, param_root
from zerograd_lint.vocabulary import ACCELERATOR, ENGINE, ENV, OPTIMIZER, OTHER, SCALER, SCHEDULER, UNKNOWN
from zerograd_lint.bindings.names import bind_arguments, returns
from zerograd_lint.scopes import Path, dotted_name



# What the frameworks make (`zerograd_lint.frameworks`): the classes whose call builds an object of
# a framework's kind (checked after the optimizers'), those an annotation names, the names that say
# a kind when nothing else does, and the calls that give back the objects they are given, prepared.
KIND_OF_CLASS = {**amp.CLASSES, **accelerate.CLASSES, **fabric.CLASSES}
KIND_OF_ANNOTATION = {**KIND_OF_CLASS, **deepspeed.ANNOTATIONS}
KIND_OF_NAME = {**deepspeed.NAMES, **amp.NAMES, **accelerate.NAMES, **fabric.NAMES}
PREPARE_METHODS = accelerate.PREPARE_METHODS | fabric.SETUP_METHODS

@dataclass(frozen=True)
class Info:
    kind: str
    links: frozenset[Key] = frozenset()
    links_known: bool = False
    reevaluates_closure: bool = False  # LBFGS calls step()'s closure several times per step


class Kinds:
    """Resolver part: the kind of each key and, for an optimizer, its links (memoised by key), read
    from the bindings `Aliases` and `Classes` give; the links themselves are found by `Links`."""

    def __init__(self) -> None:
        super().__init__()
        self._info: dict[Key, Info] = {}
        self._factories: set[cst.FunctionDef] = set()

    def info(self, key: Key) -> Info:
        if key not in self._info:
            self._info[key] = Info(UNKNOWN)  # cycle guard
            self._info[key] = self._compute_info(key)
        return self._info[key]

    def _compute_info(self, key: Key) -> Info:
        kinds: list[str] = []
        links: set[Key] = set()
        known = False
        bindings = self.bindings_of(key)
        for binding, frame in bindings:
            if binding.annotation is not None:
                kinds.append(_kind_of_annotation(dotted_name(binding.annotation) or ""))
            if binding.value is not None:
                kind, found = self._kind_of_value(binding.value, binding.path, frame)
                kinds.append(kind)
                if found is not None:
                    known = True
                    links |= found
        for kind in (OPTIMIZER, ENGINE, SCALER, ACCELERATOR, SCHEDULER, ENV):
            if kind in kinds:
                repeats = any(
                    isinstance(b.value, cst.Call)
                    and (dotted_name(b.value.func) or "").rsplit(".", 1)[-1] in vocabulary.CLOSURE_REEVALUATING
                    for b, _ in bindings
                )
                return Info(kind, frozenset(self.expand(links)), known and kind == OPTIMIZER, repeats)
        name = last_name(key)
        if name in self.vocabulary.optimizers:
            return Info(OPTIMIZER)
        if vocabulary.reads_as_not_optimizer(name):
            return Info(SCHEDULER if "sched" in name.lower() else OTHER)
        if vocabulary.reads_as_optimizer(name):
            return Info(OPTIMIZER)
        if name.lower() in KIND_OF_NAME:
            return Info(KIND_OF_NAME[name.lower()])
        return Info(OTHER if kinds else UNKNOWN)

    def _kind_of_value(self, value: cst.BaseExpression, path: Path, frame: Frame) -> tuple[str, set[Key] | None]:
        if isinstance(value, cst.IfExp):
            for branch in (value.body, value.orelse):
                kind, links = self._kind_of_value(branch, path, frame)
                if kind != UNKNOWN:
                    return kind, links
            return UNKNOWN, None
        if isinstance(value, cst.BooleanOperation):
            return self._kind_of_value(value.right, path, frame)
        if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)) and not path:
            for key in self.keys(value, frame):
                info = self.info(key)
                if info.kind != UNKNOWN:
                    return info.kind, (set(info.links) if info.links_known else None)
            return UNKNOWN, None
        if not isinstance(value, cst.Call):
            return UNKNOWN, None
        factory = self._factory(value, frame, path)
        if factory is not None:
            return factory
        callee = self.qualified(value.func, frame)
        last = callee.rsplit(".", 1)[-1]
        if deepspeed.initializes(callee, frame):
            return deepspeed.INITIALIZED.get(path[:1], OTHER), None
        if path and "optim" in last.lower():  # `opt, sched = model.optimizer_scheduler()`: the names tell
            return UNKNOWN, None
        if vocabulary.is_scheduler_callee(last, callee):
            return SCHEDULER, None
        if lightning.optimizers_call(value, last):
            return OPTIMIZER, None
        if vocabulary.is_optimizer_callee(last, callee):
            return OPTIMIZER, self._optimizer_links(value, last, frame)
        if last in KIND_OF_CLASS:
            return KIND_OF_CLASS[last], None
        if last in vocabulary.ENV_FACTORIES and callee.split(".")[0] in ("gym", "gymnasium", "envs"):
            return ENV, None
        if last.endswith("Env"):
            return ENV, None
        return OTHER, None

    def _factory(self, call: cst.Call, frame: Frame, path: Path = ()) -> tuple[str, set[Key] | None] | None:
        """A project function that returns an optimizer (`build_optimizer(cfg, model)`), or one in
        the tuple it returns (`model, opt = setup(...)`, with `path` its place): its result is one,
        linked to what the caller passed for the parameters it was built from (or to what the
        function built it from, when that is its own)."""
        func = call.func
        found = None
        if isinstance(func, cst.Name):
            found = self.function(func.value, frame)
        elif isinstance(func, cst.Attribute):
            found = self.module_function(func, frame)
        if found is None or found[1] in self._factories:
            return None
        scope, definition = found
        self._factories.add(definition)  # recursion guard
        try:
            subst = {name: keys for name, value in bind_arguments(call, definition).items() if (keys := self.keys(value, frame))}
            inner = Frame(scope, subst, None, frame.cls if scope.self_name else None)
            kinds: set[str] = set()
            found_kind: tuple[str, set[Key] | None] | None = None
            for returned in returns(definition):
                if path and isinstance(path[0], int):
                    if not (isinstance(returned, (cst.Tuple, cst.List)) and path[0] < len(returned.elements)):
                        continue
                    returned = returned.elements[path[0]].value
                kind, links = self._kind_of_value(returned, path[1:], inner)
                kinds.add(kind)
                if kind == OPTIMIZER and links and all(self._gathered(link) for link in links):
                    # built from lists the factory filled itself (yolov5's smart_optimizer sorts
                    # `model.modules()` into them): linked to the models it was given
                    links = {k for keys in subst.values() for k in keys if vocabulary.reads_as_model(last_name(k))}
                    links = links or None
                if kind in (OPTIMIZER, ENGINE, SCHEDULER) and found_kind is None:
                    found_kind = kind, links
            if found_kind is not None and {OPTIMIZER, SCHEDULER} <= kinds:
                return None  # an optimizer or a scheduler, as asked (`scheduler=...`): the name says which
            return found_kind
        finally:
            self._factories.discard(definition)

    def _gathered(self, key: Key) -> bool:
        """A local bound only to empty containers (`g = [], [], []`), filled by the code after."""
        bindings = self._values.get(param_root(key), [])
        return bool(bindings) and all(
            isinstance(b.value, (cst.List, cst.Tuple, cst.Set)) and all(
                isinstance(e.value, (cst.List, cst.Tuple, cst.Set)) and not e.value.elements for e in b.value.elements
            ) or isinstance(b.value, (cst.List, cst.Set)) and not b.value.elements
            for b, _ in bindings
        )


def _kind_of_annotation(text: str) -> str:
    last = text.rsplit(".", 1)[-1]
    if "Scheduler" in last or last.endswith("LR"):
        return SCHEDULER
    if "Optim" in last or last in vocabulary.OPTIMIZER_CLASSES:
        return OPTIMIZER
    return KIND_OF_ANNOTATION.get(last, OTHER)
