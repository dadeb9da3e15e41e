"""The scope tree of a module: what each name is bound to, where, and which defs and classes exist.

One plain visitor pass over the CST records, per module, class and function: parameters,
assignments (with the position of a name inside a tuple target), `for`/`with`/walrus targets,
imports, nested defs and classes, and for classes every `self.x = ...` made in a method. Nothing
here interprets a value; `bindings.py` does that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import libcst as cst

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
        scope: Scope | None = self
        while scope is not None:
            if name in scope.classes:
                return scope.classes[name]
            scope = scope.parent
        return None

    def lookup_import(self, name: str) -> str | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.imports:
                return scope.imports[name]
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


def _bind_target(scope: Scope, target: cst.BaseExpression, value, path: Path, add) -> None:
    if isinstance(target, cst.Name):
        add(scope, target.value, Binding(value, path))
    elif isinstance(target, (cst.Tuple, cst.List)):
        for i, element in enumerate(target.elements):
            inner = element.value
            if isinstance(element, cst.StarredElement):
                continue
            _bind_target(scope, inner, value, path + (i,), add)
    elif isinstance(target, cst.Attribute):
        method = scope if scope.kind == "function" else None
        cls = method.enclosing_class() if method else None
        if cls is not None and isinstance(target.value, cst.Name) and target.value.value == method.self_name:
            cls.self_attrs.setdefault(target.attr.value, []).append((Binding(value, path), method))


def _add(scope: Scope, name: str, binding: Binding) -> None:
    scope.bindings.setdefault(name, []).append(binding)


class _ScopeBuilder(cst.CSTVisitor):
    def __init__(self, module: cst.Module, owner: object) -> None:
        name = getattr(owner, "name", "<module>")
        self.root = Scope("module", name, name, module, None, owner=owner)
        self.stack = [self.root]
        self.by_node: dict[cst.CSTNode, Scope] = {module: self.root}

    @property
    def scope(self) -> Scope:
        return self.stack[-1]

    def _push(self, kind: str, name: str, node: cst.CSTNode) -> Scope:
        parent = self.scope
        qual = f"{parent.qualname}.{name}"
        scope = Scope(kind, name, qual, node, parent)
        self.by_node[node] = scope
        self.stack.append(scope)
        return scope

    # definitions

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.scope.functions[node.name.value] = node
        scope = self._push("function", node.name.value, node)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.params.append(param.name.value)
            ann = param.annotation.annotation if param.annotation else None
            _add(scope, param.name.value, Binding(None, (), ann, is_param=True))
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                _add(scope, star.name.value, Binding(None, (), None, is_param=True))
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        outer = self.scope
        scope = self._push("class", node.name.value, node)
        outer.classes[node.name.value] = scope
        scope.bases = [d for arg in node.bases if (d := dotted_name(arg.value))]
        for stmt in node.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign):
                        for t in small.targets:
                            if isinstance(t.target, cst.Name):
                                scope.class_attrs[t.target.value] = small.value
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    # bindings

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            _bind_target(self.scope, target.target, node.value, (), _add)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name):
            _add(self.scope, node.target.value, Binding(node.value, (), node.annotation.annotation))
        else:
            _bind_target(self.scope, node.target, node.value, (), _add)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        _bind_target(self.scope, node.target, node.value, (), _add)

    def visit_For(self, node: cst.For) -> None:
        _bind_target(self.scope, node.target, node.iter, (ELEMENT,), _add)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            _bind_target(self.scope, node.asname.name, node.item, (), _add)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.scope.imports[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                self.scope.imports[head] = head

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module) if node.module else ""
        module = "." * len(node.relative) + (module or "")
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.scope.imports[local] = f"{module}.{name}" if module else name


def build_scopes(module: cst.Module, owner: object = None) -> dict[cst.CSTNode, Scope]:
    """Map each Module, ClassDef and FunctionDef node to its Scope; `owner` is the project module."""
    builder = _ScopeBuilder(module, owner)
    module.visit(builder)
    return builder.by_node
