"""Work shared out between this process and forked helpers, when there is enough of it.

A `Helper` is a process forked from this one (or from another helper: `Helper.spawn`): it
inherits everything its parent holds at the fork (the texts read; LibCST, once imported) without
copying or pickling any of it, and then does the jobs it is given, in order, while this process
goes on. A job is a module-level function and small arguments, pickled to the helper, which
calls it with its `context` (the texts) first; the result comes back pickled through a pipe,
read and written by threads of the helper's own so that neither side waits on the other. A job
that fails in a helper raises here what it raised there, a helper that dies takes its jobs with
it (`endings`): nothing given to a helper is done again here, only a job none could be given (no
process to fork, arguments that do not pickle). A helper is killed when its team closes (`Team`),
reaped later (`reap`), and dies with this process, however that ends (`endings.set_up_helper`).

Forking is used only where it is safe and cheap: Linux, and a process without other threads
(a program embedding the linter, such as an editor's server, runs it serially).
"""

from __future__ import annotations

import os
import pickle
import select
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from zerograd_lint.findings import describe
from zerograd_lint.schedule.endings import HelperDied, HelperFailed, died_how, reap, stop
from zerograd_lint.schedule.forked import WORKERS, First
from zerograd_lint.schedule.forked import can_fork as can_fork  # where the run asks it (and tests stop it)
from zerograd_lint.schedule.serving import _HEADER, _Pipes, _spawn, serve

R = TypeVar("R")

_CHUNK = 1 << 16
_OPEN: set[int] = set()  # this process's ends of its helpers' pipes: a later helper closes them


def deal(helpers: list[Helper], work: Callable[..., R], arguments: list[tuple], busy: list[Job] = ()) -> list[Job[R]]:
    """`work(context, *args)` for each of `arguments`, given out one at a time, in order, to
    whichever helper has nothing left to do (its `busy` jobs done too), so that the helper whose
    own work ends first does more of it. Returns the jobs once all are given out; waits for that."""
    undone = {id(helper): [job for job in busy if job.helper is helper] for helper in helpers}
    todo = deque(arguments)
    given: list[Job[R]] = []
    while todo:
        idle = [helper for helper in helpers if all(helper.ready(job) for job in undone[id(helper)])]
        if any(helper.alive for helper in helpers):  # one that died takes what it is given along
            idle = [helper for helper in idle if helper.alive]
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


class Job(Generic[R]):
    """The result of `work(context, *args)`, done by a helper, or here if no helper could be given it."""

    def __init__(self, helper: Helper, work: Callable[..., R], args: tuple) -> None:
        self.helper, self.work, self.args = helper, work, args
        self.done = False
        self.value: Any = None
        self.given = False  # to a helper, which does it or fails it

    def result(self) -> R:
        """Its result; raises what it raised, in a helper too, or `HelperDied`."""
        self.helper.wait_for(self)
        if self.done:
            return self.value
        if isinstance(self.value, BaseException):
            raise self.value
        if self.given or self.helper.death is not None:  # given to a helper closed, or that died
            raise self.helper.death or HelperDied("a helper process was stopped")
        return self.work(self.helper.context, *self.args)


class Helper:
    """A process doing the jobs it is given, in order (see the module's docstring): forked from
    this one (`Helper(context)`), or from another helper (`spawn`). Use it in a `with` block, or
    `close()` it: it is stopped at once, whatever it was doing, and reaped later (`reap`)."""

    def __init__(self, context: object, spares: list[_Pipes] = ()) -> None:
        """Fork a helper. `spares`: pipes for the helpers it will `spawn`, whose ends it keeps."""
        self.context = context
        own, parent = _Pipes.make(), os.getpid()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (a limit, no memory): its jobs are done here
            pid = None
        if pid == 0:  # the helper: never returns, never runs the parent's cleanup or flushes its buffers
            serve(context, parent, own, spares, _OPEN)
        for fd in (own.jobs_in, own.results_out, *(p for spare in spares for p in spare.theirs)):
            os.close(fd)
        self._attach(own, pid, None)
        if pid is None:
            self._lost()

    @classmethod
    def adopting(cls, context: object, first: First) -> Helper:
        """The helper the console script forked first of all (`forked.fork_first`)."""
        helper = cls.__new__(cls)
        helper.context = context
        helper._attach(_Pipes(*first.pipes), first.pid, None)
        return helper

    @classmethod
    def spawn(cls, spawner: Helper, pipes: _Pipes) -> Helper:
        """A helper forked by `spawner` when it comes to this job (so that it inherits what the
        spawner holds by then, LibCST imported for one), talking to this process through
        `pipes`, made before the spawner was forked."""
        helper = cls.__new__(cls)
        helper.context = spawner.context
        helper._attach(pipes, None, spawner.submit(_spawn, pipes.jobs_in, pipes.results_out))
        if not spawner.alive:  # there is no one to spawn it: its jobs are done here, unless the spawner died
            helper._lost(died=spawner.death is not None)
        return helper

    def _attach(self, pipes: _Pipes, pid: int | None, spawned: Job | None) -> None:
        self._jobs, self._results = pipes.ours
        _OPEN.update(pipes.ours)
        self._pid = pid  # when forked here
        self._spawned = spawned  # when spawned by another helper: that job's result is the pid
        self.alive = True
        self.death: HelperDied | None = None  # if it died, rather than being closed
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
            job.given = True
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
                    self._lost(died=True)

    def _read(self) -> bool:
        data = os.read(self._results, _CHUNK * 16)
        if not data:  # the helper is gone
            self._lost(died=True)
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
        except Exception as exc:  # noqa: BLE001 - a result that does not unpickle: a bug, named
            job.value = exc if isinstance(exc, MemoryError) else HelperFailed(f"a result that cannot be read ({describe(exc)})")
        return True

    def _lost(self, died: bool = False) -> None:
        """No more results will come: the helper is closed (stopped at once: `endings.stop`), could
        not be had (its jobs are done here), or `died` (they raise `HelperDied`)."""
        if not self.alive:
            return
        self.alive = False
        pending, self._pending = self._pending, deque()
        for fd in (self._jobs, self._results):
            _OPEN.discard(fd)
            os.close(fd)
        spawned, spawner = self._spawned, self._spawned.helper if self._spawned is not None else None
        if spawner is not None:
            spawner.wait_for(spawned)  # its first jobs: done by now, or nearly
        if died and (spawner is None or spawned.done or spawner.death is not None):  # it was forked
            self.death = died_how(self._pid) if spawner is None else spawner.death or died_how(None)
            return
        for job in pending:  # never forked (no process to be had): done here when asked for
            job.given = False
        if self._pid is not None:
            stop(self._pid)
        # A spawned helper: unless it never started, or its spawner is gone and took it along
        # (its parent-death signal), when its pid may be another process's by now.
        elif spawner is not None and spawned.done and spawner.alive:
            stop(spawned.value, reaped_here=False)


def _length(received: bytearray) -> int:
    return _HEADER.unpack_from(received)[0]


class Team:
    """Up to `WORKERS` helpers sharing one context. The first is forked from this process when
    first needed; the others are spawned by the first (see `helper`). All are stopped when the
    team is closed."""

    def __init__(self, context: object, first: First | None = None) -> None:
        """`first`: the first helper, forked already (`forked.fork_first`)."""
        reap(wait=False)
        self.context = context
        self.helpers: list[Helper] = []
        self._spares: list[_Pipes] = []
        self._given: dict[int, set[Callable]] = {}
        if first is not None:
            self._spares = [_Pipes(*spare) for spare in first.spares]
            _OPEN.update(fd for spare in self._spares for fd in spare.ours)
            self.helpers.append(Helper.adopting(context, first))

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
