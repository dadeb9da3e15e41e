"""Whole-process speed and memory of zerograd-lint against ruff, on large installed trees.

    python benchmarks/speed.py                      # the installed torch and transformers packages
    python benchmarks/speed.py --runs 5 PATH...     # your own trees (median of 5 runs)
    python benchmarks/speed.py --with-libcst        # also a bare LibCST parse of every file (about a minute on torch)
    python benchmarks/speed.py --stdin FILE         # the on-save check of FILE (a long training script)

Training-dense trees are where the analysis has the most to do. The ones this project measures
(the README's "Large trees and the cache"), fetched by the usual means, never committed here:

    git clone https://github.com/huggingface/diffusers && git -C diffusers checkout 58eb52c0803e
    git clone https://github.com/Lightning-AI/pytorch-lightning && git -C pytorch-lightning checkout 7f0c3436cd3f
    python benchmarks/speed.py diffusers diffusers/examples pytorch-lightning \
        --stdin diffusers/examples/dreambooth/train_dreambooth_lora_sdxl.py

Each command runs as a process of its own, from an empty temporary folder (so the results cache
lands there, not in the tree), and is timed from outside: wall seconds and peak RSS, with GNU
`/usr/bin/time` when there is one, else a small parent process that reads its child's
`resource.getrusage(RUSAGE_CHILDREN)`. ruff's runs and the cold runs are taken in turn, so that
a machine slowing down for a while cannot favour either. Per tree:

- `zerograd-lint --exit-zero -q --no-cache TREE`: cold, nothing reused, with ruff's flags (the
  findings, no summary);
- the same without `--exit-zero -q`: the summary, and after findings the fix hint (`[*] N
  fixable`), which parses the files with findings to plan their fixes;
- `zerograd-lint --exit-zero -q TREE`, after one run that filled the cache: warm, nothing changed;
- `ruff check --isolated --no-cache --exit-zero -q TREE` (its default rules, whatever the tree configures): the
  baseline, measured in the same run;
- with `--with-libcst`, `libcst.parse_module` of every file zerograd-lint would read, in one
  process: what a LibCST linter that parses everything pays before its first rule runs.

Then an editor's on-save check: a training script on stdin, with the flags the README gives
nvim-lint (a 300-line one written here, or `--stdin FILE`: checked as FILE, so in its project,
its imports followed, and as a copy alone in an empty folder), against `ruff check` of the same
text on stdin; cold only, as a buffer never writes the cache. The tables show medians, and the
fastest and slowest run; the last line the ratios of the medians against ruff.

Measure an installed copy (`pip install .` in a fresh venv: its bytecode is compiled). An
editable install where `PYTHONDONTWRITEBYTECODE` is set compiles every module changed since its
last `.pyc` on every run, in every process, and that lands in the cold and warm rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TREES = ("torch", "transformers")
GNU_TIME = "/usr/bin/time"
# Runs COMMAND (the arguments after it), then prints the child's wall seconds and peak RSS in KiB.
WRAPPER = """\
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdin=sys.stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(wall, peak // 1024 if sys.platform == "darwin" else peak, code, file=sys.stderr)
"""
BARE_PARSE = """\
import sys
import libcst
from zerograd_lint.files import discover

parsed = failed = 0
for path in discover(sys.argv[1:]):
    if isinstance(path, str) and path.endswith((".py", ".pyi")):
        try:
            with open(path, "rb") as f:
                libcst.parse_module(f.read())
            parsed += 1
        except Exception:
            failed += 1
print(f"{parsed} parsed, {failed} failed", file=sys.stderr)
"""


@dataclass
class Measure:
    what: str
    seconds: float  # the median
    peak_mb: float
    exit_codes: set[int]
    fastest: float = 0.0
    slowest: float = 0.0


def measure(what: str, command: list[str], cwd: str, runs: int, stdin: bytes | None = None,
            env: dict[str, str] | None = None) -> Measure:
    """Median wall seconds and median peak RSS of `runs` runs of `command`."""
    return measure_alternately([(what, command)], cwd, runs, stdin, env)[0]


def measure_alternately(commands: list[tuple[str, list[str]]], cwd: str, runs: int, stdin: bytes | None = None,
                        env: dict[str, str] | None = None) -> list[Measure]:
    """`measure` of each command, their runs taken in turn (one of each, then again): a machine
    that slows down for a while slows every command alike, and their ratio stays fair."""
    taken: list[list[tuple[float, float, int]]] = [[] for _ in commands]
    for _ in range(runs):
        for (_, command), runs_of in zip(commands, taken):
            runs_of.append(_run_once(command, cwd, stdin, env))
    return [
        Measure(what, statistics.median(s for s, _, _ in runs_of), statistics.median(p for _, p, _ in runs_of),
                {c for _, _, c in runs_of}, min(s for s, _, _ in runs_of), max(s for s, _, _ in runs_of))
        for (what, _), runs_of in zip(commands, taken)
    ]


def _run_once(command: list[str], cwd: str, stdin: bytes | None, env: dict[str, str] | None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit code of one run."""
    if os.access(GNU_TIME, os.X_OK):
        start = time.perf_counter()
        done = subprocess.run([GNU_TIME, "-f", "%M", *command], cwd=cwd, input=stdin, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        seconds = time.perf_counter() - start
        return seconds, int(done.stderr.decode().strip().splitlines()[-1]) / 1024, done.returncode  # its child's code
    done = subprocess.run([sys.executable, "-c", WRAPPER, *command], cwd=cwd, input=stdin, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall, peak, code = done.stderr.decode().split()[-3:]
    return float(wall), int(peak) / 1024, int(code)


def zerograd_lint() -> list[str]:
    """The console script beside this interpreter (what users run), else `python -m`."""
    script = Path(sys.executable).with_name("zerograd-lint")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "zerograd_lint"]


def ruff() -> list[str] | None:
    found = shutil.which("ruff") or (str(Path(sys.executable).with_name("ruff"))
                                     if Path(sys.executable).with_name("ruff").is_file() else None)
    if found:
        return [found]
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    return None


def has_no_cache(command: list[str]) -> bool:
    done = subprocess.run([*command, "--help"], capture_output=True, text=True, check=False)
    return "--no-cache" in done.stdout


def installed_tree(name: str) -> tuple[str | None, str]:
    """The folder of an installed package, found without importing it, or why there is none."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        return None, f"cannot be located ({exc})"
    if spec is None or not spec.submodule_search_locations:
        return None, f"not installed (pip install {name}; the benchmark only reads its files)"
    return next(iter(spec.submodule_search_locations)), ""


def python_files(tree: str) -> tuple[int, float]:
    count = size = 0
    for folder, _, names in os.walk(tree):
        for name in names:
            if name.endswith((".py", ".pyi")):
                count += 1
                size += os.path.getsize(os.path.join(folder, name))
    return count, size / 1e6


def bench_tree(tree: str, args: argparse.Namespace, lint: list[str], no_cache: bool, baseline: list[str]) -> list[Measure]:
    rows = []
    with tempfile.TemporaryDirectory() as cwd:
        quiet = [*lint, "--exit-zero", "-q"]  # ruff's flags: the findings, no summary
        fresh = ["--no-cache"] if no_cache else []
        rows.extend(measure_alternately([
            ("ruff check (default rules)", [*baseline, "check", "--isolated", "--no-cache", "--exit-zero", "-q", tree]),
            ("zerograd-lint, cold" + ("" if no_cache else " (no --no-cache: no cache either)"), [*quiet, *fresh, tree]),
            ("zerograd-lint, cold, summary and fix hint", [*lint, *fresh, tree]),
        ], cwd, args.runs))
        if no_cache:
            subprocess.run([*quiet, tree], cwd=cwd, capture_output=True, check=False)  # fills the cache
            rows.append(measure("zerograd-lint, warm (cache)", [*quiet, tree], cwd, args.runs))
        if args.with_libcst:  # the files zerograd-lint reads: this checkout's discovery
            checkout = str(Path(__file__).resolve().parent.parent)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))}
            rows.append(measure("libcst.parse_module, every file (1 run)", [sys.executable, "-c", BARE_PARSE, tree],
                                cwd, 1, env=env))
    return rows


def print_table(title: str, rows: list[Measure], ruff_seconds: float) -> None:
    print(f"\n{title}")
    print(f"  {'what':44} {'wall s':>8} {'range s':>11} {'peak MB':>9} {'vs ruff':>9}  exit")
    for row in rows:
        codes = ",".join(map(str, sorted(row.exit_codes)))
        spread = f"{row.fastest:.2f}-{row.slowest:.2f}"
        print(f"  {row.what:44} {row.seconds:8.2f} {spread:>11} {row.peak_mb:9.0f} {row.seconds / ruff_seconds:8.2f}x  {codes}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="trees to check (default: the installed torch and transformers)")
    parser.add_argument("--runs", type=int, default=3, help="runs per command; the median is shown (default: 3)")
    parser.add_argument("--stdin", metavar="FILE", help="the on-save check of FILE's text on stdin (default: a 300-line "
                        "training script written for the run)")
    parser.add_argument("--with-libcst", action="store_true",
                        help="also time a bare LibCST parse of every file (slow: about a minute on torch, one run)")
    args = parser.parse_args()

    baseline = ruff()
    if baseline is None:
        sys.exit("ruff is not installed (pip install ruff): it is the baseline of every ratio")
    lint = zerograd_lint()
    no_cache = has_no_cache(lint)
    trees: list[tuple[str, str]] = [(p, os.path.abspath(p)) for p in args.paths]
    if not trees:
        for name in TREES:
            folder, why = installed_tree(name)
            if folder is None:
                print(f"{name}: skipped, {why}")
            else:
                trees.append((name, folder))
    if not trees:
        sys.exit("nothing to measure")
    print(f"zerograd-lint: {' '.join(lint)}; ruff: {' '.join(baseline)}; median of {args.runs} runs; "
          f"peak RSS from {'GNU time' if os.access(GNU_TIME, os.X_OK) else 'getrusage'}")
    if not args.with_libcst:
        print("bare LibCST parse: not measured (--with-libcst; about a minute on torch)")

    headline = []
    for name, tree in trees:
        rows = bench_tree(tree, args, lint, no_cache, baseline)
        count, megabytes = python_files(tree)
        print_table(f"{name}: {tree} ({count} .py files, {megabytes:.0f} MB)", rows, rows[0].seconds)
        ratios = [f"cold/ruff {rows[1].seconds / rows[0].seconds:.2f}x",
                  f"with hint/ruff {rows[2].seconds / rows[0].seconds:.2f}x"]
        if no_cache:
            ratios.append(f"warm/ruff {rows[3].seconds / rows[0].seconds:.2f}x")
        headline.append(f"{name}: {', '.join(ratios)}")

    with tempfile.TemporaryDirectory() as cwd:
        script = Path(args.stdin).resolve() if args.stdin else Path(cwd) / "train.py"
        if not args.stdin:
            script.write_text(TRAINING_SCRIPT)
        rows = bench_on_save(script, max(args.runs, 5), lint, no_cache, baseline)
        lines = script.read_bytes().count(b"\n")
    print_table(f"on save: {script} ({lines} lines) on stdin, as the nvim-lint recipe runs it", rows, rows[0].seconds)
    on_save = rows[1]
    print("; ".join(headline) + f"; on-save {on_save.seconds:.2f} s ({on_save.seconds / rows[0].seconds:.1f}x ruff)")


def bench_on_save(script: Path, runs: int, lint: list[str], no_cache: bool, baseline: list[str]) -> list[Measure]:
    """ruff and zerograd-lint on the text of `script` on stdin, checked as `script` (in its project)
    and as a copy alone in an empty folder."""
    text = script.read_bytes()
    flags = ["--force-exclude", "--quiet", "--output-format", "json", "--stdin-filename"]
    cold = ["--no-cache"] if no_cache else []
    with tempfile.TemporaryDirectory() as cwd:
        alone = Path(cwd) / script.name
        alone.write_bytes(text)
        rows = measure_alternately([
            ("ruff check, stdin", [*baseline, "check", "--isolated", "--no-cache", "--exit-zero", "-q", "--stdin-filename", str(script), "-"]),
            ("zerograd-lint, cold, in its project", [*lint, *cold, *flags, str(script), "-"]),
            ("zerograd-lint, cold, alone", [*lint, *cold, *flags, str(alone), "-"]),
        ], cwd, runs, stdin=text)
    return rows  # no warm run: a buffer on stdin never writes the cache


TRAINING_SCRIPT = '''\
"""Fine-tune a small transformer classifier with mixed precision and gradient accumulation."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("finetune")


@dataclass
class Config:
    data_dir: str = "data"
    out_dir: str = "runs/latest"
    vocab_size: int = 32000
    max_len: int = 256
    d_model: int = 384
    n_heads: int = 6
    n_layers: int = 6
    n_classes: int = 4
    dropout: float = 0.1
    batch_size: int = 32
    accumulation_steps: int = 4
    epochs: int = 3
    lr: float = 3e-4
    weight_decay: float = 0.01
    warmup_steps: int = 500
    clip: float = 1.0
    amp: bool = True
    seed: int = 0
    log_every: int = 50
    eval_every: int = 1000
    tags: list[str] = field(default_factory=list)


def parse_args() -> Config:
    parser = argparse.ArgumentParser(description=__doc__)
    defaults = Config()
    for name, value in vars(defaults).items():
        if isinstance(value, bool):
            parser.add_argument(f"--{name.replace('_', '-')}", action=argparse.BooleanOptionalAction, default=value)
        elif isinstance(value, list):
            parser.add_argument(f"--{name.replace('_', '-')}", nargs="*", default=value)
        else:
            parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return Config(**vars(parser.parse_args()))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


class JsonlDataset(Dataset):
    """One example per line: {"tokens": [...], "label": n}."""

    def __init__(self, path: Path, max_len: int) -> None:
        self.examples = []
        with path.open() as f:
            for line in f:
                item = json.loads(line)
                self.examples.append((item["tokens"][:max_len], item["label"]))

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int):
        tokens, label = self.examples[index]
        return torch.tensor(tokens, dtype=torch.long), torch.tensor(label)


def collate(batch):
    tokens, labels = zip(*batch)
    width = max(len(t) for t in tokens)
    padded = torch.zeros(len(tokens), width, dtype=torch.long)
    mask = torch.zeros(len(tokens), width, dtype=torch.bool)
    for row, t in enumerate(tokens):
        padded[row, : len(t)] = t
        mask[row, : len(t)] = True
    return padded, mask, torch.stack(labels)


class Block(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.attn = nn.MultiheadAttention(cfg.d_model, cfg.n_heads, dropout=cfg.dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model),
            nn.GELU(),
            nn.Dropout(cfg.dropout),
            nn.Linear(4 * cfg.d_model, cfg.d_model),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        h, _ = self.attn(h, h, h, key_padding_mask=~mask, need_weights=False)
        x = x + h
        return x + self.mlp(self.norm2(x))


class Classifier(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Parameter(torch.zeros(1, cfg.max_len, cfg.d_model))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos[:, : tokens.size(1)]
        for block in self.blocks:
            x = block(x, mask)
        x = self.norm(x)
        pooled = (x * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return self.head(pooled)


def build_optimizer(model: nn.Module, cfg: Config) -> torch.optim.Optimizer:
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or name.endswith("bias") else decay).append(param)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98))


def build_scheduler(optimizer: torch.optim.Optimizer, cfg: Config, total_steps: int):
    def schedule(step: int) -> float:
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        progress = (step - cfg.warmup_steps) / max(1, total_steps - cfg.warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


@torch.no_grad()
def evaluate(model: nn.Module, loader: DataLoader, device: torch.device) -> dict[str, float]:
    model.eval()
    total, correct, loss_sum = 0, 0, 0.0
    for tokens, mask, labels in loader:
        tokens, mask, labels = tokens.to(device), mask.to(device), labels.to(device)
        logits = model(tokens, mask)
        loss_sum += F.cross_entropy(logits, labels, reduction="sum").item()
        correct += (logits.argmax(-1) == labels).sum().item()
        total += labels.numel()
    model.train()
    return {"loss": loss_sum / max(1, total), "accuracy": correct / max(1, total)}


def save_checkpoint(path: Path, model, optimizer, scheduler, scaler, step: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict(),
            "step": step,
        },
        path,
    )


def load_checkpoint(path: Path, model, optimizer, scheduler, scaler) -> int:
    if not path.exists():
        return 0
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    scaler.load_state_dict(state["scaler"])
    return state["step"]


class ExponentialMovingAverage:
    """Shadow weights for evaluation, updated after every optimizer step."""

    def __init__(self, model: nn.Module, decay: float = 0.999) -> None:
        self.decay = decay
        self.shadow = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
        self.backup: dict[str, torch.Tensor] = {}

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        for name, param in model.named_parameters():
            if name in self.shadow:
                self.shadow[name].mul_(self.decay).add_(param.detach(), alpha=1 - self.decay)

    def swap_in(self, model: nn.Module) -> None:
        for name, param in model.named_parameters():
            if name in self.shadow:
                self.backup[name] = param.detach().clone()
                param.data.copy_(self.shadow[name])

    def swap_out(self, model: nn.Module) -> None:
        for name, param in model.named_parameters():
            if name in self.backup:
                param.data.copy_(self.backup.pop(name))


@torch.no_grad()
def predict(model: nn.Module, texts: list[list[int]], device: torch.device, max_len: int) -> list[int]:
    model.eval()
    out = []
    for start in range(0, len(texts), 64):
        chunk = [torch.tensor(t[:max_len], dtype=torch.long) for t in texts[start : start + 64]]
        tokens, mask, _ = collate([(t, torch.tensor(0)) for t in chunk])
        out.extend(model(tokens.to(device), mask.to(device)).argmax(-1).tolist())
    return out


def train(cfg: Config) -> None:
    seed_everything(cfg.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data_dir = Path(cfg.data_dir)
    train_set = JsonlDataset(data_dir / "train.jsonl", cfg.max_len)
    valid_set = JsonlDataset(data_dir / "valid.jsonl", cfg.max_len)
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True, collate_fn=collate, drop_last=True)
    valid_loader = DataLoader(valid_set, batch_size=cfg.batch_size, collate_fn=collate)

    model = Classifier(cfg).to(device)
    optimizer = build_optimizer(model, cfg)
    total_steps = cfg.epochs * len(train_loader) // cfg.accumulation_steps
    scheduler = build_scheduler(optimizer, cfg, total_steps)
    scaler = torch.cuda.amp.GradScaler(enabled=cfg.amp and device.type == "cuda")
    ema = ExponentialMovingAverage(model)
    out_dir = Path(cfg.out_dir)
    step = load_checkpoint(out_dir / "last.pt", model, optimizer, scheduler, scaler)
    best = -1.0
    started = time.time()

    model.train()
    for epoch in range(cfg.epochs):
        running = 0.0
        for index, (tokens, mask, labels) in enumerate(train_loader):
            tokens, mask, labels = tokens.to(device), mask.to(device), labels.to(device)
            with torch.autocast(device_type=device.type, enabled=cfg.amp):
                logits = model(tokens, mask)
                loss = F.cross_entropy(logits, labels) / cfg.accumulation_steps
            scaler.scale(loss).backward()
            running += loss.item()
            if (index + 1) % cfg.accumulation_steps != 0:
                continue
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            ema.update(model)
            step += 1
            if step % cfg.log_every == 0:
                elapsed = time.time() - started
                log.info("epoch %d step %d loss %.4f lr %.2e %.1f steps/s", epoch, step, running / cfg.log_every,
                         scheduler.get_last_lr()[0], step / max(elapsed, 1e-9))
                running = 0.0
            if step % cfg.eval_every == 0:
                ema.swap_in(model)
                metrics = evaluate(model, valid_loader, device)
                ema.swap_out(model)
                log.info("eval step %d: %s", step, json.dumps(metrics))
                save_checkpoint(out_dir / "last.pt", model, optimizer, scheduler, scaler, step)
                if metrics["accuracy"] > best:
                    best = metrics["accuracy"]
                    save_checkpoint(out_dir / "best.pt", model, optimizer, scheduler, scaler, step)
    metrics = evaluate(model, valid_loader, device)
    log.info("final: %s (best accuracy %.4f)", json.dumps(metrics), max(best, metrics["accuracy"]))
    (out_dir / "metrics.json").write_text(json.dumps({**metrics, "steps": step, "tags": cfg.tags}))


def main() -> None:
    logging.basicConfig(level=os.environ.get("LOGLEVEL", "INFO"), format="%(asctime)s %(levelname)s %(message)s")
    train(parse_args())


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    main()
