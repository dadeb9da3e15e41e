"""Only regular files are read (issue 22, item 9).

A named pipe named on the command line hung the run (nothing ever writes to it) and the other
files were never reported; `/dev/zero` named raised MemoryError. Such a file is now one error line,
`path: not a regular file (...)`, exit 2, and the other files are checked; one met in a folder is
left out, as a symbolic link is. The runs go through the console script in a process of its own,
under a memory limit and a timeout that only guard against the old hang and blow-up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from snippets import STALE

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                                reason="named pipes and /dev/zero are POSIX")
CONSOLE = "from zerograd_lint.console import run; run()"
NOT_A_PIPE = "not a regular file (a named pipe): only regular files are checked"
NOT_A_DEVICE = "not a regular file (a character device): only regular files are checked"


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _lint(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ZEROGRAD_LINT_OUTPUT_FORMAT": "concise"}
    return subprocess.run([sys.executable, "-c", CONSOLE, "--no-cache", "--isolated", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=_limit_memory, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(STALE)
    os.mkfifo(tmp_path / "pipe.py")
    return tmp_path


@pytest.mark.parametrize("others", [["src/train.py"], ["src"]], ids=["a file", "a folder"])
def test_a_named_pipe_named_is_one_error_line(project: Path, others: list[str]) -> None:
    done = _lint(project, "pipe.py", *others)
    assert f"zerograd-lint: error: pipe.py: {NOT_A_PIPE}" in done.stderr.splitlines()
    assert "src/train.py:4:1: ZG001" in done.stdout
    assert done.returncode == 2, done.stderr


@pytest.mark.parametrize("others", [["src/train.py"], ["src"]], ids=["a file", "a folder"])
def test_dev_zero_named_is_one_error_line(project: Path, others: list[str]) -> None:
    (project / "zero.py").symlink_to("/dev/zero")
    done = _lint(project, "/dev/zero", "zero.py", *others)  # the same file twice: reported once
    assert f"zerograd-lint: error: /dev/zero: {NOT_A_DEVICE}" in done.stderr.splitlines()
    assert "src/train.py:4:1: ZG001" in done.stdout
    assert done.returncode == 2, done.stderr


def test_special_files_met_in_a_folder_are_left_out(project: Path) -> None:
    (project / "src" / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(project / "src" / "pipe.py")
    os.mkfifo(project / "src" / "notes.ipynb")
    done = _lint(project, "src")
    assert [line.split(" ")[0] for line in done.stdout.splitlines()] == ["src/train.py:4:1:"]
    assert "error" not in done.stderr
    assert done.returncode == 1, done.stderr


def test_a_named_pipe_is_neither_opened_nor_read(tmp_path: Path) -> None:
    """Opening one would wait for a writer: it is refused from what `stat` says."""
    from zerograd_lint.files.reading import NotRead, open_source, read_source

    pipe = tmp_path / "pipe.py"
    os.mkfifo(pipe)
    for read in (open_source, read_source):
        with pytest.raises(NotRead, match=r"^not a regular file \(a named pipe\)"):
            read(str(pipe))


def test_a_file_replaced_by_a_named_pipe_after_stat_is_not_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It is opened without blocking, and what was opened is looked at again."""
    from zerograd_lint.files.reading import NotRead, read_source

    path = tmp_path / "train.py"
    path.write_text(STALE)
    real_stat, swapped = os.stat, []

    def stat_then_swap(target, *args, **kwargs):
        info = real_stat(target, *args, **kwargs)
        if os.fspath(target) == str(path) and not swapped:
            swapped.append(path)
            path.unlink()
            os.mkfifo(path)
        return info

    monkeypatch.setattr(os, "stat", stat_then_swap)
    with pytest.raises(NotRead, match=r"^not a regular file \(a named pipe\)"):
        read_source(str(path))
