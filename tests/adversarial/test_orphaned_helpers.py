"""Issue 22, item 8: helpers die with the process they help. `kill PID` (SIGTERM, as
`subprocess.run(timeout=...)` sends) of a run left both helpers at work for seconds; they must be
gone at once, however the run ends (SIGKILL too), and the run ends at once.

A run in a subprocess shares its analysis out to its two helpers (the first forked from it, the
second spawned by the first), whose analysis never ends; once both are at it, the run is killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from zerograd_lint.schedule import processes

FIXTURES = Path(__file__).parents[1] / "fixtures"
GUARD = 60  # seconds: only against a hang

DRIVER = textwrap.dedent("""\
    import os, sys
    from zerograd_lint.schedule import run

    PIDS, PROJECT = sys.argv[1:]

    for threshold in ("APART_FROM", "SURVEYS_APART_FROM", "ANALYSIS_APART_FROM"):
        setattr(run, threshold, 0)  # helpers for a small project

    def _analyse_in_helper(*args, **kwargs):  # in a helper: busy until killed
        with open(PIDS, "a") as pids:
            pids.write(f"{os.getpid()}\\n")
        while True:
            pass

    run._analyse_in_helper = _analyse_in_helper
    _analyse_in_helper.__module__ = run.__name__  # sent to the helpers by that name
    sys.argv = ["zerograd-lint", "--no-cache", "--isolated", PROJECT]
    from zerograd_lint.console import run as console_script

    console_script()
    """)


def _gone(pid: int) -> bool:
    """Ended: no such process, or a zombie its new parent has not reaped."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.skipif(not sys.platform.startswith("linux") or not processes.can_fork(),
                    reason="helpers, and /proc, are Linux's")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_helpers_die_with_the_run(tmp_path: Path, how: signal.Signals) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "projects" / "zg001_step_in_engine", project)
    shutil.copy(FIXTURES / "ZG001" / "no_clear.py", project)  # a second module to analyse: a share for each helper
    (tmp_path / "driver.py").write_text(DRIVER)
    pids = tmp_path / "pids"
    pids.touch()
    run = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(pids), str(project)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        _wait(lambda: len(pids.read_text().split()) >= 2 or run.poll() is not None, "the helpers never began")
        assert run.poll() is None, run.stderr.read().decode()
        helpers = [int(pid) for pid in pids.read_text().split()]
        assert len(set(helpers)) == 2 and run.pid not in helpers
        run.send_signal(how)
        assert run.wait(timeout=GUARD) == -how  # at once, as the signal's default says
        _wait(lambda: all(map(_gone, helpers)), f"helpers {helpers} outlived the run")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in [int(pid) for pid in pids.read_text().split()]:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)  # ours: what the test started
