"""A cheap first look with `ast`, before LibCST sees anything.

`ast.parse` is about twelve times faster than LibCST's parser and, unlike it, fails cleanly on
pathological nesting. This pass refuses what cannot be parsed, and finds which functions can
matter: a function (or the module body) can hold a finding only if it, or a function of this
module it calls, both accumulates (`backward`) and touches an optimizer or `.grad`. Only those
are analysed, and only functions that touch gradients at all are followed into at call sites.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from zerograd_lint.settings import Vocabulary

# LibCST's native parser overflows the C stack (a crash, not an exception) on expressions
# nested several thousand levels deep; CPython's parser reports them. Deeper than this is refused.
MAX_DEPTH = 1000

_ACCUMULATING = frozenset({"backward", "manual_backward", "update_params"})
_TOUCHING = frozenset(
    {"step", "zero_grad", "update_params", "optimizer_step", "_foreach_zero_", "zero_", "add_", "sub_", "copy_", "fill_"}
)
MODULE = 0  # the line number that stands for the module body


class Unparsable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Survey:
    roots: frozenset[int]  # `def` lines (MODULE for the module body) worth analysing
    followed: frozenset[int]  # `def` lines of functions that touch gradients, directly or not


class _Function:
    def __init__(self) -> None:
        self.accumulates = False
        self.touches = False
        self.names: set[str] = set()


def survey(text: str, vocabulary: Vocabulary = Vocabulary()) -> Survey:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise Unparsable(f"syntax error at {exc.lineno}:{exc.offset}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise Unparsable(f"too deeply nested to analyse ({type(exc).__name__})") from None

    accumulating = _ACCUMULATING | set(vocabulary.backwards)
    touching = _TOUCHING | set(vocabulary.clears) | set(vocabulary.steps)
    functions: dict[int, _Function] = {MODULE: _Function()}
    by_name: dict[str, list[int]] = {}
    stack: list[tuple[ast.AST, int, int]] = [(tree, MODULE, 0)]
    while stack:
        node, owner, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Unparsable(f"too deeply nested to analyse (more than {MAX_DEPTH} levels)")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not tree:
            functions[node.lineno] = _Function()
            by_name.setdefault(node.name, []).append(node.lineno)
            owner = node.lineno
        else:
            _note(node, functions[owner], accumulating, touching)
        stack.extend((child, owner, depth + 1) for child in ast.iter_child_nodes(node))

    calls = {line: {c for name in f.names for c in by_name.get(name, ())} for line, f in functions.items()}
    accumulates = {line for line, f in functions.items() if f.accumulates}
    touches = {line for line, f in functions.items() if f.touches}
    for flags in (accumulates, touches):
        changed = True
        while changed:
            grown = {line for line, callees in calls.items() if line not in flags and callees & flags}
            flags |= grown
            changed = bool(grown)
    return Survey(frozenset(accumulates & touches), frozenset(accumulates | touches))


def _note(node: ast.AST, function: _Function, accumulating, touching) -> None:
    if isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Name):
        name = node.id
    else:
        return
    if name in accumulating:
        function.accumulates = True
    if name in touching or name == "grad":
        function.touches = True
    function.names.add(name)
