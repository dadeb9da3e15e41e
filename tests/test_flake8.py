"""The flake8 plugin, run by flake8 itself: the same findings, at the columns flake8 expects."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from flake8.api import legacy

from zerograd_lint import __version__
from zerograd_lint.flake8 import Plugin

# The marker's 1-based column is 31 in characters, 35 in UTF-8 bytes and 32 in UTF-16 units: flake8 counts characters.
STALE = """\
import torch
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = {"naïve 🔥": []}
for x, y in data["naïve 🔥"]:  # noqa: ZG003
    model(x).sum().backward()
    optimizer.step()
"""
STEP = "optimizer.step() (line 7) applies gradients an earlier step already applied: nothing clears them in this loop"
UNUSED = "`# noqa: ZG003` suppresses nothing for ZG003 on this line"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(STALE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_flake8_prints_our_findings_at_our_columns(folder: Path) -> None:
    done = flake8("--select", "ZG", "train.py", cwd=folder)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [f"train.py:5:1: ZG001 {STEP}", f"train.py:5:31: ZG100 {UNUSED}"]


def test_the_plugin_is_registered(folder: Path) -> None:
    done = flake8("--version", cwd=folder)
    assert f"zerograd-lint: {__version__}" in " ".join(done.stdout.split())


def test_flake8_selection_and_noqa_apply(folder: Path) -> None:
    only_markers = flake8("--select", "ZG100", "train.py", cwd=folder)
    assert only_markers.stdout.splitlines() == [f"train.py:5:31: ZG100 {UNUSED}"]
    (folder / "train.py").write_text(STALE.replace("# noqa: ZG003", "# noqa: ZG001"), encoding="utf-8")
    assert flake8("--select", "ZG", "train.py", cwd=folder).stdout == ""


def test_through_the_api(folder: Path) -> None:
    style = legacy.get_style_guide(select=["ZG"], isolated=True)
    report = style.check_files(["train.py"])
    assert report.total_errors == 2
    assert report.get_statistics("ZG001") == [f"1 ZG001 {STEP}"]


def test_the_plugin_yields_zero_based_columns() -> None:
    lines = STALE.splitlines(keepends=True)
    yielded = Plugin(None, "train.py", lines).run()
    found = [(line, column, text.split()[0], kind) for line, column, text, kind in yielded]
    assert found == [(5, 0, "ZG001", Plugin), (5, 30, "ZG100", Plugin)]


def test_a_file_that_cannot_be_checked_is_left_to_flake8(folder: Path) -> None:
    (folder / "broken.py").write_text("loss.backward()\ndef f(:\n")
    done = flake8("--select", "ZG,E999", "broken.py", cwd=folder)
    assert [line.split()[1] for line in done.stdout.splitlines()] == ["E999"]


def test_a_bad_configuration_stops_flake8_with_its_message(folder: Path) -> None:
    (folder / "pyproject.toml").write_text("[tool.zerograd-lint]\nselct = []\n")
    done = flake8("--select", "ZG", "train.py", cwd=folder)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.splitlines()[-1].endswith("pyproject.toml: [tool.zerograd-lint] selct: unknown key (known keys: "
                                                 "select, extend-select, ignore, extend-ignore, per-file-ignores, "
                                                 "extend-per-file-ignores, exclude, "
                                                 "extend-exclude, respect-gitignore, force-exclude, output-format, unsafe-fixes, "
                                                 "vocabulary)")


def test_the_projects_vocabulary_applies(folder: Path) -> None:
    (folder / "pyproject.toml").write_text('[tool.zerograd-lint.vocabulary]\noptimizers = ["learner"]\n')
    (folder / "learn.py").write_text("for x in data:\n    model(x).sum().backward()\n    learner.step()\n")
    done = flake8("--select", "ZG", "learn.py", cwd=folder)
    assert [line.split()[1] for line in done.stdout.splitlines()] == ["ZG001"]
