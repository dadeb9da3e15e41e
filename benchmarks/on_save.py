"""An editor's on-save check of a script inside a project: what following its imports costs.

    python benchmarks/on_save.py               # a generated project of 200 files
    python benchmarks/on_save.py --runs 15
    python benchmarks/on_save.py --against OLD/bin/zerograd-lint   # and an older build, in turn

The script is `speed.py`'s 300-line training script, with a few imports of the project's own
modules added (an epoch loop, an optimizer factory, logging helpers) and a function using them.
It is checked as the README's nvim-lint recipe checks a buffer (`--stdin-filename`, stdin, no
cache: an on-save check never writes one), each run a process of its own, timed from outside:

- in its project of 200 files (a package of trainers, engines, optimizer factories, helpers and
  utilities, a git repository when git is installed): the imports are followed, and the project
  is searched for files that import the script;
- the baseline, in the same run: the same script, the same command, alone in an empty project
  (a folder with only `pyproject.toml`), where there is nothing to follow;
- an engine module of the project that the script uses (through a trainer), on save in its turn:
  the files that use it are read too;
- `ruff check` on the same buffer, when ruff is installed.

The runs are taken in turn, so that a machine slowing down for a while slows each alike; the CPU
seconds (user and system, the process and its children) say what a busy machine's wall time
hides. The last line gives the median wall time in the project (goal: under 0.3 s) and its ratio
to the baseline.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from project_vs_files import generate  # noqa: E402
from speed import TRAINING_SCRIPT, ruff, zerograd_lint  # noqa: E402

GOAL = 0.3  # seconds, the whole process
FILES = 200
PROJECT_IMPORTS = """\
from proj.engine_3 import train_one_epoch
from proj.helpers_3 import cosine, log_metrics
from proj.optim_3 import build_optimizer
from proj.trainer_4 import Trainer4
"""
PROJECT_USE = '''

def finetune_head(model: nn.Module, loader: DataLoader, epochs: int) -> None:
    """Fine-tune with the project's own epoch loop and optimizer factory."""
    optimizer = build_optimizer(model)
    for epoch in range(epochs):
        for group in optimizer.param_groups:
            group["lr"] = cosine(epoch, epochs, 1e-3)
        train_one_epoch(model, optimizer, loader)
        log_metrics(epoch, 0.0)
    Trainer4(model).fit(loader, 1)
'''


def script() -> str:
    """The training script, importing from the project and using what it imports."""
    head, marker, rest = TRAINING_SCRIPT.partition("log = logging.getLogger")
    return head + PROJECT_IMPORTS + "\n" + marker + rest.rstrip("\n") + "\n" + PROJECT_USE


def make_project(root: Path) -> Path:
    """`FILES` files in all, the script among them; a git repository when git is installed."""
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0"\n')
    written = len(generate(root, FILES - 5))  # the package, its __init__.py among them
    for extra in range(written, FILES - 1):
        (root / "proj" / f"extra_{extra}.py").write_text(f"def extra_{extra}(a):\n    return a\n")
    scripts = root / "scripts"
    scripts.mkdir()
    (scripts / "train.py").write_text(script())
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=root, check=False)
    return scripts / "train.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per command; the median is shown (default: 9)")
    parser.add_argument("--against", metavar="CMD", help="another build's command line (say an older installed "
                        "version's console script), timed in turn on the same check in its project")
    args = parser.parse_args()
    text = script()
    lint = zerograd_lint()
    flags = ["--force-exclude", "--quiet", "--output-format", "json", "--stdin-filename"]
    with tempfile.TemporaryDirectory() as tmp:
        in_project = make_project(Path(tmp) / "project")
        alone = Path(tmp) / "alone"
        alone.mkdir()
        (alone / "pyproject.toml").write_text("")
        (alone / "train.py").write_text(text)
        root = str(in_project.parent.parent)
        engine = Path(root) / "proj" / "engine_4.py"  # used by trainer_4.py, which the script uses
        count = sum(1 for _ in Path(root).rglob("*.py"))
        commands = [
            ("in its project", [*lint, *flags, str(in_project), "-"], root, text),
            ("alone (baseline)", [*lint, *flags, str(alone / "train.py"), "-"], str(alone), text),
            ("an engine it uses", [*lint, *flags, str(engine), "-"], root, engine.read_text()),
        ]
        if args.against:
            commands.append(("the same, against", [*shlex.split(args.against), *flags, str(in_project), "-"], root, text))
        checker = ruff()
        if checker is not None:
            commands.append(("ruff check", [*checker, "check", "--no-cache", "--exit-zero", "-q", "--stdin-filename",
                                            str(in_project), "-"], root, text))
        found = subprocess.run([*lint, "--output-format", "concise", "--stdin-filename", str(in_project), "-"],
                               input=text.encode(), capture_output=True, cwd=root, check=False)
        load = os.getloadavg()[0]
        rows = _measure_in_turn(commands, args.runs)
    print(f"on save: a {text.count(chr(10))}-line script on stdin, cold, no cache; median of {args.runs} runs")
    print(f"project: {count} .py files{' (a git repository)' if shutil.which('git') else ''}")
    print(f"findings in the project: {found.stdout.decode().strip() or 'none'}")
    print(f"load average before: {load:.2f} on {os.cpu_count()} cores")
    print(f"{'seconds':20} {'wall':>8} {'fastest':>8} {'slowest':>8} {'cpu':>8}")
    for row in rows:
        print(f"{row.what:20} {statistics.median(row.wall):8.3f} {min(row.wall):8.3f} {max(row.wall):8.3f} "
              f"{statistics.median(row.cpu):8.3f}")
    project, baseline = (statistics.median(rows[0].wall), statistics.median(rows[1].wall))
    if args.against:
        against = statistics.median(rows[3].wall)
        print(f"in its project: {project / against:.2f}x the build given by --against ({against:.3f} s)")
    verdict = "under" if project < GOAL else "OVER"
    print(f"on save in a {count}-file project: {project:.3f} s wall ({verdict} the {GOAL} s goal), "
          f"{project / baseline:.2f}x the same script alone ({baseline:.3f} s)")


@dataclass
class Row:
    what: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user and system seconds of the process


def _measure_in_turn(commands: list[tuple[str, list[str], str, str]], runs: int) -> list[Row]:
    """Wall and CPU seconds of each command, run in its folder on its stdin; one run of each, then again."""
    rows = [Row(what) for what, _, _, _ in commands]
    for _ in range(runs):
        for row, (_, command, cwd, stdin) in zip(rows, commands):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(command, cwd=cwd, input=stdin.encode(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            row.wall.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            row.cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return rows


if __name__ == "__main__":
    main()
