"""What a renderer may need besides the findings: where the repository is, whether to style, and
(for `full`) the text of the files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from urllib.parse import quote

from zerograd_lint.lines import split_lines


@dataclass(frozen=True)
class Context:
    repository_root: Path = Path(".")  # SARIF URIs and GitHub annotations are relative to it...
    styled: bool = False  # ANSI styles for a terminal (click strips them where it must)
    below_root: bool = False  # ...or to the git work tree's root above it, with this
    texts: Mapping[str, str | bytes] = field(default_factory=dict, compare=False, hash=False)  # not read from disk

    def lines(self, path: str, cell: int | None = None) -> list[str] | None:
        """The lines of `path` as it was checked (of one of its cells, in a notebook): from
        `texts` (standard input, a fixed text), else read; None when they cannot be had. Each
        file is read once, a notebook's JSON read once for all its cells."""
        if path not in self._read:
            self._read[path] = _lines(path, self.texts.get(path))
        read = self._read[path]
        return read.get(cell) if isinstance(read, dict) else read

    @cached_property
    def _read(self) -> dict[str, list[str] | dict[int, list[str]] | None]:
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


def in_cell(cell: int, line: int, column: int) -> str:
    """Where in a notebook, in words, for formats whose positions are the `.ipynb` file's own
    (SARIF, GitLab: line 1, column 1 there)."""
    return f"cell {cell}, line {line}, column {column}"


def level(code: str) -> str:
    """How serious a finding is: a wrong clear is an error; a stale marker (ZG1xx) a warning."""
    return "warning" if code.startswith("ZG1") else "error"


def _lines(path: str, given: str | bytes | None) -> list[str] | dict[int, list[str]] | None:
    """A file's lines, or a notebook's by cell."""
    from zerograd_lint.files import read_source
    from zerograd_lint.findings import SourceError
    from zerograd_lint.notebook import NotANotebook, cell_lines, is_notebook
    from zerograd_lint.texts import decode

    try:
        data = read_source(path) if given is None else given
        return cell_lines(data) if is_notebook(path) else split_lines(decode(data, path))
    except (OSError, SourceError, NotANotebook):
        return None
