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

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS = 2  # this process and one child: the cores of the machines this project is measured on


def can_fork() -> bool:
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


def shares(sizes: dict[str, int], least: int, workers: int | None = None) -> list[list[str]]:
    """The keys of `sizes` split into shares of about equal total size (largest first, each to the
    lightest share; ties by key, so the split is deterministic). One share when the total is
    below `least`, or when this process cannot fork."""
    workers = min(workers or WORKERS, os.cpu_count() or 1, len(sizes))
    if workers < 2 or sum(sizes.values()) < least or not can_fork():
        return [sorted(sizes)] if sizes else []
    out: list[list[str]] = [[] for _ in range(workers)]
    totals = [0] * workers
    for key in sorted(sizes, key=lambda k: (-sizes[k], k)):
        lightest = totals.index(min(totals))
        out[lightest].append(key)
        totals[lightest] += sizes[key]
    return [sorted(share) for share in out if share]


def fork_map(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`[work(item) for item in items]`: the first item here, each other in a forked child."""
    if len(items) < 2 or not can_fork():
        return [work(item) for item in items]
    children: list[tuple[int, int]] = []
    try:
        for item in items[1:]:
            children.append(_start(work, item))
        results = [work(items[0])]
        while children:
            pid, fd = children.pop(0)
            results.append(_finish(pid, fd, work, items[len(results)]))
        return results
    finally:
        for pid, fd in children:  # only when this process's own share raised
            os.close(fd)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _start(work: Callable[[T], R], item: T) -> tuple[int, int]:
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's cleanup or flushes its buffers
        try:
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
