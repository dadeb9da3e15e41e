"""Source text in, findings out: the pure core. No I/O, no printing, no exiting.

text -> a first look with `ast` (which functions can matter, project-wide) -> CST of the modules
that hold them -> one graph per analysed function (calls into the project are inlined) ->
states along paths -> raw findings -> suppression -> `Finding`s, filed under the file of the
loop they are reported at.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst

from zerograd_lint import rules, vocabulary, walk
from zerograd_lint.bindings import Frame, Resolver
from zerograd_lint.cache import Cache
from zerograd_lint.cache import key as cache_key
from zerograd_lint.codes import RULES
from zerograd_lint.cfg import Builder
from zerograd_lint.events import Classifier
from zerograd_lint.findings import Finding, Related, SourceError
from zerograd_lint.flow import GaveUp, analyse
from zerograd_lint.graph import TooComplex
from zerograd_lint.project import Project, TooDeep
from zerograd_lint.scopes import Scope, dotted_name
from zerograd_lint.select import select
from zerograd_lint.settings import Vocabulary
from zerograd_lint.sparse import sparse_text
from zerograd_lint.survey import MODULE, Unparsable, connect, survey_all

_TOO_DEEP = "too deeply nested to analyse"
_IMPORTS = re.compile(r"^[ \t]*(?:import|from)[ \t]+(\w+)", re.MULTILINE)


@dataclass
class Result:
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    errors: dict[str, SourceError] = field(default_factory=dict)


def check_source(source: str | bytes, path: str = "<stdin>", vocabulary: Vocabulary = Vocabulary()) -> list[Finding]:
    """Check one module's source; raise `SourceError` when it cannot be checked.

    `vocabulary` adds a project's own names of optimizers and of functions that clear, step or
    run backward (see `zerograd_lint.settings.Vocabulary`)."""
    result = check_project({path: source}, vocabulary)
    if path in result.errors:
        raise result.errors[path]
    return result.findings.get(path, [])


def check_project(
    sources: Mapping[str, str | bytes], vocabulary: Vocabulary = Vocabulary(), cache: Cache | None = None,
    exhaustive: bool = False,
) -> Result:
    """Check modules together: a loop in one file calling a training step in another is followed.
    Files that cannot be checked are in `errors`; the others are still checked. With a `cache`,
    a run whose inputs did not change reuses the last result (see `zerograd_lint.cache`).
    `exhaustive` turns the prefilter off (every file, function and loop analysed): only tests
    and investigations need it; the findings are the same, slower."""
    whole = cache_key("all", sources, vocabulary) if cache is not None else ""
    if cache is not None and (hit := cache.get(whole)) is not None:
        return Result(*hit)
    result = Result()
    texts: dict[str, str] = {}
    for path, source in sources.items():
        try:
            texts[path] = _decode(source, path)
        except SourceError as exc:
            result.errors[path] = exc
    picked = texts if exhaustive else select(texts, vocabulary)
    chosen = {p: texts[p] for p in sorted(picked) if not _other_framework(texts[p])}
    part = cache_key("chosen", chosen, vocabulary) if cache is not None else ""
    hit = cache.get(part) if cache is not None else None
    if hit is not None:
        result.findings.update(hit[0])
        result.errors.update(hit[1])
    else:
        found = _check_chosen(chosen, vocabulary, exhaustive)
        result.findings.update(found.findings)
        result.errors.update(found.errors)
        if cache is not None:
            cache.put(part, found.findings, found.errors)
    for path, text in texts.items():  # the others can only have markers that suppress nothing
        if path not in chosen and path not in result.errors:
            result.findings[path] = sorted(_finding(path, raw) for raw in rules.unused_markers(path, text))
    if cache is not None:
        cache.put(whole, result.findings, result.errors)
    return result


def _check_chosen(texts: dict[str, str], vocabulary: Vocabulary, exhaustive: bool = False) -> Result:
    result = Result()
    raws: list[rules.Raw] = []
    try:
        raws = _analyse(texts, vocabulary, result.errors, exhaustive)
    except RecursionError:  # a pathological module the first look let through
        for path in texts:
            result.errors.setdefault(path, SourceError(path, _TOO_DEEP))
    for path, text in texts.items():
        if path in result.errors:
            continue
        mine = [raw for raw in raws if raw.path == path]
        kept = rules.suppress(path, mine, rules.scan_markers(text))[0] if mine else rules.unused_markers(path, text)
        result.findings[path] = sorted(_finding(path, raw) for raw in kept)
    return result


def _decode(source: str | bytes, path: str) -> str:
    if isinstance(source, str):
        return source
    if b"\x00" in source:
        raise SourceError(path, "binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise SourceError(path, f"cannot decode: {exc}") from None


def _other_framework(text: str) -> bool:
    """The file trains with another framework (and not with torch)."""
    imported = set(_IMPORTS.findall(text))
    return "torch" not in imported and any(name in imported for name in vocabulary.OTHER_FRAMEWORKS)


def _analyse(texts: dict[str, str], words: Vocabulary, errors: dict[str, SourceError], exhaustive: bool = False) -> list[rules.Raw]:
    surveys = {}
    for path, found in survey_all(texts, words).items():
        if isinstance(found, Unparsable):
            errors[path] = SourceError(path, found.reason)
        else:
            surveys[path] = found
    project = Project()
    for path in surveys:
        project.add(path, texts[path])
    connected = connect(surveys, _imports(project, surveys), everything=exhaustive)
    if not any(s.roots for s in connected.values()):
        return []
    for path, found in connected.items():  # LibCST gets only what can matter
        analysed = exhaustive or MODULE in found.roots
        project.modules[path].text = sparse_text(texts[path], surveys[path].outline, found.needed, analysed)
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
                errors[module.path] = SourceError(module.path, _TOO_DEEP)
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
                    errors.setdefault(exc.path, SourceError(exc.path, _TOO_DEEP))
                except RecursionError:
                    errors.setdefault(module.path, SourceError(module.path, _TOO_DEEP))
    unique: dict[tuple, rules.Raw] = {}
    for node, found_raws in per_root:
        if node in inlined:
            continue  # analysed in the context of its callers
        for raw in found_raws:
            unique.setdefault((raw.path, raw.code, raw.line, raw.column, raw.message), raw)
    return list(unique.values())


def _imports(project: Project, surveys) -> dict[str, set[str]]:
    """The project modules each module imports (by path)."""
    out: dict[str, set[str]] = {}
    for path, found in surveys.items():
        module = project.modules[path]
        targets = (project.resolve(origin, module) for origin in found.imports)
        out[path] = {target[0].path for target in targets if target is not None}
    return out


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


def _finding(path: str, raw: rules.Raw) -> Finding:
    rule = RULES[raw.code]
    return Finding(
        path=path,
        line=raw.line,
        column=raw.column + 1,
        code=raw.code,
        message=raw.message,
        name=rule.name,
        end_line=raw.line,
        end_column=raw.column + 1 + raw.length,
        related=tuple(
            Related(role, site.path, site.line, site.column + 1, site.text, site.subject) for role, site in raw.related
        ),
    )
