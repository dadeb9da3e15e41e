"""Source text in, findings out: the pure core. No I/O, no printing, no exiting.

text -> a first look with `ast` (which functions can matter) -> CST -> scopes -> one graph per analysed function (callers inline their callees) ->
states along paths -> raw findings -> suppression -> `Finding`s.
"""

from __future__ import annotations

import io
import re
import tokenize

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from zerograd_lint import rules, vocabulary
from zerograd_lint.bindings import Frame, Resolver
from zerograd_lint.cfg import Builder, TooComplex
from zerograd_lint.events import Classifier
from zerograd_lint.findings import Finding, SourceError
from zerograd_lint.flow import GaveUp, analyse
from zerograd_lint.scopes import Scope, build_scopes, dotted_name
from zerograd_lint.settings import Vocabulary
from zerograd_lint.survey import MODULE, Unparsable, survey

# Every spelling of ACCUMULATE contains this word; a file without it has no finding to make.
_NEEDED = "backward"


def check_source(source: str | bytes, path: str = "<stdin>", vocabulary: Vocabulary = Vocabulary()) -> list[Finding]:
    """Check one module's source; raise `SourceError` when it cannot be checked.

    `vocabulary` adds a project's own names of optimizers and of functions that clear, step or
    run backward (see `zerograd_lint.settings.Vocabulary`)."""
    text = _decode(source, path)
    markers = rules.scan_markers(text)
    if not _may_accumulate(text, vocabulary) or _other_framework(text):
        raws: list[rules.Raw] = []
    else:
        try:
            raws = _analyse(text, path, vocabulary)
        except RecursionError:
            raise SourceError(path, "too deeply nested to analyse") from None
    kept, _ = rules.suppress(raws, markers)
    return sorted(_finding(path, raw) for raw in kept)


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


def _may_accumulate(text: str, vocabulary: Vocabulary) -> bool:
    return _NEEDED in text or any(name in text for name in vocabulary.backwards)


def _analyse(text: str, path: str, vocabulary: Vocabulary) -> list[rules.Raw]:
    try:
        found = survey(text, vocabulary)
    except Unparsable as exc:
        raise SourceError(path, exc.reason) from None
    if not found.roots:
        return []
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise SourceError(path, f"syntax error at {exc.raw_line}:{exc.raw_column + 1}: {exc.message}") from None
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:  # bad encoding declarations
        raise SourceError(path, f"cannot parse: {exc}") from None
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    scopes = build_scopes(module)
    resolver = Resolver(scopes, vocabulary)
    lines = {node: positions[node].start.line if scope.kind == "function" else MODULE for node, scope in scopes.items()}
    builder = Builder(module, resolver, positions, Classifier(resolver, vocabulary), {n for n, l in lines.items() if l in found.followed})

    per_root: list[tuple[cst.CSTNode, list[rules.Raw]]] = []
    for node, scope in scopes.items():
        if scope.kind == "class" or lines[node] not in found.roots:
            continue
        callback = node if scope.kind == "function" and _is_callback(scope, resolver) else None
        frame = Frame(scope, cls=scope.enclosing_class())
        try:
            graph = builder.build(node.body if scope.kind == "function" else node, frame, callback)
            per_root.append((node, rules.judge(analyse(graph, resolver))))
        except (TooComplex, GaveUp):
            continue
    raws: dict[tuple, rules.Raw] = {}
    for node, found in per_root:
        if node in builder.inlined:
            continue  # analysed in the context of its callers
        for raw in found:
            raws.setdefault((raw.code, raw.line, raw.column, raw.message), raw)
    return list(raws.values())


_IMPORTS = re.compile(r"^[ \t]*(?:import|from)[ \t]+(\w+)", re.MULTILINE)


def _other_framework(text: str) -> bool:
    """The file trains with another framework (and not with torch)."""
    imported = set(_IMPORTS.findall(text))
    return "torch" not in imported and any(name in imported for name in vocabulary.OTHER_FRAMEWORKS)


def _is_callback(scope: Scope, resolver: Resolver) -> bool:
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
    while parent is not None:
        if scope.name in parent.callbacks:
            return True
        parent = parent.parent
    return False


def _names_called(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            name = dotted_name(call.func)
            if name:
                names.add(name.rsplit(".", 1)[-1])

    node.visit(Calls())
    return names


def _finding(path: str, raw: rules.Raw) -> Finding:
    rule = rules.RULES[raw.code]
    return Finding(
        path=path,
        line=raw.line,
        column=raw.column + 1,
        code=raw.code,
        message=raw.message,
        name=rule.name,
        end_line=raw.line,
        end_column=raw.column + 1 + raw.length,
    )
