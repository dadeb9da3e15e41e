"""What a file's text says about its imports and module-level definitions, read with `str.find`
and a few patterns, never parsed: the prefilter's view of a file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from itertools import repeat

_FROM = re.compile(r"^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+\(?([^\n#;)]+)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.MULTILINE)
_BASES = re.compile(r"class[ \t]+\w+[ \t]*\(([^)]*)\)")  # at a line's start: see `base_names`
# the line break before a module-level statement (a literal first: found fast, not tried at
# every position as `^` is)
_TOP = re.compile(r"\n(?=[^\s#)\]}])")
_DEFINITION = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)


class Index:
    """What one file's text says about its imports and module-level definitions (made on demand,
    from its text read, and decoded, only then)."""

    def __init__(self, texts: Mapping[str, str], path: str, imports: list[tuple[str, str | set[str]]] | None = None) -> None:
        self._texts = texts
        self._path = path
        self._imports = imports
        self._definitions: dict[str, str] | None = None
        self._attributes: dict[str, set[str]] = {}
        self._import_lines: str | None = None

    @property
    def text(self) -> str:
        return self._texts[self._path]

    @property
    def import_lines(self) -> str:
        if self._import_lines is None:
            self._import_lines = lines_saying(self.text, ("import",))
        return self._import_lines

    @property
    def imports(self) -> list[tuple[str, str | set[str]]]:
        """(last part of a module's name, the names used from it, or the local name it is bound to):
        `from a.b import c` gives ("b", {"c"}) and ("c", "c") (`c` may be a module: `c.f(...)`
        uses its `f`); `import a.b as m` gives ("b", "m")."""
        if self._imports is None:
            text = self.import_lines
            found: list[tuple[str, str | set[str]]] = []
            for origin, names in _FROM.findall(text):
                aliases = [words for words in map(str.split, names.split(",")) if words]
                module = origin.strip(".").rsplit(".", 1)[-1]
                if module:
                    found.append((module, {words[0] for words in aliases}))
                found.extend((words[0], words[-1]) for words in aliases)
            for chunk in _IMPORT.findall(text):
                for item in chunk.split(","):
                    words = item.split()
                    if words:
                        local = words[2] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
                        found.append((words[0].rsplit(".", 1)[-1], local))
            self._imports = found
        return self._imports

    def used(self, names: str | set[str]) -> set[str]:
        """The names used from an import: those imported, or those called on its local name
        (`m.f(...)` gives "f"), looked up only for the imports that matter."""
        if not isinstance(names, str):
            return names
        if names not in self._attributes:
            text = self.text
            self._attributes[names] = {  # `m.f(`, not `xm.f(` nor `x.m.f(`
                match.group(1)
                for match in re.finditer(re.escape(names) + r"\.(\w+)\s*\(", text)
                if match.start() == 0 or not (text[match.start() - 1].isalnum() or text[match.start() - 1] in "_.")
            }
        return self._attributes[names]

    @property
    def definitions(self) -> dict[str, str]:
        """The text of each module-level `def` or `class`, by name (the first, if several)."""
        if self._definitions is None:
            self._definitions = definitions(self.text)
        return self._definitions

    def definition(self, name: str) -> str | None:
        """The text of the module-level `def` or `class` called `name`, if the file has one."""
        return self.definitions.get(name)


def definitions(text: str) -> dict[str, str]:
    """The text of each module-level `def` or `class`, by name (the first, if several): from its
    `def` or `class` line to the next line that starts a new module-level statement."""
    found: dict[str, str] = {}
    for match in map(_DEFINITION.match, repeat(text), _line_starts(text, ("def", "class", "async"))):
        if match:
            after = _TOP.search(text, match.end())
            found.setdefault(match.group(1), text[match.start() : after.end() if after else len(text)])
    return found


def lines_saying(text: str, words: tuple[str, ...]) -> str:
    """The lines that hold one of `words`, joined, each once and in order: all that a pattern for
    lines starting with one of them can match, found with `str.find` rather than a pattern tried
    at every line of the file."""
    starts: set[int] = set()
    for word in words:
        at = text.find(word)
        while at != -1:
            starts.add(text.rfind("\n", 0, at) + 1)
            end = text.find("\n", at)
            at = -1 if end == -1 else text.find(word, end)
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append(text[start : len(text) if end == -1 else end])
    return "\n".join(lines)


def _line_starts(text: str, words: tuple[str, ...]) -> list[int]:
    """Where lines that start with one of `words` start, in order."""
    found = [0] if text.startswith(words) else []
    for word in words:
        at = text.find("\n" + word)
        while at != -1:
            found.append(at + 1)
            at = text.find("\n" + word, at + 1)
    return sorted(found)


def stem_of(path: str) -> str:
    folder, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    return os.path.basename(folder) or stem if stem == "__init__" else stem


def base_names(text: str) -> set[str]:
    """The last part of each base class named in a class statement's header on one line."""
    found = set()
    for match in _BASES.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if not text[line_start : match.start()].strip(" \t"):
            found.update(b.strip().rsplit(".", 1)[-1] for b in match.group(1).split(","))
    return found
