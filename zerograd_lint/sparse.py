"""Give LibCST only the parts of a module that can matter.

LibCST parses about twelve times slower than `ast`, and its positions cost as much again; a test
module of a thousand functions may hold one training loop. The survey knows, per function,
whether it can matter. The body of every other function is replaced by `pass` and empty lines,
line for line, so that every position stays what it is in the file and every definition is still
there to be resolved (a call of a function that cannot matter stays a call of a project function
that is not followed). `__init__`, `configure_optimizers` and `__call__` keep their bodies
(optimizers are built and models stored there), and so do long module-level statements only when
the module body itself is analysed.
"""

from __future__ import annotations

import ast

_KEPT_METHODS = frozenset({"__init__", "configure_optimizers", "__call__"})
_LONG = 15  # lines: a longer module-level statement that is not a definition is blanked
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def sparse_text(text: str, tree: ast.Module, keep: frozenset[int], module_analysed: bool) -> str:
    """`text` with what cannot matter emptied. `keep` holds the `def` lines of the functions that
    can matter."""
    lines = text.splitlines(keepends=True)
    changed = False

    def empty(first: int, last: int, stub: ast.stmt | None = None) -> None:
        nonlocal changed
        for number in range(first - 1, min(last, len(lines))):
            line = lines[number]
            ending = _newline(line)
            if stub is not None and number == first - 1:
                lines[number] = line[: stub.col_offset] + "pass" + ending
            else:
                lines[number] = ending
        changed = True

    def visit(body: list[ast.stmt], in_class: bool) -> None:
        for statement in body:
            if isinstance(statement, _DEFS):
                if (in_class and statement.name in _KEPT_METHODS) or _holds(statement, keep):
                    continue
                first = _span(statement.body[0])[0]
                if first > statement.lineno:  # not a one-liner `def f(): ...`
                    empty(first, statement.end_lineno or first, stub=statement.body[0])
            elif isinstance(statement, ast.ClassDef):
                visit(statement.body, in_class=True)
            elif (
                not in_class and not module_analysed and not isinstance(statement, (ast.Import, ast.ImportFrom))
                and (statement.end_lineno or statement.lineno) - statement.lineno + 1 > _LONG
            ):
                empty(*_span(statement))

    visit(tree.body, in_class=False)
    return "".join(lines) if changed else text


def _span(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])
    return start, node.end_lineno or node.lineno


def _holds(node: ast.AST, keep: frozenset[int]) -> bool:
    return any(isinstance(n, _DEFS) and n.lineno in keep for n in ast.walk(node))


def _newline(line: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if line.endswith(ending):
            return ending
    return ""
