"""Suppression: the `# noqa` and `# zerograd: accumulate` markers on a line (a `# noqa: ZG...` also
on the step or clear line of the finding), `# zerograd-lint: noqa` for a file, and ZG100
unused-marker for a marker that suppresses nothing.

It reads comments with `tokenize`, so it runs on files that are never parsed: it needs no LibCST.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from zerograd_lint.rules.raw import Raw, Rule

RULE = Rule("ZG100", "unused-marker", "a suppression marker that suppresses nothing", fix="Always")

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_ACCUMULATE = re.compile(r"#\s*zerograd:\s*accumulate\b", re.IGNORECASE)
_FILE_NOQA = re.compile(r"#\s*zerograd-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE)
_CODES = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
# Besides the reported line, a `# noqa: ZG...` naming the code counts on the line of a step or a
# clear the finding is about (in the same file), where people write it. Not a bare `# noqa`
# there: that one is usually another tool's, and silences only what is reported on its line.
_MARKABLE = ("step", "earlier step", "clear")


# What a marker needs to say anything in a file with no finding: a ZG code, or our own name.
_NOQA_ZG = re.compile(r"noqa\s*:[^\n]*zg[0-9]")  # searched in lower case: a literal start is fast
_ZG_CODE = re.compile(rb"zg[0-9]")  # what `_NOQA_ZG` needs, in ASCII-lowered bytes


@dataclass(frozen=True)
class Marker:
    kind: str  # "noqa" | "accumulate" | "file"
    line: int
    column: int  # 0-based
    text: str
    codes: frozenset[str] | None  # None: every code
    own_line: bool


def scan_markers(source: str) -> list[Marker]:
    """Suppression comments, found with `tokenize` so a `#` inside a string never counts."""
    if "noqa" not in source.lower() and "zerograd" not in source.lower():
        return []
    markers: list[Marker] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        line, column = token.start
        text = token.string
        own_line = not token.line[:column].strip()
        if own_line and (match := _FILE_NOQA.match(text)):
            markers.append(Marker("file", line, column, text, _codes(match), True))
            continue
        if match := _ACCUMULATE.search(text):
            markers.append(Marker("accumulate", line, column + match.start(), match.group(0), None, own_line))
        if match := _NOQA.search(text):
            markers.append(Marker("noqa", line, column + match.start(), match.group(0), _codes(match), own_line))
    return markers


def may_concern_us(data: bytes) -> bool:
    """Can a file (its bytes, or its text encoded) hold a marker of ours: `zerograd` or a `noqa`
    and a ZG code, in any case? Lowered as bytes: three times faster than as text, and only
    ASCII letters matter."""
    lowered = data.lower()
    return b"zerograd" in lowered or (b"noqa" in lowered and _ZG_CODE.search(lowered) is not None)


def unused_markers(path: str, source: str) -> list[Raw]:
    """The ZG100s of a file with no finding to suppress, without tokenizing a file whose
    markers cannot concern us (a blanket `# noqa`, another tool's codes)."""
    if not may_concern_us(source.encode("utf-8", "surrogatepass")):
        return []
    lowered = source.lower()
    if "zerograd" not in lowered and not _NOQA_ZG.search(lowered):
        return []
    kept, _ = suppress(path, [], scan_markers(source))
    return kept


def _codes(match: re.Match) -> frozenset[str] | None:
    codes = match.group("codes")
    return frozenset(c.upper() for c in _CODES.findall(codes)) if codes else None


def suppress(path: str, raw: list[Raw], markers: list[Marker]) -> tuple[list[Raw], list[Raw]]:
    """Split findings into (kept, suppressed) and add a ZG100 for each marker that did nothing."""
    used: set[tuple[Marker, str]] = set()
    kept: list[Raw] = []
    suppressed: list[Raw] = []
    for finding in raw:
        marker = suppressor(finding, markers)
        if marker is None:
            kept.append(finding)
        else:
            used.add((marker, finding.code))
            suppressed.append(finding)
    for marker in markers:
        if marker.kind == "accumulate" and not any(m is marker for m, _ in used):
            kept.append(Raw(path, RULE.code, marker.line, marker.column, len(marker.text),
                            f"`{marker.text}` suppresses nothing: no ZG001 is reported for a loop on this line or the next", None))
        elif marker.kind == "noqa" and marker.codes is not None:
            unused = sorted(c for c in marker.codes if c.startswith("ZG") and (marker, c) not in used)
            if unused:
                kept.append(Raw(path, RULE.code, marker.line, marker.column, len(marker.text),
                                f"`{marker.text}` suppresses nothing for {', '.join(unused)} on this line", None))
    files = [m for m in markers if m.kind == "file"]
    if files:
        kept = [f for f in kept if not any(m.codes is None or f.code in m.codes for m in files)]
    return kept, suppressed


def suppressor(finding: Raw, markers: list[Marker]) -> Marker | None:
    """The marker that suppresses the finding, if any (`--show-loops` names it)."""
    for marker in markers:
        if marker.kind == "file" and (marker.codes is None or finding.code in marker.codes):
            return marker
        if marker.kind == "noqa" and marker.line == finding.line and (marker.codes is None or finding.code in marker.codes):
            return marker
        if marker.kind == "noqa" and marker.codes is not None and finding.code in marker.codes and any(
            role in _MARKABLE and site.line == marker.line and site.path == finding.path for role, site in finding.related
        ):
            return marker
        if (
            marker.kind == "accumulate" and finding.code == "ZG001" and finding.loop is not None
            and (marker.line == finding.line or marker.own_line and marker.line == finding.line - 1)
        ):
            return marker
    return None
