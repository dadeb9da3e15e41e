"""Give LibCST only the parts of a module that can matter.

LibCST parses about twelve times slower than `ast`, and its positions cost as much again; a test
module of a thousand functions may hold one training loop. The survey knows, per function,
whether it can matter. The body of every other function is replaced by `pass`, so that every
definition is still there to be resolved (a call of a function that cannot matter stays a call of
a project function that is not followed). Blank lines are then left out, and each line left keeps
its number in the file (`Module.lines`): positions are read through it, columns unchanged. `__init__`, `configure_optimizers` and `__call__` keep their bodies
(optimizers are built and models stored there), and so do long module-level statements only when
the module body itself is analysed.

The survey hands over an outline (`outline()`), not its `ast` tree: small enough to come back
from a worker process.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from typing import NamedTuple

from zerograd_lint.lines import lines_of

_KEPT_METHODS = frozenset({"__init__", "configure_optimizers", "__call__"})
_LONG = 15  # lines: a longer module-level statement that is not a definition is blanked
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Body(NamedTuple):
    """A function body that may be emptied: unless one of `defs` (its own `def` line and those
    nested in it) is kept. A named tuple: a plan's outlines, thousands of bodies, are unpickled
    by each helper before it analyses, five times faster than as dataclasses."""

    defs: frozenset[int]
    # Lines as `ast` gives them: a decorator's is that of its expression, which a parenthesis or a
    # backslash can put below its `@` (`sparse_text` looks the `@` up)
    first: int  # first line of the body (its first statement's decorators included)
    last: int
    indent: int  # column of the body's first statement, in UTF-8 bytes
    kept_method: bool  # `__init__` and the like of a class: never emptied
    decorated: int = 0  # the first line of the function's decorators (its `def` line if none)
    header: int = 0  # its `def` line
    signature: str = ""  # `def name(*args, **kwargs):`, what a header of several lines becomes
    first_decorated: bool = False  # the body's first statement has decorators


@dataclass(frozen=True)
class Outline:
    bodies: tuple[Body, ...]
    long_statements: tuple[tuple[int, int], ...]  # module-level, not definitions or imports


def within(def_lines: list[int], statement: ast.stmt) -> list[int]:
    """The `def` lines (sorted: every one of the module) inside `statement`, its own included."""
    first = bisect.bisect_left(def_lines, statement.lineno)
    return def_lines[first : bisect.bisect_right(def_lines, statement.end_lineno or statement.lineno, first)]


def outline(tree: ast.Module, def_lines: list[int]) -> Outline:
    bodies: list[Body] = []

    def visit(body: list[ast.stmt], in_class: bool) -> None:
        for statement in body:
            if isinstance(statement, _DEFS):
                first = _span(statement.body[0])[0]
                if first > statement.lineno:  # not a one-liner `def f(): ...`
                    defs = frozenset(within(def_lines, statement))
                    kept = in_class and statement.name in _KEPT_METHODS
                    asynchronous = "async " if isinstance(statement, ast.AsyncFunctionDef) else ""
                    bodies.append(Body(
                        defs, first, statement.end_lineno or first, statement.body[0].col_offset, kept,
                        _span(statement)[0], statement.lineno, f"{asynchronous}def {statement.name}(*args, **kwargs):",
                        bool(getattr(statement.body[0], "decorator_list", None)),
                    ))
            elif isinstance(statement, ast.ClassDef):
                visit(statement.body, in_class=True)
            else:  # definitions under `if HAS_FX:`, `try:` and the like are emptied too
                for block in _blocks(statement):
                    visit(block, in_class)

    visit(tree.body, in_class=False)
    long = tuple(
        _span(s) for s in tree.body
        if not isinstance(s, (*_DEFS, ast.ClassDef, ast.Import, ast.ImportFrom))
        and (s.end_lineno or s.lineno) - s.lineno + 1 > _LONG
    )
    return Outline(tuple(bodies), long)


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a compound statement that is not a definition."""
    if isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [statement.body, statement.orelse]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [statement.body]
    if isinstance(statement, (ast.Try, ast.TryStar)):
        return [statement.body, *(h.body for h in statement.handlers), statement.orelse, statement.finalbody]
    if isinstance(statement, ast.Match):
        return [case.body for case in statement.cases]
    return []


def sparse_text(text: str, shape: Outline, keep: frozenset[int], module_analysed: bool) -> tuple[str, list[int]]:
    """`text` with what cannot matter emptied, then without its blank lines (LibCST builds
    objects for each, and most lines of an emptied body end up blank), and the line in `text` of
    each line left. `keep` holds the `def` lines of the functions that can matter."""
    lines = lines_of(text)
    for body in shape.bodies:
        if body.kept_method or not body.defs.isdisjoint(keep) or body.first > len(lines):
            continue
        first = _at_sign(lines, body.first) if body.first_decorated else body.first
        if not module_analysed:
            _empty_header(lines, body, first)
        for number in range(first - 1, min(body.last, len(lines))):
            line = lines[number]
            ending = _newline(line)
            lines[number] = _columns(line, body.indent) + "pass" + ending if number == first - 1 else ending
    if not module_analysed:
        for first, last in shape.long_statements:
            for number in range(first - 1, min(last, len(lines))):
                lines[number] = _newline(lines[number])
    return _without_blank_lines(lines)


def _without_blank_lines(lines: list[str]) -> tuple[str, list[int]]:
    """The lines that are not blank, and their numbers. A blank line inside a string literal goes
    too (the analysis reads no multi-line string); one after a backslash stays, as it ends the
    statement the backslash continued."""
    kept: list[str] = []
    numbers: list[int] = []
    continued = False
    for number, line in enumerate(lines, 1):
        if continued or line.strip():
            kept.append(line)
            numbers.append(number)
            continued = line.rstrip("\r\n").endswith("\\")
    return "".join(kept), numbers


def _empty_header(lines: list[str], body: Body, first: int) -> None:
    """An emptied function keeps its name and nothing else: its decorators become empty lines and
    a header of several lines one `def name(*args, **kwargs):`. The analysis reads neither for a
    function it does not follow, and they are much of what is left of a large test module (a
    decorator of three lines on each of hundreds of tests). Only when the module body is not
    analysed: decorators run there."""
    if body.header > len(lines):
        return
    decorated = _at_sign(lines, body.decorated) if body.decorated < body.header else body.header
    for number in range(decorated - 1, body.header - 1):
        lines[number] = _newline(lines[number])
    if first - 1 > body.header and not _columns(lines[first - 1], body.indent).strip():
        line = lines[body.header - 1]
        lines[body.header - 1] = line[: len(line) - len(line.lstrip())] + body.signature + _newline(line)
        for number in range(body.header, first - 1):
            lines[number] = _newline(lines[number])


def _at_sign(lines: list[str], line: int) -> int:
    """The line of the `@` of a decorator whose expression starts on `line`."""
    at = line
    while at > 1 and not lines[at - 1].lstrip().startswith("@"):
        at -= 1
    return at if lines[at - 1].lstrip().startswith("@") else line


def _columns(line: str, offset: int) -> str:
    """The start of `line` up to a column given in UTF-8 bytes, as `ast` gives columns."""
    return line.encode("utf-8")[:offset].decode("utf-8", "ignore")


def _span(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])
    return start, node.end_lineno or node.lineno


def _newline(line: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if line.endswith(ending):
            return ending
    return ""
