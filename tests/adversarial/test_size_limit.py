"""A file too large to check is one error line, not minutes and gigabytes (issue 22, item 14).

A 17.8 MB module took two minutes and 1.2 GB, a 20 MB document in the language server as long,
and `/dev/zero` on stdin never ended. Python over 10 MB is refused before it is read, with one
line, `path: too large to check (N MB; the limit is 10 MB)`, the same on the command line, for
stdin and in the language server; a notebook's file may be larger (its outputs count), its code
cells may not. The large files here are sparse: they cost no time to write.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE

from zerograd_lint.cli import main

LIMIT = 10_000_000  # what the README and the error lines say: 10 MB
TOO_LARGE = "too large to check (10.1 MB; the limit is 10 MB)"
CONSOLE = "from zerograd_lint.console import run; run()"


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _lint(folder: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "ZEROGRAD_LINT_OUTPUT_FORMAT": "concise"}
    return subprocess.run([sys.executable, "-c", CONSOLE, "--no-cache", "--isolated", *args], cwd=folder, env=env,
                          capture_output=True, timeout=120, preexec_fn=_limit_memory, check=False, **kwargs)


def _sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def _notebook(code: str, output: str = "") -> str:
    cell = {"cell_type": "code", "metadata": {}, "source": code.splitlines(keepends=True), "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": [output]}] if output else []}
    return json.dumps({"cells": [cell], "metadata": {"language_info": {"name": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


def test_the_limit_is_the_one_documented() -> None:
    from zerograd_lint.files import reading

    assert reading.LIMIT == LIMIT
    assert "10 MB" in (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


@pytest.mark.skipif(sys.platform == "win32", reason="resource limits are POSIX")
@pytest.mark.parametrize("named", [["huge.py", "src/train.py"], ["."]], ids=["named", "in a folder"])
def test_a_file_over_the_limit_is_one_error_line(tmp_path: Path, named: list[str]) -> None:
    _sparse(tmp_path / "huge.py", LIMIT + 1)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(STALE)
    done = _lint(tmp_path, *named, text=True)
    assert f"zerograd-lint: error: huge.py: {TOO_LARGE}" in done.stderr.splitlines()
    assert "src/train.py:4:1: ZG001" in done.stdout
    assert done.returncode == 2, done.stderr


def test_a_file_at_the_limit_is_read(tmp_path: Path) -> None:
    from zerograd_lint.files.reading import read_source

    assert len(read_source(str(_sparse(tmp_path / "full.py", LIMIT)))) == LIMIT


@pytest.mark.skipif(not os.path.exists("/dev/zero") or sys.platform == "win32", reason="needs /dev/zero")
def test_an_endless_stdin_is_one_error_line(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as endless:
        done = _lint(tmp_path, "-", "--stdin-filename", "train.py", stdin=endless)
    assert done.stderr.decode().splitlines()[0] == (
        "zerograd-lint: error: train.py: too large to check (more than 10 MB; the limit is 10 MB)")
    assert done.returncode == 2


def test_stdin_over_the_limit_is_given_back_whole_by_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor replaces its buffer with what --fix prints: all of it, not what was read of it."""
    monkeypatch.chdir(tmp_path)
    text = STALE.encode() + b"#" * LIMIT + b"\n"
    result = CliRunner().invoke(main, ["--isolated", "--fix", "-", "--stdin-filename", "train.py"], input=text,
                                catch_exceptions=False)
    assert result.stdout_bytes == text
    assert "zerograd-lint: error: train.py: too large to check (more than 10 MB; the limit is 10 MB)" \
        in result.stderr
    assert result.exit_code == 2


def test_the_language_server_holds_a_document_to_the_same_limit(tmp_path: Path) -> None:
    """Measured as the file would be, in UTF-8: 5 million 'é' are 10 MB."""
    from zerograd_lint.lsp.document import check_document

    path = str(tmp_path / "train.py")
    outcome = check_document(path, "# " + "é" * (LIMIT // 2))
    assert outcome.problem == f"{path}: too large to check (10.1 MB; the limit is 10 MB)"
    assert [f.code for f in check_document(path, STALE).findings] == ["ZG001"]


def test_a_notebook_with_large_outputs_is_checked(tmp_path: Path) -> None:
    (tmp_path / "train.ipynb").write_text(_notebook(STALE, output="0123456789\n" * (LIMIT // 10)))
    done = _lint(tmp_path, "train.ipynb", text=True)
    assert "train.ipynb:cell 1:4:1: ZG001" in done.stdout, done.stderr
    assert done.returncode == 1, done.stderr


def test_a_notebook_whose_code_is_over_the_limit_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "train.ipynb").write_text(_notebook(STALE + "#" * LIMIT + "\n"))
    done = _lint(tmp_path, "train.ipynb", text=True)
    assert done.stderr.splitlines()[0] == (
        "zerograd-lint: error: train.ipynb: too large to check (its code cells hold 10.1 MB; the limit is 10 MB)")
    assert done.returncode == 2


def test_a_notebook_file_over_its_limit_is_one_error_line(tmp_path: Path) -> None:
    _sparse(tmp_path / "train.ipynb", 100_000_001)
    done = _lint(tmp_path, "train.ipynb", text=True)
    assert done.stderr.splitlines()[0] == (
        "zerograd-lint: error: train.ipynb: too large to check (100.1 MB; the limit is 100 MB)")
    assert done.returncode == 2


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd_create here")
def test_the_arena_refuses_a_file_over_the_limit_and_keeps_what_it_holds(tmp_path: Path) -> None:
    from zerograd_lint.files.reading import NotRead
    from zerograd_lint.schedule.arena import Arena

    arena = Arena()
    first = arena.write(b"x = 1\n")
    with pytest.raises(NotRead, match=r"^too large to check \(10\.1 MB; the limit is 10 MB\)$"):
        arena.read(str(_sparse(tmp_path / "huge.py", LIMIT + 1)))
    (tmp_path / "small.py").write_bytes(b"y = 2\n")
    second = arena.read(str(tmp_path / "small.py"))
    assert bytes(arena.view(*first)) == b"x = 1\n" and bytes(arena.view(*second)) == b"y = 2\n"
