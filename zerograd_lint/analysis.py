"""The analysis proper, on LibCST: the CSTs of what the plan says can matter, one graph per
analysed function with calls into the project inlined, states along paths, raw findings.
Imported only by a process that analyses (`zerograd_lint.dispatch`): other runs never load LibCST.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

from zerograd_lint import parallel, rules, verdicts, walk
from zerograd_lint.bindings import Frame, Resolver
from zerograd_lint.cfg import Builder
from zerograd_lint.dispatch import Part, Roots
from zerograd_lint.events import Classifier
from zerograd_lint.findings import TOO_DEEP, SourceError
from zerograd_lint.flow import GaveUp, analyse
from zerograd_lint.graph import TooComplex
from zerograd_lint.plan import Plan
from zerograd_lint.project import TooDeep
from zerograd_lint.scopes import Scope, dotted_name
from zerograd_lint.settings import Vocabulary
from zerograd_lint.survey import MODULE, ModuleSurvey, takes_an_engine


def analyse_share(plan: Plan, words: Vocabulary, errors: dict[str, SourceError], share: list[Roots],
                  loops: bool = False) -> Part:
    """The analysis of the roots of `share` (by module), in a form that pickles; with `loops`,
    also the loops it checked and their verdicts (`--show-loops`)."""
    surveys, project, connected = plan.surveys, plan.project, plan.connected
    resolver = Resolver(project, words)
    resolver.wanted = lambda module, name: (
        bool(connected[module.path].followed) if name is None else name in connected[module.path].worth
    )
    modules = []
    for path, roots in share:
        module = project.modules[path]
        if resolver.load(module):
            modules.append((module, frozenset(roots)))
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
    part = Part([], set(), errors)
    for module, roots in modules:
        for node, scope in module.scopes.items():
            if scope.kind == "class" or module.path in errors:
                continue
            try:
                line = module.positions[node].start.line if scope.kind == "function" else MODULE
            except TooDeep:
                errors[module.path] = SourceError(module.path, TOO_DEEP)
                continue
            if line not in roots:
                continue
            callback = node if scope.kind == "function" and _is_callback(scope, resolver, callbacks) else None
            cls = scope.enclosing_class()
            if cls is not None:  # parse where its subclasses may be, whatever was parsed before
                within = _subclass_modules(cls.name, surveys)
                for other in within:
                    resolver.load(project.modules[other])
            for klass in _classes_of(scope, resolver, within if cls is not None else set()):
                try:
                    graph = builder.build(node.body if scope.kind == "function" else node, Frame(scope, cls=klass), callback)
                    analysed = analyse(graph, resolver)
                    raws = rules.judge(analysed)
                    part.per_root.append(((module.path, line), [_pickles(raw) for raw in raws]))
                    if loops:
                        part.loops.append(((module.path, line), verdicts.checked(analysed, raws, resolver)))
                    part.inlined |= {_where(func, resolver) for func in builder.inlined}
                except (TooComplex, GaveUp):
                    continue  # its callees keep their own findings
                except TooDeep as exc:  # this module or one it calls into: that file's loss alone
                    errors.setdefault(exc.path, SourceError(exc.path, TOO_DEEP))
                except RecursionError:
                    errors.setdefault(module.path, SourceError(module.path, TOO_DEEP))
    parallel.keep((resolver, builder))  # in a helper: freed with it, not one by one
    return part


def _where(func: cst.FunctionDef, resolver: Resolver) -> tuple[str, int]:
    module = resolver.scope_of(func).module
    return module.path, module.positions[func].start.line


def _pickles(raw: rules.Raw) -> rules.Raw:
    """The raw finding without the CST it was found in: not the node of its loop (judged already;
    nothing reads it again), nor what its sites' code is made from."""
    related = tuple((role, site.made()) for role, site in raw.related)
    return replace(raw, loop=None if raw.loop is None else replace(raw.loop, node=None), related=related)


def _subclass_modules(name: str, surveys: dict[str, ModuleSurvey]) -> set[str]:
    """The modules whose classes may derive from the class called `name`, directly or not: those
    naming it as a base, then those naming one of their classes, and so on."""
    names, found = {name}, set()
    grown = True
    while grown:
        grown = False
        for path, survey in surveys.items():
            if path not in found and not survey.bases.isdisjoint(names):
                found.add(path)
                names |= survey.top.keys()
                grown = True
    return found


def _classes_of(scope: Scope, resolver: Resolver, within: set[str]) -> list[Scope | None]:
    """`self` in a method: its class, and each subclass that inherits it rather than overriding it
    (a base class's loop calling `self.train_step()` runs the subclass's override), among its own
    module's classes and those of the modules `within`."""
    cls = scope.enclosing_class()
    if cls is None:
        return [None]
    out = [cls]
    for other in resolver.subclasses(cls, within | {cls.module.path}):
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
    if isinstance(scope.node, cst.FunctionDef):
        parameters = scope.node.params
        if takes_an_engine([p.name.value for p in (*parameters.posonly_params, *parameters.params)]):
            return True
    return scope.name in callbacks.named or (
        parent is not None and parent.kind == "function" and parent.name in callbacks.factories
    )


def _names_called(node: cst.CSTNode) -> set[str]:
    return {
        name.rsplit(".", 1)[-1]
        for call in walk.nodes(node)
        if isinstance(call, cst.Call) and (name := dotted_name(call.func))
    }
