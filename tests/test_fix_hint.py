"""Issue 19, item 15: ruff's "[*] N fixable with the `--fix` option." after a check's summary, and
its `[*]` marks in `--statistics`. The count is of the fixes `--fix` plans that hold in their file
(`fix.pipeline.planned`): so the hint of every fixture tree says what `--diff` of it says it would
fix."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import DISCARDED, STALE

import zerograd_lint.runner
from zerograd_lint.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
UNSAFE = FIXTURES / "fixes" / "helper_called_from_two_loops.py"  # its two fixes are unsafe
SHARED_LINE = STALE.replace("    loss.backward()\n    optimizer.step()\n", "    loss.backward(); optimizer.step()\n")
HINT = re.compile(r"^\[\*\] (\d+) fixable with the `--fix` option(?: \((\d+) hidden fix(?:es)? can be enabled "
                  r"with the `--unsafe-fixes` option\))?\.$|^No fixes available \((\d+) hidden fix(?:es)? can be enabled "
                  r"with the `--unsafe-fixes` option\)\.$")
WOULD_FIX = re.compile(r"^Would fix (\d+) findings?.*?(?:; (\d+) hidden fix(?:es)? can be enabled.*)?$")


def run(*args: str):
    return CliRunner().invoke(main, ["--isolated", "--no-cache", *args], catch_exceptions=False)


def hinted(stderr: str) -> tuple[int, int] | None:
    """The hint's (fixable, hidden), or None when the run printed none."""
    for line in stderr.splitlines():
        if match := HINT.match(line):
            fixable, hidden, only_hidden = match.groups()
            return (int(fixable), int(hidden or 0)) if fixable else (0, int(only_hidden))
    return None


def would_fix(stderr: str) -> tuple[int, int]:
    """What `--diff` says it would fix, and the fixes it holds back."""
    last = stderr.splitlines()[-1]
    if last.startswith(("All checks passed", "No findings")):
        return 0, 0
    match = WOULD_FIX.match(last)
    assert match, stderr
    return int(match[1]), int(match[2] or 0)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(STALE)
    (tmp_path / "discarded.py").write_text(DISCARDED)
    (tmp_path / "shared.py").write_text(SHARED_LINE)  # a step sharing its line: not fixable
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def test_the_hint_follows_the_summary(tree: Path) -> None:
    result = run(".")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-2:] == [
        "Found 3 findings in 3 files (3 files checked).", "[*] 2 fixable with the `--fix` option."]
    assert run("--output-format", "full", ".").stderr.endswith("\n[*] 2 fixable with the `--fix` option.\n")


def test_nothing_fixable_says_nothing(tree: Path) -> None:
    result = run("shared.py")
    assert result.stderr == "Found 1 finding in 1 file (1 file checked).\n"


def test_hidden_fixes_are_counted_as_ruff_counts_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(UNSAFE, tmp_path / "train.py")
    monkeypatch.chdir(tmp_path)
    assert run("train.py").stderr.splitlines()[-1] == (
        "No fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option).")
    assert run("--unsafe-fixes", "train.py").stderr.splitlines()[-1] == "[*] 2 fixable with the `--fix` option."
    assert run("--fix", "--unsafe-fixes", "train.py").stderr.splitlines()[-1] == "Fixed 2 findings in 1 file, 0 remaining (1 file checked)."


@pytest.mark.parametrize("args", [("--quiet", "."), ("--output-format", "json", "."), ("--output-format", "github", "."),
                                  ("--output-format", "sarif", "."), ("--show-loops", ".")])
def test_no_hint_where_no_summary_is_read(tree: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]) -> None:
    """The hint costs the planning of the fixes: machine formats, `--quiet` and `--show-loops`
    never pay it."""
    def no_planning(*args, **kwargs):
        raise AssertionError("fixes planned, for a hint nobody reads")

    monkeypatch.setattr(zerograd_lint.runner, "_fixable", no_planning)
    result = run(*args)
    assert result.exit_code == 1 and hinted(result.stderr) is None


def test_no_hint_and_no_fixing_without_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "clean.py").write_text(STALE + "    optimizer.zero_grad()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(zerograd_lint.runner, "_fixable", None)  # called, it would raise
    assert run(".").stderr == "All checks passed (1 file checked).\n"


def test_statistics_mark_the_fixable_codes(tree: Path) -> None:
    assert run("--statistics", ".").stdout == (
        "2\tZG001\t[*] stale-gradients\n1\tZG003\t[*] accumulation-discarded\n")
    (tree / "train.py").unlink()  # the ZG001 left shares its line with the backward
    assert run("--statistics", ".").stdout == (
        "1\tZG001\t[ ] stale-gradients\n1\tZG003\t[*] accumulation-discarded\n")
    rows = json.loads(run("--statistics", "--output-format", "json", ".").stdout)
    assert [(row["code"], row["fixable"]) for row in rows] == [("ZG001", False), ("ZG003", True)]
    (tree / "discarded.py").unlink()
    assert run("--statistics", ".").stdout == "1\tZG001\tstale-gradients\n"  # nothing fixable: no marks


def test_statistics_after_a_fix_mark_nothing(tree: Path) -> None:
    assert run("--fix", "--statistics", ".").stdout == "1\tZG001\tstale-gradients\n"


def _trees() -> list[Path]:
    folders = [FIXTURES / name for name in ("ZG001", "ZG002", "ZG003", "fixes", "suppression", "notebooks")]
    return folders + sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())


@pytest.mark.parametrize("folder", _trees(), ids=lambda p: p.relative_to(FIXTURES).as_posix())
@pytest.mark.parametrize("unsafe", [(), ("--unsafe-fixes",)], ids=["safe", "unsafe"])
def test_the_hint_is_what_diff_would_fix(folder: Path, unsafe: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    checked = run(*unsafe, ".")
    diffed = run(*unsafe, "--diff", ".")
    assert (hinted(checked.stderr) or (0, 0)) == would_fix(diffed.stderr)


def test_the_fixture_trees_have_fixes_to_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES / "fixes")
    fixable, hidden = hinted(run(".").stderr) or (0, 0)
    assert fixable >= 10 and hidden >= 1


@pytest.mark.parametrize("project", sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir()),
                         ids=lambda p: p.name)
def test_the_hint_of_each_file_named_alone_is_what_diff_of_it_would_fix(project: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Named alone (pre-commit), a file is fixed with its project read beside it, never written there."""
    monkeypatch.chdir(project)
    for path in sorted(p.relative_to(project).as_posix() for p in project.rglob("*.py")):
        assert (hinted(run(path).stderr) or (0, 0)) == would_fix(run("--diff", path).stderr), path
