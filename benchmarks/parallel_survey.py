"""Where sharing the first look (`schedule.run`) out to a forked process starts to pay.

    python benchmarks/parallel_survey.py           # files of the installed torch package
    python benchmarks/parallel_survey.py PATH...   # your own files

Takes growing slices of the files that can take part in a finding (smallest first), and times
the first look in this process alone and shared out, alternating (median of 5). Prints, per
size, the ratio shared/alone; the last line says where sharing starts to win:
`schedule.run.SURVEYS_APART_FROM` should sit near it.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from pathlib import Path

from zerograd_lint.files import discover
from zerograd_lint.schedule import run
from zerograd_lint.schedule.processes import Team
from zerograd_lint.settings import Vocabulary

REPEATS = 5
SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000)


def texts_of(paths: list[str]) -> dict[str, str]:
    out = {}
    for path in discover(paths):
        if isinstance(path, str) and path.endswith(".py"):
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "backward" in text or ".step(" in text:
                out[path] = text
    return out


def timed(texts: dict[str, str], parallel_from: int) -> float:
    run.SURVEYS_APART_FROM = parallel_from
    start = time.perf_counter()
    with Team(texts) as team:  # a helper forked only when sharing
        run._survey_all(texts, Vocabulary(), [], team)
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    if not argv:
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.origin is None:
            sys.exit("torch is not installed: name the files to measure")
        argv = [str(Path(spec.origin).parent)]
    pool = sorted(texts_of(argv).items(), key=lambda item: (len(item[1]), item[0]))
    first_win = None
    for size in SIZES:
        chosen, total = {}, 0
        for path, text in pool:
            if total >= size:
                break
            chosen[path] = text
            total += len(text)
        if total < size:
            break
        serial, parallel = [], []
        for _ in range(REPEATS):
            serial.append(timed(chosen, parallel_from=sys.maxsize))
            parallel.append(timed(chosen, parallel_from=0))
        ratio = statistics.median(parallel) / statistics.median(serial)
        print(f"{total / 1e6:5.2f} MB in {len(chosen):4d} files: alone {statistics.median(serial):6.2f} s, "
              f"shared {statistics.median(parallel):6.2f} s, shared/alone {ratio:.2f}x")
        if ratio < 0.95 and first_win is None:
            first_win = total
    print(f"sharing pays from about {first_win:,} characters" if first_win else "sharing never paid here")


if __name__ == "__main__":
    main(sys.argv[1:])
