"""How work is split: into shares of about equal size, and, for the analysis, what the work is.

The findings never depend on the split; only how soon they come does.
"""

from __future__ import annotations

import pickle
from typing import TypeVar

from zerograd_lint.planning import Plan, Roots
from zerograd_lint.survey import ModuleSurvey

K = TypeVar("K")  # keys that sort: paths, or tuples of them

ONE_MODULE_FROM = 0.75  # of the LibCST text of the modules holding roots: see `analysis_work`


def shares(sizes: dict[K, int], workers: int, weights: tuple[float, ...] | None = None) -> list[list[K]]:
    """The keys of `sizes` split into at most `workers` shares of about equal total size, or of
    sizes in proportion to `weights` (largest first, each to the share lightest for its weight;
    ties by key, so the split is deterministic)."""
    workers = max(1, min(workers, len(sizes)))
    weights = weights[:workers] if weights is not None and len(weights) >= workers else (1.0,) * workers
    out: list[list[K]] = [[] for _ in range(workers)]
    totals = [0] * workers
    for key in sorted(sizes, key=lambda k: (-sizes[k], k)):
        loads = [(total + sizes[key]) / weight for total, weight in zip(totals, weights)]
        lightest = loads.index(min(loads))
        out[lightest].append(key)
        totals[lightest] += sizes[key]
    return [sorted(share) for share in out if share]


def analysis_work(plan: Plan, workers: int) -> dict[Roots, int]:
    """What there is to analyse: the roots of each module that holds some, with the size of its
    LibCST text as a measure of the work. When one module holds most of it (`ONE_MODULE_FROM`;
    transformers' `trainer.py` is all of it), its roots are split in two: each process parses it
    and analyses half of them, rather than one doing everything while the other waits."""
    sizes = {path: plan.size(path) for path, found in plan.reach.items() if found.roots}
    total = sum(sizes.values())
    work: dict[Roots, int] = {}
    for path, size in sizes.items():
        roots = plan.reach[path].roots
        if workers > 1 and len(roots) > 1 and size >= ONE_MODULE_FROM * total:
            for group in _halves(roots, plan.surveys[path]):
                work[(path, group)] = size // 2
        else:
            work[(path, tuple(sorted(roots)))] = size
    return work


def _halves(roots: frozenset[int], survey: ModuleSurvey) -> list[tuple[int, ...]]:
    """The roots in two groups of about equal length of code (the module body counts as longest)."""
    lengths = {body.header: body.last - body.first + 1 for body in survey.outline.bodies}
    return [tuple(group) for group in shares({root: lengths.get(root, 1 << 30) for root in roots}, 2)]


class Pickled:
    """A value pickled once, however many helpers it is sent to."""

    def __init__(self, value: object, data: bytes | None = None) -> None:
        self.value = value
        self.data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL) if data is None else data

    def __reduce__(self):
        return _unpickled, (self.data,)


def _unpickled(data: bytes) -> Pickled:
    return Pickled(pickle.loads(data), data)
