"""A module parsed for fixing: where the statements a finding names are, and what encloses them.

Positions come from the finding (`Finding.line`/`column` for the loop, `Related` for the calls):
1-based lines and columns, columns counted in characters. LibCST's `PositionProvider` counts
columns from 0, hence the `- 1` wherever the two meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst
from libcst.metadata import CodeRange

from zerograd_lint.positions import Positions
from zerograd_lint.walk import parents

# What can report a finding: a loop, or a function a framework calls once per batch.
Loop = cst.For | cst.While | cst.FunctionDef
# What makes a statement run another number of times, or under another context, than its neighbours.
Frame = cst.For | cst.While | cst.With


@dataclass(frozen=True)
class Inside:
    """The statement runs in the loop's body, inside these loops and `with` blocks (outermost first)."""

    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class Elsewhere:
    """The statement is not in the loop's body: in `function` (a def, a lambda or a class), or
    else outside the loop (before it, after it, or in its `else`)."""

    function: cst.FunctionDef | cst.Lambda | cst.ClassDef | None


class Located:
    """A parsed module with the positions and parents of its nodes."""

    def __init__(self, source: str | bytes) -> None:
        # LibCST's own providers (`PositionProvider`, `ParentNodeProvider`) give the same, at three
        # times the cost: a copy of the tree, and a visitor that rebuilds every node it passes.
        self.module = cst.parse_module(source)
        self._positions = Positions(self.module)
        self._parents = parents(self.module)

    @cached_property
    def text(self) -> str:
        return self.module.code

    def position(self, node: cst.CSTNode) -> CodeRange:
        return self._positions[node]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @cached_property
    def _nodes(self) -> list[cst.CSTNode]:
        """Every node, in the order `PositionProvider` lists them."""
        return self._positions.ordered([self.module, *self._parents])

    @cached_property
    def _small_statements(self) -> list[tuple[CodeRange, cst.BaseSmallStatement]]:
        return [(self.position(n), n) for n in self._nodes if isinstance(n, cst.BaseSmallStatement)]

    @cached_property
    def _loops(self) -> list[Loop]:
        return [n for n in self._nodes if isinstance(n, Loop)]

    def loop_at(self, line: int, column: int) -> Loop | None:
        """The loop (or function) whose `for`, `while` or `def` keyword is at this position."""
        for node in self._loops:
            start = self.position(node).start
            if start.line == line and start.column + _keyword_offset(node) == column - 1:
                return node
        return None

    def small_statement_at(self, line: int, column: int) -> cst.BaseSmallStatement | None:
        """The simple statement (`x()`, `a = b`, `p.grad = None`...) that spans this position."""
        point = (line, column - 1)
        for where, node in self._small_statements:
            if (where.start.line, where.start.column) <= point < (where.end.line, where.end.column):
                return node
        return None

    def starts_at(self, node: cst.CSTNode, line: int, column: int) -> bool:
        start = self.position(node).start
        return (start.line, start.column) == (line, column - 1)

    def first_line(self, node: cst.CSTNode) -> int:
        return self.position(node).start.line

    def last_line(self, node: cst.CSTNode) -> int:
        return self.position(node).end.line

    def end_line(self, statement: cst.BaseStatement) -> int:
        """The last line of a statement's text: a compound one's ends with its blocks' footers
        (the comment lines closing its body), which its position leaves out."""
        if isinstance(statement, cst.SimpleStatementLine):
            return self.last_line(statement)
        return self.first_line(statement) + self.code(statement.with_changes(leading_lines=())).count("\n") - 1

    def header_line(self, block: cst.IndentedBlock) -> int:
        """The last line of the header a block follows (`def f(...):`), the line before its text."""
        first = block.body[0]
        return self.first_line(first) - len(first.leading_lines) - 1

    @cached_property
    def _statements(self) -> dict[int, cst.BaseStatement]:
        starting: dict[int, cst.BaseStatement] = {}
        for node in self._nodes:
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                starting.setdefault(self.position(node).start.line, node)
        return starting

    def statement_starting_on(self, line: int) -> cst.BaseStatement | None:
        """The statement (simple or compound) whose text, after its leading lines, starts on `line`."""
        return self._statements.get(line)

    def block_of(self, statement: cst.BaseStatement) -> cst.IndentedBlock | None:
        """The indented block the statement is one of, or None at the top of the module."""
        parent = self.parent(statement)
        return parent if isinstance(parent, cst.IndentedBlock) else None

    def next_in_block(self, statement: cst.BaseStatement) -> cst.BaseStatement | None:
        block = self.block_of(statement)
        if block is None:
            return None
        body = list(block.body)
        index = body.index(statement)
        return body[index + 1] if index + 1 < len(body) else None

    def enclosure(self, statement: cst.CSTNode, loop: Loop) -> Inside | Elsewhere:
        """Where `statement` runs relative to `loop`'s body."""
        frames: list[Frame] = []
        child, node = statement, self.parent(statement)
        while node is not None:
            if node is loop:
                return Inside(tuple(reversed(frames))) if child is loop.body else Elsewhere(None)
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return Elsewhere(node)
            if isinstance(node, (cst.For, cst.While)) and child is node.body:
                frames.append(node)
            elif isinstance(node, cst.With):
                frames.append(node)
            child, node = node, self.parent(node)
        return Elsewhere(None)


def _keyword_offset(node: Loop) -> int:
    """How far the `for`/`def` keyword is from the node's start (`async for`, `async def`)."""
    asynchronous = getattr(node, "asynchronous", None)
    return 0 if asynchronous is None else len("async") + len(asynchronous.whitespace_after.value)
