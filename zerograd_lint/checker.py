"""Source text in, findings out: the package's entry to the analysis, for the runner, the fixer,
the flake8 plugin and tests. No I/O, no printing, no exiting.

text -> the files that can matter (`prefilter`) -> a first look with `ast` (`survey`) -> which
functions reach which (`reach`) -> what LibCST gets of each module (`planning`) -> the analysis
of the roots (`roots`: parse, bind, events, graph, flow, rules) -> raw findings filed per file,
suppressed by their markers (`filing`). `zerograd_lint.schedule.run` calls these stages in order
and decides which process does what; the runner puts its cache between the phases.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from zerograd_lint.filing import Result
from zerograd_lint.findings import Finding
from zerograd_lint.schedule.processes import Team
from zerograd_lint.schedule.run import Run
from zerograd_lint.settings import Vocabulary
from zerograd_lint.texts import Source

__all__ = ["Result", "check_project", "check_source"]


def check_source(source: str | bytes, path: str = "<stdin>", vocabulary: Vocabulary = Vocabulary()) -> list[Finding]:
    """Check one module's source; raise `SourceError` when it cannot be checked.

    `vocabulary` adds a project's own names of optimizers and of functions that clear, step or
    run backward (see `zerograd_lint.settings.Vocabulary`)."""
    result = check_project({path: source}, vocabulary)
    if path in result.errors:
        raise result.errors[path]
    return result.findings.get(path, [])


def check_project(sources: Mapping[str, Source], vocabulary: Vocabulary = Vocabulary(), exhaustive: bool = False,
                  team: Team | None = None, loops: bool = False, reported: Collection[str] | None = None) -> Result:
    """Check modules together: a loop in one file calling a training step in another is followed.
    Files that cannot be checked are in `errors`; the others are still checked. `exhaustive`
    turns the prefilter off (every file, function and loop analysed): only tests and
    investigations need it; the findings are the same, slower. `team`: helpers forked before the
    sources were read (see `zerograd_lint.schedule.early`), left open for the caller to close.
    `loops`: also list the loops checked, with their verdicts (`Result.loops`). `reported`: the
    only files whose findings are wanted, if not all: the result says nothing true of the others."""
    with Run(sources, vocabulary, exhaustive=exhaustive, team=team, loops=loops, reported=reported) as run:
        run.choose()
        return run.finish(run.analyse())
