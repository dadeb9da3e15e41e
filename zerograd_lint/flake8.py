"""The flake8 plugin: `flake8 --select ZG` runs the same rules, one file at a time.

Registered in pyproject.toml as `[project.entry-points."flake8.extension"] ZG = ...`. flake8 hands
an AST plugin the parsed tree, the file name and its lines; this one checks the lines with
`check_source` and yields `(line, column, "ZG001 message", type)` with the 0-based column flake8
expects (it adds 1 when it prints, so the printed column is zerograd-lint's own).

Selection, `# noqa` and per-file ignores are flake8's business then, as with any plugin; the
`vocabulary` of `[tool.zerograd-lint]` in the nearest pyproject.toml still applies, since it
changes what the analysis sees. flake8 checks each file on its own, so a loop in one file that
calls a training step in another is only followed by `zerograd-lint` itself. A file that cannot be
checked (a syntax error) yields nothing: flake8 reports E999 for it.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

from zerograd_lint import __version__
from zerograd_lint.config import find_config
from zerograd_lint.findings import SourceError
from zerograd_lint.settings import Vocabulary

STDIN_NAMES = ("stdin", "-")  # what flake8 calls a file read from standard input


class Plugin:
    name = "zerograd-lint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type[Any]]]:
        from zerograd_lint.checker import check_source

        try:
            findings = check_source("".join(self.lines), self.filename, _vocabulary(_folder(self.filename)))
        except SourceError:
            return
        for finding in findings:
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)


def _folder(filename: str) -> str:
    if filename in STDIN_NAMES:
        return os.getcwd()
    return os.path.dirname(os.path.abspath(filename))


@functools.cache
def _vocabulary(folder: str) -> Vocabulary:
    """The vocabulary of the configuration that applies to the files of `folder`."""
    return find_config([folder]).vocabulary
