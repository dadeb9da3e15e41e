"""Work shared out between this process and forked helpers, when there is enough of it.

A `Helper` is a process forked from this one (or from another helper: `Helper.spawn`): it
inherits everything its parent holds at the fork (the texts read; LibCST, once imported) without
copying or pickling any of it, and then does the jobs it is given, in order, while this process
goes on. A job is a module-level function and small arguments, pickled to the helper, which
calls it with its `context` (the texts) first; the result comes back pickled through a pipe,
read and written by threads of the helper's own so that neither side waits on the other. A job
the helper fails in any way (an internal error, killed, a result that does not unpickle, no
process to fork) costs nothing but time: it is done again here when its result is asked for,
where an error is raised as it would have been without helpers. A helper is killed when its
team closes (`Team`), and reaped later (`reap`).

Forking is used only where it is safe and cheap: Linux, and a process without other threads
(a program embedding the linter, such as an editor's server, runs it serially).
"""

from __future__ import annotations

import gc
import os
import pickle
import queue
import select
import signal
import struct
import sys
import threading
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

R = TypeVar("R")

WORKERS = 2  # the cores of the machines this project is measured on: two processes at work at once
_HEADER = struct.Struct("<Q")  # the length of the pickle that follows
_CHUNK = 1 << 16
_OPEN: set[int] = set()  # this process's ends of its helpers' pipes: a later helper closes them
_KEPT: list[object] | None = None  # in a helper: what `keep` was given
_SERVING: tuple[int, int] = ()  # in a helper: the ends of the pipes it serves on
_SPARES: list[_Pipes] = []  # in a helper: the pipes of the helpers it may spawn
_STOPPED: list[int] = []  # helpers stopped, not reaped yet


def can_fork() -> bool:
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


def deal(helpers: list[Helper], work: Callable[..., R], arguments: list[tuple], busy: list[Job] = ()) -> list[Job[R]]:
    """`work(context, *args)` for each of `arguments`, given out one at a time, in order, to
    whichever helper has nothing left to do (its `busy` jobs done too), so that the helper whose
    own work ends first does more of it. Returns the jobs once all are given out; waits for that."""
    undone = {id(helper): [job for job in busy if job.helper is helper] for helper in helpers}
    todo = deque(arguments)
    given: list[Job[R]] = []
    while todo:
        idle = [helper for helper in helpers if all(helper.ready(job) for job in undone[id(helper)])]
        if not idle:
            _wait_any([job for jobs in undone.values() for job in jobs])
        for helper in idle:
            if todo:
                given.append(helper.submit(work, *todo.popleft()))
                undone[id(helper)] = [given[-1]]
    return given


def _wait_any(jobs: list[Job]) -> None:
    """Wait until something comes from a helper at one of `jobs` (or one is gone)."""
    waiting = {job.helper._results for job in jobs if job.helper.alive}
    if waiting:
        select.select(list(waiting), [], [])


def keep(value: object) -> None:
    """In a helper, keep `value` alive until the helper is stopped: freeing a job's objects one by
    one (the CSTs of an analysis: a tenth of a second) helps no one in a process about to be killed.
    Elsewhere, nothing."""
    if _KEPT is not None:
        _KEPT.append(value)


class Job(Generic[R]):
    """The result of `work(context, *args)`, done by a helper or, failing that, here."""

    def __init__(self, helper: Helper, work: Callable[..., R], args: tuple) -> None:
        self.helper, self.work, self.args = helper, work, args
        self.done = False
        self.value: Any = None

    def result(self) -> R:
        self.helper.wait_for(self)
        return self.value if self.done else self.work(self.helper.context, *self.args)


class Helper:
    """A process doing the jobs it is given, in order (see the module's docstring): forked from
    this one (`Helper(context)`), or from another helper (`spawn`). Use it in a `with` block, or
    `close()` it: it is stopped at once, whatever it was doing, and reaped later (`reap`)."""

    def __init__(self, context: object, spares: list[_Pipes] = ()) -> None:
        """Fork a helper. `spares`: pipes for the helpers it will `spawn`, whose ends it keeps."""
        self.context = context
        own = _Pipes.make()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (a limit, no memory): its jobs are done here
            pid = None
        if pid == 0:  # the helper: never returns, never runs the parent's cleanup or flushes its buffers
            try:
                for fd in _OPEN | {own.jobs_out, own.results_in}:  # the spares' ends of this process too
                    os.close(fd)
                global _SPARES
                _SPARES = list(spares)
                _serve(context, own.jobs_in, own.results_out)
            finally:
                os._exit(0)
        for fd in (own.jobs_in, own.results_out, *(p for spare in spares for p in spare.theirs)):
            os.close(fd)
        self._attach(own, pid, None)
        if pid is None:
            self._lost()

    @classmethod
    def spawn(cls, spawner: Helper, pipes: _Pipes) -> Helper:
        """A helper forked by `spawner` when it comes to this job (so that it inherits what the
        spawner holds by then, LibCST imported for one), talking to this process through
        `pipes`, made before the spawner was forked."""
        helper = cls.__new__(cls)
        helper.context = spawner.context
        helper._attach(pipes, None, spawner.submit(_spawn, pipes.jobs_in, pipes.results_out))
        if not spawner.alive:  # there is no one to spawn it: its jobs are done here
            helper._lost()
        return helper

    def _attach(self, pipes: _Pipes, pid: int | None, spawned: Job | None) -> None:
        self._jobs, self._results = pipes.ours
        _OPEN.update(pipes.ours)
        self._pid = pid  # when forked here
        self._spawned = spawned  # when spawned by another helper: that job's result is the pid
        self.alive = True
        self._pending: deque[Job] = deque()
        self._received = bytearray()

    def submit(self, work: Callable[..., R], *args: object) -> Job[R]:
        """`work(context, *args)`, begun in the helper once the jobs before it are done."""
        job = Job(self, work, args)
        if self.alive:
            try:
                data = pickle.dumps((work, args), pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - not picklable: done here when asked for
                return job
            self._pending.append(job)
            self._send(_HEADER.pack(len(data)) + data)
        return job

    def wait_for(self, job: Job) -> None:
        """Take in results until `job`'s has come, or the helper is gone."""
        while job in self._pending:
            self._take_result()

    def close(self) -> None:
        self._lost()

    def __enter__(self) -> Helper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, data: bytes) -> None:
        """Write a job while reading results, so that neither process waits for the other to read."""
        view = memoryview(data)
        while view and self.alive:
            readable, writable, _ = select.select([self._results], [self._jobs], [])
            if readable and not self._read():
                return
            if writable:
                try:
                    view = view[os.write(self._jobs, view[:_CHUNK]) :]
                except OSError:  # the helper is gone
                    self._lost()

    def _read(self) -> bool:
        data = os.read(self._results, _CHUNK * 16)
        if not data:  # the helper is gone
            self._lost()
        self._received += data
        return bool(data)

    def _take_result(self) -> None:
        """Read the next result (that of the oldest pending job)."""
        while not self._unpack() and self._read():
            pass

    def ready(self, job: Job) -> bool:
        """Has `job`'s result come (or will it never)? Takes in what has come, without waiting."""
        while job in self._pending and not self._unpack():
            if not select.select([self._results], [], [], 0)[0] or not self._read():
                break
        return job not in self._pending

    def _unpack(self) -> bool:
        """Give the oldest pending job its result, if all of it has come."""
        received = self._received
        if len(received) < _HEADER.size or len(received) < _HEADER.size + _length(received):
            return False
        end = _HEADER.size + _length(received)
        data, self._received = bytes(received[_HEADER.size : end]), received[end:]
        job = self._pending.popleft()
        try:
            job.done, job.value = pickle.loads(data)
        except Exception:  # noqa: BLE001 - half a result, or one that does not unpickle: done here
            job.done = False
        return True

    def _lost(self) -> None:
        """No more results will come: the pending jobs are done here when asked for. The helper is
        stopped at once and reaped later (`reap`): the kernel takes milliseconds to free a large
        process, and nothing waits on that. A spawned helper is reaped by the system."""
        if not self.alive:
            return
        self.alive = False
        self._pending.clear()
        for fd in (self._jobs, self._results):
            _OPEN.discard(fd)
            os.close(fd)
        if self._pid is not None:
            os.kill(self._pid, signal.SIGKILL)
            _STOPPED.append(self._pid)
        elif self._spawned is not None:
            self._spawned.helper.wait_for(self._spawned)  # its first jobs: done by now, or nearly
            if self._spawned.done:  # else it never started, or exits as its pipes are closed
                os.kill(self._spawned.value, signal.SIGKILL)


@dataclass(frozen=True)
class _Pipes:
    """The two pipes between this process and a helper: jobs one way, results the other."""

    jobs_in: int
    jobs_out: int
    results_in: int
    results_out: int

    @classmethod
    def make(cls) -> _Pipes:
        jobs_in, jobs_out = os.pipe()
        results_in, results_out = os.pipe()
        return cls(jobs_in, jobs_out, results_in, results_out)

    @property
    def ours(self) -> tuple[int, int]:
        """The ends this process keeps."""
        return self.jobs_out, self.results_in

    @property
    def theirs(self) -> tuple[int, int]:
        """The ends the helper keeps."""
        return self.jobs_in, self.results_out


def _spawn(context: object, jobs_in: int, results_out: int) -> int:
    """A spawner's job: fork a helper serving on these ends of its spare pipes; its pid. The
    helper forked keeps only those ends (a fork from this process's main thread, while its own
    pipes' threads wait: the helper uses nothing of theirs)."""
    try:
        with warnings.catch_warnings():  # Python 3.12 warns of any fork while other threads run
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            try:
                for fd in (*_SERVING, *(p for spare in _SPARES for p in spare.theirs if p not in (jobs_in, results_out))):
                    os.close(fd)
                _serve(context, jobs_in, results_out)
            finally:
                os._exit(0)
    finally:  # forked or not: that helper's ends are its own now, or nobody's (this process's parent sees it gone)
        os.close(jobs_in)
        os.close(results_out)
    return pid


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


def _length(received: bytearray) -> int:
    return _HEADER.unpack_from(received)[0]


def _serve(context: object, jobs_in: int, results_out: int) -> None:
    """Do the jobs as they come. Jobs are read, and results written, by threads of their own:
    this process's parent never waits to hand over a job while a long one runs here, and a
    result it is not reading yet never holds up the next job."""
    global _KEPT, _SERVING
    _KEPT = []
    _SERVING = (jobs_in, results_out)
    gc.disable()  # it is killed when no longer needed: its cycles go with it
    jobs: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    done: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    reader = threading.Thread(target=_read_all, args=(jobs_in, jobs), daemon=True)
    writer = threading.Thread(target=_write_all, args=(done, results_out))
    reader.start()
    writer.start()
    while (job := jobs.get()) is not None:
        work, args = pickle.loads(job)
        try:
            data = pickle.dumps((True, work(context, *args)), pickle.HIGHEST_PROTOCOL)
        except BaseException:  # noqa: BLE001 - any failure: this process's parent does the job again
            data = pickle.dumps((False, None))
        done.put(_HEADER.pack(len(data)) + data)
    done.put(None)
    writer.join()


def _read_all(jobs_in: int, jobs: queue.SimpleQueue[bytes | None]) -> None:
    with os.fdopen(jobs_in, "rb") as source:
        while len(header := source.read(_HEADER.size)) == _HEADER.size:
            jobs.put(source.read(_HEADER.unpack(header)[0]))
    jobs.put(None)


def _write_all(done: queue.SimpleQueue[bytes | None], results_out: int) -> None:
    with os.fdopen(results_out, "wb") as results:
        while (data := done.get()) is not None:
            results.write(data)
            results.flush()


class Team:
    """Up to `WORKERS` helpers sharing one context. The first is forked from this process when
    first needed; the others are spawned by the first (see `helper`). All are stopped when the
    team is closed."""

    def __init__(self, context: object) -> None:
        reap(wait=False)
        self.context = context
        self.helpers: list[Helper] = []
        self._spares: list[_Pipes] = []
        self._given: dict[int, set[Callable]] = {}

    def helper(self, index: int) -> Helper:
        """The helper `index`, made if need be: the first forked from this process, the others
        spawned by the first once the jobs it was given before are done, so that they inherit
        what it has prepared (`each`)."""
        while len(self.helpers) <= index:
            if not self.helpers:
                self._spares = [_Pipes.make() for _ in range(WORKERS - 1)]
                _OPEN.update(fd for spare in self._spares for fd in spare.ours)
                self.helpers.append(Helper(self.context, self._spares))
            else:
                first = self.helpers[0]
                helper = Helper.spawn(first, self._spares.pop(0)) if self._spares else Helper(self.context)
                self._given[id(helper)] = set(self._given.get(id(first), ()))  # inherited
                self.helpers.append(helper)
        return self.helpers[index]

    def each(self, work: Callable[..., object]) -> None:
        """Give `work` (a job without arguments) to each helper that has not had it yet (nor
        inherited it)."""
        for helper in self.helpers:
            given = self._given.setdefault(id(helper), set())
            if work not in given:
                given.add(work)
                helper.submit(work)

    def close(self) -> None:
        for helper in reversed(self.helpers):  # the spawned first, while their spawner can say who they are
            helper.close()
        for spare in self._spares:  # never used: the first helper had them
            for fd in spare.ours:
                _OPEN.discard(fd)
                os.close(fd)
        self._spares = []

    def __enter__(self) -> Team:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
