"""Fixed Python back into the cells it came from.

A notebook is checked, and fixed, as the Python of its code cells (`read_notebook`). The fixed
Python goes back cell by cell: its rows are lined up with the original rows (`difflib`), and each
run of rows that changed must lie in one cell (an inserted clear after a statement of that cell, a
statement moved within its block), and so must all the edits of each fix (`in_one_cell`: a clear
moved from one cell into another is not), else the notebook is not fixed (`NotMapped`). A row that did not
change keeps the cell's own text, line break and all: a line of IPython syntax, which the checked
Python holds as a placeholder, is never written back as that placeholder. Placeholders are lined
up with each other, first with first, so that no edit is ever taken for a moved magic.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from zerograd_lint.findings import Fix
from zerograd_lint.lines import lines_of
from zerograd_lint.notebook import Index
from zerograd_lint.notebook.magics import NEUTRALISED, neutralise

_BREAKS = ("\r\n", "\r", "\n")


class NotMapped(ValueError):
    """The fixed Python cannot be put back into the cells; the message says why, in one line."""


@dataclass(frozen=True)
class _Cell:
    number: int
    lines: tuple[tuple[str, str], ...]  # (text, line break) as the notebook holds them
    rows: tuple[str, ...]  # the same lines as the checked Python has them (IPython syntax neutralised)

    @classmethod
    def of(cls, number: int, source: str) -> _Cell:
        lines = tuple(_split(line) for line in lines_of(source))
        return cls(number, lines, tuple(neutralise([text for text, _ in lines])))

    def rewritten(self, rows: Sequence[str | int]) -> str:
        """The cell's new text: a row is a line of the fixed Python, or the index of a line kept."""
        default = next((brk for _, brk in self.lines if brk), "\n")
        out: list[tuple[str, str]] = []
        for row in rows:
            if isinstance(row, int):
                text, brk = self.lines[row]
            else:
                text, brk = row, out[-1][1] if out else default
            out.append((text, brk or default))
        if out and not (self.lines and self.lines[-1][1]):  # the cell did not end with a line break
            out[-1] = (out[-1][0], "")
        return "".join(text + brk for text, brk in out)


def in_one_cell(index: Index, fixes: Iterable[Fix]) -> None:
    """Raise `NotMapped` unless the edits of each fix (at rows of the checked Python) are in one cell."""
    for fix in fixes:
        cells = {index.locate(row)[0] for edit in fix.edits for row in (edit.start[0], edit.end[0])}
        if len(cells) > 1:
            first, *_, last = sorted(cells)
            raise NotMapped(f"the fix would move code from cell {first} to cell {last}")


def fixed_cells(sources: dict[int, str], before: str, after: str) -> dict[int, str]:
    """The new text of each code cell the fix changed, by cell number. `sources`: each code cell's
    text, by number; `before`: their Python as checked, `after`: as fixed."""
    cells = [_Cell.of(number, source) for number, source in sources.items()]
    rows: list[str] = []
    owners: list[tuple[int, int] | None] = []  # (cell position, line) of each row; None: the row between cells
    for position, cell in enumerate(cells):
        rows += [*cell.rows, ""]
        owners += [*((position, line) for line in range(len(cell.rows))), None]
    if "".join(row + "\n" for row in rows) != before or not after.endswith("\n"):
        raise NotMapped("the checked source is not the notebook's code cells")
    fixed = after[:-1].split("\n")
    new_rows: list[list[str | int]] = [[] for _ in cells]
    changed: set[int] = set()
    position = 0  # the cell the fixed rows are in now
    for tag, i1, i2, j1, j2 in _opcodes(rows, fixed):
        if tag == "equal":
            for owner in owners[i1:i2]:
                if owner is None:
                    position += 1
                else:
                    _expect(owner[0] == position)
                    new_rows[position].append(owner[1])
            continue
        where = _owner(owners, i1, i2)
        _expect(where == position)
        new_rows[position] += fixed[j1:j2]
        changed.add(position)
    _expect(position == len(cells))
    return {cells[p].number: cells[p].rewritten(new_rows[p]) for p in sorted(changed)}


def _opcodes(rows: list[str], fixed: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes, IPython placeholders lined up first with first (a distinct key each)."""
    placeholders = [i for i, row in enumerate(rows) if row.strip() == NEUTRALISED]
    kept = [j for j, row in enumerate(fixed) if row.strip() == NEUTRALISED]
    if [rows[i] for i in placeholders] != [fixed[j] for j in kept]:
        raise NotMapped("the fix would change a line of IPython syntax")
    left: list[object] = list(rows)
    right: list[object] = list(fixed)
    for key, (i, j) in enumerate(zip(placeholders, kept)):
        left[i] = right[j] = (key,)
    head = 0  # the rows that did not change at either end are not compared: a fix changes few lines
    while head < min(len(left), len(right)) and left[head] == right[head]:
        head += 1
    tail = 0
    while tail < min(len(left), len(right)) - head and left[-1 - tail] == right[-1 - tail]:
        tail += 1
    middle = difflib.SequenceMatcher(None, left[head:len(left) - tail], right[head:len(right) - tail],
                                     autojunk=False).get_opcodes()
    opcodes = [("equal", 0, head, 0, head)] if head else []
    opcodes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle]
    if tail:
        opcodes.append(("equal", len(left) - tail, len(left), len(right) - tail, len(right)))
    return opcodes


def _owner(owners: list[tuple[int, int] | None], i1: int, i2: int) -> int:
    """The cell (its position) of a change to rows `i1:i2`; an insertion (`i1 == i2`) belongs to
    the cell of the row above it, or, at the top of a cell, to that cell."""
    if i2 > i1:
        cells = {owner[0] if owner is not None else None for owner in owners[i1:i2]}
        if len(cells) == 1 and None not in cells:
            return cells.pop()  # type: ignore[return-value]
        raise NotMapped("an edit would span two cells")
    above = owners[i1 - 1] if i1 > 0 else None
    below = owners[i1] if i1 < len(owners) else None
    if above is not None:
        return above[0]
    if below is not None:
        return below[0]
    raise NotMapped("an edit would fall between two cells")


def _expect(condition: bool) -> None:
    if not condition:
        raise NotMapped("an edit would span two cells")


def _split(line: str) -> tuple[str, str]:
    for brk in _BREAKS:
        if line.endswith(brk):
            return line[: -len(brk)], brk
    return line, ""
