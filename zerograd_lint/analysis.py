"""The analysis proper, on LibCST: the CSTs of what the plan says can matter, one graph per
analysed function with calls into the project inlined, states along paths, raw findings.
Imported only when the plan holds a function worth analysing: other runs never load LibCST.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from zerograd_lint import rules, walk
from zerograd_lint.bindings import Frame, Resolver
from zerograd_lint.cfg import Builder
from zerograd_lint.events import Classifier
from zerograd_lint.findings import TOO_DEEP, SourceError
from zerograd_lint.flow import GaveUp, analyse
from zerograd_lint.graph import TooComplex
from zerograd_lint.plan import Plan
from zerograd_lint.project import TooDeep
from zerograd_lint.scopes import Scope, dotted_name
from zerograd_lint.settings import Vocabulary
from zerograd_lint.sparse import sparse_text
from zerograd_lint.survey import MODULE


def analyse_modules(plan: Plan, words: Vocabulary, errors: dict[str, SourceError], exhaustive: bool = False) -> list[rules.Raw]:
    """The raw findings of the planned modules; files that cannot be analysed go to `errors`."""
    texts, surveys, project, connected = plan.texts, plan.surveys, plan.project, plan.connected
    for path, found in connected.items():  # LibCST gets only what can matter
        analysed = exhaustive or MODULE in found.roots
        preparing = {line for line, function in surveys[path].functions.items() if function.prepares}
        project.modules[path].text = sparse_text(texts[path], surveys[path].outline, found.needed | preparing, analysed)
    resolver = Resolver(project, words)
    resolver.wanted = lambda module, name: (
        bool(connected[module.path].followed) if name is None else name in connected[module.path].worth
    )
    modules = []
    for path, found in connected.items():
        module = project.modules[path]
        if found.roots:
            if resolver.load(module):
                modules.append((module, found))
            else:
                errors[path] = SourceError(path, module.error)

    def followed(func: cst.FunctionDef) -> bool:
        """Does the function touch gradients? By its name's `def` lines, so that no positions are
        needed to decide it."""
        module = resolver.scope_of(func).module
        found = surveys[module.path]
        lines = found.functions_named.get(func.name.value, []) + found.methods_named.get(func.name.value, [])
        return not connected[module.path].followed.isdisjoint(lines)

    builder = Builder(resolver, Classifier(resolver, words), followed)
    callbacks = _Callbacks(
        frozenset(n for found in surveys.values() for n in found.callbacks),
        frozenset(n for found in surveys.values() for n in found.callback_factories),
    )
    per_root: list[tuple[cst.CSTNode, list[rules.Raw]]] = []
    inlined: set[cst.FunctionDef] = set()  # analysed within a caller that was analysed
    for module, found in modules:
        for node, scope in module.scopes.items():
            if scope.kind == "class" or module.path in errors:
                continue
            try:
                line = module.positions[node].start.line if scope.kind == "function" else MODULE
            except TooDeep:
                errors[module.path] = SourceError(module.path, TOO_DEEP)
                continue
            if line not in found.roots:
                continue
            callback = node if scope.kind == "function" and _is_callback(scope, resolver, callbacks) else None
            if scope.enclosing_class() is not None:  # parse where its subclasses may be
                for other, found_other in surveys.items():
                    if scope.enclosing_class().name in found_other.bases:
                        resolver.load(project.modules[other])
            for cls in _classes_of(scope, resolver):
                try:
                    graph = builder.build(node.body if scope.kind == "function" else node, Frame(scope, cls=cls), callback)
                    per_root.append((node, rules.judge(analyse(graph, resolver))))
                    inlined |= builder.inlined
                except (TooComplex, GaveUp):
                    continue  # its callees keep their own findings
                except TooDeep as exc:  # this module or one it calls into: that file's loss alone
                    errors.setdefault(exc.path, SourceError(exc.path, TOO_DEEP))
                except RecursionError:
                    errors.setdefault(module.path, SourceError(module.path, TOO_DEEP))
    unique: dict[tuple, rules.Raw] = {}
    for node, found_raws in per_root:
        if node in inlined:
            continue  # analysed in the context of its callers
        for raw in found_raws:
            unique.setdefault((raw.path, raw.code, raw.line, raw.column, raw.message), raw)
    return list(unique.values())


def _classes_of(scope: Scope, resolver: Resolver) -> list[Scope | None]:
    """`self` in a method: its class, and each subclass that inherits it rather than overriding it
    (a base class's loop calling `self.train_step()` runs the subclass's override)."""
    cls = scope.enclosing_class()
    if cls is None:
        return [None]
    out = [cls]
    for other in resolver.subclasses(cls):
        owner = resolver.method(other, scope.name)
        if owner is not None and owner[1] is scope.node:
            out.append(other)
    return out


@dataclass(frozen=True)
class _Callbacks:
    named: frozenset[str]  # functions handed to `Engine(...)` by name
    factories: frozenset[str]  # functions whose nested functions are handed over by a call


def _is_callback(scope: Scope, resolver: Resolver, callbacks: _Callbacks) -> bool:
    """A function a framework calls once per batch: its body is a loop body."""
    cls = scope.enclosing_class()
    if cls is not None and scope.name == "training_step":
        manual = any(
            isinstance(value, cst.Name) and value.value == "False"
            for klass in resolver.class_chain(cls)
            for value in [klass.class_attrs.get("automatic_optimization")]
            + [b.value for b, _ in klass.self_attrs.get("automatic_optimization", [])]
        )
        return manual or "manual_backward" in _names_called(scope.node)
    parent = scope.parent
    return scope.name in callbacks.named or (
        parent is not None and parent.kind == "function" and parent.name in callbacks.factories
    )


def _names_called(node: cst.CSTNode) -> set[str]:
    return {
        name.rsplit(".", 1)[-1]
        for call in walk.nodes(node)
        if isinstance(call, cst.Call) and (name := dotted_name(call.func))
    }
