"""Which files to check: walk the given paths, skip what is never training code."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Folders that never hold the project's own training code.
SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "__pycache__", ".venv", "venv", ".env", ".tox", ".nox",
        ".eggs", "build", "dist", "node_modules", "site-packages", ".mypy_cache", ".pytest_cache",
        ".ruff_cache", ".ipynb_checkpoints", "_build", "buck-out", ".direnv", ".zerograd_lint_cache",
        ".pixi", ".hypothesis",
    }
)
PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class Missing:
    """A path given on the command line that does not exist."""

    path: str


def _skipped(entry: os.DirEntry) -> bool:
    name = entry.name
    if name in SKIPPED_DIRS or name.endswith(".egg-info"):
        return True
    return os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))  # a virtual environment


def _walk(root: str) -> Iterator[str]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not _skipped(entry):
                    yield from _walk(entry.path)
            elif entry.name.endswith(PYTHON_SUFFIXES) and entry.is_file():
                yield entry.path
        except OSError:
            continue


def discover(paths: Iterable[str]) -> Iterator[str | Missing]:
    """Python files under `paths`, in a stable order; files named explicitly are always kept."""
    seen: set[str] = set()
    for given in paths:
        if os.path.isdir(given):
            found: Iterable[str] = _walk(given)
        elif os.path.exists(given):
            found = [given]
        else:
            yield Missing(given)
            continue
        for path in found:
            shown = _display(path)
            if shown not in seen:
                seen.add(shown)
                yield shown


def _display(path: str) -> str:
    """Paths as users typed them, without a leading './'."""
    normal = os.path.normpath(path)
    return normal if not normal.startswith("./") else normal[2:]


def read_source(path: str) -> bytes:
    return Path(path).read_bytes()
