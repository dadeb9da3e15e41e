"""What an expression refers to: a key for the object, its kind, and the models an optimizer holds.

A *key* names one object for the analysis: `("optimizer",)` for a module global,
`("train:opt",)` for a local of `train`, `("Trainer.self", "optimizer")` for an attribute of
`self` in class `Trainer`, with `"[*]"` for "an element of". Aliases (`o = self.optimizer`,
`for opt in optimizers`, a parameter bound at an inlined call) resolve to the key of what they
alias, so two spellings of one optimizer meet in one gradient set.

The *kind* of a key (optimizer, scheduler, DeepSpeed engine, ...) comes from how it was built
(`torch.optim.Adam(...)`, `deepspeed.initialize(...)`), its annotation, or, failing both, from
how it is named (`vocabulary.py`). The *links* of an optimizer are the keys of the modules and
tensors whose parameters it was built from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from zerograd_lint import vocabulary, walk
from zerograd_lint.project import REEXPORTS_READ, Module, Project
from zerograd_lint.scopes import ELEMENT, Binding, Path, Scope, dotted_name
from zerograd_lint.settings import Vocabulary

Key = tuple[str, ...]

OPTIMIZER = "optimizer"
ENGINE = "engine"  # DeepSpeed: its step() clears after stepping
SCHEDULER = "scheduler"
SCALER = "scaler"
ACCELERATOR = "accelerator"
ENV = "env"
OTHER = "other"
UNKNOWN = "unknown"

_KEY_METHODS = frozenset({"parameters", "named_parameters", "optimizers", "module"})
PREPARE_METHODS = frozenset({"prepare", "prepare_optimizer", "prepare_model", "setup", "setup_optimizers", "setup_module"})
WRAPPERS = frozenset(
    {"DDP", "DistributedDataParallel", "DataParallel", "FSDP", "FullyShardedDataParallel",
     "compile", "to", "cuda", "cpu", "half", "float", "bfloat16", "unwrap_model", "fully_shard"}
)
# Calls that make a new object with parameters of its own, not an alias of their argument.
_COPIES = frozenset({"deepcopy", "copy", "clone"})
_MAX_DEPTH = 12


@dataclass(frozen=True)
class Info:
    kind: str
    links: frozenset[Key] = frozenset()
    links_known: bool = False
    reevaluates_closure: bool = False  # LBFGS calls step()'s closure several times per step


@dataclass(frozen=True)
class _Made:
    """How an object of a project class was made: the `__init__` that ran, if the call is known,
    and its parameters bound to the call's arguments (their keys in the caller)."""

    cls: Scope
    init: Scope | None
    arguments: dict[str, list[Key]]


@dataclass(eq=False)
class Frame:
    """One active function: its scope, its parameters bound to the caller's keys, and `self`."""

    scope: Scope
    subst: dict[str, list[Key]] = field(default_factory=dict)
    parent: Frame | None = None
    cls: Scope | None = None
    locals: dict[str, list[Key]] = field(default_factory=dict)
    # for a function inlined at a call: each parameter's argument, and the frame that passed it
    arguments: dict[str, cst.BaseExpression] = field(default_factory=dict)
    caller: Frame | None = None

    def child_locals(self, extra: dict[str, list[Key]]) -> Frame:
        return Frame(self.scope, self.subst, self.parent, self.cls, {**self.locals, **extra}, self.arguments, self.caller)


def self_key(cls: Scope) -> Key:
    return (f"{cls.qualname}.self",)


def last_name(key: Key) -> str:
    for part in reversed(key):
        if part.startswith("["):
            continue
        part = part.removesuffix("()")
        return part.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    return ""


def is_prefix(a: Key, b: Key) -> bool:
    return len(a) <= len(b) and b[: len(a)] == a


def related(a: Key, b: Key) -> bool:
    """One object contains the other (`model` and `model.encoder`)."""
    return is_prefix(a, b) or is_prefix(b, a)


def own_key(scope: Scope, name: str) -> Key:
    """The key of a name bound in `scope` (not an alias of something else)."""
    return (f"{scope.qualname}:{name}",)


class Resolver:
    """Keys, kinds and links across the modules of a project, memoised."""

    def __init__(self, project: Project, vocabulary: Vocabulary = Vocabulary()) -> None:
        self.project = project
        self.vocabulary = vocabulary
        self._scopes: dict[cst.CSTNode, Scope] = {}
        self._classes: dict[str, Scope] = {}  # by qualified name
        self._loaded: set[str] = set()
        self._imports: dict[tuple[Scope, str], tuple[Module, str | None] | None] = {}
        self._chains: dict[Scope, list[Scope]] = {}
        self._factories: set[cst.FunctionDef] = set()
        # is an imported module (attribute None) or name of it worth parsing the module for?
        self.wanted = lambda module, name: True
        self._values: dict[Key, list[tuple[Binding, Frame]]] = {}
        self._info: dict[Key, Info] = {}
        self._instance: dict[Key, _Made | None] = {}
        self._bare: dict[Scope, Frame] = {}
        self._memo: dict[tuple[Frame, str], list[Key]] = {}
        self._methods: dict[str, Scope] = {}  # by qualified name, for `_stored_in_self`
        self._methods_of = -1  # how many modules were loaded when `_methods` was made
        self._attr_roots: dict[Key, set[Key]] = {}  # `_attribute_roots`, by key
        self._attr_finding: set[Key] = set()  # the keys `_attribute_roots` is finding now
        self._stored: dict[tuple[Key, int], list[Key]] = {}  # `_stored_in_self`, by key and modules loaded
        self._attr_cycle = False  # it met one of them again: the result found is partial

    # ---------------------------------------------------------------- modules and definitions

    def load(self, module: Module) -> bool:
        """Parse a project module for the analysis; False if LibCST cannot."""
        if module.path in self.project.broken:
            return False
        if module.path not in self._loaded:
            try:
                module.parse()
            except cst.ParserSyntaxError as exc:  # Python's own parser accepted it in the first look
                module.error = (
                    f"LibCST cannot parse it (Python can): {exc.message.splitlines()[0]} "
                    f"at {exc.raw_line}:{exc.raw_column + 1}"
                )
            except (SyntaxError, RecursionError, MemoryError, ValueError) as exc:
                module.error = f"cannot parse: {type(exc).__name__}: {exc}"
            if module.error:
                self.project.broken.add(module.path)
                return False
            self._loaded.add(module.path)
            self._scopes.update(module.scopes)
            for scope in module.scopes.values():
                if scope.kind == "class":
                    self._classes[scope.qualname] = scope
        return True

    def scope_of(self, node: cst.CSTNode) -> Scope:
        return self._scopes[node]

    def imported(self, name: str, frame: Frame) -> tuple[Module, str | None] | None:
        """The project module (and attribute) an imported name stands for, parsed."""
        found = self._origin(name, frame)
        if found is None or not self.wanted(*found) or not self.load(found[0]):
            return None
        return found

    def _origin(self, name: str, frame: Frame) -> tuple[Module, str | None] | None:
        """The project module (and attribute) an imported name stands for, not parsed yet."""
        memo = (frame.scope, name)
        if memo not in self._imports:
            self._imports[memo] = self._import(name, frame.scope)
        return self._imports[memo]

    def _import(self, name: str, scope: Scope) -> tuple[Module, str | None] | None:
        if scope.lookup(name) is not None:
            return None
        origin = scope.lookup_import(name)
        if origin is None:
            return None
        found = self.project.resolve(origin, scope.module)
        for _ in range(4):  # a package's small `__init__` re-exporting it: `from gans.gan import GAN`
            if found is None:
                return None
            module, name = found
            if (
                name is not None and module.path.endswith("__init__.py") and len(module.text) < REEXPORTS_READ
                and not self.wanted(module, name) and self.load(module)
            ):
                again = module.root.imports.get(name)
                if again is not None and name not in module.root.bindings:
                    found = self.project.resolve(again, module)
                    continue
            return found
        return None

    def function(self, name: str, frame: Frame) -> tuple[Scope, cst.FunctionDef] | None:
        """A function of the project called by name: nested, module-level, or imported."""
        if frame.scope.lookup(name) is None:
            found = frame.scope.lookup_function(name)
            if found is not None:
                return self._scopes[found[1]], found[1]
        origin = self._origin(name, frame)
        if origin is None or origin[1] is None or not self._may_define(origin[0], "def", origin[1]):
            return None
        imported = self.imported(name, frame)
        if imported is not None and imported[1] in imported[0].root.functions:
            func = imported[0].root.functions[imported[1]]
            return self._scopes[func], func
        return None

    def module_function(self, func: cst.Attribute, frame: Frame) -> tuple[Scope, cst.FunctionDef] | None:
        """`engine.train_one_epoch`: a function of a project module imported as a module."""
        if not isinstance(func.value, cst.Name):
            return None
        origin = self._origin(func.value.value, frame)
        if origin is None or origin[1] is not None or not self._may_define(origin[0], "def", func.attr.value):
            return None
        imported = self.imported(func.value.value, frame)
        if imported is None:
            return None
        target = imported[0].root.functions.get(func.attr.value)
        return (self._scopes[target], target) if target is not None else None

    def klass(self, dotted: str, scope: Scope) -> Scope | None:
        """A class of the project named in `scope` (`Trainer`, `trainer.Trainer`)."""
        head, _, rest = dotted.partition(".")
        if not rest:
            found = scope.lookup_class(head)
            if found is not None:
                return found
        frame = self.frame_for(scope, Frame(scope))
        origin = self._origin(head, frame)
        if origin is None:
            return None
        module, attr = origin
        name = attr if not rest else rest if attr is None else None
        if name is None or "." in name:
            return None
        if not self._may_define(module, "class", name) or not self.wanted(module, attr) or not self.load(module):
            return None
        return module.root.classes.get(name)

    def _may_bind(self, module: Module, name: str) -> bool:
        """Can `module` bind `name` (its text holds it; a star import binds nothing here)?"""
        return module.path in self._loaded or name in module.text

    def _may_define(self, module: Module, keyword: str, name: str) -> bool:
        """Can `module` define a function (`keyword` "def") or class ("class") called `name`? Its
        text says so before it is parsed: `torch.zeros(...)`, checked in torch itself, does not
        parse its `__init__` to learn that `zeros` is neither."""
        if module.path in self._loaded:
            return True
        text = module.text
        if name not in text:
            return False
        # the keyword first (a pattern starting with a literal is found fast), then what precedes it
        for found in re.finditer(rf"{keyword}\s+{re.escape(name)}\b", text):
            if found.start() == 0 or not (text[found.start() - 1].isalnum() or text[found.start() - 1] == "_"):
                return True
        return False

    # ---------------------------------------------------------------- keys

    def keys(self, expr: cst.BaseExpression, frame: Frame, depth: int = 0) -> list[Key]:
        if depth > _MAX_DEPTH:
            return []
        if isinstance(expr, cst.Name):
            return self._name_keys(expr.value, frame, depth)
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name):
                origin = self._origin(expr.value.value, frame)
                if (  # `engine.optimizer`: a module's name (`torch.zeros` in torch: its `__init__` has none)
                    origin is not None and origin[1] is None and self._may_bind(origin[0], expr.attr.value)
                    and self.imported(expr.value.value, frame) is not None
                ):
                    return self._name_keys(expr.attr.value, self.frame_for(origin[0].root, frame), depth + 1)
            return [k + (expr.attr.value,) for k in self.keys(expr.value, frame, depth + 1)]
        if isinstance(expr, cst.Subscript):
            index = "[*]"
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
                value = expr.slice[0].slice.value
                if isinstance(value, cst.Integer):
                    index = f"[{value.value}]"
            return [k + (index,) for k in self.keys(expr.value, frame, depth + 1)]
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            if method in _KEY_METHODS and not expr.args:
                return [k + (f"{method}()",) for k in self.keys(expr.func.value, frame, depth + 1)]
            if method in PREPARE_METHODS and len(expr.args) == 1:
                return self.keys(expr.args[0].value, frame, depth + 1)
        return []

    def frame_for(self, scope: Scope, frame: Frame) -> Frame:
        f: Frame | None = frame
        while f is not None:
            if f.scope is scope:
                return f
            f = f.parent
        if scope not in self._bare:
            self._bare[scope] = Frame(scope, cls=scope.enclosing_class())
        return self._bare[scope]

    def _name_keys(self, name: str, frame: Frame, depth: int) -> list[Key]:
        if name in frame.locals:
            return frame.locals[name]
        found = frame.scope.lookup(name)
        if found is None:
            origin = self._origin(name, frame)  # a module imported is not parsed for its name
            if origin is not None and origin[1] is not None and self.imported(name, frame) is not None:
                # `from engine import optimizer`
                return self._name_keys(origin[1], self.frame_for(origin[0].root, frame), depth + 1)
            return [(name,)]
        scope, bindings = found
        owner = self.frame_for(scope, frame)
        if name in owner.subst:
            return owner.subst[name]
        if scope.kind == "function" and name == scope.self_name and owner.cls is not None:
            return [self_key(owner.cls)]
        local = own_key(scope, name)
        memo = (owner, name)
        if memo in self._memo:
            return self._memo[memo]
        self._memo[memo] = [local]  # what a name means while its own value is being resolved
        result = self._resolve_bindings(local, bindings, owner, depth)
        self._memo[memo] = result
        return result

    def _resolve_bindings(self, local: Key, bindings: list[Binding], owner: Frame, depth: int) -> list[Key]:
        result: list[Key] = []
        needs_local = False
        for binding in bindings:
            if binding.is_param or binding.value is None:
                needs_local = True
                continue
            aliased = self.value_keys(binding.value, binding.path, owner, depth + 1)
            if aliased and local not in aliased:
                result.extend(k for k in aliased if k not in result)
            else:
                needs_local = True
        if needs_local or not result:
            self._values.setdefault(local, [])
            for binding in bindings:
                entry = (binding, owner)
                if all(b is not binding for b, _ in self._values[local]):
                    self._values[local].append(entry)
            result.append(local)
        return result

    def value_keys(self, value: cst.BaseExpression, path: Path, frame: Frame, depth: int = 0) -> list[Key]:
        """Keys of the part `path` of `value`, when that part is an alias of something with a key."""
        if depth > _MAX_DEPTH:
            return []
        if not path:
            return self.keys(value, frame, depth + 1)
        head, rest = path[0], path[1:]
        if head == ELEMENT:
            if isinstance(value, cst.Call):
                callee = dotted_name(value.func) or ""
                args = [a.value for a in value.args if a.keyword is None]
                if callee == "enumerate" and args and rest[:1] == (1,):
                    return self.value_keys(args[0], (ELEMENT,) + rest[1:], frame, depth + 1)
                if callee == "zip" and rest and isinstance(rest[0], int) and rest[0] < len(args):
                    return self.value_keys(args[rest[0]], (ELEMENT,) + rest[1:], frame, depth + 1)
                if callee.endswith(("named_parameters", "named_modules", "items")) and rest[:1] == (1,):
                    base = self.keys(value, frame, depth + 1) or (
                        [k + ("parameters()",) for k in self.keys(value.func.value, frame, depth + 1)]
                        if isinstance(value.func, cst.Attribute) else []
                    )
                    return [k + ("[*]",) for k in base]
            if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
                out: list[Key] = []
                for element in value.elements:
                    for k in self.value_keys(element.value, rest, frame, depth + 1):
                        if k not in out:
                            out.append(k)
                return out
            base = self.keys(value, frame, depth + 1)
            return [self._append_path(k + ("[*]",), rest) for k in base]
        assert isinstance(head, int)
        if isinstance(value, (cst.Tuple, cst.List)) and head < len(value.elements):
            return self.value_keys(value.elements[head].value, rest, frame, depth + 1)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in PREPARE_METHODS and head < len(value.args):
                return self.value_keys(value.args[head].value, rest, frame, depth + 1)
        base = self.keys(value, frame, depth + 1)
        return [self._append_path(k, path) for k in base]

    @staticmethod
    def _append_path(key: Key, path: Path) -> Key:
        return key + tuple("[*]" if p == ELEMENT else f"[{p}]" for p in path)

    # ---------------------------------------------------------------- names of callees

    def qualified(self, expr: cst.BaseExpression, frame: Frame) -> str:
        """The dotted callee with imports resolved: `optim.Adam` -> `torch.optim.Adam`."""
        dotted = dotted_name(expr)
        if dotted is None:
            if isinstance(expr, cst.Attribute):
                return "?." + expr.attr.value
            return "?"
        head, _, tail = dotted.partition(".")
        origin = frame.scope.lookup_import(head)
        if origin is not None and frame.scope.lookup(head) is None:
            return f"{origin}.{tail}" if tail else origin
        return dotted

    def is_module(self, expr: cst.BaseExpression, frame: Frame) -> bool:
        """`torch.nn.utils`, `wandb`, `F`: a name imported as a module or function, not an object."""
        dotted = dotted_name(expr)
        if dotted is None:
            return False
        head = dotted.split(".")[0]
        if frame.scope.lookup_import(head) is None or frame.scope.lookup(head) is not None:
            return False
        imported = self.imported(head, frame)  # `from models import disc`: an object made there
        return imported is None or imported[1] is None or imported[1] not in imported[0].root.bindings

    # ---------------------------------------------------------------- classes and instances

    def instance_class(self, key: Key) -> Scope | None:
        """The class defined in the project whose instance `key` is, if any."""
        made = self._made(key)
        return made.cls if made is not None else None

    def _made(self, key: Key) -> _Made | None:
        """The class defined in the project whose instance `key` is, and where the code shows the
        call that made it (`stepper = Stepper(model)`), that call's arguments to its `__init__`."""
        if key in self._instance:
            return self._instance[key]
        self._instance[key] = None
        result = None
        if len(key) == 1 and key[0].endswith(".self"):
            cls = self._classes.get(key[0].removesuffix(".self"))
            result = _Made(cls, None, {}) if cls is not None else None
        else:  # a name, or an attribute (`self.discriminator = Discriminator(...)`)
            for binding, frame in self._values.get(key, []) + (self._attr_values(key) if len(key) > 1 else []):
                value = binding.value
                while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in WRAPPERS:
                    value = value.func.value  # `Discriminator(...).to(device)`: the same object
                if isinstance(value, cst.Call) and not binding.path:
                    name = dotted_name(value.func)
                    cls = self.klass(name, frame.scope) if name else None
                    if cls is not None:
                        result = self._made_by(cls, value, frame)
                        break
        self._instance[key] = result
        return result

    def _made_by(self, cls: Scope, call: cst.Call, frame: Frame) -> _Made:
        """An object of `cls` made by `call`: the `__init__` it runs has its parameters bound to
        what the call passed, so that an optimizer built there from one (`SGD(model.parameters())`)
        is linked to the caller's model."""
        found = self.method(cls, "__init__")
        if found is None:
            return _Made(cls, None, {})
        arguments = bind_arguments(call, found[1], skip_first=True)
        subst = {param: keys for param, value in arguments.items() if (keys := self.keys(value, frame))}
        return _Made(cls, self.scope_of(found[1]), subst)

    def class_chain(self, cls: Scope) -> list[Scope]:
        """The class and its bases defined in the project, in method resolution order."""
        if cls not in self._chains:
            self._chains[cls] = [cls]  # a cycle guard while the chain is computed
            self._chains[cls] = self._chain(cls)
        return self._chains[cls]

    def subclasses(self, cls: Scope, modules: set[str]) -> list[Scope]:
        """Classes of `modules` (those parsed so far) that inherit from `cls`. Only their bases are
        resolved: asking every class parsed would parse the modules of all their bases too."""
        return [
            other for other in list(self._classes.values())
            if other is not cls and other.module.path in modules and cls in self.class_chain(other)
        ]

    def _chain(self, cls: Scope) -> list[Scope]:
        chain, todo = [], [cls]
        while todo:
            current = todo.pop(0)
            if current in chain:
                continue
            chain.append(current)
            for base in current.bases:
                found = self.klass(base, current.parent or current)
                if found is not None:
                    todo.append(found)
        return chain

    def method(self, cls: Scope, name: str) -> tuple[Scope, cst.FunctionDef] | None:
        for klass in self.class_chain(cls):
            if name in klass.functions:
                return klass, klass.functions[name]
        return None

    def _attr_values(self, key: Key) -> list[tuple[Binding, Frame]]:
        if len(key) in (2, 3) and key[1] == "optimizers()":
            return self._configured_optimizers(key)
        if len(key) < 2 or len(key) > 4 or any(part.startswith("[") or part.endswith("()") for part in key[1:]):
            return []
        owner = key[:-1]  # `trainer.optimizer`, and `self.discriminator.optimizer` too
        made = self._made(owner)
        if made is None:
            return self._own_attr_values(key) if len(key) == 2 else []
        values = []
        for klass in self.class_chain(made.cls):
            for binding, method_scope in klass.self_attrs.get(key[-1], []):
                subst = {method_scope.self_name: [owner]} if method_scope.self_name else {}
                if method_scope is made.init:
                    subst = {**made.arguments, **subst}
                values.append((binding, Frame(method_scope, subst, cls=made.cls)))  # `self` is this instance
        return values

    def _gathered(self, key: Key) -> bool:
        """A local bound only to empty containers (`g = [], [], []`), filled by the code after."""
        bindings = self._values.get(_strip_elements(key), [])
        return bool(bindings) and all(
            isinstance(b.value, (cst.List, cst.Tuple, cst.Set)) and all(
                isinstance(e.value, (cst.List, cst.Tuple, cst.Set)) and not e.value.elements for e in b.value.elements
            ) or isinstance(b.value, (cst.List, cst.Set)) and not b.value.elements
            for b, _ in bindings
        )

    def _own_attr_values(self, key: Key) -> list[tuple[Binding, Frame]]:
        """`self.master_params` inside the class that sets it, made by a call the analysis does
        not see: what its methods assign to it (`self.master_params = self.model_params`)."""
        if not key[0].endswith(".self"):
            return []
        cls = self._classes.get(key[0][: -len(".self")])
        if cls is None:
            return []
        return [
            (binding, Frame(method, {method.self_name: [key[:1]]} if method.self_name else {}, cls=cls))
            for klass in self.class_chain(cls)
            for binding, method in klass.self_attrs.get(key[1], [])
        ]

    def _configured_optimizers(self, key: Key) -> list[tuple[Binding, Frame]]:
        """Lightning: `self.optimizers()` (or its element `[i]`) is what `configure_optimizers`
        returns: an optimizer, a list of them, `(optimizers, schedulers)`, or dicts of them."""
        cls = self.instance_class(key[:1])
        found = self.method(cls, "configure_optimizers") if cls is not None else None
        if found is None:
            return []
        scope = self.scope_of(found[1])
        frame = Frame(scope, {scope.self_name: [key[:1]]} if scope.self_name else {}, cls=cls)
        index = int(key[2][1:-1]) if len(key) == 3 and key[2][1:-1].isdigit() else None
        values = []
        for returned in returns(found[1]):
            optimizers = _optimizers_returned(returned)
            if index is not None:
                optimizers = optimizers[index : index + 1]
            values.extend((Binding(value), frame) for value in optimizers)
        return values

    def prepared(self, key: Key, seen: frozenset[Key] = frozenset()) -> bool:
        """Was the object passed through `accelerator.prepare(...)` (its step and zero_grad then
        follow Accelerate's gradient state), here or in a project function that returns it
        (`model, opt = training_setup(accelerator)`)?"""
        if key in seen:
            return False
        for binding, frame in self._values.get(key, []):
            if _prepares(binding.value):
                return True
            if isinstance(binding.value, cst.Call) and any(
                # `prepare` returns its arguments, so the returned name's key is the argument's:
                # whether it was prepared is in the returned name's own bindings
                _prepares(part)
                or isinstance(part, cst.Name) and any(_prepares(b.value) for b in inner.scope.bindings.get(part.value, []))
                or any(self.prepared(inner_key, seen | {key}) for inner_key in self.keys(part, inner))
                for part, inner in self._returned(binding.value, binding.path, frame)
            ):
                return True
        return False

    def _returned(self, call: cst.Call, path: Path, frame: Frame) -> list[tuple[cst.BaseExpression, Frame]]:
        """What a call of a project function returns at `path` (an element of a returned tuple, or
        the whole of a returned `accelerator.prepare(...)`), with the callee's frame."""
        func = call.func
        found = self.function(func.value, frame) if isinstance(func, cst.Name) else (
            self.module_function(func, frame) if isinstance(func, cst.Attribute) else None
        )
        if found is None:
            return []
        scope, definition = found
        inner = Frame(scope, {}, None, frame.cls if scope.self_name else None)
        parts = []
        for value in returns(definition):
            if _prepares(value):  # `return accelerator.prepare(model, optimizer)`: every part is prepared
                parts.append((value, inner))
                continue
            for index in path[:1]:
                elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else ()
                value = elements[index].value if isinstance(index, int) and index < len(elements) else None
            if value is not None:
                parts.append((value, inner))
        return parts

    # ---------------------------------------------------------------- kinds and links

    def info(self, key: Key) -> Info:
        if key not in self._info:
            self._info[key] = Info(UNKNOWN)  # cycle guard
            self._info[key] = self._compute_info(key)
        return self._info[key]

    def _compute_info(self, key: Key) -> Info:
        kinds: list[str] = []
        links: set[Key] = set()
        known = False
        for binding, frame in self._values.get(key, []) + self._attr_values(key):
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
                    for b, _ in self._values.get(key, []) + self._attr_values(key)
                )
                return Info(kind, frozenset(self.expand(links)), known and kind == OPTIMIZER, repeats)
        name = last_name(key)
        if name in self.vocabulary.optimizers:
            return Info(OPTIMIZER)
        if vocabulary.reads_as_not_optimizer(name):
            return Info(SCHEDULER if "sched" in name.lower() else OTHER)
        if vocabulary.reads_as_optimizer(name):
            return Info(OPTIMIZER)
        if name.lower() in ("engine", "model_engine", "ds_engine", "deepspeed_engine"):
            return Info(ENGINE)
        if name.lower() in ("scaler", "grad_scaler", "amp_scaler"):
            return Info(SCALER)
        if name.lower() in ("accelerator", "fabric"):
            return Info(ACCELERATOR)
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
        if callee.endswith("deepspeed.initialize") or callee == "initialize" and "deepspeed" in str(frame.scope.lookup_import("initialize")):
            return {(0,): ENGINE, (1,): OPTIMIZER}.get(path[:1], OTHER), None
        if path and "optim" in last.lower():  # `opt, sched = model.optimizer_scheduler()`: the names tell
            return UNKNOWN, None
        if vocabulary.is_scheduler_callee(last, callee):
            return SCHEDULER, None
        if last in ("optimizers",) and isinstance(value.func, cst.Attribute):
            return OPTIMIZER, None  # Lightning's self.optimizers()
        if vocabulary.is_optimizer_callee(last, callee):
            return OPTIMIZER, self._optimizer_links(value, last, frame)
        if last in ("GradScaler", "ShardedGradScaler"):
            return SCALER, None
        if last in ("Accelerator", "Fabric"):
            return ACCELERATOR, None
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

    def _optimizer_links(self, call: cst.Call, last: str, frame: Frame) -> set[Key] | None:
        if last in vocabulary.OPTIMIZER_CLASSES:
            args = [a.value for a in call.args if a.keyword is None][:1]
            args += [a.value for a in call.args if a.keyword and a.keyword.value in ("params", "model", "module")]
        else:  # a factory: every argument, and the receiver of a method (model.configure_optimizers())
            args = [a.value for a in call.args]
            if isinstance(call.func, cst.Attribute) and not self.is_module(call.func.value, frame):
                args.append(call.func.value)
        links: set[Key] = set()
        for arg in args:
            links |= self.link_roots(arg, frame)
        return links or None

    def link_roots(self, expr: cst.BaseExpression, frame: Frame, depth: int = 0) -> set[Key]:
        """Keys of the modules or tensors whose parameters `expr` is made of."""
        if depth > 6:
            return set()
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("parameters", "named_parameters"):
                return set(self.keys(expr.func.value, frame))
            if (dotted_name(expr.func) or "").rsplit(".", 1)[-1] in _COPIES:
                return set()  # `copy.deepcopy(model)`, `model.clone()`: a new object, its own parameters
            out: set[Key] = set()
            for arg in expr.args:
                out |= self.link_roots(arg.value, frame, depth + 1)
            if isinstance(expr.func, cst.Attribute):
                out |= self.link_roots(expr.func.value, frame, depth + 1)
            return out
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            out = set()
            comp: cst.CompFor | None = expr.for_in
            while comp is not None:
                out |= self.link_roots(comp.iter, frame, depth + 1)
                comp = comp.inner_for_in
            return out
        if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)):
            keys = self.keys(expr, frame)
            out = {_strip_elements(k) for k in keys}
            for key in keys:
                for binding, owner in self._values.get(key, []):
                    if binding.value is not None and not binding.is_param:
                        out |= self.link_roots(binding.value, owner, depth + 1)
                if 2 <= len(key) <= 4:  # `trainer.x`, `self.mp_trainer.master_params`
                    out |= self._attribute_roots(key)
            return out
        if isinstance(expr, cst.Lambda):
            return set()
        out = set()  # anything else (lists, dicts of param groups, `a + b`, ...): its parts
        for child in expr.children:
            if isinstance(child, (cst.Element, cst.DictElement, cst.StarredElement, cst.StarredDictElement)):
                child = child.value
            if isinstance(child, cst.BaseExpression):
                out |= self.link_roots(child, frame, depth + 1)
        return out

    def _attribute_roots(self, key: Key) -> set[Key]:
        """What `self.x` (or `trainer.x`) is made of, by what the class's methods assign to it, once
        per key: a class of hundreds of attributes assigned from one another (transformers'
        Trainer) is walked once."""
        if key in self._attr_roots:
            return self._attr_roots[key]
        if key in self._attr_finding:
            self._attr_cycle = True  # what it is made of is still being found: the caller's is partial
            return set()
        self._attr_finding.add(key)
        outer, self._attr_cycle = self._attr_cycle, False
        out: set[Key] = set()
        try:
            for binding, owner in self._attr_values(key):
                if binding.value is not None and not binding.is_param:
                    out |= self.link_roots(binding.value, owner, 1)
        finally:
            self._attr_finding.discard(key)
        if not self._attr_cycle or not self._attr_finding:
            # complete, or the outermost of a cycle (which has seen all of it): the same whichever
            # method of the class was read first
            self._attr_roots[key] = out
        self._attr_cycle = outer or (self._attr_cycle and bool(self._attr_finding))
        return out

    def sources(self, key: Key) -> set[Key]:
        """What a collection of parameters was made from: `params = list(model.parameters())`
        gives `model`."""
        out: set[Key] = set()
        for binding, owner in self._values.get(key, []):
            if binding.value is not None and not binding.is_param:
                out |= self.link_roots(binding.value, owner)
        return out

    def expand(self, keys: set[Key]) -> set[Key]:
        """Add what wrappers wrap: `ddp = DDP(model)` makes `ddp` and `model` one module; and
        the attribute a method stores a parameter in: `self.model = model` in `__init__` makes
        its `model` and `self.model` one module."""
        out = set(keys)
        todo = list(keys)
        while todo:
            key = todo.pop()
            for stored in self._stored_in_self(key):
                if stored not in out:
                    out.add(stored)
                    todo.append(stored)
            for binding, frame in self._values.get(key, []):
                value = binding.value
                if isinstance(value, cst.Call) and binding.path[:1] != (ELEMENT,):
                    # `model, opt = setup(...)`: what the project function returned there
                    for returned, inner in self._returned(value, binding.path, frame):
                        for k in self.keys(returned, inner) if isinstance(returned, (cst.Name, cst.Attribute)) else ():
                            if k not in out:
                                out.add(k)
                                todo.append(k)
                if not isinstance(value, cst.Call) or binding.path:
                    continue
                last = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
                inner: list[Key] = []
                if last in WRAPPERS:
                    if isinstance(value.func, cst.Attribute) and last in ("to", "cuda", "cpu", "half", "float", "bfloat16"):
                        inner = self.keys(value.func.value, frame)
                    elif value.args:
                        inner = self.keys(value.args[0].value, frame)
                for k in inner:
                    if k not in out:
                        out.add(k)
                        todo.append(k)
        return out


    def _stored_in_self(self, key: Key) -> list[Key]:
        """`self.model` of the class (and its subclasses) for the key of a method's parameter or
        local `model` that the method stores there (`self.model = model`)."""
        if len(key) != 1 or ":" not in key[0]:
            return []
        memo = (key, len(self._loaded))  # more modules loaded may hold more subclasses
        if memo not in self._stored:
            self._stored[memo] = self._find_stored_in_self(key)
        return self._stored[memo]

    def _find_stored_in_self(self, key: Key) -> list[Key]:
        qualname, name = key[0].rsplit(":", 1)
        if self._methods_of != len(self._loaded):  # made again once more modules are loaded
            self._methods = {s.qualname: s for s in self._scopes.values() if s.self_name}
            self._methods_of = len(self._loaded)
        scope = self._methods.get(qualname)
        cls = scope.enclosing_class() if scope is not None else None
        if cls is None:
            return []
        attrs = [
            attr for attr, entries in cls.self_attrs.items()
            for binding, method in entries
            if method is scope and not binding.path and isinstance(binding.value, cst.Name) and binding.value.value == name
        ]
        if not attrs:
            return []
        classes = [cls] + [c for c in list(self._classes.values()) if c is not cls and cls in self.class_chain(c)]
        return [self_key(c) + (attr,) for c in classes for attr in attrs]


# In what `bind_arguments` returns: the call has `*args` or `**kwargs`, so any parameter may be passed.
STARRED = "*"


def bind_arguments(call: cst.Call, func: cst.FunctionDef, skip_first: bool = False) -> dict[str, cst.BaseExpression]:
    """Which argument expression each parameter of `func` receives at `call` (defaults left out)."""
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if skip_first:
        params = params[1:]
    named = set(params) | {p.name.value for p in func.params.kwonly_params}
    bound = dict(zip(params, [a.value for a in call.args if a.keyword is None and not a.star]))
    bound.update({a.keyword.value: a.value for a in call.args if a.keyword is not None and a.keyword.value in named})
    starred = next((a.value for a in call.args if a.star), None)
    if starred is not None:
        bound[STARRED] = starred
    return bound


def _prepares(value: cst.BaseExpression | None) -> bool:
    """`accelerator.prepare(...)`, `accelerator.prepare_optimizer(...)`."""
    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("prepare", "prepare_optimizer")
    )


def returns(func: cst.FunctionDef) -> list[cst.BaseExpression]:
    """The values a function returns (not those of functions nested in it)."""
    return [
        node.value
        for node in walk.nodes(func.body, skip=(cst.Lambda, cst.FunctionDef, cst.ClassDef))
        if isinstance(node, cst.Return) and node.value is not None
    ]


def _optimizers_returned(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The optimizers in what `configure_optimizers` returns, in order."""
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement) and _is_key(e.key, "optimizer")]
    if isinstance(value, (cst.List, cst.Tuple)):
        elements = [e.value for e in value.elements]
        if len(elements) == 2 and all(isinstance(e, (cst.List, cst.Tuple)) for e in elements):
            return _optimizers_returned(elements[0])  # ([optimizers], [schedulers])
        return [o for e in elements for o in _optimizers_returned(e)]
    return [value]


def _is_key(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.SimpleString) and node.value.strip("'\"") == name


def _strip_elements(key: Key) -> Key:
    """`model.parameters()[*]` -> `model`: the object the parameters belong to."""
    parts = list(key)
    while parts and (parts[-1].startswith("[") or parts[-1] in ("parameters()", "named_parameters()")):
        parts.pop()
    return tuple(parts) if parts else key


param_root = _strip_elements


def _kind_of_annotation(text: str) -> str:
    last = text.rsplit(".", 1)[-1]
    if "Scheduler" in last or last.endswith("LR"):
        return SCHEDULER
    if "Optim" in last or last in vocabulary.OPTIMIZER_CLASSES:
        return OPTIMIZER
    if last in ("GradScaler", "ShardedGradScaler"):
        return SCALER
    if last in ("Accelerator", "Fabric"):
        return ACCELERATOR
    if last in ("DeepSpeedEngine",):
        return ENGINE
    return OTHER

