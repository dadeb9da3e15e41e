"""The console script's first fork, made before anything else is imported.

A run's first helper spends the start of the run importing LibCST (see `early`). Forked once
`processes` is imported, it began 45 milliseconds after Python did (typing, dataclasses, pickle,
threading); forked here, with `os` alone imported, it begins at once. Where the run will want
LibCST (`warms`), it imports it by itself, before its first job, as soon as it can serve. Told to
by this process, which had to import the run first to pickle the job, it began some 35
milliseconds later, and on a short on-save check it was still importing when the plan came.
`First` is that fork, its pipes and its arena's file, which `early.Early` makes a helper of
(`processes.Helper.adopting`); it serves as any helper does (`serving`).

Only `os` and `sys`: this module is what the console script imports first.
"""

from __future__ import annotations

import os
import sys

WORKERS = 2  # the cores of the machines this project is measured on: two processes at work at once

Pipes = tuple[int, int, int, int]  # jobs in, jobs out, results in, results out: see `serving._Pipes`


def can_fork() -> bool:
    """Linux, and a process without other threads (a program embedding the linter, such as an
    editor's server, runs it serially)."""
    threading = sys.modules.get("threading")  # not imported: no thread was started from Python
    return sys.platform == "linux" and hasattr(os, "fork") and (threading is None or threading.active_count() == 1)


class First:
    """The first helper, forked (`pid`), serving on the far ends of `pipes`; the `spares` are the
    pipes of the helpers it will spawn; `arena` the file it shares with this process (`Arena`)."""

    def __init__(self, pid: int, pipes: Pipes, spares: list[Pipes], arena: int) -> None:
        self.pid, self.pipes, self.spares, self.arena = pid, pipes, spares, arena


def fork_first(arguments: list[str]) -> First | None:
    """The first helper of a command that checks code (`checks_code`), where there is a fork and
    an arena to be had; None for any other."""
    if not can_fork() or not checks_code(arguments):
        return None
    try:
        arena = os.memfd_create("zerograd-lint", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None
    pipes, spares = make_pipes(), [make_pipes() for _ in range(WORKERS - 1)]
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        for fd in (arena, *pipes, *(fd for spare in spares for fd in spare)):
            os.close(fd)
        return None
    if pid == 0:  # the helper: never returns
        try:
            from zerograd_lint.schedule.serving import serve
            from zerograd_lint.texts import Texts

            serve(Texts({}), parent, pipes, spares, warm=lambda: warms(arguments))
        finally:
            os._exit(70)  # what `endings.ended` does, if even that import failed
    for fd in (pipes[0], pipes[3], *(fd for spare in spares for fd in (spare[0], spare[3]))):
        os.close(fd)  # the helper's ends
    return First(pid, pipes, spares, arena)


def make_pipes() -> Pipes:
    """Two new pipes, for a helper's jobs and results (`serving._Pipes` names their ends)."""
    jobs_in, jobs_out = os.pipe()
    results_in, results_out = os.pipe()
    return jobs_in, jobs_out, results_in, results_out


def checks_code(arguments: list[str]) -> bool:
    """Does a command check code: a folder (its default, when it names nothing), files or stdin,
    without fixing or watching it? A guess from the words that are not options: a word that is an
    option's value only costs a fork."""
    if any(word in _NO_CHECK for word in arguments):
        return False
    if "-" in arguments:
        return True
    words = [word for word in arguments if not word.startswith("-")]
    if words[:1] in (["server"], ["rule"]):
        return False
    words = words[1:] if words[:1] == ["check"] else words
    return not words or any(os.path.exists(word) for word in words)


def warms(arguments: list[str]) -> bool:
    """Will a command that checks code want LibCST at once? On a folder and on stdin, yes (stdin
    cannot be read before the command line knows it is asked to: it may be a terminal, or `-` an
    option's value); on named files only when one of them may train (`_may_train`): pre-commit
    passes every file changed."""
    words = [word for word in arguments if not word.startswith("-")]
    files = [word for word in words if os.path.isfile(word)]
    return "-" in arguments or not files or any(map(os.path.isdir, words)) or _may_train(files)


# The words without which a file holds no training loop of its own (`prefilter` knows better, later).
_TRAINING = (b"backward", b".step(")
LOOKED_AT = 5_000_000  # bytes of each named file looked at for them


def _may_train(files: list[str]) -> bool:
    """Does one of the files hold a word of training (read as bytes, its first megabytes)?"""
    for path in files:
        try:
            with open(path, "rb") as file:
                data = file.read(LOOKED_AT)
        except OSError:
            continue
        if any(word in data for word in _TRAINING):
            return True
    return False


# Fixes are checked again in this process, serially. `--watch` runs each check as a process of its
# own (`cli.watch`), which forks its own helper: one forked here would wait, idle, until Ctrl-C.
# The others check nothing.
_NO_CHECK = frozenset({"--fix", "--diff", "--watch", "--explain", "--help", "-h", "--version"})
