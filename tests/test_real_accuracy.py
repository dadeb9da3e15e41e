"""benchmarks/real_accuracy.py and benchmarks/real/materialize.py on a tiny snapshot of our own.

The scorer runs the installed linter (`python -m zerograd_lint`) on the snapshot whole, as it does
on the real ones; each test labels the same two loops, one label wrong on purpose.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SNAPSHOT = f"acme+trainer@{COMMIT[:12]}"
HEADER = "repo\tcommit\tpath\tline\texpected\treason\n"

TRAIN = """\
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]


def never_clears():
    for x, y in data:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def clears_first():
    for x, y in data:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def not_labelled():
    for x, y in data:
        model(x).sum().backward()
        opt.step()
"""
STALE_LOOP, CORRECT_LOOP, UNLABELLED_LOOP = 9, 16, 24


def score(tmp_path: Path, rows: list[tuple[str, int, str]], *extra: str) -> str:
    (tmp_path / "snapshots" / SNAPSHOT).mkdir(parents=True)
    (tmp_path / "snapshots" / SNAPSHOT / "train.py").write_text(TRAIN)
    table = tmp_path / "loops.tsv"
    table.write_text(HEADER + "# a comment line\n" + "".join(
        f"acme/trainer\t{COMMIT}\ttrain.py\t{line}\t{expected}\t{reason}\n" for expected, line, reason in rows
    ))
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "real_accuracy.py"), str(tmp_path / "snapshots"), "--tsv", str(table),
         *extra],
        capture_output=True, text=True, check=True,
    )
    return done.stdout


def table_line(output: str, code: str) -> list[str]:
    return next(line.split() for line in output.splitlines() if line.split()[:1] == [code])


def test_a_missed_code_is_a_false_negative(tmp_path: Path) -> None:
    output = score(tmp_path, [
        ("ZG001", STALE_LOOP, "never cleared"),
        ("ZG002", CORRECT_LOOP, "wrong on purpose: clears at the top"),
    ])
    assert table_line(output, "ZG001") == ["ZG001", "1.000", "1.000", "1", "0", "0"]
    assert table_line(output, "ZG002") == ["ZG002", "-", "0.000", "0", "0", "1"]
    assert table_line(output, "all") == ["all", "1.000", "0.500", "1", "0", "1"]
    assert f"  FN ZG002 acme/trainer@{COMMIT[:12]} train.py:{CORRECT_LOOP}  wrong on purpose: clears at the top" in (
        output.splitlines()
    )
    assert "disagreements (1):" in output
    assert "findings in labelled files at lines no row labels (1):" in output
    assert f"  ZG001 acme/trainer@{COMMIT[:12]} train.py:{UNLABELLED_LOOP}  " in output


def test_a_code_on_a_quiet_row_is_a_false_positive(tmp_path: Path) -> None:
    output = score(tmp_path, [
        ("quiet", STALE_LOOP, "wrong on purpose: never cleared"),
        ("quiet", CORRECT_LOOP, "clears at the top"),
        ("ZG001", UNLABELLED_LOOP, "never cleared"),
    ], "--json", str(tmp_path / "score.json"))
    assert table_line(output, "ZG001") == ["ZG001", "0.500", "1.000", "1", "1", "0"]
    assert table_line(output, "all") == ["all", "0.500", "1.000", "1", "1", "0"]
    disagreement = next(line for line in output.splitlines() if line.startswith("  FP "))
    assert disagreement.startswith(
        f"  FP ZG001 acme/trainer@{COMMIT[:12]} train.py:{STALE_LOOP}  wrong on purpose: never cleared  [linter: "
    )
    assert "disagreements (1):" in output
    assert "findings in labelled files at lines no row labels (0):" in output
    assert '"FP": 1' in (tmp_path / "score.json").read_text()


def test_a_notebook_row_names_its_cell(tmp_path: Path) -> None:
    """A finding in a notebook is at `cell N:L` (every cell counted, markdown too): a row says so."""
    import json

    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# never clears\n"]},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": TRAIN.splitlines(keepends=True)}]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "snapshots" / SNAPSHOT).mkdir(parents=True)
    (tmp_path / "snapshots" / SNAPSHOT / "train.ipynb").write_text(json.dumps(notebook))
    table = tmp_path / "loops.tsv"
    table.write_text(HEADER + "".join(
        f"acme/trainer\t{COMMIT}\ttrain.ipynb\t{line}\t{expected}\t{reason}\n" for line, expected, reason in [
            (f"cell 2:{STALE_LOOP}", "ZG001", "never cleared"),
            (f"cell 2:{CORRECT_LOOP}", "quiet", "clears at the top"),
            (f"{UNLABELLED_LOOP}", "ZG001", "wrong on purpose: a notebook's line names its cell"),
        ]
    ))
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "real_accuracy.py"), str(tmp_path / "snapshots"), "--tsv", str(table)],
        capture_output=True, text=True, check=True,
    )
    assert table_line(done.stdout, "ZG001") == ["ZG001", "1.000", "0.500", "1", "0", "1"]
    assert f"  FN ZG001 acme/trainer@{COMMIT[:12]} train.ipynb:{UNLABELLED_LOOP}  " in done.stdout
    assert f"  ZG001 acme/trainer@{COMMIT[:12]} train.ipynb:cell 2:{UNLABELLED_LOOP}  " in done.stdout


def test_rows_of_a_missing_snapshot_are_not_scored(tmp_path: Path) -> None:
    (tmp_path / "snapshots").mkdir()
    table = tmp_path / "loops.tsv"
    table.write_text(HEADER + f"acme/gone\t{COMMIT}\ttrain.py\t3\tZG001\tnever cleared\n")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "real_accuracy.py"), str(tmp_path / "snapshots"), "--tsv", str(table)],
        capture_output=True, text=True, check=True,
    )
    assert table_line(done.stdout, "all") == ["all", "-", "-", "0", "0", "0"]
    assert "rows not scored (1):" in done.stdout
    assert "acme+gone" in done.stderr


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="no git")
def test_materialize_extracts_each_commit_once(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (work / "train.py").write_text(TRAIN)
    subprocess.run([*git, "add", "train.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "loops"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    mirrors = tmp_path / "mirrors"
    (mirrors / "acme+trainer").mkdir(parents=True)
    (work / ".git").rename(mirrors / "acme+trainer" / "repo")
    table = tmp_path / "loops.tsv"
    table.write_text(HEADER + "".join(
        f"{repo}\t{commit}\ttrain.py\t{STALE_LOOP}\tZG001\tnever cleared\n" for repo in ("acme/trainer", "acme/gone")
    ))
    command = [sys.executable, str(BENCHMARKS / "real" / "materialize.py"),
               "--mirrors", str(mirrors), "--out", str(tmp_path / "snapshots"), str(table)]

    first = subprocess.run(command, capture_output=True, text=True)
    assert first.returncode == 1
    assert (tmp_path / "snapshots" / f"acme+trainer@{commit[:12]}" / "train.py").read_text() == TRAIN
    assert "acme/gone: no mirror" in first.stderr
    assert sorted(path.name for path in (tmp_path / "snapshots").iterdir()) == [f"acme+trainer@{commit[:12]}"]

    again = subprocess.run(command, capture_output=True, text=True)
    assert "already there" in again.stderr
