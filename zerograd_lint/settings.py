"""What a run is asked to do, whoever asks (the command line, pyproject.toml, an editor)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import PurePath

from zerograd_lint.codes import RULES


@dataclass(frozen=True)
class Selection:
    """Which codes to report: prefixes, as ruff and flake8 take them (`ZG`, `ZG0`, `ZG001`).
    The longest matching prefix wins, so `--ignore ZG --select ZG001` reports ZG001 alone."""

    select: tuple[str, ...] = ("ZG",)
    ignore: tuple[str, ...] = ()

    def __contains__(self, code: str) -> bool:
        def best(prefixes: Sequence[str]) -> int:
            return max((len(p) for p in prefixes if code.startswith(p)), default=-1)

        chosen, dropped = best(self.select), best(self.ignore)
        return chosen >= 0 and chosen > dropped


def unknown_prefixes(prefixes: Iterable[str]) -> list[str]:
    return [p for p in prefixes if not any(code.startswith(p) for code in RULES)]


@dataclass(frozen=True)
class Vocabulary:
    """A project's own words for the analysis, on top of the ones it knows (`vocabulary.py`).

    Names are matched against the last component of a receiver or callee: `optimizers=("learner",)`
    makes `self.learner.step()` an optimizer step; `clears=("scrub",)` makes
    `scrub(model)` clear the gradients of `model` (or of an optimizer passed to it);
    `harmless=("sync_state",)` says that `sync_state(optimizer)`, a call the analysis cannot
    see into, never clears (docs/contract.md, "Calls whose body the analysis cannot see": a call
    given the optimizer may clear unless its name says it is harmless).
    """

    optimizers: tuple[str, ...] = ()
    clears: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    backwards: tuple[str, ...] = ()
    harmless: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    selection: Selection = Selection()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, code prefixes)
    vocabulary: Vocabulary = field(default_factory=Vocabulary)
    project_root: str | None = None  # per-file-ignores globs are relative to it; None: to paths as given
    cache: str | None = None  # the folder of the results cache; None: no cache
    show_loops: bool = False  # also list the loops checked (`Report.loops`); the cache is then not used
    unsafe_fixes: bool = False  # `--fix` makes unsafe fixes too

    def reports(self, path: str, code: str) -> bool:
        if code not in self.selection:
            return False
        posix = PurePath(path if self.project_root is None else os.path.relpath(path, self.project_root)).as_posix()
        name = PurePath(path).name
        for pattern, prefixes in self.per_file_ignores:
            if (fnmatchcase(posix, pattern) or fnmatchcase(name, pattern)) and any(code.startswith(p) for p in prefixes):
                return False
        return True
