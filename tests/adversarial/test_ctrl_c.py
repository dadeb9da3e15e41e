"""Issue 22, item 13: Ctrl-C stops a run with exit code 130 (128 + SIGINT, what shells report),
whatever --exit-zero says, and nothing on stderr (not click's "Aborted!" and exit 1, which means
findings); so does the language server, which pygls would otherwise stop with 0."""

from __future__ import annotations

import fcntl
import importlib.util
import os
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import IO

import pytest
from click.testing import CliRunner

import zerograd_lint.cli
from zerograd_lint.cli import main

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="signals to a process group, FIONREAD on a pipe")

COMMAND = [sys.executable, "-m", "zerograd_lint"]


# What each command is given first: text it reads and keeps waiting after (a source with no end
# yet; a header line of a message whose blank line has not come).
FIRST = {"check": b"import torch\n", "server": b"Content-Length: 2\r\n"}


def _unread(pipe: IO[bytes]) -> int:
    """How many bytes written to `pipe` its reader has not read yet."""
    return struct.unpack("i", fcntl.ioctl(pipe.fileno(), termios.FIONREAD, b"\0" * 4))[0]


def _interrupted(arguments: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Start the command with a stdin that never ends, wait until it has read what it was given
    (so it runs its own code, past Python's start-up), then Ctrl-C it as a terminal does: SIGINT to
    its whole process group."""
    process = subprocess.Popen([*COMMAND, *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        process.stdin.write(FIRST["server" if arguments[0] == "server" else "check"])
        process.stdin.flush()
        deadline = time.monotonic() + 60  # only a guard against a hang
        while _unread(process.stdin):
            assert process.poll() is None, process.communicate(timeout=60)
            assert time.monotonic() < deadline, "the command never read its stdin"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.mark.parametrize("arguments", [["-", "--no-cache"], ["-", "--no-cache", "--exit-zero"]],
                         ids=["check", "exit-zero"])
def test_ctrl_c_exits_130_silently(arguments: list[str]) -> None:
    done = _interrupted(arguments)
    assert (done.returncode, done.stderr) == (130, b"")


@pytest.mark.skipif(importlib.util.find_spec("pygls") is None, reason="the language server is an extra")
def test_ctrl_c_stops_the_language_server_with_130() -> None:
    done = _interrupted(["server"])
    assert (done.returncode, done.stderr) == (130, b"")


def test_an_interrupted_check_exits_130(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Wherever the interrupt lands in the run (here: while the files are checked)."""
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(zerograd_lint.cli, "check_files", interrupted)
    (tmp_path / "train.py").write_text("x = 1\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["--no-cache", "--isolated", "--exit-zero", str(tmp_path)])
    assert result.exit_code == 130
    assert result.stderr == ""
