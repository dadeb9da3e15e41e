"""Jupyter notebooks: the `.ipynb` JSON in, one Python source out, and the way back to cells.

As ruff does (`ruff_notebook`): keep the code cells, neutralise IPython syntax line for line
(`magics.py`), concatenate the cells (an optimizer built in one cell is stepped in the next), check
that source like any module, then map each row back to `(cell, line in the cell)` with `bisect`.
Cells are numbered from 1 among *all* cells, markdown ones included (ruff's numbering: the cell
you count to when you scroll the notebook). A blank row follows each cell in the concatenated
source, so that a `# zerograd: accumulate` marker on a cell's last line never reaches the first
line of the next cell. A notebook whose kernel is not Python has no code to check. The way back,
fixed Python into the cells and the cells into the file, is `mapping.py` and `writing.py`.
"""

from __future__ import annotations

import json
import re
import sys
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any

from zerograd_lint.findings import Edit, Finding, Fix, Related, SourceError, describe
from zerograd_lint.notebook.magics import neutralise

SUFFIX = ".ipynb"

# The core's messages name calls by row: `opt.step() (line 14)`; its errors say where first,
# `syntax error at 12:5: ...`, `a NUL character at 3:9: ...`.
_LINE_REFERENCE = re.compile(r"\(line (\d+)\)")
_ERROR_AT = re.compile(r"^([^:]*) at (\d+):(\d+)")


class NotANotebook(ValueError):
    """The file is not a notebook this linter can read; the message says why, in one line."""


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


@dataclass(frozen=True)
class Index:
    """Where each code cell starts in the concatenated source."""

    starts: tuple[int, ...] = ()  # 1-based row of each code cell's first line, ascending
    cells: tuple[int, ...] = ()  # its cell number (1-based among all cells)

    def locate(self, row: int) -> tuple[int, int]:
        """(cell number, 1-based line in that cell) of a row of the concatenated source."""
        position = max(bisect_right(self.starts, row) - 1, 0)
        return self.cells[position], row - self.starts[position] + 1

    def row(self, cell: int, line: int) -> int:
        """The row of the concatenated source of a line of a code cell (`locate`'s inverse)."""
        return self.starts[self.cells.index(cell)] + line - 1

    def place(self, finding: Finding) -> Finding:
        """The finding as the notebook shows it: its cell, the line in that cell, and the lines
        its message (and its fix's) names rewritten the same way; its fix's edits in the cell's lines."""
        cell, line = self.locate(finding.line)
        end_cell, end_line = self.locate(finding.end_line)
        return replace(
            finding, cell=cell, line=line, end_line=end_line if end_cell == cell else line,
            message=self.references(finding.message),
            related=tuple(self._related(r) if r.path == finding.path else r for r in finding.related),
            fix=self.place_fix(finding.fix) if finding.fix is not None else None,
        )

    def place_fix(self, fix: Fix) -> Fix:
        """The fix's edits in the lines of their cell, and the lines its message names."""

        def edit(e: Edit) -> Edit:
            return replace(e, start=(self.locate(e.start[0])[1], e.start[1]), end=(self.locate(e.end[0])[1], e.end[1]))

        return replace(fix, message=self.references(fix.message), edits=tuple(edit(e) for e in fix.edits))

    def references(self, message: str) -> str:
        """The `(line N)` a message names, as `(cell C, line L)`."""
        return _LINE_REFERENCE.sub(lambda m: self._reference(int(m.group(1))), message)

    def _related(self, site: Related) -> Related:
        cell, line = self.locate(site.line)
        return replace(site, cell=cell, line=line)

    def place_error(self, error: SourceError) -> SourceError:
        """An error's position, in the cell's terms (`syntax error at cell 3:2:5: ...`)."""
        match = _ERROR_AT.match(error.reason)
        if not match or not self.starts:
            return error
        what, row, column = match.groups()
        cell, line = self.locate(int(row))
        rest = error.reason[match.end():]
        return SourceError(error.path, f"{what} at cell {cell}:{line}:{column}{rest}")

    def _reference(self, row: int) -> str:
        cell, line = self.locate(row)
        return f"(cell {cell}, line {line})"


@dataclass(frozen=True)
class Notebook:
    source: str  # the code cells, concatenated, IPython syntax neutralised
    index: Index


def read_notebook(data: bytes | str) -> Notebook:
    """The Python of a `.ipynb` file's code cells; raise `NotANotebook` for anything else."""
    cells = _cells(_json(data))
    if not _is_python(cells.metadata):
        return Notebook("", Index())
    rows: list[str] = []
    starts: list[int] = []
    numbers: list[int] = []
    for number, lines in cells.code:
        starts.append(len(rows) + 1)
        numbers.append(number)
        rows.extend(neutralise(lines))
        rows.append("")  # the blank row between cells
    return Notebook("".join(row + "\n" for row in rows), Index(tuple(starts), tuple(numbers)))


def cell_lines(data: bytes | str) -> dict[int, list[str]]:
    """The lines of each code cell, by cell number, as the notebook holds them (not neutralised)."""
    return dict(_cells(_json(data)).code)


def cell_sources(data: bytes | str) -> dict[int, str]:
    """The text of each code cell, by cell number, line breaks and all; none if the kernel is not
    Python (`read_notebook` checks no code then)."""
    document = _json(data)
    if not _is_python(_cells(document).metadata):
        return {}
    return {number: _text(cell.get("source"), number) for number, cell in enumerate(document["cells"], start=1)
            if cell.get("cell_type") == "code"}


@dataclass(frozen=True)
class _Cells:
    metadata: dict[str, Any]
    code: list[tuple[int, list[str]]]  # (cell number, lines without their line endings)


def _json(data: bytes | str) -> Any:
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise NotANotebook(f"not a notebook: cannot decode as UTF-8: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotANotebook(f"not a notebook: invalid JSON: {exc}") from None
    except RecursionError:
        raise NotANotebook("not a notebook: JSON nested too deeply to read") from None
    except ValueError as exc:  # an integer longer than int() takes (4,300 digits), or another limit of json's
        raise NotANotebook(f"not a notebook: {_json_limit(exc)}") from None


def _json_limit(exc: ValueError) -> str:
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    if limit and "integer string conversion" in str(exc):
        return f"an integer of more than {limit:,} digits"
    return f"invalid JSON: {describe(exc)}"


def _cells(document: Any) -> _Cells:
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotANotebook("not a notebook: no list of cells (nbformat 4 is needed)")
    metadata = document.get("metadata")
    code = []
    for number, cell in enumerate(document["cells"], start=1):
        if not isinstance(cell, dict):
            raise NotANotebook(f"not a notebook: cell {number} is not an object")
        if cell.get("cell_type") == "code":
            code.append((number, _lines(cell.get("source"), number)))
    return _Cells(metadata if isinstance(metadata, dict) else {}, code)


def _lines(source: Any, number: int) -> list[str]:
    """A cell's source (a string, or the list of lines nbformat writes) as lines."""
    lines = _text(source, number).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _text(source: Any, number: int) -> str:
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    if not isinstance(source, str):
        raise NotANotebook(f"not a notebook: cell {number} has no source text")
    return source


def _is_python(metadata: dict[str, Any]) -> bool:
    """What the kernel runs; a notebook that does not say is taken to be Python."""
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(field), str):
            return section[field].lower() == "python"
    return True
