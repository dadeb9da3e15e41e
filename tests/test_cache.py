"""The results cache: reused when nothing it depends on changed, never trusted when broken."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE

from zerograd_lint.cache import FOLDER, Cache
from zerograd_lint.cli import main
from zerograd_lint.runner import checked
from zerograd_lint.schedule.run import Run
from zerograd_lint.settings import Vocabulary

OTHER = "def unrelated():\n    return 1\n"


@pytest.fixture
def analyses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the analysis proper ran."""
    calls: list[int] = []
    real = Run.analyse

    def counted(run):
        calls.append(len(run.chosen))
        return real(run)

    monkeypatch.setattr(Run, "analyse", counted)
    return calls


def test_a_rerun_with_nothing_changed_reuses_the_result(tmp_path: Path, analyses: list[int]) -> None:
    cache = Cache(tmp_path / FOLDER)
    sources = {"train.py": STALE, "other.py": OTHER}
    first = checked(sources, Vocabulary(), cache)
    second = checked(sources, Vocabulary(), cache)
    assert first == second and [f.code for f in second.findings["train.py"]] == ["ZG001"]
    assert analyses == [1]


def test_an_edit_outside_the_files_that_matter_costs_no_analysis(tmp_path: Path, analyses: list[int]) -> None:
    cache = Cache(tmp_path / FOLDER)
    checked({"train.py": STALE, "other.py": OTHER}, Vocabulary(), cache)
    result = checked({"train.py": STALE, "other.py": OTHER + "# edited\n"}, Vocabulary(), cache)
    assert [f.code for f in result.findings["train.py"]] == ["ZG001"]
    assert analyses == [1]


@pytest.mark.parametrize(
    ("sources", "vocabulary"),
    [
        ({"train.py": STALE.replace("optimizer.step()", "optimizer.step()\n    optimizer.zero_grad()")}, Vocabulary()),
        ({"train.py": STALE}, Vocabulary(clears=("reset",))),
    ],
    ids=["content", "vocabulary"],
)
def test_what_the_result_depends_on_is_in_the_key(tmp_path: Path, analyses: list[int], sources, vocabulary) -> None:
    cache = Cache(tmp_path / FOLDER)
    checked({"train.py": STALE}, Vocabulary(), cache)
    checked(sources, vocabulary, cache)
    assert len(analyses) == 2


def test_the_version_is_in_the_key(tmp_path: Path, analyses: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Cache(tmp_path / FOLDER)
    checked({"train.py": STALE}, Vocabulary(), cache)
    monkeypatch.setattr("zerograd_lint.cache.__version__", "99.0.0")
    checked({"train.py": STALE}, Vocabulary(), cache)
    assert len(analyses) == 2


def test_a_truncated_entry_is_a_miss(tmp_path: Path, analyses: list[int]) -> None:
    cache = Cache(tmp_path / FOLDER)
    first = checked({"train.py": STALE}, Vocabulary(), cache)
    for entry in (tmp_path / FOLDER).glob("*.json"):
        entry.write_text(entry.read_text()[:20])
    assert checked({"train.py": STALE}, Vocabulary(), cache) == first
    assert len(analyses) == 2
    for entry in (tmp_path / FOLDER).glob("*.json"):
        json.loads(entry.read_text())  # rewritten whole


def test_the_folder_ignores_itself_and_says_what_it_is(tmp_path: Path) -> None:
    checked({"train.py": STALE}, Vocabulary(), Cache(tmp_path / FOLDER))
    assert (tmp_path / FOLDER / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (tmp_path / FOLDER / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_the_cli_keeps_it_in_the_project_and_no_cache_bypasses_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(STALE)
    runner = CliRunner()
    bypassed = runner.invoke(main, ["--no-cache", "train.py"], catch_exceptions=False)
    assert bypassed.exit_code == 1 and not (tmp_path / FOLDER).exists()
    cached = runner.invoke(main, ["train.py"], catch_exceptions=False)
    assert cached.stdout == bypassed.stdout and (tmp_path / FOLDER).is_dir()
    assert runner.invoke(main, ["train.py"], catch_exceptions=False).stdout == cached.stdout


def test_concurrent_runs_leave_readable_entries(tmp_path: Path) -> None:
    for index in range(20):
        (tmp_path / f"train_{index}.py").write_text(STALE)
    command = [sys.executable, "-m", "zerograd_lint", "."]
    runs = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outputs = [run.communicate()[0] for run in runs]
    assert {run.returncode for run in runs} == {1} and len(set(outputs)) == 1
    entries = list((tmp_path / FOLDER).glob("*.json"))
    assert entries and all(json.loads(e.read_text())["findings"] for e in entries)
    assert not list((tmp_path / FOLDER).glob(".entry-*"))  # no temporary file left behind
