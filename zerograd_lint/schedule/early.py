"""Reading a run's files; on a folder, with its first helper forked before anything else.

Until its first helper exists a run has one core at work: on the installed torch package, the
imports, the walk and the reading took a tenth of a second before it was forked. So the console
script, given a folder, forks it first of all (`Early`): the helper imports LibCST while this
process imports the rest, walks and reads. A helper forked before the reading cannot inherit the
bytes read after it: they are read into an `Arena`, memory this process and its helpers share,
and the helper is given them once all are read (`Reader.sources`). Its cost to a small run is a
fork of a process that has imported next to nothing (about a millisecond).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from zerograd_lint.schedule import processes
from zerograd_lint.schedule.arena import Arena
from zerograd_lint.texts import Source, Texts


class Early:
    """The first helper of a run, forked before the run knows its files, and the arena they are
    read into (`Reader`). Its team's context is the run's `Texts`, empty until `Reader.sources`."""

    def __init__(self) -> None:
        """Raises `OSError` (or `AttributeError`, off Linux) where there is no arena to be had."""
        self.arena = Arena()
        self.team = processes.Team(Texts({}))
        self.team.helper(0)
        from zerograd_lint.schedule.run import warm_up

        self.team.each(warm_up)

    @classmethod
    def start(cls, arguments: Iterable[str]) -> Early | None:
        """An `Early` for a command whose `arguments` name a folder (the default), where a helper
        can be forked; None for any other."""
        if not processes.can_fork() or not _names_a_folder(list(arguments)):
            return None
        try:
            return cls()
        except (AttributeError, OSError):
            return None

    def close(self) -> None:
        self.team.close()


def _names_a_folder(arguments: list[str]) -> bool:
    """Does a command name a folder to check (its default, when it names nothing)? A guess from
    the words that are not options: a word that is an option's value only costs a fork."""
    if any(word in _NO_FOLDER for word in arguments):
        return False
    words = [word for word in arguments if not word.startswith("-")]
    if words[:1] == ["server"]:
        return False
    words = words[1:] if words[:1] == ["check"] else words
    return not words or any(os.path.isdir(word) for word in words)


# fixes are made from bytes, not read into an arena; the others read no folder
_NO_FOLDER = frozenset({"--fix", "--diff", "-", "--explain", "--help", "-h", "--version"})


class Reader:
    """Reads the files of a run: into the arena of an `Early`, if it has one."""

    def __init__(self, early: Early | None) -> None:
        from zerograd_lint.files import read_source  # not before the early fork: it needs none of it

        self._read_source = read_source
        self._early = early
        self._places: dict[str, tuple[int, int]] = {}  # in the arena, by path

    def read(self, path: str) -> bytes | None:
        """The file's bytes; None when they are in the arena (`sources` gives them). Raises `OSError`."""
        if self._early is None:
            return self._read_source(path)
        self._places[path] = self._early.arena.read(path)
        return None

    def sources(self, sources: dict[str, Source | None]) -> processes.Team | None:
        """Put the bytes in the arena into `sources` (whose values are None for them), in place.
        A large run (`schedule.run.APART_FROM`) gives its early helper every source: its team is the
        run's. A smaller one stops it, and forks helpers when it has work for them, as it would
        have without (one still importing LibCST would hold it up)."""
        if self._early is None:
            return None
        from zerograd_lint.schedule.run import APART_FROM

        arena, team = self._early.arena, self._early.team
        for path, place in self._places.items():
            sources[path] = arena.view(*place)
        large = sum(map(len, sources.values())) >= APART_FROM
        if large:  # the helper is sent the place in the arena of what is there, anything else as it is
            team.context.fill(sources)
            team.helper(0).submit(_fill, arena, {path: self._places.get(path, source) for path, source in sources.items()})
        else:
            team.close()
        arena.close()  # the views keep its memory mapped, here and in the helpers
        return team if large else None


def _fill(texts: Texts, arena: Arena, given: Mapping[str, Source | tuple[int, int]]) -> None:
    """A helper's job: hold the sources, as this process does."""
    texts.fill({path: arena.view(*source) if isinstance(source, tuple) else source for path, source in given.items()})
