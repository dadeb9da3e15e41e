"""The analysis of a plan, shared out: which process analyses which of the modules holding roots,
and the parts put back together into one list of raw findings.

With helpers at hand (`parallel.Team`), they analyse, having imported LibCST while this process
was still planning (`plan.prepare`); each gets the plan's parts (pickled once) and builds the plan
again from the texts it inherited. Without, this process analyses, sharing out to one forked
process when there is enough to analyse. The findings never depend on the split: a root inlined
by a caller analysed in another process is dropped only once all parts are in.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from zerograd_lint import checked_loops, parallel, rules
from zerograd_lint.findings import SourceError
from zerograd_lint.plan import Plan
from zerograd_lint.settings import Vocabulary
from zerograd_lint.survey import ModuleSurvey

# Below this much LibCST text (the sparse texts of the modules holding roots) and with no helper
# ready, the analysis runs in this process alone: a fork and a second import of LibCST cost more
# than they save. Measured with benchmarks/parallel_analysis.py on this project's 2-core machines.
PARALLEL_FROM = 10_000  # characters
ONE_MODULE_FROM = 0.75  # of the LibCST text of the modules holding roots: see `_work`

Roots = tuple[str, tuple[int, ...]]  # a module's path, and the `def` lines of roots analysed there


@dataclass
class Part:
    """The analysis of some of the modules holding roots, in a form that pickles (no CST)."""

    per_root: list[tuple[tuple[str, int], list[rules.Raw]]]  # (path, `def` line or MODULE): raws
    inlined: set[tuple[str, int]]  # roots analysed within a caller that was analysed
    errors: dict[str, SourceError]
    loops: list[tuple[tuple[str, int], list[checked_loops.CheckedLoop]]] = field(default_factory=list)  # if asked


def analyse_plan(plan: Plan, words: Vocabulary, errors: dict[str, SourceError],
                 team: parallel.Team | None = None,
                 afterwards: Callable[[list[parallel.Job]], object] | None = None,
                 loops: list[checked_loops.CheckedLoop] | None = None) -> list[rules.Raw]:
    """The raw findings of the plan; files that cannot be analysed go to `errors`. With helpers,
    `afterwards` is given their analysis jobs, once under way, to give them more work beside.
    Given `loops`, the loops checked are put there (`--show-loops`)."""
    shown = loops is not None
    helpers = team.helpers if team is not None else []
    if helpers:
        shares = parallel.shares(_work(plan, parallel.WORKERS), parallel.WORKERS)
        parts_data = _Pickled((_slim(plan.surveys), plan.connected, plan.cut_already, plan.kept_methods))
        jobs = [helper.submit(analyse_share, parts_data, words, errors, plan.exhaustive, share, shown)
                for helper, share in zip(helpers, shares)]
        if afterwards is not None:
            afterwards(jobs)
        parts = [job.result() for job in jobs]
        parts += [_analyse(plan, words, errors, share, shown) for share in shares[len(helpers):]]
    else:
        work = _work(plan, parallel.WORKERS)
        many = sum(work.values()) >= PARALLEL_FROM and parallel.can_fork()
        shares = parallel.shares(work, parallel.WORKERS if many else 1)
        with parallel.Team(plan) as forked:  # forked now: the plan is inherited, not sent
            jobs = [forked.helper(i).submit(_analyse, words, errors, share, shown) for i, share in enumerate(shares[1:])]
            parts = [_analyse(plan, words, errors, shares[0], shown)] if shares else []
            parts += [job.result() for job in jobs]
    if loops is not None:
        loops.extend(_loops_merged(parts))
    return _merged(parts, errors)


def analyse_share(texts: Mapping[str, str], parts: _Pickled, words: Vocabulary, errors: dict[str, SourceError],
                  exhaustive: bool, share: list[Roots], loops: bool = False) -> Part:
    """A helper's job: the plan made again from its parts (its surveys, what `connect` made of
    them, the sparse texts this process made to size the shares, and the methods kept), and the
    analysis of `share`."""
    surveys, connected, cut, kept = parts.value
    plan = Plan.of(texts, surveys, connected, exhaustive, cut=cut, kept_methods=kept)
    return _analyse(plan, words, errors, share, loops)


def _analyse(plan: Plan, words: Vocabulary, errors: dict[str, SourceError], share: list[Roots],
             loops: bool = False) -> Part:
    from zerograd_lint.analysis import analyse_share

    parallel.keep(plan)  # and the CSTs it holds, in a helper
    return analyse_share(plan, words, dict(errors), share, loops)


def _slim(surveys: dict[str, ModuleSurvey]) -> dict[str, ModuleSurvey]:
    """The surveys as the analysis reads them: of what each function does by itself, only whether
    it prepares (`Plan.sparse`); the calls were read by `connect` already. Half the pickle."""
    return {
        path: dataclasses.replace(found, functions={line: f for line, f in found.functions.items() if f.prepares})
        for path, found in surveys.items()
    }


def _work(plan: Plan, workers: int) -> dict[Roots, int]:
    """What there is to analyse: the roots of each module that holds some, with the size of its
    LibCST text as a measure of the work. When one module holds most of it (`ONE_MODULE_FROM`;
    transformers' `trainer.py` is all of it), its roots are split in two: each process parses it
    and analyses half of them, rather than one doing everything while the other waits."""
    sizes = {path: len(plan.sparse(path)[0]) for path, found in plan.connected.items() if found.roots}
    total = sum(sizes.values())
    work: dict[Roots, int] = {}
    for path, size in sizes.items():
        roots = plan.connected[path].roots
        if workers > 1 and len(roots) > 1 and size >= ONE_MODULE_FROM * total:
            for group in _halves(roots, plan.surveys[path]):
                work[(path, group)] = size // 2
        else:
            work[(path, tuple(sorted(roots)))] = size
    return work


def _halves(roots: frozenset[int], survey: ModuleSurvey) -> list[tuple[int, ...]]:
    """The roots in two groups of about equal length of code (the module body counts as longest)."""
    lengths = {body.header: body.last - body.first + 1 for body in survey.outline.bodies}
    return [tuple(group) for group in parallel.shares({root: lengths.get(root, 1 << 30) for root in roots}, 2)]


def _merged(parts: list[Part], errors: dict[str, SourceError]) -> list[rules.Raw]:
    inlined = set().union(*(part.inlined for part in parts))
    unique: dict[tuple, rules.Raw] = {}
    for root, found_raws in sorted((item for part in parts for item in part.per_root), key=lambda item: item[0]):
        if root in inlined:
            continue  # analysed in the context of its callers
        for raw in found_raws:
            unique.setdefault((raw.path, raw.code, raw.line, raw.column, raw.message), raw)
    for part in parts:
        for path, error in part.errors.items():
            errors.setdefault(path, error)
    return list(unique.values())


def _loops_merged(parts: list[Part]) -> list[checked_loops.CheckedLoop]:
    """The loops checked, shown where their findings are: a root inlined by a caller is left out
    (its loops are among the caller's), as in `_merged`."""
    inlined = set().union(*(part.inlined for part in parts))
    return checked_loops.merged([
        loop for part in parts for root, found in part.loops if root not in inlined for loop in found
    ])


class _Pickled:
    """A value pickled once, however many helpers it is sent to."""

    def __init__(self, value: object, data: bytes | None = None) -> None:
        self.value = value
        self.data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL) if data is None else data

    def __reduce__(self):
        return _unpickled, (self.data,)


def _unpickled(data: bytes) -> _Pickled:
    return _Pickled(pickle.loads(data), data)
