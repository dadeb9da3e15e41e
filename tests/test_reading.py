"""A run started early (its first helper forked before the files are known, the files read into
an arena both processes map) reads the same bytes and finds the same as any other run."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from zerograd_lint.files import discover, read_source
from zerograd_lint.files.reading import NotRead
from zerograd_lint.runner import Buffer, check_files
from zerograd_lint.schedule import early as early_module
from zerograd_lint.schedule import processes, run
from zerograd_lint.schedule.arena import Arena
from zerograd_lint.schedule.early import Early, Reader
from zerograd_lint.schedule.forked import checks_code, fork_first
from zerograd_lint.settings import Settings
from zerograd_lint.texts import BINARY, decode

FIXTURES = Path(__file__).parent / "fixtures"
needs_fork = pytest.mark.skipif(not processes.can_fork(), reason="this platform or process does not fork")
needs_arena = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd_create here")


@needs_arena
def test_the_arena_holds_each_file_as_read(tmp_path: Path) -> None:
    files = {"a.py": b"x = 1\n", "empty.py": b"", "b.py": "é = 'ü'\n".encode() * 5000}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    arena = Arena()
    places = {name: arena.read(str(tmp_path / name)) for name in files}
    with pytest.raises(FileNotFoundError):
        arena.read(str(tmp_path / "missing.py"))
    places["given.py"] = arena.write(b"y = 2\n")
    assert {name: bytes(arena.view(*place)) for name, place in places.items()} == {**files, "given.py": b"y = 2\n"}
    assert pickle.loads(pickle.dumps(arena)).size == arena.size


@needs_arena
def test_a_file_that_is_not_regular_is_not_read(tmp_path: Path) -> None:
    """A named pipe would block the run until something writes to it (issue 22, item 9)."""
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    arena = Arena()
    with pytest.raises(NotRead, match=r"^not a regular file \(a named pipe\)"):
        arena.read(str(fifo))
    assert arena.size == 0


@pytest.mark.parametrize("data", [
    b"x = 1\n", b"\xef\xbb\xbfx = 1\n", b"# -*- coding: latin-1 -*-\nx = '\xe9'\n", b"x = '\xff'\n",
    b"\x00\x01loss.backward()", b"x = 1\x00\n", b"# coding: nope\nx = 1\n", b"", b"no newline",
])
def test_a_view_decodes_as_its_bytes_do(data: bytes) -> None:
    def outcome(source):
        try:
            return decode(source, "f.py")
        except Exception as exc:  # noqa: BLE001 - the error is what is compared
            return str(exc)

    assert outcome(memoryview(data)) == outcome(data)
    if b"\x00" in data:
        assert outcome(data) == f"f.py: {BINARY}"


@pytest.mark.parametrize(("arguments", "checks"), [
    ([], True), (["."], True), (["check", "."], True), (["--no-cache", "."], True), (["check"], True),
    (["train.py"], True), (["-"], True), (["--stdin-filename", "train.py", "-"], True),
    (["--stdin-filename", "train.py"], True), (["gone.py"], False), (["--fix", "."], False),
    (["--diff", "train.py"], False), (["--fix", "-"], False), (["--watch", "train.py"], False), (["server"], False),
    (["rule", "ZG001"], False),
    (["--explain", "ZG001"], False), (["--version"], False),
])
def test_a_run_is_started_early_only_when_it_checks_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         arguments: list[str], checks: bool) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("x = 1\n")
    assert checks_code(arguments) is checks


def _jobs_given(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the jobs given to helpers from now on, in order."""
    given: list[str] = []
    real = processes.Helper.submit

    def spy(helper, work, *args):
        given.append(work.__name__)
        return real(helper, work, *args)

    monkeypatch.setattr(processes.Helper, "submit", spy)
    return given


def _early_run(paths: list[str]):
    early = Early.start(["."])
    assert early is not None
    return check_files(paths, Settings(cache=None), early)


@needs_fork
@needs_arena
@pytest.mark.parametrize("apart", [True, False])
def test_an_early_run_finds_what_any_run_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, apart: bool) -> None:
    monkeypatch.chdir(FIXTURES)
    paths = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.py") if "fixes" not in p.parts)
    plain = check_files(paths, Settings(cache=None))
    monkeypatch.setattr(run, "APART_FROM", 0 if apart else float("inf"))
    monkeypatch.setattr(run, "SURVEYS_APART_FROM", 0)
    given = _jobs_given(monkeypatch)
    early = _early_run(paths)
    assert (early.findings, early.files) == (plain.findings, plain.files)
    assert [(e.path, e.reason) for e in early.errors] == [(e.path, e.reason) for e in plain.errors]
    if apart:  # the early helper is given the sources, and scans a share of them
        assert given[:2] == ["warm_up", "_fill"] and "_scan_share" in given
    else:  # it is stopped: a smaller run forks its helpers when it has work for them
        assert given[0] == "warm_up" and "_fill" not in given


@needs_fork
@needs_arena
@pytest.mark.parametrize(("source", "warm"), [
    (b"import torch\n", False), (b"for x in d:\n    loss.backward()\n", True), (b"opt.step(closure)\n", True),
])
@pytest.mark.parametrize("console", [True, False])
def test_an_early_helper_imports_libcst_at_once_on_named_files_only_where_one_may_train(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: bytes, warm: bool, console: bool) -> None:
    """On a folder and on stdin always (stdin is not read before the command line knows it
    is asked to: it may be a terminal, or `-` an option's value); on named files when one of them
    holds a word of training. The helper the console script forks first of all decides so by
    itself, before its first job (no job tells it to); one forked later is told to."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_bytes(source)
    (tmp_path / "other.py").write_bytes(b"x = 1\n")
    monkeypatch.setattr(run, "warm_up", _warm_up_noted)  # in the helpers too: forked from here
    given = _jobs_given(monkeypatch)
    for arguments, expected in ((["other.py", "train.py"], warm), (["-", "--stdin-filename", "other.py"], True),
                                (["."], True), (["other.py", "."], True)):
        given.clear()
        early = Early.start(arguments, fork_first(arguments) if console else None)
        assert early is not None
        try:
            assert early.warm is expected, arguments
            assert early.team.helper(0).submit(_warmed_up).result() is expected, arguments
            assert given == ([] if console or not expected else ["_warm_up_noted"]) + ["_warmed_up"]
        finally:
            early.close()


_WARMED_UP: list[object] = []  # in a helper: the warming up it did


def _warm_up_noted(texts: object) -> None:
    _WARMED_UP.append(texts)


def _warmed_up(texts: object) -> bool:
    return bool(_WARMED_UP)


PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())


@needs_fork
@needs_arena
@pytest.mark.parametrize("sent", [True, False])
def test_an_early_run_of_named_files_finds_what_any_run_finds(monkeypatch: pytest.MonkeyPatch, sent: bool) -> None:
    """Each file of every fixture project named by itself (pre-commit), and given as stdin (an
    editor), checked with an early helper: the findings, errors and loops checked of a run without one. The
    helper is sent the files read (the named one and those beside it) and analyses, or, above
    `SENT_UP_TO`, is stopped."""
    given = _jobs_given(monkeypatch)
    if not sent:
        monkeypatch.setattr(early_module, "SENT_UP_TO", -1)
    analysed = 0
    for project in PROJECTS:
        monkeypatch.chdir(project)
        for name in sorted(str(p.relative_to(project)) for p in project.rglob("*.py")):
            for files in ([name], [Buffer(name, (project / name).read_bytes())]):
                settings = Settings(cache=None, show_loops=True)
                plain = check_files(files, settings, named=[name])
                given.clear()
                early = Early.start(["."])
                assert early is not None
                report = check_files(files, settings, early, named=[name])
                assert (report.findings, report.files, report.loops) == (plain.findings, plain.files, plain.loops), name
                assert [(e.path, e.reason) for e in report.errors] == [(e.path, e.reason) for e in plain.errors]
                assert given[:2] == (["warm_up", "_fill"] if sent else ["warm_up"]), name
                analysed += "_analyse_in_helper" in given
    assert (analysed > 20) if sent else not analysed


@needs_fork
@needs_arena
def test_an_early_run_reports_what_cannot_be_read_or_decoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text((FIXTURES / "ZG001" / "two_independent_loops.py").read_text())
    (tmp_path / "binary.py").write_bytes(b"\x00\x01loss.backward()")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    paths = [*discover(["."]), "gone.py"]
    monkeypatch.setattr(run, "APART_FROM", 0)  # each process decodes what it scans
    early = _early_run(paths)
    plain = check_files(paths, Settings(cache=None))
    assert sorted((e.path, e.reason) for e in early.errors) == sorted((e.path, e.reason) for e in plain.errors)
    assert {e.path for e in early.errors} == {"binary.py", "latin.py", "gone.py"}
    assert early.findings == plain.findings and early.findings


@pytest.mark.parametrize("blocking", [True, False])
@pytest.mark.parametrize(("written", "limit", "expected"), [
    ([b"loss.", b"backward()\n"], 100, b"loss.backward()\n"), ([], 100, b""), ([b"abc", b"def"], 4, b"abcde"),
])
def test_standard_input_is_read_to_its_end_whether_or_not_it_blocks(blocking: bool, written: list[bytes], limit: int,
                                                                     expected: bytes) -> None:
    """A pipe set not to block (as some editors hand it over) is waited on, piece by piece: it
    gave None, which the reading took for its text. Over the limit, a `Head` of it."""
    import threading
    import time

    from zerograd_lint.files.reading import Head, read_stream

    read_end, write_end = os.pipe()
    os.set_blocking(read_end, blocking)

    def write() -> None:
        for part in written:
            time.sleep(0.05)
            os.write(write_end, part)
        os.close(write_end)

    writer = threading.Thread(target=write)
    writer.start()
    with os.fdopen(read_end, "rb") as stream:
        got = read_stream(stream, limit)
    writer.join()
    assert got == expected and isinstance(got, Head) == (len(expected) > limit)


@needs_arena
def test_a_reader_without_an_early_helper_reads_bytes(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\n")
    reader = Reader(None)
    sources = {"a.py": reader.read(str(tmp_path / "a.py"))}
    assert reader.sources(sources) is None and sources == {"a.py": read_source(str(tmp_path / "a.py"))}
