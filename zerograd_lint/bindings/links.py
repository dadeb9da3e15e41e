"""The links of an optimizer: the keys of the modules and tensors whose parameters it was built from.

`SGD(model.parameters())` links to `model`; a list of parameter groups, a comprehension, an alias
or an attribute assigned in a method links to what they are made of. A link then grows by what is
the same module under other keys: what a wrapper wraps (`ddp = DDP(model)`), what a method stores
in `self` (`self.model = model`), what a project function returned (`model, opt = setup(...)`).
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint import vocabulary
from zerograd_lint.bindings.keys import Frame, Key, param_root, self_key
from zerograd_lint.frameworks.accelerate import prepares
from zerograd_lint.bindings.names import returns
from zerograd_lint.scopes import ELEMENT, Path, Scope, dotted_name
from zerograd_lint.vocabulary import OPTIMIZER, SCHEDULER

WRAPPERS = frozenset(
    {"DDP", "DistributedDataParallel", "DataParallel", "FSDP", "FullyShardedDataParallel",
     "compile", "to", "cuda", "cpu", "half", "float", "bfloat16", "unwrap_model", "fully_shard"}
)
# Calls that make a new object with parameters of its own, not an alias of their argument.
_COPIES = frozenset({"deepcopy", "copy", "clone"})


class Links:
    """Resolver part: what a key is made of and linked to: the roots of an expression, what `self`
    attributes are made of (memoised by key), what a method stores in `self` (memoised by key and
    modules loaded), what a project function returns; from the bindings `Aliases` and `Classes`
    give."""

    def __init__(self) -> None:
        super().__init__()
        self._methods: dict[str, Scope] = {}  # by qualified name, for `_stored_in_self`
        self._methods_of = -1  # how many modules were loaded when `_methods` was made
        self._attr_roots: dict[Key, set[Key]] = {}  # `_attribute_roots`, by key
        self._attr_finding: set[Key] = set()  # the keys `_attribute_roots` is finding now
        self._stored: dict[tuple[Key, int], list[Key]] = {}  # `_stored_in_self`, by key and modules loaded
        self._attr_cycle = False  # it met one of them again: the result found is partial

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
            if prepares(value):  # `return accelerator.prepare(model, optimizer)`: every part is prepared
                parts.append((value, inner))
                continue
            for index in path[:1]:
                elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else ()
                value = elements[index].value if isinstance(index, int) and index < len(elements) else None
            if value is not None:
                parts.append((value, inner))
        return parts

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

    def link_roots(self, expr: cst.BaseExpression, frame: Frame, depth: int = 0, modules: bool = False) -> set[Key]:
        """Keys of the modules or tensors whose parameters `expr` is made of. `modules`: what a
        module or a collection of parameters is made of, which is never an optimizer or a
        scheduler (`model, ema, epoch, opt = resume(model, ema, opt, sched)` gives `model` no
        parameters of what `opt` or `sched` were built from)."""
        if depth > 6:
            return set()
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("parameters", "named_parameters"):
                return set(self.keys(expr.func.value, frame))
            if (dotted_name(expr.func) or "").rsplit(".", 1)[-1] in _COPIES:
                return set()  # `copy.deepcopy(model)`, `model.clone()`: a new object, its own parameters
            out: set[Key] = set()
            for arg in expr.args:
                out |= self.link_roots(arg.value, frame, depth + 1, modules)
            if isinstance(expr.func, cst.Attribute):
                out |= self.link_roots(expr.func.value, frame, depth + 1, modules)
            return out
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            out = set()
            comp: cst.CompFor | None = expr.for_in
            while comp is not None:
                out |= self.link_roots(comp.iter, frame, depth + 1, modules)
                comp = comp.inner_for_in
            return out
        if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)):
            keys = self.keys(expr, frame)
            if modules and any(self.info(k).kind in (OPTIMIZER, SCHEDULER) for k in keys):
                return set()
            out = {param_root(k) for k in keys}
            for key in keys:
                for binding, owner in self._values.get(key, []):
                    if binding.value is not None and not binding.is_param:
                        out |= self.link_roots(binding.value, owner, depth + 1, modules)
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
                out |= self.link_roots(child, frame, depth + 1, modules)
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
                out |= self.link_roots(binding.value, owner, modules=True)
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
