"""Reading a run's files, with its first helper forked before anything else.

Until its first helper exists a run has one core at work: on the installed torch package, the
imports, the walk and the reading took a tenth of a second before it was forked. So the console
script, given something to check, forks it first of all (`Early`): the helper imports LibCST while
this process imports the rest, walks and reads. A helper forked before the reading cannot inherit
the bytes read after it. A folder's are read into an `Arena`, memory this process and its helpers
share, and the helper is given them once all are read (`Reader.sources`). Files named by themselves
(and stdin) are read with the files beside them as bytes, which the helper is sent (`Early.given`)
to analyse them, having imported LibCST while this process read and planned. Its cost to a run that
analyses nothing is a fork of a process that has imported next to nothing (about a millisecond).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zerograd_lint.schedule import processes
from zerograd_lint.schedule.arena import Arena
from zerograd_lint.schedule.forked import First, checks_code, warms
from zerograd_lint.texts import Source, Texts


class Early:
    """The first helper of a run, forked before the run knows its files, and the arena they are
    read into (`Reader`). Its team's context is the run's `Texts`, empty until `Reader.sources`
    (a folder) or `given` (named files). `warm`: the helper imports LibCST before any job."""

    def __init__(self, first: First | None = None) -> None:
        """`first`: the helper, forked already (`forked.fork_first`); else it is forked here.
        Raises `OSError` (or `AttributeError`, off Linux) where there is no arena to be had."""
        self.arena = Arena(first.arena if first is not None else None)
        self.team = processes.Team(Texts({}), first)
        self.team.helper(0)
        self.warm = False

    @classmethod
    def start(cls, arguments: Iterable[str], first: First | None = None) -> Early | None:
        """An `Early` for a command whose `arguments` check code (`forked.checks_code`), where a
        helper can be forked (`first`, if the console script forked it); None for any other. Its
        helper imports LibCST at once where the run will want it (`forked.warms`): the console
        script's helper decides so by itself, by the same rule; one forked here is told to."""
        arguments = list(arguments)
        if first is None and (not processes.can_fork() or not checks_code(arguments)):
            return None
        try:
            early = cls(first)
        except (AttributeError, OSError):
            return None
        if first is not None:
            early.warm = warms(arguments)
        elif warms(arguments):
            early.warm_up()
        return early

    def warm_up(self) -> None:
        from zerograd_lint.schedule.run import warm_up

        self.team.each(warm_up)
        self.warm = True

    def given(self, sources: Mapping[str, Source]) -> processes.Team | None:
        """A run of files named by themselves (read as bytes, with the files beside them): its
        helper is sent the sources, up to `SENT_UP_TO` characters, and its team is the run's.
        More than that, it is stopped, and the run forks helpers when it has work for them."""
        sent = self.warm and sum(map(len, sources.values())) <= SENT_UP_TO
        if sent:
            self.hand_over(sources, sources)
        else:
            self.close()
        self.arena.close()  # nothing went into it: named files are read as bytes
        return self.team if sent else None

    def hand_over(self, sources: Mapping[str, Source], sent: Mapping[str, Source | tuple[int, int]]) -> None:
        """The run's sources held here, and in the helper as `sent` (a pair: a place in the arena)."""
        self.team.context.fill(sources)
        self.team.helper(0).submit(_fill, self.arena, sent)

    def close(self) -> None:
        self.team.close()


# What a named run sends its early helper through a pipe (about 3 ms a megabyte, while the helper
# still imports LibCST); a larger project is left to the helpers forked when there is work.
SENT_UP_TO = 5_000_000  # characters


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
            self._early.hand_over(sources, {path: self._places.get(path, source) for path, source in sources.items()})
        else:
            team.close()
        arena.close()  # the views keep its memory mapped, here and in the helpers
        return team if large else None


def _fill(texts: Texts, arena: Arena, given: Mapping[str, Source | tuple[int, int]]) -> None:
    """A helper's job: hold the sources, as this process does (a pair is a place in the arena)."""
    texts.fill({path: arena.view(*source) if isinstance(source, tuple) else source for path, source in given.items()})
