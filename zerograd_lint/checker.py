"""Source text in, findings out: the pure core. No I/O, no printing, no exiting.

text -> CST -> scopes -> one graph per analysed function (callers inline their callees) ->
states along paths -> raw findings -> suppression -> `Finding`s.
"""

from __future__ import annotations

import ast
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

# Every spelling of ACCUMULATE contains this word; a file without it has no finding to make.
_NEEDED = "backward"


def check_source(source: str | bytes, path: str = "<stdin>") -> list[Finding]:
    """Check one module's source; raise `SourceError` when it cannot be checked."""
    text = _decode(source, path)
    markers = rules.scan_markers(text)
    if _NEEDED not in text or _other_framework(text):
        raws: list[rules.Raw] = []
    else:
        try:
            raws = _analyse(source, path)
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


# LibCST's native parser overflows the C stack (a crash, not an exception) on expressions
# nested several thousand levels deep; CPython's parser reports them. Deeper than this is refused.
MAX_DEPTH = 1000


def _check_depth(text: str, path: str) -> None:
    """Refuse what CPython cannot parse or what is too deep for LibCST, before LibCST sees it."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise SourceError(path, f"syntax error at {exc.lineno}:{exc.offset}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise SourceError(path, f"too deeply nested to analyse ({type(exc).__name__})") from None
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SourceError(path, f"too deeply nested to analyse (more than {MAX_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _analyse(source: str | bytes, path: str) -> list[rules.Raw]:
    _check_depth(_text_of(source), path)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SourceError(path, f"syntax error at {exc.raw_line}:{exc.raw_column + 1}: {exc.message}") from None
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:  # bad encoding declarations
        raise SourceError(path, f"cannot parse: {exc}") from None
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    scopes = build_scopes(module)
    resolver = Resolver(scopes)
    builder = Builder(module, resolver, positions, Classifier(resolver))
    relevant = _relevant(scopes, positions, _text_of(source))

    per_root: list[tuple[cst.CSTNode, list[rules.Raw]]] = []
    for node, scope in scopes.items():
        if scope.kind == "class" or not relevant[node]:
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


_WORD = re.compile(r"\w+")
_STEPS = re.compile(r"step|zero_grad|\.grad\b|update_params")


_IMPORTS = re.compile(r"^[ \t]*(?:import|from)[ \t]+(\w+)", re.MULTILINE)


def _other_framework(text: str) -> bool:
    """The file trains with another framework (and not with torch)."""
    imported = set(_IMPORTS.findall(text))
    return "torch" not in imported and any(name in imported for name in vocabulary.OTHER_FRAMEWORKS)


def _text_of(source: str | bytes) -> str:
    return source if isinstance(source, str) else _decode(source, "")


def _relevant(scopes: dict[cst.CSTNode, Scope], positions, text: str) -> dict[cst.CSTNode, bool]:
    """Which functions (and the module body) can hold a finding: those that, themselves or through
    the functions of this module they call, both accumulate and step. Only those are analysed."""
    lines = text.splitlines()
    own: dict[cst.CSTNode, str] = {}
    for node, scope in scopes.items():
        if scope.kind == "function":
            pos = positions[node]
            own[node] = "\n".join(lines[pos.start.line - 1 : pos.end.line])
        elif scope.kind == "module":
            own[node] = "\n".join(
                "\n".join(lines[positions[stmt].start.line - 1 : positions[stmt].end.line])
                for stmt in node.body
                if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
            )
    by_name: dict[str, list[cst.CSTNode]] = {}
    for node, scope in scopes.items():
        if scope.kind == "function":
            by_name.setdefault(scope.name, []).append(node)
    calls = {node: {callee for name in set(_WORD.findall(body)) for callee in by_name.get(name, ())} for node, body in own.items()}
    accumulates = {node: _NEEDED in body for node, body in own.items()}
    steps = {node: bool(_STEPS.search(body)) for node, body in own.items()}
    changed = True
    while changed:
        changed = False
        for node, callees in calls.items():
            for flags in (accumulates, steps):
                if not flags[node] and any(flags[c] for c in callees):
                    flags[node] = changed = True
    return {node: accumulates.get(node, False) and steps.get(node, False) for node in scopes}


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
