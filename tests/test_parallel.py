"""Sharing the analysis out to a forked process changes its speed, never its findings; a child
that fails costs time, not a result."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from zerograd_lint import analysis, checker, parallel, survey
from zerograd_lint.cache import Cache
from zerograd_lint.checker import check_project

FIXTURES = Path(__file__).parent / "fixtures"
PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())
ALL = sorted(p for p in FIXTURES.rglob("*.py") if "fixes" not in p.parts)

needs_fork = pytest.mark.skipif(not parallel.can_fork(), reason="this platform or process does not fork")


def _findings(sources: dict[str, bytes], monkeypatch: pytest.MonkeyPatch, shared: bool) -> tuple[dict, int]:
    """The findings, and the number of shares the analysis was split into."""
    seen = []
    real = parallel.fork_map

    def spy(work, items):
        seen.append(len(items))
        return real(work, items)

    monkeypatch.setattr(parallel, "fork_map", spy)
    monkeypatch.setattr(analysis, "PARALLEL_FROM", 0 if shared else float("inf"))
    result = check_project(sources)
    return {p: f for p, f in result.findings.items() if f}, max(seen, default=0)


@needs_fork
@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_a_project_gives_the_same_findings_shared_out(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = {str(p): p.read_bytes() for p in sorted(project.rglob("*.py"))}
    alone, _ = _findings(sources, monkeypatch, shared=False)
    shared, _ = _findings(sources, monkeypatch, shared=True)
    assert shared == alone


@needs_fork
def test_all_fixtures_together_give_the_same_findings_shared_out(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = {str(p): p.read_bytes() for p in ALL}
    alone, shares_alone = _findings(sources, monkeypatch, shared=False)
    shared, shares = _findings(sources, monkeypatch, shared=True)
    assert (shares_alone, shares) == (1, parallel.WORKERS)  # it did run in two processes
    assert len(alone) > 50  # files with findings
    assert shared == alone


def test_shares_are_balanced_and_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "can_fork", lambda: True)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    sizes = {"a": 50, "b": 40, "c": 30, "d": 20, "e": 10}
    assert parallel.shares(sizes, least=100) == [["a", "d", "e"], ["b", "c"]]
    assert parallel.shares(dict(reversed(sizes.items())), least=100) == [["a", "d", "e"], ["b", "c"]]
    assert parallel.shares(sizes, least=1000) == [["a", "b", "c", "d", "e"]]  # too little to share
    assert parallel.shares({"a": 500}, least=100) == [["a"]]
    assert parallel.shares({}, least=0) == []
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert parallel.shares(sizes, least=100) == [["a", "b", "c", "d", "e"]]


def test_no_fork_while_another_thread_runs() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not parallel.can_fork()
    finally:
        stop.set()
        thread.join()


PARENT = os.getpid()


def _square(n: int) -> tuple[int, bool]:
    return n * n, os.getpid() == PARENT


@needs_fork
def test_fork_map_keeps_the_order_and_forks() -> None:
    assert parallel.fork_map(_square, [1, 2, 3]) == [(1, True), (4, False), (9, False)]


def _fails_in_a_child(n: int) -> int:
    if os.getpid() != PARENT:
        raise ValueError("only in a child")
    return n


def _dies_in_a_child(n: int) -> int:
    if os.getpid() != PARENT:
        os._exit(3)  # killed mid-way: nothing written
    return n


def _unpicklable_in_a_child(n: int) -> object:
    return (lambda: n) if os.getpid() != PARENT else n


@needs_fork
@pytest.mark.parametrize("work", [_fails_in_a_child, _dies_in_a_child, _unpicklable_in_a_child])
def test_a_failed_child_share_is_done_again_here(work) -> None:
    assert parallel.fork_map(work, [1, 2]) == [1, 2]


@needs_fork
def test_an_error_here_reaps_the_children() -> None:
    def work(n: int) -> int:
        if os.getpid() == PARENT:
            raise KeyError(n)
        return n

    with pytest.raises(KeyError):
        parallel.fork_map(work, [1, 2, 3])
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind, not even a zombie


@needs_fork
def test_markers_looked_for_in_a_child_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = {str(p): p.read_bytes() for p in ALL}
    monkeypatch.setattr(checker, "MARKERS_APART_FROM", float("inf"))
    here = check_project(sources).findings
    monkeypatch.setattr(checker, "MARKERS_APART_FROM", 0)
    apart = check_project(sources).findings
    assert apart == here
    assert any(f.code == "ZG100" for found in here.values() for f in found)


@needs_fork
def test_a_first_look_begun_for_nothing_leaves_no_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files that train by themselves get their first look in a child while the others are
    chosen; when the chosen files' result is in the cache, that child is stopped and reaped."""
    monkeypatch.setattr(survey, "PARALLEL_FROM", 0)
    monkeypatch.setattr(checker, "MARKERS_APART_FROM", 0)
    cache = Cache(tmp_path / "cache")
    train = (FIXTURES / "ZG001" / "no_clear.py").read_bytes()
    first = check_project({"train.py": train, "notes.py": b"x = 1\n"}, cache=cache)
    again = check_project({"train.py": train, "notes.py": b"x = 2\n"}, cache=cache)  # only the chosen part hits
    assert [f.code for f in again.findings["train.py"]] == [f.code for f in first.findings["train.py"]] == ["ZG001"]
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
