"""A helper's side of the pipes: what a process forked to help does until it is killed.

It serves its parent (`serve`): each job read from its pipe is `work(context, *args)`, done in
order, its result (or what it raised) written back. Jobs are read, and results written, by
threads of its own. A first helper may spawn the others (`_spawn`), which then inherit what it
has imported and prepared; whatever a job leaves to `keep` is freed with the process.
"""

from __future__ import annotations

import gc
import os
import pickle
import queue
import struct
import threading
import warnings
from collections.abc import Callable
from typing import NamedTuple, NoReturn

from zerograd_lint.schedule.endings import ended, sent, set_up_helper
from zerograd_lint.schedule.forked import Pipes, make_pipes

_HEADER = struct.Struct("<Q")  # the length of the pickle that follows, either way
_KEPT: list[object] | None = None  # in a helper: what `keep` was given
_SERVING: tuple[int, int] = ()  # in a helper: the ends of the pipes it serves on
_SPARES: list[_Pipes] = []  # in a helper: the pipes of the helpers it may spawn


def keep(value: object) -> None:
    """In a helper, keep `value` alive until it is stopped: freeing a job's objects one by one (the
    CSTs of an analysis: a tenth of a second) helps no one in a process about to be killed."""
    if _KEPT is not None:
        _KEPT.append(value)


class _Pipes(NamedTuple):
    """The two pipes between this process and a helper: jobs one way, results the other (the
    tuple `forked.Pipes` is)."""

    jobs_in: int
    jobs_out: int
    results_in: int
    results_out: int

    @classmethod
    def make(cls) -> _Pipes:
        return cls(*make_pipes())

    @property
    def ours(self) -> tuple[int, int]:  # the ends this process keeps
        return self.jobs_out, self.results_in

    @property
    def theirs(self) -> tuple[int, int]:  # the ends the helper keeps
        return self.jobs_in, self.results_out


def _spawn(context: object, jobs_in: int, results_out: int) -> int:
    """A spawner's job: fork a helper serving on these ends of its spare pipes; its pid. The
    helper forked keeps only those ends (a fork from this process's main thread, while its own
    pipes' threads wait: the helper uses nothing of theirs)."""
    parent = os.getpid()
    try:
        with warnings.catch_warnings():  # Python 3.12 warns of any fork while other threads run
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            try:
                set_up_helper(parent)
                for fd in (*_SERVING, *(p for spare in _SPARES for p in spare.theirs if p not in (jobs_in, results_out))):
                    os.close(fd)
                _serve(context, jobs_in, results_out)
            finally:
                ended()
    finally:  # forked or not: that helper's ends are its own now, or nobody's (this process's parent sees it gone)
        os.close(jobs_in)
        os.close(results_out)
    return pid


def serve(context: object, parent: int, own: Pipes, spares: list[Pipes], others: set[int] | None = None,
          warm: Callable[[], bool] | None = None) -> NoReturn:
    """In a helper just forked from `parent`: serve on `own` pipes, keeping the far ends of the
    `spares` for the helpers it will spawn, and close every other pipe's end it inherited (those
    of the parent's other helpers: `others`). `warm`: whether to import LibCST and the analysis
    first, asked once this helper is tied to its parent (it dies with it) and its pipes are read."""
    try:
        own, spares = _Pipes(*own), [_Pipes(*spare) for spare in spares]
        set_up_helper(parent)
        for fd in (others or set()) | {own.jobs_out, own.results_in} | {p for spare in spares for p in spare.ours}:
            os.close(fd)
        global _SPARES
        _SPARES = spares
        _serve(context, own.jobs_in, own.results_out, warm)
    finally:
        ended()


def _serve(context: object, jobs_in: int, results_out: int, warm: Callable[[], bool] | None = None) -> None:
    """Do the jobs as they come, until killed, once warmed up if `warm()` says so. Jobs are
    read, and results written, by threads of their own: the parent never waits to hand over a job
    while a long one (or the warming up) runs here, and a result it is not reading yet never holds
    up the next job."""
    global _KEPT, _SERVING
    _KEPT = []
    _SERVING = (jobs_in, results_out)
    gc.disable()  # it is killed when no longer needed: its cycles go with it
    jobs: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    done: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    threading.Thread(target=_read_all, args=(jobs_in, jobs), daemon=True).start()
    threading.Thread(target=_write_all, args=(done, results_out), daemon=True).start()
    try:
        if warm is not None and warm():
            from zerograd_lint.schedule.run import warm_up

            warm_up(context)
    except Exception:  # noqa: BLE001, S110 - the job that needs what failed to import raises it to the parent
        pass
    while True:
        job = jobs.get()
        try:
            work, args = pickle.loads(job)
            data = sent(True, work(context, *args))
        except BaseException as exc:  # noqa: BLE001 - any failure: raised in this process's parent
            data = sent(False, exc)
        done.put(_HEADER.pack(len(data)) + data)


def _read_all(jobs_in: int, jobs: queue.SimpleQueue[bytes]) -> None:
    """Hand the jobs over as they come; end the helper when their pipe ends (its parent is gone)."""
    try:
        with os.fdopen(jobs_in, "rb") as source:
            while len(header := source.read(_HEADER.size)) == _HEADER.size:
                jobs.put(source.read(_HEADER.unpack(header)[0]))
    finally:
        ended()


def _write_all(done: queue.SimpleQueue[bytes], results_out: int) -> None:
    try:
        with os.fdopen(results_out, "wb") as results:
            while True:
                results.write(done.get())
                results.flush()
    finally:  # the parent is gone, or it failed: the parent sees it end
        ended()
