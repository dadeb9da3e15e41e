"""Where sharing the analysis out to a forked process starts to pay (`schedule.run.ANALYSIS_APART_FROM`).

    python benchmarks/parallel_analysis.py           # copies of the training scripts in examples/
    python benchmarks/parallel_analysis.py FILE...   # copies of your own training files

Makes projects of more and more copies of the training scripts (each copy a module of its own,
so each is analysed), checks each project in this process alone and shared out (alternating,
median of 5), and prints per project the LibCST text the analysis gets (what `ANALYSIS_APART_FROM` is
compared with) and the ratio shared/alone. The last line says where sharing starts to win.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

from zerograd_lint.checker import check_project
from zerograd_lint.schedule import processes, run
from zerograd_lint.files import discover

REPEATS = 5
COUNTS = (1, 2, 4, 8, 16, 32, 64)


def training_files(paths: list[str]) -> dict[str, str]:
    out = {}
    for path in discover(paths):
        if isinstance(path, str) and path.endswith(".py"):
            text = Path(path).read_text(encoding="utf-8")
            if "backward(" in text and ".step(" in text:
                out[Path(path).name] = text
    return out


def analysed_size(texts: dict[str, str]) -> int:
    """The LibCST text of the modules holding roots, as `run.ANALYSIS_APART_FROM` counts it."""
    seen = []
    real = run.analysis_work

    def spy(plan, workers):
        work = real(plan, workers)
        seen.append(sum(work.values()))
        return work

    run.analysis_work = spy
    try:
        check_project(texts)
    finally:
        run.analysis_work = real
    return max(seen, default=0)


def timed(texts: dict[str, str], parallel_from: float) -> float:
    run.ANALYSIS_APART_FROM = parallel_from
    run.APART_FROM = run.SURVEYS_APART_FROM = float("inf")  # no helpers from the start: only this choice measured
    gc.collect()
    start = time.perf_counter()
    check_project(texts)
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    if not processes.can_fork():
        sys.exit("this platform does not fork: the analysis always runs in one process")
    files = training_files(argv or [str(Path(__file__).resolve().parent.parent / "examples")])
    if not files:
        sys.exit("no file with a backward and a step")
    print(f"copies of {len(files)} training files; median of {REPEATS}")
    print(f"{'copies':>6} {'LibCST chars':>13} {'alone s':>8} {'shared s':>9} {'ratio':>6}")
    crossover = None
    for count in COUNTS:
        texts = {f"copy{i}/{name}": text for i in range(count) for name, text in files.items()}
        size = analysed_size(texts)
        alone, shared = [], []
        for _ in range(REPEATS):
            alone.append(timed(texts, float("inf")))
            shared.append(timed(texts, 0))
        a, s = statistics.median(alone), statistics.median(shared)
        print(f"{count:6} {size:13,} {a:8.3f} {s:9.3f} {s / a:6.2f}")
        if crossover is None and s < 0.95 * a:
            crossover = size
    print(f"sharing wins from about {crossover:,} characters" if crossover else "sharing never won here")


if __name__ == "__main__":
    main(sys.argv[1:])
