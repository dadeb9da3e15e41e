"""What a renderer may need besides the findings: where the repository is, whether to style."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import quote


@dataclass(frozen=True)
class Context:
    repository_root: Path = Path(".")  # SARIF URIs and GitHub annotations are relative to it...
    styled: bool = False  # ANSI styles for a terminal (click strips them where it must)
    below_root: bool = False  # ...or to the git work tree's root above it, with this

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
