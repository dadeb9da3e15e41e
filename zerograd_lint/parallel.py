"""Work shared out between this process and forked children, when there is enough of it.

A forked child inherits everything this process has built (texts, first looks, the plan) without
copying or pickling any of it; only its result comes back, pickled, through a pipe. This process
does the first share itself while the children do theirs. A child that fails in any way (an
internal error, killed, a result that does not unpickle) costs nothing but time: its share is
done again here, where an error is raised as it would have been without children.

Forking is used only where it is safe and cheap: Linux, and a process without other threads
(a program embedding the linter, such as an editor's server, runs it serially).
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS = 2  # this process and one child: the cores of the machines this project is measured on


def can_fork() -> bool:
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


def shares(sizes: dict[str, int], least: float) -> list[list[str]]:
    """The keys of `sizes` split into shares of about equal total size (largest first, each to the
    lightest share; ties by key, so the split is deterministic). One share when the total is
    below `least`, or when this process cannot fork."""
    workers = min(WORKERS, os.cpu_count() or 1, len(sizes))
    if workers < 2 or sum(sizes.values()) < least or not can_fork():
        return [sorted(sizes)] if sizes else []
    out: list[list[str]] = [[] for _ in range(workers)]
    totals = [0] * workers
    for key in sorted(sizes, key=lambda k: (-sizes[k], k)):
        lightest = totals.index(min(totals))
        out[lightest].append(key)
        totals[lightest] += sizes[key]
    return [sorted(share) for share in out if share]


class Later(Generic[R]):
    """`work(item)`, under way in a forked child when this process can fork, else done here when
    its result is first asked for."""

    def __init__(self, work: Callable[[T], R], item: T, fork: bool = True) -> None:
        self.work, self.item = work, item
        self._child = _start(work, item) if fork and can_fork() else None

    def result(self) -> R:
        if self._child is None:
            return self.work(self.item)
        pid, fd = self._child
        self._child = None
        return _finish(pid, fd, self.work, self.item)

    def cancel(self) -> None:
        """Not wanted after all: the child, if any, is stopped and reaped."""
        if self._child is not None:
            pid, fd = self._child
            self._child = None
            os.close(fd)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def fork_map(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`[work(item) for item in items]`: the first item here, each other in a forked child."""
    if len(items) < 2 or not can_fork():
        return [work(item) for item in items]
    later: list[Later[R]] = []
    try:
        later.extend(Later(work, item) for item in items[1:])
        return [work(items[0])] + [each.result() for each in later]
    finally:
        for each in later:  # only when this process's own share raised
            each.cancel()


def _start(work: Callable[[T], R], item: T) -> tuple[int, int]:
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's cleanup or flushes its buffers
        try:
            gc.disable()  # it exits soon: its cycles are freed with it
            os.close(reader)
            try:
                data = pickle.dumps((True, work(item)), pickle.HIGHEST_PROTOCOL)
            except BaseException:  # noqa: BLE001 - any failure: the parent does this share again
                data = pickle.dumps((False, None))
            with os.fdopen(writer, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(writer)
    return pid, reader


def _finish(pid: int, fd: int, work: Callable[[T], R], item: T) -> R:
    with os.fdopen(fd, "rb") as source:
        data = source.read()
    os.waitpid(pid, 0)
    try:
        done, result = pickle.loads(data)
    except Exception:  # a child killed mid-write: nothing, or half a result
        done = False
    return result if done else work(item)
