"""Issue 22, item 10: out of memory (`ulimit -v`) is exit 2 and one line, never a hang, never exit 1.

It was exit 1 with chained MemoryError tracebacks, minutes spent in a file-by-file fallback, 190
lines of "internal error: ImportError ... failed to map segment", or LibCST's parser aborting the
process (rc 134). A run big enough for helpers never parses with LibCST itself: a helper the
parser aborts is reported (its own library may say why first, in a line or three); the run's work
is never done again in the process that would abort too. A helper's threads share one malloc
arena (a thread's own reserves 64 MB of address space, which made a run near the limit crawl for
minutes). What no process can catch is LibCST's parser aborting the very process that reports:
a run too small for helpers, at a limit below what it parses in (about 40 MB here).
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from snippets import PADDED_SCRIPT

from zerograd_lint.schedule import processes

FIXTURES = Path(__file__).parents[1] / "fixtures"
GUARD = 120  # seconds: only against a hang


def _project(folder: Path) -> Path:
    """The issue's, smaller: the `zg001_step_in_engine` project and 16 correct training scripts of 32 KB."""
    shutil.copytree(FIXTURES / "projects" / "zg001_step_in_engine", folder)
    padding = "".join(f"\n\ndef transform_{k}(batch, scale={k}):\n    return [item * scale for item in batch]\n"
                      for k in range(32_000 // 70))
    for i in range(16):
        (folder / f"script_{i:02d}.py").write_text(PADDED_SCRIPT.format(padding=padding))
    return folder


def _limited(megabytes: int):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))
    return limit


@pytest.mark.skipif(not sys.platform.startswith("linux") or not processes.can_fork(),
                    reason="a limit on address space, and helpers, as on Linux")
def test_out_of_memory_is_exit_2_and_one_line(tmp_path: Path) -> None:
    """Where a limit leaves enough memory the run is as without it; 30 MB and 45 MB do not, here
    (Python alone, and LibCST's parser in a helper)."""
    project = _project(tmp_path / "project")
    command = [sys.executable, "-m", "zerograd_lint", "--no-cache", "--isolated", "."]
    enough = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=GUARD)
    assert enough.returncode == 1 and "train.py:8:1: ZG001" in enough.stdout, enough.stderr
    out_of_memory = 0
    for megabytes in (30, 45):
        done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=GUARD,
                              preexec_fn=_limited(megabytes))
        if (done.returncode, done.stdout, done.stderr) == (enough.returncode, enough.stdout, enough.stderr):
            continue
        assert done.returncode == 2, (megabytes, done.returncode, done.stderr[-2000:])
        assert done.stdout == "", megabytes  # never other findings
        assert len(done.stderr.splitlines()) == 1 and "out of memory" in done.stderr, (megabytes, done.stderr[-2000:])
        out_of_memory += 1
    assert out_of_memory, "no limit ran out of memory: lower them"
