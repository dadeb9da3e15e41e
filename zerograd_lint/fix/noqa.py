"""`--add-noqa`: a `# noqa: ZGxxx` comment at each finding's line, as ruff's `--add-noqa` adds them.

A code joins a `noqa` comment already on the line (`# noqa: E501` becomes `# noqa: E501, ZG001`);
a line whose `noqa` is bare or names the code already is left as it is, so a second run adds
nothing. A new comment goes at the end of the line, two spaces after its code. A file is changed
only if it still parses to the same syntax tree (a line that ends inside a string, or with a
backslash, cannot take a comment): all or nothing, per file.
"""

from __future__ import annotations

import ast
import io
import warnings
from collections.abc import Mapping, Set

from zerograd_lint.fix.output import codec
from zerograd_lint.rules.suppression import Marker, scan_markers


def with_noqa(source: bytes, codes: Mapping[int, Set[str]]) -> tuple[bytes, int] | None:
    """`source` with the codes added on their (1-based) lines, and how many lines changed; None
    when the comments cannot be added without changing the program."""
    text, encode = codec(source)
    added = noqa_added(text, codes)
    return None if added is None else (encode(added[0]), added[1])


def noqa_added(text: str, codes: Mapping[int, Set[str]]) -> tuple[str, int] | None:
    """`with_noqa` on text (an editor's buffer)."""
    lines = io.StringIO(text, newline="").readlines()  # line ends kept as they are
    markers = {m.line: m for m in scan_markers(text) if m.kind == "noqa"}
    changed = 0
    for number, wanted in sorted(codes.items()):
        if not 0 < number <= len(lines):
            return None
        line = lines[number - 1]
        edited = _added(line, markers.get(number), wanted)
        if edited != line:
            lines[number - 1], changed = edited, changed + 1
    new = "".join(lines)
    if changed and not same_program(text, new):
        return None
    return new, changed


def _added(line: str, noqa: Marker | None, wanted: Set[str]) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    if noqa is None:
        return body.rstrip() + "  # noqa: " + ", ".join(sorted(wanted)) + ending
    if noqa.codes is None:
        return line  # a bare noqa suppresses every code already
    missing = sorted(set(wanted) - noqa.codes)
    if not missing:
        return line
    at = noqa.column + len(noqa.text)
    return body[:at] + ", " + ", ".join(missing) + body[at:] + ending


def same_program(old: str, new: str) -> bool:
    """`new` is `old` with comments changed only: the same syntax tree, and it compiles (a
    backslash left last in a CRLF file parses as text, and fails as a file)."""
    try:
        if ast.dump(ast.parse(old)) != ast.dump(ast.parse(new)):
            return False
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    if new.rstrip("\r\n").endswith("\\") and not old.rstrip("\r\n").endswith("\\"):
        return False  # a continuation left last: `python file.py` stops there, where `ast.parse` goes on
    return compile_problem(old.encode("utf-8", "surrogatepass"), new.encode("utf-8", "surrogatepass")) is None


def compile_problem(original: str | bytes, fixed: str | bytes) -> str | None:
    """Why Python would not compile the fixed source where it compiles the original (a name used
    before its `global` declaration parses, and fails only here), or None."""
    error = _compile_error(fixed)
    if error is not None and _compile_error(original) is None:
        return f"the fixed source does not compile ({error.msg}, line {error.lineno})"
    return None


def _compile_error(source: str | bytes) -> SyntaxError | None:
    with warnings.catch_warnings():  # an invalid escape and the like: not ours to report
        warnings.simplefilter("ignore")
        try:
            compile(source, "<fixed>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            return exc
        except (ValueError, RecursionError, MemoryError):  # a NUL byte, too deep: as the original
            return None
    return None
