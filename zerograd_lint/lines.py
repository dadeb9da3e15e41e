"""Lines as Python numbers them."""

from __future__ import annotations

import re

# Python breaks lines at `\n`, `\r\n` and `\r` only; `str.splitlines` also breaks at form feeds,
# U+2028 and other characters that old code and string literals hold.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_BREAK = re.compile(r"\r\n|\r|\n")


def lines_of(text: str) -> list[str]:
    """Lines with their line breaks, split where Python splits them (`\\n`, `\\r\\n`, `\\r`)."""
    return _LINE.findall(text)


def split_lines(text: str) -> list[str]:
    """The lines without their breaks, split where Python splits them; text ending in a break
    ends with an empty line (LSP's and an editor's view: that line exists)."""
    return _BREAK.split(text)
