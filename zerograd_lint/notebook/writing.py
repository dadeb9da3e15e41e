"""A fixed notebook's file: the `.ipynb` text with only the changed cells' `source` replaced.

Every other byte stays as it was: outputs, metadata, execution counts, cell ids, key order, the
JSON indentation, a trailing line break or its absence, a byte order mark. The new `source` keeps
the shape the cell had (a string, or a list of lines each ending in its line break but the last),
the list's own layout (the white space before its first item, between items, before its `]`),
the encoding of each line that did not change, and the file's way with non-ASCII characters
(written as they are, or as `\\uXXXX` escapes when the file escapes them). The text is then read
back as a notebook: its code cells must hold the fixed Python exactly, or it is not written.

`--diff` shows a notebook's fixes cell by cell (`a/train.ipynb:cell 3`), the cell's text as the
notebook shows it, as ruff does: the JSON around it is not what a user edits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

from zerograd_lint.lines import lines_of
from zerograd_lint.notebook import Index, cell_sources, read_notebook
from zerograd_lint.notebook.mapping import NotMapped, fixed_cells

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u([0-9a-fA-F]{4})")  # `\u00e9`, not `\\u00e9` (a backslash, then `u00e9`)
_BOM = "\ufeff"

Span = tuple[int, int]


def written_back(data: str | bytes, before: str, after: str) -> tuple[str | bytes, Index]:
    """The notebook `data` (as read), its code cells holding the fixed Python `after` (`before`: as
    checked), and where its cells now start. Raises `NotMapped` when that cannot be done exactly."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        cells = fixed_cells(cell_sources(data), before, after)
        replaced = _replaced(text, cells)
        new = replaced.encode("utf-8") if isinstance(data, bytes) else replaced
        notebook = read_notebook(new)
    except NotMapped:
        raise
    except (ValueError, IndexError) as exc:  # not a notebook, or JSON that `json` reads and this walk does not
        raise NotMapped(f"the notebook cannot be rewritten: {exc}") from None
    if notebook.source != after:
        raise NotMapped("the notebook written back would not hold the fixed code")
    return new, notebook.index


def cell_diff(path: str, original: str | bytes, fixed: str | bytes) -> str:
    """The unified diff of each code cell that changed, headed `a/<path>:cell N`. A cell's last
    line seldom ends in a line break, and no cell is a file: no `\\ No newline at end of file`."""
    from zerograd_lint.fix.output import unified_diff

    old, new = cell_sources(original), cell_sources(fixed)
    return "".join(unified_diff(f"{path}:cell {n}", _ended(old[n]), _ended(new[n]))
                   for n in sorted(old) if old[n] != new.get(n, old[n]))


def _ended(text: str) -> str:
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"


def _replaced(text: str, sources: Mapping[int, str]) -> str:
    """`text` with the `source` of these cells (by number) replaced, each in its own shape."""
    spans = _source_spans(text)
    escape = text.isascii() and any(int(m.group(1), 16) > 0x7F for m in _ESCAPE.finditer(text))
    out = text
    for number in sorted(sources, reverse=True):  # from the end: the spans before stay where they are
        span = spans[number - 1]
        if span is None:
            raise NotMapped(f"cell {number} has no source")
        start, end = span
        listed = text[start] == "["
        token = _list(text, start, end, sources[number], escape) if listed else _dumped(sources[number], escape)
        if json.loads(token) != (lines_of(sources[number]) if listed else sources[number]):
            raise NotMapped(f"cell {number}'s source would not be written as it should")
        out = out[:start] + token + out[end:]
    return out


def _list(text: str, start: int, end: int, source: str, escape: bool) -> str:
    """The lines of `source` as the list at `start:end` lays its items out; an item that did not
    change is written as it was."""
    items = _items(text, start)[0]
    was = {json.loads(text[a:b]): text[a:b] for a, b in reversed(items)}  # the first encoding of each line
    tokens = [was.get(line) or _dumped(line, escape) for line in lines_of(source)]
    if not items:
        return "[" + ", ".join(tokens) + "]"
    opening, closing = text[start + 1:items[0][0]], text[items[-1][1]:end - 1]
    between = text[items[0][1]:items[1][0]] if len(items) > 1 else "," + opening
    return "[" + opening + between.join(tokens) + closing + "]"


def _dumped(value: str, escape: bool) -> str:
    return json.dumps(value, ensure_ascii=escape)


def _source_spans(text: str) -> list[Span | None]:
    """Where each cell's `source` value is in the text (the last of a repeated key, as `json` reads it)."""
    spans: list[Span | None] = []

    def cell(at: int) -> int:
        members, end = _members(text, at)
        spans.append(members.get("source"))
        return end

    def cells(at: int) -> int:
        spans.clear()
        return _items(text, at, cell)[1]

    _members(text, _SPACE.match(text, 1 if text.startswith(_BOM) else 0).end(), {"cells": cells})
    return spans


def _members(text: str, at: int, walk: Mapping[str, Callable[[int], int]] | None = None) -> tuple[dict[str, Span], int]:
    """The span of each member's value of the object at `at`, and where the object ends; a member
    named in `walk` is read by its function, which returns where the value ends."""
    _expect(text, at, "{")
    members: dict[str, Span] = {}
    at = _SPACE.match(text, at + 1).end()
    if text[at] == "}":
        return members, at + 1
    while True:
        key, at = _DECODER.raw_decode(text, at)
        at = _SPACE.match(text, at).end()
        _expect(text, at, ":")
        start = _SPACE.match(text, at + 1).end()
        end = walk[key](start) if walk and key in walk else _value_end(text, start)
        members[key] = (start, end)
        at = _SPACE.match(text, end).end()
        if text[at] == "}":
            return members, at + 1
        _expect(text, at, ",")
        at = _SPACE.match(text, at + 1).end()


def _items(text: str, at: int, each: Callable[[int], int] | None = None) -> tuple[list[Span], int]:
    """The span of each item of the array at `at`, and where the array ends; `each` reads an item
    and returns where it ends."""
    _expect(text, at, "[")
    items: list[Span] = []
    at = _SPACE.match(text, at + 1).end()
    if text[at] == "]":
        return items, at + 1
    while True:
        end = each(at) if each else _value_end(text, at)
        items.append((at, end))
        at = _SPACE.match(text, end).end()
        if text[at] == "]":
            return items, at + 1
        _expect(text, at, ",")
        at = _SPACE.match(text, at + 1).end()


def _value_end(text: str, at: int) -> int:
    return _DECODER.raw_decode(text, at)[1]


def _expect(text: str, at: int, char: str) -> None:
    if text[at:at + 1] != char:
        raise NotMapped(f"the notebook's JSON is not laid out as expected at character {at}")
