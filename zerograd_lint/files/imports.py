"""Imports read from a module's text or bytes, generously and without parsing it (for the files
beside a file checked alone, `beside.py`): what its import statements name, as the analysis's first
look names them, and the words of its import lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from zerograd_lint.project import module_name

_WORD = re.compile(rb"\w+")


def import_words(data: bytes) -> set[bytes]:
    """The words of the import lines of a file's bytes, and `.` if one is a relative import."""
    words: set[bytes] = set()
    at = data.find(b"import")
    while at != -1:
        start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
        end = len(data) if end == -1 else end
        line = data[start:end].lstrip()
        if line.startswith((b"from", b"import")):
            if b"(" in line and b")" not in line:  # a list over several lines
                end = max(end, data.find(b")", end))
                line = data[start:end].lstrip()
            words.update(_WORD.findall(line))
            if line.startswith(b"from ."):
                words.add(b".")
        at = data.find(b"import", end)
    return words


def last_name(path: str) -> str:
    """The last part of the module's name: what an absolute import of it spells out
    (`pkg/engine.py` -> `engine`, `pkg/__init__.py` -> `pkg`)."""
    return module_name(path)[0].rsplit(".", 1)[-1]


def import_origins(text: str) -> set[str]:
    """What the import statements of a module name, as the analysis's first look names them
    (`survey`): `from pkg import engine` gives `pkg` and `pkg.engine`; `from . import steps`
    gives `.` and `.steps`; `import a.b as c` gives `a.b`. Read from the text, generously: an
    import inside a function counts, and so does one in a docstring."""
    found: set[str] = set()
    for statement in _import_statements(text):
        words = statement.split(None, 1)
        if len(words) < 2:
            continue
        if words[0] == "import":
            for item in words[1].split(","):
                parts = item.split()
                if parts and _dotted(parts[0]):
                    found.add(parts[0])
            continue
        module, _, names = words[1].partition(" import")
        module = module.strip()
        rest = module.lstrip(".")
        if not module or (rest and not _dotted(rest)):
            continue
        found.add(module)
        for item in names.replace("(", " ").replace(")", " ").split(","):
            parts = item.split()
            if parts and parts[0].isidentifier():
                found.add(f"{module}{parts[0]}" if module.endswith(".") else f"{module}.{parts[0]}")
    return found


def _dotted(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _import_statements(text: str) -> Iterator[str]:
    """Each statement that starts a line with `import` or `from`, on one line: the lines of a
    parenthesised list are joined, comments left out. Found with `str.find`, not a pattern tried
    at every line."""
    at = text.find("import")
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        line = text[start:end].lstrip()
        if line.startswith(("import ", "from ", "import\t", "from\t")):
            statement = line.split("#", 1)[0]
            if "(" in statement and ")" not in statement:  # a list over several lines
                close = text.find(")", end)
                close = len(text) if close == -1 else close
                continued = " ".join(part.split("#", 1)[0] for part in text[end:close].splitlines())
                statement = f"{statement} {continued})"
                end = close
            yield statement.split(";", 1)[0].replace("\\", " ")
        at = text.find("import", end)
