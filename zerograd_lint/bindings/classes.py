"""The classes of the project: their chains of bases, their subclasses and methods, the objects
made of them, and what the methods store in an object's attributes.

`stepper = Stepper(model)` makes `stepper` an object of the project class `Stepper`, whose
`__init__` runs with its parameters bound to the call's arguments: `stepper.optimizer`, assigned
there from `SGD(model.parameters())`, is then an optimizer linked to the caller's model.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from zerograd_lint import walk
from zerograd_lint.bindings.keys import Frame, Key
from zerograd_lint.bindings.links import WRAPPERS
from zerograd_lint.bindings.names import bind_arguments
from zerograd_lint.scopes import Binding, Scope, dotted_name


@dataclass(frozen=True)
class _Made:
    """How an object of a project class was made: the `__init__` that ran, if the call is known,
    and its parameters bound to the call's arguments (their keys in the caller)."""

    cls: Scope
    init: Scope | None
    arguments: dict[str, list[Key]]


class Classes:
    """Resolver part: class chains (memoised by class), the class each key is an object of
    (memoised by key), and the bindings of an object's attributes, beside those `Aliases` records
    for names (Lightning's `self.optimizers()` is `Frameworks`')."""

    def __init__(self) -> None:
        super().__init__()
        self._chains: dict[Scope, list[Scope]] = {}
        self._instance: dict[Key, _Made | None] = {}
        self._calls: dict[object, dict[str, list[tuple[cst.Call, Scope]]]] = {}  # by module, see `_calls_in`

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
            for binding, frame in self.bindings_of(key):
                if binding.is_param:  # `def fit(model: Arch)`, or `fit(Arch())` wherever it is called
                    name = dotted_name(binding.annotation) if binding.annotation is not None else None
                    cls = self.klass(name, frame.scope) if name else self._passed(frame.scope, key[0].rsplit(":", 1)[-1])
                    if cls is not None:
                        result = _Made(cls, None, {})
                        break
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

    def _passed(self, function: Scope, param: str) -> Scope | None:
        """The project class of what every call of `function` in its own module passes as `param`
        (`do_train(cfg, model)` where `model = Arch(cfg).to(device)`), if there is at least one
        call and all agree; else None. Calls from other modules are not looked for."""
        if function.kind != "function" or function.self_name is not None or param not in function.params:
            return None
        found = None
        for call, caller in self._calls_in(function.module).get(function.name, []):
            frame = self.bare_frame(caller)
            called = self.function(function.name, frame)
            if called is None or called[1] is not function.node:
                continue  # another function of that name
            value = bind_arguments(call, function.node).get(param)
            classes = {self.instance_class(key) for key in self.keys(value, frame)} if value is not None else {None}
            if len(classes) != 1 or None in classes or found not in (None, *classes):
                return None
            found = classes.pop()
        return found

    def _calls_in(self, module) -> dict[str, list[tuple[cst.Call, Scope]]]:
        """The calls of a plain name in a module's functions and body, by that name, each with the
        scope it is made in."""
        if module not in self._calls:
            calls: dict[str, list[tuple[cst.Call, Scope]]] = {}
            for node, scope in module.scopes.items():
                if scope.kind == "class":
                    continue
                for found in walk.nodes(node.body if scope.kind == "function" else node,
                                        skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                    if found is not node and isinstance(found, cst.Call) and isinstance(found.func, cst.Name):
                        calls.setdefault(found.func.value, []).append((found, scope))
            self._calls[module] = calls
        return self._calls[module]

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

    def bindings_of(self, key: Key) -> list[tuple[Binding, Frame]]:
        """Every binding of `key`: as a name, and as an attribute the methods of its owner's class
        assign (`self.optimizer = ...` in `__init__`)."""
        return self._values.get(key, []) + self._attr_values(key)

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
