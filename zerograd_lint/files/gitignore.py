"""Which files `.gitignore` hides, answered by git itself wherever it can answer.

Inside a git work tree, one `git ls-files --others --ignored --exclude-standard --directory` per
walked tree lists what git ignores there: every `.gitignore` level, `.git/info/exclude` and the
user's `core.excludesFile`, with git's own precedence and negation rules, and never a tracked file
(git does not ignore those). Where there is no git to ask (no work tree, as in an unpacked sdist
or a Docker build context, or no git executable), the `.gitignore` files met on the way down are
read with the same gitignore(5) rules (`patterns.py`).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from zerograd_lint.files.patterns import PatternSet


class Gitignore:
    """What to skip under one folder of the walk; `enter` gives the answer for a subfolder."""

    def ignores(self, path: str, is_folder: bool) -> bool:
        return False

    def enter(self, folder: str) -> Gitignore:
        return self


NOTHING_IGNORED = Gitignore()


def _repository_at(folder: str) -> bool:
    """A nested repository or submodule starts its own ignore rules."""
    return os.path.exists(os.path.join(folder, ".git"))


@dataclass(frozen=True)
class _AskedGit(Gitignore):
    ignored: frozenset[str]  # normalised paths, as the walk spells them

    def ignores(self, path: str, is_folder: bool) -> bool:
        return os.path.normpath(path) in self.ignored

    def enter(self, folder: str) -> Gitignore:
        return for_tree(folder) if _repository_at(folder) else self


@dataclass(frozen=True)
class _ReadFiles(Gitignore):
    levels: tuple[tuple[str, PatternSet], ...]  # (folder, its .gitignore), outermost first

    def ignores(self, path: str, is_folder: bool) -> bool:
        verdict = None
        for folder, patterns in self.levels:  # a deeper .gitignore overrides the ones above it
            relative = _relative(path, folder)
            mine = patterns.verdict(relative, is_folder)
            if mine is not None:
                verdict = mine
        return bool(verdict)

    def enter(self, folder: str) -> Gitignore:
        if _repository_at(folder):
            return for_tree(folder)
        patterns = _read_gitignore(folder)
        return _ReadFiles((*self.levels, (folder, patterns))) if patterns else self


def _relative(path: str, folder: str) -> str:
    """`os.path.relpath(path, folder)`, in `/` form. A path the walk made below `folder` (`folder`,
    a separator, then names) is sliced: relpath's two `abspath` calls were most of the ignore
    checks of a project listed around a file checked alone (diffusers, 2,093 files)."""
    if path.startswith(folder + os.sep):
        below = path[len(folder) + 1 :]
        if not any(name in ("", ".", "..") for name in below.split(os.sep)):
            return below.replace(os.sep, "/")
    return os.path.relpath(path, folder).replace(os.sep, "/")


def for_tree(folder: str, outer_folders: tuple[str, ...] = ()) -> Gitignore:
    """The rules under `folder`, a walk's starting point. `outer_folders` (outermost first) are
    the folders above it whose `.gitignore` files apply when git cannot be asked."""
    ignored = _ask_git(folder)
    if ignored is not None:
        return _AskedGit(ignored)
    levels = tuple((f, p) for f in (*outer_folders, folder) if (p := _read_gitignore(f)))
    return _ReadFiles(levels)


def _ask_git(folder: str) -> frozenset[str] | None:
    listed = git(folder, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z")
    if listed is None:
        return None
    return frozenset(os.path.normpath(os.path.join(folder, os.fsdecode(name))) for name in listed.split(b"\0") if name)


def git(folder: str, *args: str) -> bytes | None:
    """What git prints, run in `folder`; None without git or outside a work tree."""
    try:
        done = subprocess.run(["git", *args], cwd=folder, capture_output=True, check=False)
    except OSError:  # no git executable, or no such folder
        return None
    return done.stdout if done.returncode == 0 else None


def _read_gitignore(folder: str) -> PatternSet | None:
    try:
        with open(os.path.join(folder, ".gitignore"), encoding="utf-8", errors="surrogateescape") as lines:
            patterns = PatternSet(lines)
    except OSError:
        return None
    return patterns or None
