"""The scope tree of a module: what each name is bound to, where, and which defs and classes exist.

One plain visitor pass over the CST records, per module, class and function: parameters,
assignments (with the position of a name inside a tuple target), `for`/`with`/walrus targets,
imports, nested defs and classes, and for classes every `self.x = ...` made in a method. Nothing
here interprets a value; `bindings/` does that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from zerograd_lint import walk

# Where a bound name sits inside the bound value: ints index tuples, "*" is "an element of".
Path = tuple[Union[int, str], ...]
ELEMENT = "*"


@dataclass(eq=False)
class Binding:
    value: cst.BaseExpression | None
    path: Path = ()
    annotation: cst.BaseExpression | None = None
    is_param: bool = False


@dataclass(eq=False)
class Scope:
    kind: str  # "module" | "class" | "function"
    name: str
    qualname: str
    node: cst.CSTNode
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    classes: dict[str, Scope] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    # classes only
    self_attrs: dict[str, list[tuple[Binding, Scope]]] = field(default_factory=dict)
    bases: list[str] = field(default_factory=list)
    class_attrs: dict[str, cst.BaseExpression] = field(default_factory=dict)
    # the module root only: the project module this scope tree belongs to
    owner: object = None

    @property
    def module(self):
        """The `project.Module` this scope belongs to."""
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope.owner

    @property
    def self_name(self) -> str | None:
        """The first parameter of a method (usually `self`)."""
        if self.kind == "function" and self.parent is not None and self.parent.kind == "class":
            return self.params[0] if self.params else None
        return None

    def enclosing_class(self) -> Scope | None:
        return self.parent if self.self_name else None

    def lookup(self, name: str) -> tuple[Scope, list[Binding]] | None:
        """Python's name resolution, skipping class scopes for code inside their methods."""
        scope: Scope | None = self
        while scope is not None:
            if scope.kind != "class" or scope is self:
                if name in scope.bindings:
                    return scope, scope.bindings[name]
            scope = scope.parent
        return None

    def lookup_function(self, name: str) -> tuple[Scope, cst.FunctionDef] | None:
        scope: Scope | None = self
        while scope is not None:
            if scope.kind != "class" and name in scope.functions:
                return scope, scope.functions[name]
            scope = scope.parent
        return None

    def lookup_class(self, name: str) -> Scope | None:
        return self._nearest("classes", name)

    def lookup_import(self, name: str) -> str | None:
        return self._nearest("imports", name)

    def _nearest(self, table: str, name: str):
        """`name` in the table (`classes`, `imports`) of this scope or the nearest enclosing one."""
        scope: Scope | None = self
        while scope is not None:
            found = getattr(scope, table)
            if name in found:
                return found[name]
            scope = scope.parent
        return None


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for Name/Attribute chains, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _bind_target(scope: Scope, target: cst.BaseExpression, value, path: Path) -> None:
    if isinstance(target, cst.Name):
        _add(scope, target.value, Binding(value, path))
    elif isinstance(target, (cst.Tuple, cst.List)):
        for i, element in enumerate(target.elements):
            if not isinstance(element, cst.StarredElement):
                _bind_target(scope, element.value, value, path + (i,))
    elif isinstance(target, cst.Attribute):
        cls = scope.enclosing_class() if scope.kind == "function" else None
        if cls is not None and isinstance(target.value, cst.Name) and target.value.value == scope.self_name:
            cls.self_attrs.setdefault(target.attr.value, []).append((Binding(value, path), scope))


def _add(scope: Scope, name: str, binding: Binding) -> None:
    scope.bindings.setdefault(name, []).append(binding)


class _ScopeBuilder:
    """One walk over the tree (explicit stack, no visitor dispatch: this runs on every parsed module)."""

    def __init__(self, module: cst.Module, owner: object) -> None:
        name = getattr(owner, "name", "<module>")
        # qualified names are keys of the analysis: the file's path keeps two `engine` modules apart
        self.root = Scope("module", name, getattr(owner, "path", name), module, None, owner=owner)
        self.by_node: dict[cst.CSTNode, Scope] = {module: self.root}
        self._named: set[str] = set()  # the qualified names given so far

    def build(self) -> dict[cst.CSTNode, Scope]:
        stack: list[tuple[cst.CSTNode, Scope]] = [(self.root.node, self.root)]
        while stack:
            node, scope = stack.pop()
            handler = _HANDLERS.get(type(node))
            if handler is not None:
                scope = handler(self, node, scope) or scope
            if type(node) is not cst.Lambda:  # LibCST's node classes are final
                stack.extend((child, scope) for child in reversed(list(walk.children(node))))
        return self.by_node

    def _scope(self, kind: str, node, parent: Scope) -> Scope:
        """A function's or a class's scope. A name defined again in the same place (a notebook's
        exported module redefines `class Learner`) gets a qualified name of its own, `Learner#2`:
        `self` in each class is that class, whatever the module's name means after both."""
        qualname, again = f"{parent.qualname}.{node.name.value}", 1
        while qualname in self._named:
            again += 1
            qualname = f"{parent.qualname}.{node.name.value}#{again}"
        self._named.add(qualname)
        scope = Scope(kind, node.name.value, qualname, node, parent)
        self.by_node[node] = scope
        return scope

    def function(self, node: cst.FunctionDef, outer: Scope) -> Scope:
        outer.functions[node.name.value] = node
        scope = self._scope("function", node, outer)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.params.append(param.name.value)
            ann = param.annotation.annotation if param.annotation else None
            _add(scope, param.name.value, Binding(None, (), ann, is_param=True))
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                _add(scope, star.name.value, Binding(None, (), None, is_param=True))
        return scope

    def klass(self, node: cst.ClassDef, outer: Scope) -> Scope:
        scope = self._scope("class", node, outer)
        outer.classes[node.name.value] = scope
        scope.bases = [d for arg in node.bases if (d := dotted_name(arg.value))]
        for stmt in node.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign):
                        for t in small.targets:
                            if isinstance(t.target, cst.Name):
                                scope.class_attrs[t.target.value] = small.value
        return scope

    def assign(self, node: cst.Assign, scope: Scope) -> None:
        for target in node.targets:
            _bind_target(scope, target.target, node.value, ())

    def ann_assign(self, node: cst.AnnAssign, scope: Scope) -> None:
        if isinstance(node.target, cst.Name):
            _add(scope, node.target.value, Binding(node.value, (), node.annotation.annotation))
        else:
            _bind_target(scope, node.target, node.value, ())

    def named_expr(self, node: cst.NamedExpr, scope: Scope) -> None:
        _bind_target(scope, node.target, node.value, ())

    def for_loop(self, node: cst.For, scope: Scope) -> None:
        _bind_target(scope, node.target, node.iter, (ELEMENT,))

    def with_item(self, node: cst.WithItem, scope: Scope) -> None:
        if node.asname is not None:
            _bind_target(scope, node.asname.name, node.item, ())

    def import_(self, node: cst.Import, scope: Scope) -> None:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                scope.imports[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                scope.imports[head] = head

    def import_from(self, node: cst.ImportFrom, scope: Scope) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module) if node.module else ""
        module = "." * len(node.relative) + (module or "")
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            scope.imports[local] = f"{module}{name}" if module.endswith(".") else f"{module}.{name}"


_HANDLERS = {
    cst.FunctionDef: _ScopeBuilder.function,
    cst.ClassDef: _ScopeBuilder.klass,
    cst.Assign: _ScopeBuilder.assign,
    cst.AnnAssign: _ScopeBuilder.ann_assign,
    cst.NamedExpr: _ScopeBuilder.named_expr,
    cst.For: _ScopeBuilder.for_loop,
    cst.WithItem: _ScopeBuilder.with_item,
    cst.Import: _ScopeBuilder.import_,
    cst.ImportFrom: _ScopeBuilder.import_from,
}


def build_scopes(module: cst.Module, owner: object = None) -> dict[cst.CSTNode, Scope]:
    """Map each Module, ClassDef and FunctionDef node to its Scope; `owner` is the project module."""
    return _ScopeBuilder(module, owner).build()
