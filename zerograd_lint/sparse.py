"""Give LibCST only the parts of a module that can matter.

LibCST parses about twelve times slower than `ast`, and its positions cost as much again; a test
module of a thousand functions may hold one training loop. The survey knows, per function,
whether it can matter. The body of every other function is replaced by `pass`, so that every
definition is still there to be resolved (a call of a function that cannot matter stays a call of
a project function that is not followed). Blank lines are then left out, and each line left keeps
its number in the file (`Module.lines`): positions are read through it, columns unchanged. The
`__init__`, `configure_optimizers` and `__call__` of a class the analysis may meet keep their
bodies (optimizers are built and models stored there: see `plan.methods_kept`), and long
module-level statements are kept only when the module body itself is analysed.

The survey hands over an outline (`outline()`), not its `ast` tree: small enough to come back
from a worker process.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from zerograd_lint.lines import lines_of
from zerograd_lint.slicing import Block, blocks_of

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
    decorated: int = 0  # the first line of the function's decorators (its `def` line if none)
    header: int = 0  # its `def` line
    stub: str = ""  # `def name(): pass`, what the function becomes when its module body is not analysed
    first_decorated: bool = False  # the body's first statement has decorators


class Klass(NamedTuple):
    """A class statement, as `plan.methods_kept` needs it."""

    name: str
    bases: frozenset[str]  # the last part of the name of each
    methods: frozenset[int]  # the `def` lines of the functions in its body
    kept: frozenset[int]  # those of its `__init__`, `configure_optimizers` and `__call__`


@dataclass(frozen=True)
class Outline:
    bodies: tuple[Body, ...]
    long_statements: tuple[tuple[int, int], ...]  # module-level, not definitions or imports
    classes: tuple[Klass, ...] = ()  # those of the module body and of class bodies, however nested


def within(def_lines: list[int], statement: ast.stmt) -> list[int]:
    """The `def` lines (sorted: every one of the module) inside `statement`, its own included."""
    first = bisect.bisect_left(def_lines, statement.lineno)
    return def_lines[first : bisect.bisect_right(def_lines, statement.end_lineno or statement.lineno, first)]


def outline(tree: ast.Module, def_lines: list[int]) -> Outline:
    bodies: list[Body] = []
    classes: list[Klass] = []

    def visit(body: list[ast.stmt], methods: list[ast.FunctionDef | ast.AsyncFunctionDef] | None) -> None:
        """`methods`: where the functions met go, in a class body."""
        for statement in body:
            if isinstance(statement, _DEFS):
                if methods is not None:
                    methods.append(statement)
                first = _span(statement.body[0])[0]
                if first > statement.lineno:  # not a one-liner `def f(): ...`
                    defs = frozenset(within(def_lines, statement))
                    asynchronous = "async " if isinstance(statement, ast.AsyncFunctionDef) else ""
                    bodies.append(Body(
                        defs, first, statement.end_lineno or first, statement.body[0].col_offset,
                        _span(statement)[0], statement.lineno, f"{asynchronous}def {statement.name}(): pass",
                        bool(getattr(statement.body[0], "decorator_list", None)),
                    ))
            elif isinstance(statement, ast.ClassDef):
                own: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
                visit(statement.body, own)
                bases = frozenset(b.id if isinstance(b, ast.Name) else b.attr for b in statement.bases
                                  if isinstance(b, (ast.Name, ast.Attribute)))
                classes.append(Klass(statement.name, bases, frozenset(f.lineno for f in own),
                                     frozenset(f.lineno for f in own if f.name in _KEPT_METHODS)))
            else:  # definitions under `if HAS_FX:`, `try:` and the like are emptied too
                for block in blocks_of(statement):
                    visit(block, methods)

    visit(tree.body, None)
    long = tuple(
        _span(s) for s in tree.body
        if not isinstance(s, (*_DEFS, ast.ClassDef, ast.Import, ast.ImportFrom))
        and (s.end_lineno or s.lineno) - s.lineno + 1 > _LONG
    )
    return Outline(tuple(bodies), long, tuple(classes))


def sparse_text(text: str, shape: Outline, keep: frozenset[int], module_analysed: bool,
                sliced: Sequence[Block] = ()) -> tuple[str, list[int]]:
    """`text` with what cannot matter emptied, then without its blank lines (LibCST builds
    objects for each, and most lines of an emptied body end up blank), and the line in `text` of
    each line left. `keep` holds the `def` lines of the functions that can matter; `sliced`, the
    blocks of their statements that cannot (`slicing.blocks`)."""
    lines = lines_of(text)
    for block in sliced:
        _blank(lines, block)
    for body in shape.bodies:
        if not body.defs.isdisjoint(keep) or body.first > len(lines):
            continue
        first = at_sign(lines, body.first) if body.first_decorated else body.first
        stubbed = not module_analysed and _stubbed(lines, body, first)
        for number in range(first - 1, min(body.last, len(lines))):
            line = lines[number]
            ending = _newline(line)
            lines[number] = _columns(line, body.indent) + "pass" + ending if number == first - 1 and not stubbed else ending
    if not module_analysed:
        for first, last in shape.long_statements:
            for number in range(first - 1, min(last, len(lines))):
                lines[number] = _newline(lines[number])
    return _without_blank_lines(lines)


def _blank(lines: list[str], block: Block) -> None:
    """Blank the statements of a block the slice leaves out, but one that shares a line with
    something kept (`if x: y = 1`, `a = 1; b = 2`); a `pass` stands for a block left empty."""
    gone = [
        (first, last, column) for first, last, column, end, blank in block
        if blank and last <= len(lines) and not _columns(lines[first - 1], column).strip()
        and not lines[last - 1].encode("utf-8")[end:].decode("utf-8", "ignore").split("#", 1)[0].strip()
    ]
    indent = _columns(lines[gone[0][0] - 1], gone[0][2]) if gone else ""
    for first, last, _ in gone:
        for number in range(first - 1, last):
            lines[number] = _newline(lines[number])
    if gone and len(gone) == len(block):
        lines[gone[0][0] - 1] = indent + "pass" + lines[gone[0][0] - 1]


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


def _stubbed(lines: list[str], body: Body, first: int) -> bool:
    """An emptied function keeps its name and nothing else: its decorators become empty lines and
    its header, whatever its parameters, one `def name(): pass` (the body's lines then go too).
    The analysis reads neither for a function it does not follow, and they are much of what is
    left of a large test module (a decorator of three lines on each of hundreds of tests; LibCST
    parses a `pass` on a line of its own as an indented block, a tenth of such a module). Only
    when the module body is not analysed: decorators run there. False where the body does not
    start a line of its own (`def f(a,\n      b): return a`): that header stays as it is."""
    if body.header > len(lines) or _columns(lines[first - 1], body.indent).strip():
        return False
    decorated = at_sign(lines, body.decorated) if body.decorated < body.header else body.header
    header = lines[body.header - 1]
    for number in range(decorated - 1, first - 1):
        lines[number] = _newline(lines[number])
    lines[body.header - 1] = header[: len(header) - len(header.lstrip())] + body.stub + _newline(header)
    return True


def at_sign(lines: list[str], line: int) -> int:
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
