"""What a renderer may need besides the findings: where the repository is, whether to style, and
(for `full`) the text of the files."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from urllib.parse import quote

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # Python's line ends (`str.splitlines` has more)


@dataclass(frozen=True)
class Context:
    repository_root: Path = Path(".")  # SARIF URIs and GitHub annotations are relative to it...
    styled: bool = False  # ANSI styles for a terminal (click strips them where it must)
    below_root: bool = False  # ...or to the git work tree's root above it, with this
    texts: Mapping[str, str | bytes] = field(default_factory=dict, compare=False, hash=False)  # not read from disk

    def lines(self, path: str, cell: int | None = None) -> list[str] | None:
        """The lines of `path` as it was checked (of one of its cells, in a notebook): from
        `texts` (standard input, a fixed text), else read; None when they cannot be had."""
        if (path, cell) not in self._lines:
            self._lines[path, cell] = _lines(path, cell, self.texts.get(path))
        return self._lines[path, cell]

    @cached_property
    def _lines(self) -> dict[tuple[str, int | None], list[str] | None]:
        return {}

    @cached_property
    def root(self) -> Path:
        """What SARIF URIs and GitHub annotations are relative to. With `below_root`, looked up
        (one `git` run) only by a format that needs it: most runs print neither."""
        if not self.below_root:
            return self.repository_root
        from zerograd_lint.files import repository_root

        return repository_root(str(self.repository_root))

    def repository_path(self, path: str) -> str | None:
        """`path` relative to the repository root, '/'-separated; None when it lies outside."""
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))
        if relative == ".." or relative.startswith(".." + os.sep):
            return None
        return Path(relative).as_posix()

    def uri(self, path: str) -> tuple[str, bool]:
        """A URI for `path` and whether it is relative to the repository root (`%SRCROOT%`)."""
        relative = self.repository_path(path)
        if relative is None:
            return Path(os.path.abspath(path)).as_uri(), False
        return quote(relative), True


def level(code: str) -> str:
    """How serious a finding is: a wrong clear is an error; a stale marker (ZG1xx) a warning."""
    return "warning" if code.startswith("ZG1") else "error"


def _lines(path: str, cell: int | None, given: str | bytes | None) -> list[str] | None:
    from zerograd_lint.files import read_source
    from zerograd_lint.findings import SourceError
    from zerograd_lint.notebook import NotANotebook, cell_lines
    from zerograd_lint.texts import decode

    try:
        data = read_source(path) if given is None else given
        if cell is not None:
            return cell_lines(data).get(cell)
        return _LINE_BREAK.split(decode(data, path))
    except (OSError, SourceError, NotANotebook):
        return None
