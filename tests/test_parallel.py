"""Sharing a run out to forked helpers changes its speed, never its findings; a helper that
fails costs time, not a result."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

import pytest
from test_projects import CASES as PROJECTS

from zerograd_lint import prefilter, survey
from zerograd_lint.cache import Cache
from zerograd_lint.checker import check_project
from zerograd_lint.runner import checked
from zerograd_lint.findings import describe
from zerograd_lint.schedule import processes, run, serving, shares
from zerograd_lint.schedule.endings import HelperDied
from zerograd_lint.settings import Vocabulary
from zerograd_lint.survey import survey_module

FIXTURES = Path(__file__).parent / "fixtures"
ALL = sorted(p for p in FIXTURES.rglob("*.py") if "fixes" not in p.parts)

needs_fork = pytest.mark.skipif(not processes.can_fork(), reason="this platform or process does not fork")


def _findings(sources: dict[str, bytes], monkeypatch: pytest.MonkeyPatch, shared: bool) -> tuple[dict, int]:
    """The findings, and the number of shares the analysis was split into."""
    seen = []
    real = run.merged

    def spy(parts, errors):
        seen.append(len(parts))
        return real(parts, errors)

    monkeypatch.setattr(run, "merged", spy)
    monkeypatch.setattr(run, "ANALYSIS_APART_FROM", 0 if shared else float("inf"))
    result = check_project(sources)
    return {p: f for p, f in result.findings.items() if f}, max(seen, default=0)


def _with_a_team(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every run use helpers from its start; the names of the jobs they were given."""
    given = []
    real = processes.Helper.submit

    def spy(self, work, *args):
        given.append(work.__name__)
        return real(self, work, *args)

    monkeypatch.setattr(processes.Helper, "submit", spy)
    monkeypatch.setattr(run, "APART_FROM", 0)
    monkeypatch.setattr(run, "SURVEYS_APART_FROM", 0)
    monkeypatch.setattr(run, "ANALYSIS_APART_FROM", 0)
    return given


@needs_fork
@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_a_project_gives_the_same_findings_shared_out(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = {str(p): p.read_bytes() for p in sorted(project.rglob("*.py"))}
    alone, _ = _findings(sources, monkeypatch, shared=False)
    shared, _ = _findings(sources, monkeypatch, shared=True)
    assert shared == alone
    _with_a_team(monkeypatch)
    assert {p: f for p, f in check_project(sources).findings.items() if f} == alone


@needs_fork
def test_all_fixtures_together_give_the_same_findings_shared_out(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = {str(p): p.read_bytes() for p in ALL}
    alone, shares_alone = _findings(sources, monkeypatch, shared=False)
    shared, shares = _findings(sources, monkeypatch, shared=True)
    assert (shares_alone, shares) == (1, processes.WORKERS)  # it did run in two processes
    assert len(alone) > 50  # files with findings
    assert shared == alone


@needs_fork
def test_all_fixtures_together_give_the_same_findings_with_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    """With helpers from the start of the run: markers, first looks and the analysis are theirs."""
    sources = {str(p): p.read_bytes() for p in ALL}
    alone, _ = _findings(sources, monkeypatch, shared=False)
    given = _with_a_team(monkeypatch)
    helped = {p: f for p, f in check_project(sources).findings.items() if f}
    assert helped == alone
    assert sorted(set(given)) == ["_analyse_in_helper", "_scan_share", "_spawn", "_unused_markers_of_part", "surveys", "warm_up"]
    assert given.count("_analyse_in_helper") == processes.WORKERS  # each helper analysed a share
    assert given.count("warm_up") == 1  # the second helper was spawned by the first, LibCST imported


@needs_fork
def test_a_mid_size_run_looks_first_and_imports_libcst_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """Too little text to scan apart, enough first looks to share: both helpers start looking at
    once, and each imports LibCST afterwards (measured sooner than importing before looking)."""
    sources = {str(p): p.read_bytes() for p in ALL}
    given = _with_a_team(monkeypatch)
    monkeypatch.setattr(run, "APART_FROM", float("inf"))
    check_project(sources)
    assert "scan" not in given and given.index("surveys") < given.index("warm_up")
    assert given.count("warm_up") == 2 and given.count("_spawn") == 1


@needs_fork
def test_the_roots_of_a_module_holding_most_of_the_work_are_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixture is a project of one module: its roots are shared out between two processes (each
    parses it), and the findings are those of one process doing everything."""
    split = []
    real = run.analysis_work

    def spy(plan, workers):
        work = real(plan, workers)
        split.extend(path for (path, _), size in work.items() if sum(p == path for p, _ in work) > 1)
        return work

    monkeypatch.setattr(run, "analysis_work", spy)
    for path in ALL:
        sources = {str(path): path.read_bytes()}
        monkeypatch.setattr(run, "ANALYSIS_APART_FROM", float("inf"))
        alone = check_project(sources).findings
        monkeypatch.setattr(run, "ANALYSIS_APART_FROM", 0)
        assert check_project(sources).findings == alone, path
    assert len(set(split)) >= 4  # the fixtures with two roots or more
    assert any(path.endswith("two_independent_loops.py") for path in split)


def _chain(between: int) -> str:
    """`r1` -> `r2` -> f1 ... fN -> `r3`, each a root (a loop that trains, directly or not)."""
    text = "import torch\n\n\ndef r3(model, opt, data, clear):\n    for x in data:\n        if clear:\n"
    text += "            opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n"
    called = "r3(model, opt, data, True)"
    for i in range(between, 0, -1):
        text += f"\n\ndef f{i}(model, opt, data):\n    {called}\n"
        called = f"f{i}(model, opt, data)"
    text += f"\n\ndef r2(model, opt, data):\n    for epoch in range(3):\n        {called}\n"
    return text + "\n\ndef r1(model, opt, data):\n    for i in range(2):\n        r2(model, opt, data)\n"


@needs_fork
@pytest.mark.parametrize("between", [6, 7, 8, 9])
def test_every_root_is_analysed_whoever_inlines_it(monkeypatch: pytest.MonkeyPatch, between: int) -> None:
    """`r1` inlines `r2` but, past the inlining depth, not `r3`, which `r2` inlines: `r3` is dropped
    as inlined only because `r2` is analysed too. Skipping `r2` (its findings are dropped anyway)
    brought `r3`'s context-free finding back, in one process and not in two."""
    sources = {"m.py": _chain(between)}
    monkeypatch.setattr(run, "ANALYSIS_APART_FROM", float("inf"))
    alone = check_project(sources).findings
    monkeypatch.setattr(run, "ANALYSIS_APART_FROM", 0)
    assert check_project(sources).findings == alone
    monkeypatch.setattr(processes, "can_fork", lambda: False)
    assert check_project(sources).findings == alone
    if between == 8:  # `r1` reaches `r2` and not `r3`; `r2` reaches `r3`
        assert alone == {"m.py": []}


def test_roots_are_split_in_halves_of_about_equal_code() -> None:
    survey = survey_module("def a():\n" + "    x = 1\n" * 30 + "def b():\n    y = 2\n" + "def c():\n" + "    z = 3\n" * 20)
    assert shares._halves(frozenset({1, 32, 34}), survey) == [(1,), (32, 34)]


def test_shares_are_balanced_and_deterministic() -> None:
    sizes = {"a": 50, "b": 40, "c": 30, "d": 20, "e": 10}
    assert shares.shares(sizes, 2) == [["a", "d", "e"], ["b", "c"]]
    assert shares.shares(dict(reversed(sizes.items())), 2) == [["a", "d", "e"], ["b", "c"]]
    assert shares.shares(sizes, 1) == [["a", "b", "c", "d", "e"]]
    assert shares.shares({"a": 500}, 2) == [["a"]]
    assert shares.shares({}, 2) == []


def test_shares_follow_their_weights() -> None:
    sizes = {name: 10 for name in "abcdefghij"}
    mine, theirs = shares.shares(sizes, 2, weights=(0.75, 0.25))
    assert (sum(sizes[k] for k in mine), sum(sizes[k] for k in theirs)) == (80, 20)
    assert shares.shares(sizes, 2, weights=(1, 1)) == shares.shares(sizes, 2)
    assert shares.shares({"a": 1, "b": 1}, 2, weights=(0.75, 0.25)) == [["a", "b"]]  # the second gets nothing


def test_no_fork_while_another_thread_runs() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not processes.can_fork()
    finally:
        stop.set()
        thread.join()


PARENT = os.getpid()


def _square(_context: object, n: int) -> tuple[int, bool]:
    return n * n, os.getpid() == PARENT


@needs_fork
def test_a_helper_does_its_jobs_in_order_elsewhere() -> None:
    with processes.Helper(None) as helper:
        jobs = [helper.submit(_square, n) for n in (1, 2, 3)]
        assert [job.result() for job in reversed(jobs)] == [(9, False), (4, False), (1, False)]


def _sleep(_context: object, seconds: float) -> None:
    time.sleep(seconds)


@needs_fork
def test_work_dealt_goes_to_the_helper_with_nothing_left_to_do() -> None:
    """`processes.deal`: a helper still at its own job gets nothing more; the other does it all."""
    with processes.Team(None) as team:
        busy, free = team.helper(0), team.helper(1)
        own = busy.submit(_sleep, 1.0)
        jobs = processes.deal([busy, free], _square, [(n,) for n in range(6)], busy=[own])
        assert [job.helper for job in jobs] == [free] * 6
        assert [job.result() for job in jobs] == [(n * n, False) for n in range(6)]


@needs_fork
def test_work_dealt_goes_to_the_helpers_alive_and_a_death_is_reported() -> None:
    with processes.Helper(None) as gone, processes.Helper(None) as free:  # not spawned by `gone`: not killed with it
        killed = gone.submit(_dies_in_a_helper, 0)
        jobs = processes.deal([gone, free], _square, [(n,) for n in range(4)], busy=[killed])
        assert [job.helper for job in jobs] == [free] * 4
        assert [job.result() for job in jobs] == [(0, False), (1, False), (4, False), (9, False)]
        with pytest.raises(HelperDied, match=r"failed \(exit status 3\)"):
            killed.result()  # never done again here: what killed a helper could kill this process


def _fails_in_a_helper(_context: object, n: int) -> int:
    if os.getpid() != PARENT:
        raise ValueError("only in a helper")
    return n


def _dies_in_a_helper(_context: object, n: int) -> int:
    if os.getpid() != PARENT:
        os._exit(3)  # killed mid-way: nothing written
    return n


def _unpicklable_in_a_helper(_context: object, n: int) -> object:
    return (lambda: n) if os.getpid() != PARENT else n


@needs_fork
@pytest.mark.parametrize(("work", "raised"), [
    (_fails_in_a_helper, "ValueError: only in a helper"),
    (_dies_in_a_helper, r"HelperDied: a helper process failed \(exit status 3\)"),
    (_unpicklable_in_a_helper, "HelperFailed: its result could not be sent from a helper .*"),
])
def test_a_failed_job_raises_here_what_failed_it_and_is_never_done_again(work, raised: str) -> None:
    with processes.Helper(None) as helper:
        failed = helper.submit(work, 1)
        after = helper.submit(_square, 2)
        with pytest.raises(Exception) as caught:
            failed.result()
        assert re.fullmatch(raised, describe(caught.value))
        if work is _dies_in_a_helper:  # the helper's other jobs go with it
            with pytest.raises(HelperDied):
                after.result()
        else:
            assert after.result() == (4, False)


def _echo(context: bytes, data: bytes) -> bytes:
    return context + data


@needs_fork
def test_large_jobs_and_results_cross_without_waiting_on_each_other() -> None:
    """A result the parent is not reading yet must not stop the helper from taking the next job,
    nor a large job stop the parent while the helper's large result waits (pipes hold 64 KB)."""
    big = b"x" * 3_000_000
    with processes.Helper(big) as helper:
        first = helper.submit(_echo, big)
        second = helper.submit(_echo, big[:10])  # sent while the first result fills the pipe
        assert second.result() == big + big[:10]
        assert first.result() == big + big
        assert first.done and second.done  # both came from the helper


def _kept(_context: object) -> int:
    serving.keep(object())
    return len(serving._KEPT)


@needs_fork
def test_a_helper_keeps_what_it_is_given_to_keep_and_this_process_does_not() -> None:
    with processes.Helper(None) as helper:
        assert helper.submit(_kept).result() == 1
    serving.keep(object())
    assert serving._KEPT is None


def _prepare(_context: object) -> int:
    processes.PREPARED_IN_TEST = os.getpid()  # what a spawned helper should inherit
    return os.getpid()


def _where(_context: object) -> tuple[int, int, int | None]:
    return os.getpid(), os.getppid(), getattr(processes, "PREPARED_IN_TEST", None)


@needs_fork
def test_a_spawned_helper_inherits_what_its_spawner_prepared_and_is_reaped() -> None:
    with processes.Team(None) as team:
        first = team.helper(0).submit(_prepare).result()
        pid, parent, prepared = team.helper(1).submit(_where).result()
    assert pid not in (PARENT, first) and parent == first and prepared == first
    processes.reap()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # the first helper: stopped and reaped, not even a zombie
    deadline = time.monotonic() + 10
    while _exists(pid) and time.monotonic() < deadline:  # the spawned one: stopped, reaped by the system
        time.sleep(0.01)
    assert not _exists(pid)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@needs_fork
def test_the_jobs_of_a_helper_whose_spawner_died_report_that() -> None:
    with processes.Team(None) as team:
        with pytest.raises(HelperDied):
            team.helper(0).submit(_dies_in_a_helper, 1).result()  # before it could spawn
        with pytest.raises(HelperDied):
            team.helper(1).submit(_square, 3).result()


def test_a_helper_that_cannot_be_forked_leaves_its_jobs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise BlockingIOError("Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    with processes.Team(None) as team:
        assert team.helper(0).submit(_square, 2).result() == (4, True)
        assert team.helper(1).submit(_square, 3).result() == (9, True)
    assert not processes._OPEN  # no pipe left open


@needs_fork
def test_all_fixtures_together_give_the_same_findings_when_no_process_can_be_forked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sources = {str(p): p.read_bytes() for p in ALL}
    alone, _ = _findings(sources, monkeypatch, shared=False)
    _with_a_team(monkeypatch)

    def no_fork() -> int:
        raise BlockingIOError("Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    assert {p: f for p, f in check_project(sources).findings.items() if f} == alone


@needs_fork
def test_an_error_here_reaps_the_helpers() -> None:
    with pytest.raises(KeyError), processes.Team(None) as team:
        team.helper(1).submit(_square, 2)
        raise KeyError(1)
    processes.reap()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind, not even a zombie


@needs_fork
def test_markers_looked_for_in_a_helper_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = {str(p): p.read_bytes() for p in ALL}
    monkeypatch.setattr(run, "APART_FROM", float("inf"))
    here = check_project(sources).findings
    given = _with_a_team(monkeypatch)
    apart = check_project(sources).findings
    assert "_unused_markers_of_part" in given
    assert apart == here
    assert any(f.code == "ZG100" for found in here.values() for f in found)


@needs_fork
def test_a_first_look_begun_for_nothing_leaves_no_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files that train by themselves get their first look in a helper while the others are
    chosen; when the chosen files' result is in the cache, that helper is stopped and reaped."""
    given = _with_a_team(monkeypatch)
    cache = Cache(tmp_path / "cache")
    train = (FIXTURES / "ZG001" / "no_clear.py").read_bytes()
    first = checked({"train.py": train, "notes.py": b"x = 1\n"}, cache=cache)
    given.clear()
    again = checked({"train.py": train, "notes.py": b"x = 2\n"}, cache=cache)  # only the chosen part hits
    assert [f.code for f in again.findings["train.py"]] == [f.code for f in first.findings["train.py"]] == ["ZG001"]
    assert "surveys" in given and "_analyse_in_helper" not in given
    processes.reap()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_a_scan_made_in_shares_is_the_scan_of_all() -> None:
    texts = {str(p): p.read_text(encoding="utf-8") for p in ALL}
    whole = prefilter.scan(texts, Vocabulary(), sorted(texts))
    first, second = shares.shares({p: len(t) for p, t in texts.items()}, 2)
    merged = prefilter.scan(texts, Vocabulary(), first).merge(prefilter.scan(texts, Vocabulary(), second))
    assert (merged.direct, merged.imports) == (whole.direct, whole.imports)
    assert whole.direct and whole.imports


def test_a_batch_dealt_to_a_helper_is_one_file_at_least_and_at_most_its_size_else() -> None:
    texts = {"big": "x" * (run.SURVEY_BATCH + 1), "a": "x" * 100, "b": "x" * 100}
    pool = deque(["a", "b", "big"])
    assert run._batch(pool, texts) == ["big"]  # alone, however large
    assert run._batch(pool, texts) == ["b", "a"]
    assert run._batch(pool, texts) == [] and not pool


@needs_fork
def test_first_looks_dealt_out_are_those_of_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = {str(p): p.read_text(encoding="utf-8") for p in ALL}
    alone = run._survey_all(texts, Vocabulary(), [], None)
    monkeypatch.setattr(run, "SURVEYS_APART_FROM", 0)
    monkeypatch.setattr(run, "SURVEY_BATCH", 2_000)  # many batches
    with processes.Team(texts) as team:
        team.helper(1)  # both helpers, the second spawned by the first
        dealt = run._survey_all(texts, Vocabulary(), [], team)

    def comparable(found: dict) -> dict:  # a file refused is refused for the same reason
        return {path: f.reason if isinstance(f, survey.Unparsable) else f for path, f in found.items()}

    assert comparable(dealt) == comparable(alone)


@needs_fork
def test_the_process_that_hands_out_the_analysis_never_imports_libcst() -> None:
    """With helpers analysing, this process only plans and puts their parts back together: LibCST
    (a tenth of a second to import) is theirs alone."""
    script = (
        "import sys\n"
        "from zerograd_lint.schedule import run\n"
        "from zerograd_lint.checker import check_project\n"
        "run.APART_FROM = run.SURVEYS_APART_FROM = 0\n"
        f"sources = {{p: open(p, 'rb').read() for p in {[str(p) for p in ALL]!r}}}\n"
        "result = check_project(sources)\n"
        "assert any(result.findings.values())\n"
        "print('libcst' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr
