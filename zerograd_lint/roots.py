"""The analysis of the roots a plan names, on LibCST: parse -> bind -> events -> graph -> flow ->
rules, for each root (one graph per analysed function with calls into the project inlined,
states along paths, raw findings), in parts (`parts.py`) that pickle.
Imported only by a process that analyses (see `zerograd_lint.schedule`): other runs never load LibCST.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

from zerograd_lint import checked_loops, rules, verdicts
from zerograd_lint.bindings import Frame, Resolver
from zerograd_lint.classifier import Classifier
from zerograd_lint.findings import TOO_DEEP, TOO_LARGE, SourceError, describe
from zerograd_lint.parts import Part
from zerograd_lint.frameworks import ignite, lightning
from zerograd_lint.flow import GaveUp, analyse
from zerograd_lint.graphs.builder import Builder
from zerograd_lint.graphs.nodes import TooComplex
from zerograd_lint.planning import Plan, Roots
from zerograd_lint.project import TooDeep
from zerograd_lint.scopes import Scope
from zerograd_lint.settings import Vocabulary
from zerograd_lint.survey import MODULE, ModuleSurvey



class Analyser:
    """The analysis of a plan's roots, a share at a time. Its resolver and graph builder are
    memoised across shares: what one root resolved, the next finds resolved."""

    def __init__(self, plan: Plan, vocabulary: Vocabulary, loops: bool = False) -> None:
        """`loops`: also list the loops checked, with their verdicts (`--show-loops`)."""
        self.plan = plan
        self.loops = loops
        reach = plan.reach
        resolver = self.resolver = Resolver(plan.project, vocabulary)
        resolver.wanted = lambda module, name: (
            bool(reach[module.path].followed) if name is None else name in reach[module.path].worth
        )
        surveys = plan.surveys

        def followed(func: cst.FunctionDef) -> bool:
            """Does the function touch gradients? By its name's `def` lines, so that no positions
            are needed to decide it."""
            module = resolver.scope_of(func).module
            found = surveys[module.path]
            lines = found.functions_named.get(func.name.value, []) + found.methods_named.get(func.name.value, [])
            return not reach[module.path].followed.isdisjoint(lines)

        self.builder = Builder(resolver, Classifier(resolver, vocabulary), followed)
        self.callbacks = _Callbacks(
            frozenset(n for found in surveys.values() for n in found.callbacks),
            frozenset(n for found in surveys.values() for n in found.callback_factories),
        )

    def analyse(self, share: list[Roots], errors: dict[str, SourceError]) -> Part:
        """The analysis of the roots of `share` (by module), in a form that pickles. Files that
        cannot be analysed go to `errors` (which the part holds)."""
        plan, resolver, builder = self.plan, self.resolver, self.builder
        surveys, project = plan.surveys, plan.project
        modules = []
        for path, roots in share:
            module = project.modules[path]
            if resolver.load(module):
                modules.append((module, frozenset(roots)))
            else:
                errors[path] = SourceError(path, module.error)
        part = Part([], set(), errors)
        for module, roots in modules:
            for node, scope in module.scopes.items():
                if scope.kind == "class" or module.path in errors:
                    continue
                try:
                    line = module.start(node)[0] if scope.kind == "function" else MODULE
                except TooDeep:
                    errors[module.path] = SourceError(module.path, TOO_DEEP)
                    continue
                if line not in roots:
                    continue
                callback = node if scope.kind == "function" and _is_callback(scope, resolver, self.callbacks) else None
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
                        if self.loops:
                            part.loops.append(((module.path, line), verdicts.checked(analysed, raws, resolver)))
                        part.inlined |= {_where(func, resolver) for func in builder.inlined if not self._stands(func)}
                    except (TooComplex, GaveUp) as exc:  # its callees keep their own findings
                        if self.loops:
                            part.loops.append(((module.path, line), [_not_checked(module, node, scope, exc)]))
                    except TooDeep as exc:  # this module or one it calls into: that file's loss alone
                        errors.setdefault(exc.path, SourceError(exc.path, TOO_DEEP))
                    except RecursionError:
                        errors.setdefault(module.path, SourceError(module.path, TOO_DEEP))
                    except MemoryError:  # what this root allocated is freed as this unwinds: the others go on
                        errors.setdefault(module.path, SourceError(module.path, TOO_LARGE))
                    except Exception as exc:  # an internal error: this file's loss alone, named
                        errors.setdefault(module.path, SourceError(module.path, f"internal error: {describe(exc)}"))
        return part

    def _stands(self, func: cst.FunctionDef) -> bool:
        """Is `func` a per-batch callback by what its own module shows (Ignite's `(engine, batch)`,
        or handed to a framework there)? Called once elsewhere (`update(None, batch)` to try it),
        it is still a loop body: its own analysis stands beside the caller's. A name handed over
        in another module says less: a `Stepper.update` is not the `update` given to an `Engine`."""
        scope = self.resolver.scope_of(func)
        return ignite.takes_an_engine(_positional(func)) or func.name.value in self.plan.surveys[scope.module.path].callbacks


def _not_checked(module, node: cst.CSTNode, scope: Scope, gave_up: Exception) -> checked_loops.CheckedLoop:
    """What `--show-loops` says of a root given up on: its `def` (line 1 for a module's body), and
    why its loops were not checked."""
    why = "too large to analyse" if isinstance(gave_up, TooComplex) else "too many paths to follow"
    verdict = checked_loops.Verdict(checked_loops.NOT_CHECKED, message=f"{why}; the functions it calls are checked on their own")
    if scope.kind != "function":
        return checked_loops.CheckedLoop(module.path, 1, 1, "module", "", (verdict,))
    line, column = module.start(node)
    return checked_loops.CheckedLoop(module.path, line, column + 1, "def", node.name.value, (verdict,))


def _positional(func: cst.FunctionDef) -> list[str]:
    """The names of the parameters that can be passed by position."""
    return [p.name.value for p in (*func.params.posonly_params, *func.params.params)]


def _where(func: cst.FunctionDef, resolver: Resolver) -> tuple[str, int]:
    module = resolver.scope_of(func).module
    return module.path, module.start(func)[0]


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
    if cls is not None and scope.name == lightning.PER_BATCH:
        return lightning.manual_training_step(scope, resolver.class_chain(cls))
    parent = scope.parent
    if isinstance(scope.node, cst.FunctionDef) and ignite.takes_an_engine(_positional(scope.node)):
        return True
    return scope.name in callbacks.named or (
        parent is not None and parent.kind == "function" and parent.name in callbacks.factories
    )
