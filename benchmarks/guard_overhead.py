"""How much zerograd_lint.runtime slows a small training step on CPU.

Trains the same MLP (two hidden layers of 256, batch 64, Adam, one thread) for 300 steps without
and with the guard attached, alternating the two in one process, and prints the median step time
of each run and the median of the guarded/plain ratios over the pairs of runs.

    python benchmarks/guard_overhead.py [--runs 7] [--steps 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from zerograd_lint import runtime

FEATURES, HIDDEN, CLASSES, BATCH = 128, 256, 10, 64


def median_step_seconds(data: list[tuple[torch.Tensor, torch.Tensor]], guarded: bool) -> float:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(FEATURES, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, CLASSES),
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    guard = runtime.attach(opt, models=model) if guarded else None
    times = []
    for x, y in data:
        start = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    if guard is not None:
        guard.detach()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="pairs of runs (default: 7)")
    parser.add_argument("--steps", type=int, default=300, help="steps per run (default: 300)")
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = [
        (torch.randn(BATCH, FEATURES), torch.randint(CLASSES, (BATCH,))) for _ in range(args.steps)
    ]
    median_step_seconds(data, guarded=False)  # warm up allocator and kernels
    median_step_seconds(data, guarded=True)

    ratios = []
    for run in range(args.runs):
        plain = median_step_seconds(data, guarded=False)
        guarded = median_step_seconds(data, guarded=True)
        ratios.append(guarded / plain)
        print(
            f"run {run + 1}: plain {plain * 1e3:.3f} ms/step, guarded {guarded * 1e3:.3f} ms/step,"
            f" ratio {guarded / plain:.3f}"
        )
    print(
        f"guard overhead: {statistics.median(ratios):.2f}x per training step"
        f" (median of {args.runs} runs)"
    )


if __name__ == "__main__":
    main()
