"""What whole-project analysis costs: one project run against checking each file alone.

    python benchmarks/project_vs_files.py            # a generated project of 500 files
    python benchmarks/project_vs_files.py PATH...    # your own tree(s)

Both runs read the same files into memory first and are timed in this process, alternating,
so the machine's load affects both alike. The last line prints the ratio (goal: at most 2.0).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from zerograd_lint.checker import check_project
from zerograd_lint.files import discover
from zerograd_lint.settings import Vocabulary

REPEATS = 3

TRAINER = '''\
import torch

from {pkg}.engine_{i} import train_one_epoch
from {pkg}.optim_{i} import build_optimizer


class Trainer{i}:
    def __init__(self, model):
        self.model = model
        self.optimizer = build_optimizer(model)

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            train_one_epoch(self.model, self.optimizer, loader)
'''
ENGINE = '''\
import torch

from {pkg}.helpers_{i} import log_metrics


def train_one_epoch(model, optimizer, loader):
    model.train()
    for step, (x, y) in enumerate(loader):
        {clear}
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        log_metrics(step, loss.item())
'''
OPTIM = '''\
import torch


def build_optimizer(model, lr=1e-3):
    decay = [p for n, p in model.named_parameters() if not n.endswith("bias")]
    rest = [p for n, p in model.named_parameters() if n.endswith("bias")]
    return torch.optim.AdamW([{{"params": decay, "weight_decay": 0.01}}, {{"params": rest}}], lr=lr)
'''
HELPERS = '''\
import logging
import math

log = logging.getLogger(__name__)


def log_metrics(step, loss):
    if step % 100 == 0:
        log.info("step %d loss %.4f ppl %.2f", step, loss, math.exp(min(loss, 20)))


def cosine(step, total, base):
    return base * 0.5 * (1 + math.cos(math.pi * step / total))
'''


def generate(root: Path, files: int = 500) -> list[str]:
    """A package of training code: per 5 files a trainer, its engine (every other one forgets to
    clear), an optimizer factory, helpers and an unrelated utility module."""
    pkg = root / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    written = 1
    i = 0
    while written < files:
        clear = "optimizer.zero_grad()" if i % 2 else "pass"
        for name, template in (("trainer", TRAINER), ("engine", ENGINE), ("optim", OPTIM), ("helpers", HELPERS)):
            (pkg / f"{name}_{i}.py").write_text(template.format(pkg="proj", i=i, clear=clear))
        (pkg / f"util_{i}.py").write_text(f"def add_{i}(a, b):\n    return a + b\n" * 20)
        written += 5
        i += 1
    return [str(p) for p in sorted(pkg.glob("*.py"))]


def read(paths: list[str]) -> dict[str, bytes]:
    return {p: Path(p).read_bytes() for p in discover(paths) if isinstance(p, str)}


def per_file(sources: dict[str, bytes]) -> int:
    return sum(len(check_project({p: s}, Vocabulary()).findings.get(p, ())) for p, s in sources.items())


def whole(sources: dict[str, bytes]) -> int:
    return sum(len(found) for found in check_project(sources, Vocabulary()).findings.values())


def timed(function, sources) -> tuple[float, int]:
    start = time.perf_counter()
    found = function(sources)
    return time.perf_counter() - start, found


def main(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = argv or generate(Path(tmp))
        sources = read(paths)
        one, both = [], []
        for _ in range(REPEATS):
            t, found_alone = timed(per_file, sources)
            one.append(t)
            t, found_together = timed(whole, sources)
            both.append(t)
    print(f"{len(sources)} files")
    print(f"file by file:   {statistics.median(one):7.2f} s   {found_alone} findings")
    print(f"whole project:  {statistics.median(both):7.2f} s   {found_together} findings")
    print(f"whole-project analysis costs {statistics.median(both) / statistics.median(one):.2f}x "
          f"checking the files one by one (median of {REPEATS}; goal <= 2.0)")


if __name__ == "__main__":
    main(sys.argv[1:])
