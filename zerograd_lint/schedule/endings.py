"""How a helper ends: stopped and reaped, failing (never into another result), or dying, never
outliving the process it helps.

A helper closed is killed at once (`stop`) and reaped later (`reap`): the kernel takes milliseconds
to free a large process, and nothing waits on that.

A job a helper fails by raising sends its exception back (`sent`), and it is raised here when its
result is asked for, as it would have been without helpers (a `HelperFailed` naming it where the
exception itself cannot cross). A helper that dies without a word (killed; a native library that
aborts the process when memory runs out, as LibCST's parser does) takes its jobs with it: each
raises `HelperDied`. Nothing given to a helper is done again here: a job that aborted a helper
would abort this process too, and a failure only a helper meets is a bug to report, not to hide.

A helper dies with the process that forked it (`set_up_helper`): Linux's parent-death signal,
and, wherever that is missing or comes too late, the end of its jobs pipe (`processes`).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from typing import NoReturn

from zerograd_lint.findings import describe

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_M_ARENA_MAX = -8  # malloc.h
_OOM = ("SIGABRT", "SIGKILL")  # what a native library that runs out of memory does; what the kernel's OOM killer does
_NO_MEMORY = 86  # the exit status of a helper that ran out of memory outside a job
_THREAD_STACK = 1 << 18  # a helper's threads only move bytes between a pipe and a queue
_STOPPED: list[int] = []  # helpers stopped, not reaped yet


class HelperFailed(Exception):
    """A helper's job failed, and what it raised cannot be sent here as it is: its description."""


class HelperDied(Exception):
    """A helper died with jobs undone: how (a signal, an exit status), when that is known."""


def sent(done: bool, value: object) -> bytes:
    """A job's outcome, pickled for this process's parent: its result, or what it raised."""
    try:
        return pickle.dumps((done, value), pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:  # noqa: BLE001 - whatever it is, it is named, not lost
        if isinstance(exc, MemoryError):
            return pickle.dumps((False, MemoryError()))
        what = "its result" if done else describe(value)
        return pickle.dumps((False, HelperFailed(f"{what} could not be sent from a helper ({describe(exc)})")))


def set_up_helper(parent: int) -> None:
    """In a process just forked from `parent`, before it starts its threads: it is killed when
    `parent` ends, however it ends (SIGTERM, SIGKILL, a crash), and leaves Ctrl-C to `parent`,
    which stops its helpers. Its standard error goes nowhere: a job's failure is sent, and how a
    helper ended is reported, in one line. Its threads allocate from one malloc arena, with small
    stacks: an arena of their own reserves 64 MB of address space each, and under a limit on it
    (`ulimit -v`) the main thread's allocations, failing in the arena it has, succeeded in theirs
    after a dozen failed system calls each (an analysis of seconds took minutes), where they
    should fail at once (out of memory)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.stack_size(_THREAD_STACK)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    os.close(quiet)
    try:
        import ctypes  # here only: a few milliseconds the parent does not pay

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.mallopt(_M_ARENA_MAX, 1)
    except (OSError, AttributeError):  # not Linux, or not glibc: the end of the jobs pipe is the only watch
        pass
    if os.getppid() != parent:  # the parent ended before the signal was asked for
        os._exit(0)


def ended() -> NoReturn:
    """A helper's end, from a `finally` around what it does (its threads too): it serves until it
    is killed or its jobs pipe ends, so an exception here failed it outside any job (a thread that
    could not start, no memory to read a job): its exit status says so."""
    failure = sys.exc_info()[1]
    os._exit(0 if failure is None else _NO_MEMORY if isinstance(failure, MemoryError) else 1)


def died_how(pid: int | None) -> HelperDied:
    """What is known of how a helper forked from this process ended (stopped here at once if it
    has not ended yet: it sent nothing more and its pipes are closed); None: spawned by a helper."""
    if pid is None:
        return HelperDied("a helper process died")
    try:
        os.kill(pid, signal.SIGKILL)
        status = os.waitpid(pid, 0)[1]
    except (ProcessLookupError, ChildProcessError):  # reaped elsewhere (SIGCHLD ignored, a wait(-1))
        return HelperDied("a helper process died")
    if os.WIFSIGNALED(status):
        try:
            name = signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            name = f"signal {os.WTERMSIG(status)}"
        return HelperDied(f"a helper process was killed by {name}" + (" (out of memory?)" if name in _OOM else ""))
    if os.WEXITSTATUS(status) == _NO_MEMORY:
        return HelperDied("a helper process ran out of memory")
    return HelperDied(f"a helper process failed (exit status {os.WEXITSTATUS(status)})")


def stop(pid: int, reaped_here: bool = True) -> None:
    """Kill a helper; one forked from this process (`reaped_here`) is reaped later (`reap`)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # reaped elsewhere already (SIGCHLD ignored, a wait(-1))
        return
    if reaped_here:
        _STOPPED.append(pid)


def reap(wait: bool = True) -> None:
    """Wait for the helpers this process stopped. A new team reaps those already gone, without
    waiting for the others (a large helper takes the kernel milliseconds to free)."""
    for pid in list(_STOPPED):
        try:
            if os.waitpid(pid, 0 if wait else os.WNOHANG)[0] == 0:
                continue  # not gone yet: reaped later
        except ChildProcessError:  # reaped already
            pass
        _STOPPED.remove(pid)
