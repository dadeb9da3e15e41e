"""Put statements right after others, and take statements out of their blocks, through LibCST.

A statement goes right after another (simple or compound: after a loop, after its whole body),
or first in a block (a function's body); a moved statement may be compound (a whole clearing
loop). Nothing else in the module is touched: LibCST keeps every byte of what it does not rebuild
(formatting, comments, quotes, line endings, encoding), and a statement dropped into another
block takes that block's indentation (a compound one keeps its body's indentation relative to
it). A moved statement carries the comment lines directly above it and its own trailing comment
(a compound one, the comment lines closing its body too); the blank lines above those stay where
they were (given to the statement that now comes first there, or to the block's footer).

Line bookkeeping (`Shift`) follows where each original line ends up, so findings of the fixed
source can be matched with those of the original.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from zerograd_lint.findings import Edit
from zerograd_lint.lines import lines_of


@dataclass(frozen=True)
class Placement:
    """`statement` goes right after `anchor`, or first in it when `anchor` is a block; `moved`
    (if any) is where it comes from."""

    anchor: cst.BaseStatement | cst.IndentedBlock
    statement: cst.BaseStatement
    moved: cst.BaseStatement | None = None

    def same_as(self, other: Placement) -> bool:
        if self.anchor is not other.anchor:
            return False
        if self.moved is not None or other.moved is not None:
            return self.moved is other.moved
        return self.statement.deep_equals(other.statement)


def distinct(placements: Iterable[Placement]) -> list[Placement]:
    """Each placement once (two findings can ask for the same edit), in their first order."""
    kept: list[Placement] = []
    for placement in placements:
        if not any(placement.same_as(k) for k in kept):
            kept.append(placement)
    return kept


def carried_lines(statement: cst.BaseStatement) -> tuple[cst.EmptyLine, ...]:
    """The comment lines directly above a statement: they move with it."""
    lines = list(statement.leading_lines)
    start = len(lines)
    while start > 0 and lines[start - 1].comment is not None:
        start -= 1
    return tuple(lines[start:])


def left_behind(statement: cst.BaseStatement) -> tuple[cst.EmptyLine, ...]:
    """The lines above a statement that stay where they are when it moves."""
    return tuple(statement.leading_lines[: len(statement.leading_lines) - len(carried_lines(statement))])


def moving(statement: cst.BaseStatement) -> cst.BaseStatement:
    """The statement as it reads in its new place."""
    return statement.with_changes(leading_lines=carried_lines(statement))


def rebuild(
    original: Sequence[cst.BaseStatement],
    updated: Sequence[cst.BaseStatement],
    removed: frozenset[cst.CSTNode],
    after: Mapping[cst.CSTNode, Sequence[cst.BaseStatement]],
) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
    """A block's statements without `removed` and with `after[s]` right after `s`, and the lines a
    removed last statement leaves behind. `original` and `updated` are the same block before and
    after its children were transformed: nodes are recognised in the first, taken from the second."""
    body: list[cst.BaseStatement] = []
    pending: list[cst.EmptyLine] = []
    for before, now in zip(original, updated, strict=True):
        if before in removed:
            pending.extend(left_behind(before))
            continue
        if pending:
            now = now.with_changes(leading_lines=[*pending, *now.leading_lines])
            pending = []
        body.append(now)
        body.extend(after.get(before, ()))
    return body, pending


class _Placing(cst.CSTTransformer):
    def __init__(self, removed: frozenset[cst.CSTNode], after: Mapping[cst.CSTNode, Sequence[cst.BaseStatement]]):
        super().__init__()
        self.removed = removed
        self.after = after  # a statement: what follows it; a block: what comes first in it

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        first = self.after.get(original_node, ())
        if not first and not any(s in self.removed or s in self.after for s in original_node.body):
            return updated_node
        body, left = rebuild(original_node.body, updated_node.body, self.removed, self.after)
        return updated_node.with_changes(body=[*first, *body], footer=[*left, *updated_node.footer])


def place(module: cst.Module, placements: Sequence[Placement]) -> cst.Module:
    """The module with every placement made. `placements` are nodes of `module`, distinct."""
    after: dict[cst.CSTNode, list[cst.BaseStatement]] = {}
    for placement in placements:
        after.setdefault(placement.anchor, []).append(placement.statement)
    removed = frozenset(p.moved for p in placements if p.moved is not None)
    return module.visit(_Placing(removed, after))


def without(module: cst.Module, statements: Iterable[cst.BaseStatement]) -> cst.Module:
    """The module with these statements (nodes of it) taken out, as a move takes them out."""
    taken = frozenset(statements)
    return module.visit(_Placing(taken, {})) if taken else module  # a visit rebuilds every node


def rendered(module: cst.Module, like: str | bytes) -> str | bytes:
    """The module's source, as bytes in its own encoding when the original was bytes."""
    return module.bytes if isinstance(like, bytes) else module.code


@dataclass(frozen=True)
class Shift:
    """Where each line of the original is in the fixed source.

    `insertions` are (the line they follow, how many lines), in the order they are made (two after
    the same line come in that order); `moves` are (first line, last line, which insertion puts
    them back): the lines of a moved statement, with its comment lines."""

    insertions: tuple[tuple[int, int], ...] = ()
    moves: tuple[tuple[int, int, int], ...] = ()

    def line(self, old: int) -> int:
        for first, last, insertion in self.moves:
            if first <= old <= last:
                return self.start(insertion) + old - first
        added = sum(count for after, count in self.insertions if after < old)
        taken = sum(last - first + 1 for first, last, _ in self.moves if last < old)
        return old + added - taken

    def start(self, insertion: int) -> int:
        """The first line of an insertion in the fixed source."""
        after, _ = self.insertions[insertion]
        before = sum(count for line, count in self.insertions[:insertion] if line == after)
        return self.line(after) + 1 + before


NO_SHIFT = Shift()




def edits_between(old: str, new: str) -> tuple[Edit, ...]:
    """Whole-line edits that turn `old` into `new`, at 1-based (line, column) positions of `old`."""
    before, after = lines_of(old), lines_of(new)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return tuple(
        Edit(_position(before, i1), _position(before, i2), "".join(after[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    )


def _position(lines: Sequence[str], index: int) -> tuple[int, int]:
    """The start of line `index` (0-based), or the end of the text."""
    if index < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return index + 1, 1
    return len(lines), len(lines[-1]) + 1
