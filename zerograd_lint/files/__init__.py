"""Which files to check: walk the given paths, skip what is excluded, ignored or never training code.

Folders are searched for Python files (`*.py`, `*.pyi`) and Jupyter notebooks (`*.ipynb`).

- `exclude` (default: the folders below) and `extend-exclude` are gitignore-style patterns
  (`patterns.py`) relative to the project root, the folder of the configuration file or else
  the current directory, as in ruff;
- `.gitignore` is honoured unless `respect_gitignore` is off (`gitignore.py`);
- version-control folders and virtual environments (a folder holding `pyvenv.cfg`) are never
  searched, whatever `exclude` says;
- a symbolic link met in a folder is not followed, as in ruff: one that leads inside the folder
  being searched would report a file under a second name (the real one is walked anyway), and one
  that leads out of it (to `/`, to a sibling checkout) would pull in files that are not the
  project's own;
- a folder that cannot be searched is reported, not skipped; a file that is not a regular one (a
  named pipe, a device) is left out, and one named is refused when it is read (`reading.py`);
- a path given explicitly is always checked, unless `force_exclude` is on and it is excluded
  (pre-commit passes files one by one, so that is how a configured exclude holds there); a file
  given explicitly is checked as part of its project (`beside.py` finds the files beside it that
  its analysis needs).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from zerograd_lint.files.gitignore import NOTHING_IGNORED, Gitignore, for_tree, git
from zerograd_lint.files.patterns import PatternSet
from zerograd_lint.files.reading import read_source  # noqa: F401 (the package imports it from here)

# Folders that never hold the project's own training code: the default of `exclude`.
DEFAULT_EXCLUDE = (
    "__pycache__/", ".venv/", "venv/", ".env/", ".tox/", ".nox/", ".eggs/", "build/", "dist/",
    "node_modules/", "site-packages/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    ".ipynb_checkpoints/", "_build/", "buck-out/", ".direnv/", ".zerograd_lint_cache/", ".pixi/",
    ".hypothesis/", "*.egg-info/",
)
VERSION_CONTROL = frozenset({".git", ".hg", ".svn", ".bzr", ".jj"})
PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIXES = (".ipynb",)  # Jupyter notebooks: `zerograd_lint.notebook` reads their code cells


@dataclass(frozen=True)
class Missing:
    """A path given on the command line that does not exist or cannot be looked at, or a folder
    that cannot be searched: why."""

    path: str
    reason: str = "no such file or directory"


@dataclass(frozen=True)
class FileSelection:
    root: str = "."  # exclude patterns are relative to this folder
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False

    @cached_property
    def _patterns(self) -> PatternSet:
        return PatternSet((*self.exclude, *self.extend_exclude))

    def relative(self, path: str) -> str:
        """`path` relative to the project root, '/'-separated: what exclude patterns match."""
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def excludes(self, relative: str, is_folder: bool) -> bool:
        """Does a pattern exclude this root-relative path itself (not looking at its folders)?"""
        return self._patterns.verdict(relative, is_folder) is True

    def is_excluded(self, path: str) -> bool:
        """Is this path, or a folder it lies in, excluded? For paths given explicitly."""
        parts = self.relative(path).split("/")
        last = len(parts) - 1
        return any(
            self.excludes("/".join(parts[: i + 1]), is_folder=i < last or os.path.isdir(path))
            for i in range(len(parts))
        )

    def gitignore_for(self, folder: str) -> Gitignore:
        if not self.respect_gitignore:
            return NOTHING_IGNORED
        absolute, root = Path(os.path.abspath(folder)), Path(os.path.abspath(self.root))
        outer = [str(p) for p in reversed(absolute.parents) if p == root or root in p.parents]
        return for_tree(folder, tuple(outer))


def discover(paths: Iterable[str], selection: FileSelection = FileSelection()) -> Iterator[str | Missing]:
    """Python files and notebooks under `paths`, in a stable order, each once; see the module's docstring."""
    seen: set[str] = set()
    for given in paths:
        try:
            is_folder = stat.S_ISDIR(os.stat(given).st_mode)
        except OSError as exc:  # a folder on its way that cannot be searched is not "no such file"
            yield Missing(given) if isinstance(exc, FileNotFoundError) else Missing(given, f"cannot read: {_why(exc)}")
            continue
        if selection.force_exclude and selection.is_excluded(given):
            continue
        walk = _Walk(given, selection) if is_folder else None
        found: Iterable[tuple[str, str]] = walk.files() if walk else [(given, os.path.realpath(given))]
        for path, real in found:
            if real not in seen:
                seen.add(real)
                yield _display(path)
        if walk:
            yield from (Missing(_display(folder), f"cannot search this folder: {_why(exc)}")
                        for folder, exc in walk.unsearchable)


def named_files(paths: Iterable[str]) -> list[str]:
    """The paths among `paths` that name files rather than folders, spelt as `discover` gives them:
    each is checked as part of its project (`zerograd_lint.files.beside`)."""
    return [_display(path) for path in paths if os.path.exists(path) and not os.path.isdir(path)]


_SUFFIXES = PYTHON_SUFFIXES + NOTEBOOK_SUFFIXES


class _Walk:
    """One search of a folder given on the command line."""

    def __init__(self, folder: str, selection: FileSelection) -> None:
        self.folder = folder
        self.tree = os.path.realpath(folder)
        self.inside = os.path.join(self.tree, "")  # what a path inside the tree starts with
        self.selection = selection
        self.searched = {self.tree}  # real folders, so that links cannot make a folder count twice
        self.unsearchable: list[tuple[str, OSError]] = []  # folders met that could not be listed, and why

    def files(self) -> Iterator[tuple[str, str]]:
        """(path, real path) of each Python file and notebook to check."""
        gitignore = self.selection.gitignore_for(self.folder)
        return self._files(self.folder, self.selection.relative(self.folder), self.tree, gitignore)

    def _files(self, folder: str, relative: str, real_folder: str, gitignore: Gitignore) -> Iterator[tuple[str, str]]:
        """`relative` is `folder` relative to the project root, built up as the walk goes down."""
        try:  # most entries of a package (compiled files, data, headers) are left out before sorting
            entries = sorted(filter(_maybe_source, os.scandir(folder)), key=_name)
        except OSError as exc:
            self.unsearchable.append((folder, exc))
            return
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue  # its target is walked under its own name, or is not the project's
                folder = entry.is_dir()
                if not folder and not entry.is_file():
                    continue
                real = os.path.join(real_folder, entry.name)
                below = entry.name if relative == "." else f"{relative}/{entry.name}"
                if folder:
                    if real not in self.searched and not self._skipped(entry, below, gitignore):
                        self.searched.add(real)
                        yield from self._files(entry.path, below, real, gitignore.enter(entry.path))
                elif not (self.selection.excludes(below, False) or gitignore.ignores(entry.path, False)):
                    yield entry.path, real
            except OSError:
                continue

    def _skipped(self, folder: os.DirEntry, relative: str, gitignore: Gitignore) -> bool:
        return (
            _never_source(folder)
            or self.selection.excludes(relative, True)
            or gitignore.ignores(folder.path, True)
        )


def _name(entry: os.DirEntry) -> str:
    return entry.name


def _maybe_source(entry: os.DirEntry) -> bool:
    """A folder, or a file named as a Python file or notebook is (an entry that cannot be looked
    at is kept: the walk skips it, as it skips any entry it cannot look at)."""
    try:
        return entry.name.endswith(_SUFFIXES) or entry.is_dir()
    except OSError:
        return True


def _never_source(entry: os.DirEntry) -> bool:
    return entry.name in VERSION_CONTROL or os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _display(path: str) -> str:
    """Paths as users typed them, without a leading './'."""
    normal = os.path.normpath(path)
    return normal if not normal.startswith("./") else normal[2:]


def repository_root(folder: str) -> Path:
    """The top of the git work tree `folder` is in, else `folder`: where SARIF URIs start."""
    top = git(folder, "rev-parse", "--show-toplevel")
    return Path(os.fsdecode(top.rstrip(b"\n"))) if top else Path(folder)
