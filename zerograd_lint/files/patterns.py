"""Gitignore-style patterns, as git documents them in gitignore(5), matched against '/'-separated
paths relative to the folder the patterns belong to (the project root for `exclude`, the folder
of a `.gitignore` file for its lines).

- `name` (no slash, or only a trailing one) matches at any depth; `dir/name` or `/name` is
  anchored at the base folder;
- a trailing `/` matches folders only; `*` and `?` never cross a `/`; `**/`, `/**/` and `/**`
  span folders; `[abc]` and `[!a-z]` are character classes; `\\` escapes the next character;
- `!pattern` re-includes what an earlier pattern excluded; the last matching pattern wins.

Everything inside an excluded folder is excluded: callers prune the walk there, as git does,
so a `!` pattern cannot re-include a file whose folder is excluded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Pattern:
    text: str
    regex: re.Pattern[str]
    negated: bool
    folders_only: bool


def compile_pattern(text: str) -> Pattern | None:
    """One pattern, or None for a blank line or a comment (as in a `.gitignore` file)."""
    line = _strip_trailing_spaces(text)
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    folders_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    body = _translate(line.lstrip("/"))
    regex = body if anchored else f"(?:.*/)?{body}"
    return Pattern(text, re.compile(regex, re.DOTALL), negated, folders_only)


class PatternSet:
    """Patterns that belong to one base folder, checked in order (the last match wins)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.patterns = [p for p in map(compile_pattern, lines) if p is not None]
        # Without a `!` pattern, the order does not matter: whether any pattern matches is one
        # match of them all (for files, and for folders), not one match per pattern.
        self._any: dict[bool, re.Pattern[str] | None] = {}
        if not any(p.negated for p in self.patterns):
            for is_folder in (False, True):
                wanted = [p.regex.pattern for p in self.patterns if is_folder or not p.folders_only]
                self._any[is_folder] = re.compile("|".join(f"(?:{r})" for r in wanted), re.DOTALL) if wanted else None

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def verdict(self, relative: str, is_folder: bool) -> bool | None:
        """True: excluded; False: re-included by a `!` pattern; None: no pattern matches."""
        if self._any:
            found = self._any[is_folder]
            return True if found is not None and found.fullmatch(relative) else None
        for pattern in reversed(self.patterns):
            if pattern.folders_only and not is_folder:
                continue
            if pattern.regex.fullmatch(relative):
                return not pattern.negated
        return None


def _strip_trailing_spaces(line: str) -> str:
    """Trailing spaces are dropped unless escaped with a backslash (gitignore(5))."""
    stripped = line.rstrip("\n\r")
    while stripped.endswith(" ") and not stripped.endswith("\\ "):
        stripped = stripped[:-1]
    return stripped


def _translate(glob: str) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        at_segment_start = i == 0 or glob[i - 1] == "/"
        if at_segment_start and glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif at_segment_start and glob[i:] == "**":
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            while i < n and glob[i] == "*":
                i += 1
            out.append("[^/]*")
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[":
            klass, i = _character_class(glob, i)
            out.append(klass)
        elif glob[i] == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def _character_class(glob: str, start: int) -> tuple[str, int]:
    """`[...]` at `start` as a regex class that never matches '/'; a lone '[' is literal."""
    i = start + 1
    negated = i < len(glob) and glob[i] in "!^"
    if negated:
        i += 1
    first = i
    while i < len(glob) and (glob[i] != "]" or i == first):
        i += 2 if glob[i] == "\\" else 1
    if i >= len(glob):
        return re.escape("["), start + 1
    members = glob[first:i].replace("[", "\\[")
    return f"(?!/)[{'^' if negated else ''}{members}]", i + 1
