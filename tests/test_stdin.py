"""`zerograd-lint - --stdin-filename PATH`: what editors run on save."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE_BRIEF as STALE

from zerograd_lint.cli import main

ROOT = Path(__file__).parent.parent
CLEAN = STALE.replace("    model(x)", "    optimizer.zero_grad()\n    model(x)")
FINDING = ("optimizer.step() (line 6) applies gradients an earlier step already applied: "
           "nothing clears them in this loop")


def run(*args: str, stdin: str | bytes):
    return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose configuration ignores ZG001 under strict/ and excludes vendored/."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.zerograd-lint]\nextend-exclude = ["vendored/"]\n\n[tool.zerograd-lint.per-file-ignores]\n'
        '"strict/*" = ["ZG001"]\n'
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(CLEAN)  # what is on disk, not what the editor holds
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def test_stdin_is_reported_under_the_given_name_and_nothing_is_written(project: Path) -> None:
    before = snapshot(project)
    result = run("-", "--stdin-filename", "src/train.py", stdin=STALE)
    assert result.exit_code == 1
    assert result.stdout == f"src/train.py:4:1: ZG001 {FINDING}\n"
    assert result.stderr == "Found 1 finding in 1 file (1 file checked).\n[*] 1 fixable with the `--fix` option.\n"
    assert snapshot(project) == before


def test_without_a_name_stdin_is_reported_as_dash(project: Path) -> None:
    result = run("-", stdin=STALE)
    assert result.stdout == f"-:4:1: ZG001 {FINDING}\n"


def test_the_configuration_is_found_from_the_name(project: Path) -> None:
    nested = project / "strict"
    nested.mkdir()
    assert run("-", "--stdin-filename", "strict/train.py", stdin=STALE).exit_code == 0  # per-file-ignores
    (nested / "pyproject.toml").write_text('[tool.zerograd-lint]\nselect = ["ZG002"]\n')
    result = run("-", "--stdin-filename", str(nested / "other.py"), "-v", stdin=STALE)
    assert result.exit_code == 0
    assert f"configuration: {nested / 'pyproject.toml'}" in result.stderr


def test_force_exclude_skips_an_excluded_name(project: Path) -> None:
    result = run("--force-exclude", "-", "--stdin-filename", "vendored/train.py", stdin=STALE)
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "All checks passed (0 files checked).\n"
    without = run("-", "--stdin-filename", "vendored/train.py", stdin=STALE)
    assert without.exit_code == 1  # named explicitly and not forced: checked, as for a path


def test_stdin_replaces_the_file_it_stands_for(project: Path) -> None:
    result = run("-", "src", "--stdin-filename", "src/train.py", stdin=STALE)
    assert result.stdout == f"src/train.py:4:1: ZG001 {FINDING}\n"
    assert result.stderr == "Found 1 finding in 1 file (1 file checked).\n[*] 1 fixable with the `--fix` option.\n"


def test_stdin_in_the_formats_editors_read(project: Path) -> None:
    result = run("-q", "--output-format", "json", "-", "--stdin-filename", "src/train.py", stdin=STALE)
    [finding] = json.loads(result.stdout)
    assert (finding["path"], finding["line"], finding["column"], finding["code"]) == ("src/train.py", 4, 1, "ZG001")
    assert result.stderr == ""


def test_stdin_bytes_are_decoded_as_a_file_would_be(project: Path) -> None:
    latin = b"# -*- coding: latin-1 -*-\ns = '\xe9'\n" + STALE.encode()
    result = run("-", "--stdin-filename", "src/latin.py", stdin=latin)
    assert result.stdout.startswith("src/latin.py:6:1: ZG001 ")


def test_a_notebook_on_stdin(project: Path) -> None:
    notebook = (Path(__file__).parent / "fixtures" / "notebooks" / "stale_gradients.ipynb").read_text(encoding="utf-8")
    result = run("-", "--stdin-filename", "analysis.ipynb", stdin=notebook)
    assert result.stdout.startswith("analysis.ipynb:cell 3:1:1: ZG001 ")


def test_a_syntax_error_on_stdin(project: Path) -> None:
    result = run("-", "--stdin-filename", "src/train.py", stdin="loss.backward()\nopt.step()\ndef f(:\n")
    assert result.exit_code == 2
    assert result.stderr.startswith("zerograd-lint: error: src/train.py: syntax error at 3:")


def test_a_stdin_filename_alone_reads_stdin(project: Path) -> None:
    """`cat f | zerograd-lint --stdin-filename f`: no PATHS, so stdin is read, as in ruff."""
    before = snapshot(project)
    result = run("--stdin-filename", "src/train.py", stdin=STALE)
    assert (result.exit_code, result.stdout) == (1, f"src/train.py:4:1: ZG001 {FINDING}\n")
    assert result.stderr == "Found 1 finding in 1 file (1 file checked).\n[*] 1 fixable with the `--fix` option.\n"
    assert snapshot(project) == before
    (project / "other").mkdir()
    (project / "other" / "pyproject.toml").write_text('[tool.zerograd-lint]\nselect = ["ZG002"]\n')
    assert run("--stdin-filename", "other/train.py", stdin=STALE).exit_code == 0  # its configuration, not the cwd's


def test_a_stdin_filename_needs_a_dash(project: Path) -> None:
    result = run("--stdin-filename", "src/train.py", "src", stdin=STALE)
    assert result.exit_code == 2
    assert "--stdin-filename names what - reads: put - among PATHS" in result.stderr


@pytest.mark.parametrize("command", [["-m", "zerograd_lint"], ["-m", "zerograd_lint", "check"]])
def test_stdin_in_a_real_process(project: Path, command: list[str]) -> None:
    before = snapshot(project)
    done = subprocess.run(
        [sys.executable, *command, "-", "--stdin-filename", "src/train.py"], input=STALE.encode(),
        capture_output=True, cwd=project, env={"PYTHONPATH": str(ROOT), "PATH": ""}, timeout=120, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.decode() == f"src/train.py:4:1: ZG001 {FINDING}\n"
    assert snapshot(project) == before
