"""One check of a project, its stages mapped over shares of work: the only place that decides
which process does what.

The stages are plain functions of their inputs (`prefilter`, `survey`, `reach`, `planning`,
`roots`, `filing`); a `Run` calls them in order, in three phases the caller may put a cache
between (`zerograd_lint.runner` does):

- `choose`: every file's text scanned (`prefilter.scan`), in two shares on a large tree, this
  process's and the first helper's; the files that train by themselves given their first look
  (`survey.surveys`) by the helpers while this process chooses the others (`prefilter.grow`);
- `analyse`: the first looks at the rest, dealt out as the work goes; which functions reach which
  (`reach.connect`); the plan (`planning.Plan`); the roots analysed on LibCST (`roots.Analyser`)
  in shares by the helpers, which imported LibCST while this process was still planning; the raw
  findings filed per file (`filing.filed`);
- `finish`: the unused markers of the files not chosen, looked for in parts by whichever helper
  is idle once its share of the analysis is done.

Without helpers (a small tree, or no fork) each phase runs here, in the same order, and the
findings are the same: they never depend on the split.
"""

from __future__ import annotations

import dataclasses
import gc
from collections import deque
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager

from zerograd_lint import checked_loops, prefilter, rules
from zerograd_lint.filing import Result, filed, finding, unused_markers
from zerograd_lint.findings import TOO_DEEP, SourceError
from zerograd_lint.parts import Part, loops_merged, merged
from zerograd_lint.planning import Plan, Roots, kept_for_themselves, planned
from zerograd_lint.reach import Reach
from zerograd_lint.schedule import processes, serving
from zerograd_lint.schedule.shares import Pickled, analysis_work, shares
from zerograd_lint.settings import Vocabulary
from zerograd_lint.survey import ModuleSurvey, Unparsable, surveys
from zerograd_lint.texts import Source, Texts

# Helpers share a run when it has enough of some work to give them: from `SURVEYS_APART_FROM`
# characters of first looks (they look at the files that train by themselves while this process
# chooses the others), and from `APART_FROM` characters of text, which the first helper scans a
# share of, and whose files not chosen the helpers look for markers in. A fork costs this process
# about 4 ms; the scan and the markers of 5 MB of text about 8 ms each. Measured on the installed
# torch package, and with benchmarks/parallel_survey.py on this project's 2-core machines.
APART_FROM = 5_000_000  # characters
SURVEYS_APART_FROM = 300_000  # characters
# Below this much LibCST text (the sparse texts of the modules holding roots) and with no helper
# ready, the analysis runs in this process alone: a fork and a second import of LibCST cost more
# than they save. Measured with benchmarks/parallel_analysis.py.
ANALYSIS_APART_FROM = 10_000  # characters
# The share of the text the first helper decodes and scans, this process the rest, so that both
# end together: forked here, before anything is decoded, it imports LibCST first (about 0.09 s);
# forked at the start of the run (`team` given: see `zerograd_lint.schedule.early`), it has by
# the time the files are read. Measured on the installed torch package.
HELPER_SCANS = 0.2
EARLY_HELPER_SCANS = 0.5
# The parts the files not chosen are looked for markers in, given out to the helpers once their
# analysis is under way (about 0.075 s in all on torch: a part is a few milliseconds).
MARKER_PARTS = 8
# Characters of first looks a helper is dealt at a time (about a hundredth of a second's work),
# and how many such batches it has waiting, the one it is at included: with two, it never waits
# for this process to finish looking at a large file before it has more to do. Measured on torch,
# where a helper given one batch at a time waited up to 0.05 s.
SURVEY_BATCH = 60_000
SURVEYS_AHEAD = 2


def warm_up(_texts: object) -> None:
    """A helper's first job: import LibCST and the analysis, while this process reads and plans."""
    from zerograd_lint import roots  # noqa: F401


class Run:
    """A check of `sources` (see the module's docstring). `team`: helpers forked before the
    sources were read, whose context, the `Texts` of `sources` in every process, is this run's
    (see `zerograd_lint.schedule.early`); left open for the caller to close (the runner's first
    helper plans the fix hint after the run), where a team made here is closed with the run.
    `exhaustive` turns the prefilter off (every file, function and loop analysed): the findings
    are the same, slower. `loops`: also list the loops checked, with their verdicts. `reported`:
    the only files whose findings are wanted, if not all (files checked with their project): the
    others are read for what the analysis of these needs, and neither analysed for themselves nor
    looked for markers in, so the result says nothing true of them."""

    def __init__(self, sources: Mapping[str, Source], vocabulary: Vocabulary, exhaustive: bool = False,
                 team: processes.Team | None = None, loops: bool = False, reported: Collection[str] | None = None) -> None:
        self.vocabulary, self.exhaustive, self.loops = vocabulary, exhaustive, loops
        self.reported = None if reported is None else frozenset(reported)
        self.texts = team.context if team is not None else Texts(sources)
        self.errors: dict[str, SourceError] = {}
        self.chosen: dict[str, str] = {}
        self._early = team is not None
        self._team = team or processes.Team(self.texts)
        self._helping = self._team if processes.can_fork() else None  # forked only for work worth it
        self._apart = False
        self._begun: list[processes.Job] = []  # first looks given to helpers
        self._markers: list[processes.Job] = []  # the files not chosen can only have markers that suppress nothing
        self._eligibility: dict[str, bool] = {}
        self._collector = _cycle_collector_paused()

    def __enter__(self) -> Run:
        self._collector.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        try:  # no helper of its own is left behind, whatever happens (a team given is the caller's)
            if not self._early:
                self._team.close()
        finally:
            self._collector.__exit__(*exc)

    # ---------------------------------------------------------------- phases

    def choose(self) -> dict[str, str]:
        """The files the analysis will look at (by path, their texts), decided from text alone."""
        texts, team = self.texts, self._team
        total = sum(map(texts.size, texts))
        self._apart = apart = self._helping is not None and not self.exhaustive and total >= APART_FROM
        if apart:  # the first helper, forked before anything is decoded if not sooner, imports LibCST meanwhile
            team.helper(0)
            team.each(warm_up)
        else:  # else each process decodes the share it scans, and this one what it reads later
            self.errors.update(texts.decode_all())
        if self.exhaustive:
            picked = set(texts)
        else:  # the files that train by themselves get their first look while the others are chosen
            scanned = self._scan(EARLY_HELPER_SCANS if self._early else HELPER_SCANS)
            early = {p: texts[p] for p in sorted(scanned.direct) if self._eligible(p)}  # they train by themselves
            if self._helping is not None and sum(map(len, early.values())) >= SURVEYS_APART_FROM:
                # A first helper forked before (see above) imports LibCST while this process
                # chooses the other files, and spawns the second, which inherits it. Forked only
                # now, both look first and import it later, each: on a mid-size tree that ends
                # sooner than importing before looking (accelerate 1.07 s, 1.10 s the other way).
                team.each(warm_up)
                team.helper(1)
                self._begun = _share_out(early, self.vocabulary, team.helpers)
            picked = prefilter.grow(texts, scanned, self.vocabulary)
        self.chosen = {p: texts[p] for p in sorted(picked) if self._eligible(p)}
        return self.chosen

    def analyse(self) -> Result:
        """The findings of the chosen files (and the errors of those that cannot be analysed): the
        cached part of a run."""
        errors: dict[str, SourceError] = {}
        shown: list[checked_loops.CheckedLoop] | None = [] if self.loops else None
        raws: list[rules.Raw] = []
        if self.chosen:
            try:
                raws = self._raws(errors, shown)
            except RecursionError:  # a pathological module the first look let through
                for path in self.chosen:
                    errors.setdefault(path, SourceError(path, TOO_DEEP))
        wanted = self.chosen if self.reported is None else {p: t for p, t in self.chosen.items() if p in self.reported}
        findings = filed(wanted, raws, errors)
        loops = checked_loops.settled(shown, {p: t for p, t in self.chosen.items() if p not in errors}) if shown else []
        return Result(findings, errors, loops)

    def finish(self, analysed: Result) -> Result:
        """The run's result: what `analyse` found (or a cache kept), and the unused markers of the
        files not chosen."""
        result = Result(dict(analysed.findings), {**self.errors, **analysed.errors}, list(analysed.loops))
        self._look_for_markers()  # unless given out already, beside the analysis
        others = [path for path in self.texts if path not in self.chosen and path not in result.errors
                  and (self.reported is None or path in self.reported)]
        unused = (
            {path: found for job in self._markers for path, found in job.result().items()} if self._markers
            else unused_markers(self.texts, others)
        )
        for path in others:
            result.findings[path] = sorted(finding(path, raw) for raw in unused.get(path, ()))
        return result

    # ---------------------------------------------------------------- choosing

    def _eligible(self, path: str) -> bool:
        """`prefilter.eligible`, asked once per file (one that trains by itself is asked twice)."""
        if path not in self._eligibility:
            self._eligibility[path] = prefilter.eligible(path, self.texts[path])
        return self._eligibility[path]

    def _scan(self, share: float) -> prefilter.Scan:
        """`prefilter.scan` of every file, decoded already. Apart, not yet: the first helper
        decodes and scans `share` of the text, once it has imported LibCST, and this process the
        rest; the files that cannot be decoded leave the texts, for the errors."""
        texts = self.texts
        if not self._apart:
            return prefilter.scan(texts, self.vocabulary, list(texts))
        sizes = {path: texts.size(path) for path in texts}
        mine, *theirs = shares(sizes, 2, weights=(1 - share, share))
        job = self._team.helper(0).submit(_scan_share, self.vocabulary, theirs[0]) if theirs else None
        scanned, failed = _scan_share(texts, self.vocabulary, mine)
        if job is not None:
            other, also = job.result()
            scanned, failed = scanned.merge(other), {**failed, **also}
        texts.drop(failed)
        self.errors.update((path, SourceError(path, failed[path])) for path in sizes if path in failed)
        return scanned

    # ---------------------------------------------------------------- analysing

    def _raws(self, errors: dict[str, SourceError], shown: list[checked_loops.CheckedLoop] | None) -> list[rules.Raw]:
        """The analysis's raw findings. Its plan and CSTs are unreferenced before the cycle
        collector is back (the run pauses it, `__enter__`): still referenced, they made its next
        passes walk them again and again as live objects (0.2 s on torch); unreferenced, one pass
        frees what cycles keep."""
        planned = self._plan(errors)
        if planned is None:  # nothing worth analysing: LibCST is not even imported
            return []
        parts = self._analysed_parts(planned, errors)
        del planned
        if shown is not None:
            shown.extend(loops_merged(parts))
        return merged(parts, errors)

    def _plan(self, errors: dict[str, SourceError]) -> Plan | None:
        """The plan for the chosen files, or None when no function is worth analysing. Files
        `ast` cannot read go to `errors`. The helpers look at some of the files, then warm up for
        the analysis while this process connects."""
        texts, team = self.chosen, self._team if self._helping is not None else None
        looked_at = _survey_all(texts, self.vocabulary, self._begun, team)
        if team is not None:
            team.each(warm_up)
        found: dict[str, ModuleSurvey] = {}
        for path, survey in looked_at.items():
            if isinstance(survey, Unparsable):
                errors[path] = SourceError(path, survey.reason)
            else:
                found[path] = survey
        return planned(texts, found, self.exhaustive, self.reported, self.vocabulary)

    def _analysed_parts(self, plan: Plan, errors: dict[str, SourceError]) -> list[Part]:
        """The analysis of the plan's roots, in parts. With helpers at hand, they analyse: each
        gets the plan's parts (pickled once) and builds the plan again from the texts it
        inherited; once under way, they look for markers beside it. Without, this process
        analyses, sharing out to one forked process when there is enough to analyse."""
        work = analysis_work(plan, processes.WORKERS)
        many = sum(work.values()) >= ANALYSIS_APART_FROM
        if self._helping is not None and self._team.helpers:
            split = shares(work, processes.WORKERS if many else 1)
            helpers = [self._team.helper(i) for i in range(len(split))]  # the second spawned if need be
            if len(split) == 1:  # little to analyse, in a helper likely still importing LibCST: sliced here meanwhile
                for path, _ in split[0]:
                    plan.sparse(path)
            parts = Pickled((_slim(plan.surveys, plan.reach), plan.reach, plan.cut_already, plan.kept_methods))
            jobs = [helper.submit(_analyse_in_helper, parts, self.vocabulary, errors, plan.exhaustive, share, self.loops)
                    for helper, share in zip(helpers, split)]
            self._look_for_markers(jobs)
            return [job.result() for job in jobs]
        split = shares(work, processes.WORKERS if many and processes.can_fork() else 1)
        with processes.Team(plan) as forked:  # forked now: the plan is inherited, not sent
            jobs = [forked.helper(i).submit(_analyse, self.vocabulary, errors, share, self.loops)
                    for i, share in enumerate(split[1:])]
            done = [_analyse(plan, self.vocabulary, errors, split[0], self.loops)] if split else []
            return done + [job.result() for job in jobs]

    def _look_for_markers(self, analysing: list[processes.Job] = ()) -> None:
        """By the helpers, in parts, each given the next whenever it has nothing else to do: the
        one whose share of the analysis (`analysing`) ends first does more of them."""
        if self._apart and not self._markers and self.reported is None:
            team = self._team
            skip = set(self.chosen) | set(self.errors)
            parts = [(i, MARKER_PARTS, skip) for i in range(MARKER_PARTS)]
            self._markers.extend(processes.deal(team.helpers or [team.helper(0)], _unused_markers_of_part, parts, analysing))


# ---------------------------------------------------------------- jobs and their sharing


def _scan_share(texts: Texts, vocabulary: Vocabulary, paths: list[str]) -> tuple[prefilter.Scan, dict[str, str]]:
    """Decode and scan these files: the scan of those decoded, and why the others could not be."""
    failed = {path: error.reason for path, error in texts.decode(paths).items()}
    return prefilter.scan(texts, vocabulary, [path for path in paths if path not in failed]), failed


def _share_out(texts: Mapping[str, str], vocabulary: Vocabulary, helpers: list[processes.Helper]) -> list[processes.Job]:
    """The first look at `texts` given to `helpers` in about equal shares (while this process
    does something else)."""
    split = shares({path: len(text) for path, text in texts.items()}, len(helpers))
    return [helper.submit(surveys, vocabulary, share) for helper, share in zip(helpers, split)]


def _survey_all(texts: Mapping[str, str], vocabulary: Vocabulary, begun: list[processes.Job],
                team: processes.Team | None) -> dict[str, ModuleSurvey | Unparsable]:
    """`survey.surveys` of each text. `begun`: jobs given to helpers already, whose files are not
    looked at again: their results are waited for. With a team and enough text left, the rest is
    dealt out as the work goes: this process looks at one file at a time, largest first, and each
    helper is given the smallest files left, a few at a time, so that it always has the next few
    waiting (`SURVEYS_AHEAD`) and all end together whatever else each had to do first."""
    given = {path for job in begun for path in job.args[-1]}
    pool = deque(sorted((p for p in texts if p not in given), key=lambda p: (-len(texts[p]), p)))
    enough = team is not None and sum(len(texts[p]) for p in pool) >= SURVEYS_APART_FROM
    dealing = (team.helpers or [team.helper(0)]) if enough else []
    done: dict[str, ModuleSurvey | Unparsable] = {}
    undone: dict[int, list[processes.Job]] = {id(helper): [] for helper in dealing}  # each helper's, begun included
    for job in begun:
        undone.setdefault(id(job.helper), []).append(job)
    jobs = list(begun)
    while pool:
        for helper in dealing:
            waiting = [job for job in undone[id(helper)] if not helper.ready(job)]
            while pool and len(waiting) < SURVEYS_AHEAD:
                waiting.append(helper.submit(surveys, vocabulary, _batch(pool, texts)))
                jobs.append(waiting[-1])
            undone[id(helper)] = waiting
        if pool:
            done.update(surveys(texts, vocabulary, [pool.popleft()]))
    for job in jobs:
        done.update(job.result())
    return {path: done[path] for path in sorted(texts)}


def _batch(pool: deque[str], texts: Mapping[str, str]) -> list[str]:
    """The smallest files of the pool (its end), up to about `SURVEY_BATCH` characters (one at least)."""
    batch, size = [], 0
    while pool and (not batch or size + len(texts[pool[-1]]) <= SURVEY_BATCH):
        path = pool.pop()
        batch.append(path)
        size += len(texts[path])
    return batch


def _analyse_in_helper(texts: Mapping[str, str], parts: Pickled, vocabulary: Vocabulary, errors: dict[str, SourceError],
                       exhaustive: bool, share: list[Roots], loops: bool = False):
    """A helper's job: the plan made again from its parts (its surveys, what `connect` made of
    them, the sparse texts this process made to size the shares, and the methods kept), and the
    analysis of `share`."""
    found, reach, cut, kept = parts.value
    plan = Plan.of(texts, found, reach, exhaustive, cut=cut, kept_methods=kept, vocabulary=vocabulary)
    return _analyse(plan, vocabulary, errors, share, loops)


def _analyse(plan: Plan, vocabulary: Vocabulary, errors: dict[str, SourceError], share: list[Roots], loops: bool = False):
    from zerograd_lint.roots import Analyser

    analyser = Analyser(plan, vocabulary, loops)
    part = analyser.analyse(share, dict(errors))
    serving.keep((plan, analyser))  # and the CSTs they hold, in a helper: freed with it, not one by one
    return part


def _slim(found: dict[str, ModuleSurvey], reach: dict[str, Reach]) -> dict[str, ModuleSurvey]:
    """The surveys as the analysis reads them: of what each function does by itself, only that of
    the functions kept for it (`kept_for_themselves`, which `Plan.sparse` asks again);
    the calls were read by `connect` already. Half the pickle."""
    out = {}
    for path, survey in found.items():
        kept = kept_for_themselves(survey, reach[path]) if path in reach else frozenset()
        out[path] = dataclasses.replace(survey, functions={line: f for line, f in survey.functions.items() if line in kept})
    return out


def _unused_markers_of_part(texts: Texts, index: int, count: int, skip: set[str]) -> dict[str, list[rules.Raw]]:
    """A helper's job: `filing.unused_markers` of every `count`-th file from the `index`-th, in
    path order, of those not in `skip` (the chosen files, and those that cannot be decoded)."""
    return unused_markers(texts, [path for path in sorted(texts) if path not in skip][index::count])


@contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """The analysis allocates millions of objects (ASTs, CSTs, graphs) and frees them by reference
    counting; the cycle collector's passes over them cost a quarter of a large run (torch: 4.1 s
    -> 3.0 s, the same peak memory). Paused while analysing, as it was afterwards, and while
    choosing the files (its passes over the selection's indexes: a twentieth of that)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
