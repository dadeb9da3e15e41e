"""Paths and messages in line-oriented output: one finding, one error, one line, whatever a file is called.

A path holding a character that would break its line (a line feed, a carriage return, any other
control character, a Unicode line separator) is printed as git prints such paths (`core.quotePath`):
in double quotes, with C escapes, `"train\\nv2.py":4:1: ZG001 ...`; so is a path that starts with a
double quote, so that a quoted path always reads back as one. Every other path is printed as it is,
backslashes (Windows separators) included. A name that is not UTF-8 (held as surrogate escapes,
`os.fsdecode`) shows its bytes as `\\xNN`. A message, which may name such a file, has its control
characters escaped the same way, without quotes.

JSON, JSON Lines and SARIF escape by construction; GitHub annotations as the toolkit does.
"""

from __future__ import annotations

import re

# Control characters (C0, DEL, C1), the Unicode line and paragraph separators, the bytes of a name
# that is not UTF-8
_BREAKING = "\x00-\x1f\x7f-\x9f\u2028\u2029\udc80-\udcff"
_NEEDS_QUOTES = re.compile(f'^"|[{_BREAKING}]')
_IN_QUOTES = re.compile(f'[\\\\"{_BREAKING}]')
_IN_TEXT = re.compile(f"[{_BREAKING}]")
_ESCAPES = {
    "\\": "\\\\", '"': '\\"', "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
    "\r": "\\r",
}


def quote_path(path: str) -> str:
    """`path` as it is, or quoted and escaped when it would not read back from its line."""
    if not _NEEDS_QUOTES.search(path):
        return path
    return '"' + _IN_QUOTES.sub(_escape, path) + '"'


def escape_text(text: str) -> str:
    """A message kept to its line: its control characters escaped."""
    return _IN_TEXT.sub(_escape, text) if _IN_TEXT.search(text) else text


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    if character in _ESCAPES:
        return _ESCAPES[character]
    code = ord(character)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a name that is not UTF-8, as os.fsdecode holds it
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
