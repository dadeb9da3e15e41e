"""Cache entries are never trusted (issue 22, items 3 and 4, and the cache's part of 9 and 13).

Whatever an entry holds, and whatever stands in its place (a FIFO, a symlink to `/dev/zero`), the
run's findings equal `--no-cache`, the run writes the entry again, and the next run reads it. Two
builds of one version share no entries; temporary files that killed runs left are pruned.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest
from snippets import STALE

import zerograd_lint
from zerograd_lint.cache import FOLDER, Cache
from zerograd_lint.checker import Result, check_project
from zerograd_lint.runner import checked
from zerograd_lint.settings import Vocabulary

# A step in one file, the loop that runs it twice in another: a run that fell back to checking
# file by file would report nothing.
PROJECT = Path(__file__).parent.parent / "fixtures" / "projects" / "zg001_step_in_engine"
PACKAGE = Path(zerograd_lint.__file__).parent
PAGES = PACKAGE.parent / "docs" / "rules"


def _sources() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(PROJECT.glob("*.py"))}


def _plain(result: Result) -> tuple[dict, dict]:
    """All of a result, the fields findings do not compare by (end, related) too."""
    return (
        {path: [asdict(f) for f in found] for path, found in result.findings.items()},
        {path: error.reason for path, error in result.errors.items()},
    )


@pytest.fixture
def hits(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each `Cache.get` found a result."""
    found: list[bool] = []
    real = Cache.get

    def spied(cache: Cache, *args, **kwargs):
        result = real(cache, *args, **kwargs)
        found.append(result is not None)
        return result

    monkeypatch.setattr(Cache, "get", spied)
    return found


def _first(entry: dict) -> dict:
    return next(finding for found in entry["findings"].values() for finding in found)


def _renamed(entry: dict) -> None:
    entry["findings"] = {"elsewhere.py": [{**f, "path": "elsewhere.py"} for found in entry["findings"].values() for f in found]}


# Entries edited as if by hand or by a broken writer, their digest made again: what is in them is odd.
SIGNED: dict[str, Callable[[dict], None]] = {
    "line is text": lambda e: _first(e).update(line="abc"),
    "line is NaN": lambda e: _first(e).update(line=math.nan),
    "line is infinite": lambda e: _first(e).update(line=math.inf),
    "line is a float": lambda e: _first(e).update(line=8.0),
    "line is true": lambda e: _first(e).update(line=True),
    "line is zero": lambda e: _first(e).update(line=0),
    "line past the file's end": lambda e: _first(e).update(line=10**6, end_line=10**6),
    "column is negative": lambda e: _first(e).update(column=-1),
    "ends before it starts": lambda e: _first(e).update(end_line=1, end_column=1),
    "unknown code": lambda e: _first(e).update(code="ZG999"),
    "another rule's name": lambda e: _first(e).update(name="cleared-before-step"),
    "empty message": lambda e: _first(e).update(message=""),
    "message on two lines": lambda e: _first(e).update(message="stale\nreally"),
    "a fix": lambda e: _first(e).update(fix={"message": "x", "edits": [], "applicability": "unsafe"}),
    "a cell": lambda e: _first(e).update(cell=1),
    "a field too many": lambda e: _first(e).update(severity="low"),
    "a field missing": lambda e: _first(e).pop("name"),
    "finding of another file": lambda e: _first(e).update(path="engine.py"),
    "path not among the run's files": _renamed,
    "related: unknown role": lambda e: _first(e)["related"][0].update(role="bogus"),
    "related: another path": lambda e: _first(e)["related"][0].update(path="elsewhere.py"),
    "related: line zero": lambda e: _first(e)["related"][0].update(line=0),
    "related is not a list": lambda e: _first(e).update(related={}),
    "findings is a list": lambda e: e.update(findings=[]),
    "error of a path not among the run's files": lambda e: e["errors"].update({"elsewhere.py": "syntax error"}),
    "error on two lines": lambda e: e["errors"].update({"train.py": "syntax error\nat 1:1"}),
    "error is not text": lambda e: e["errors"].update({"train.py": 3}),
}
# Edited without making the digest again (item 4: findings emptied, then committed with `git add -f`).
UNSIGNED: dict[str, Callable[[dict], None]] = {
    "findings emptied": lambda e: e.update(findings={path: [] for path in e["findings"]}),
    "findings of another entry": lambda e: e.update(findings={}),
    "no digest": lambda e: e.pop("digest"),
    "a key too many": lambda e: e.update(format=1),
}
RAW: dict[str, bytes] = {
    "nested lists": b"[" * 100_000,  # item 3: RecursionError
    "nested objects": b'{"findings": ' * 100_000,
    "integer of 5,000 digits": b'{"findings": {}, "errors": {}, "digest": ' + b"1" * 5000 + b"}",
    "not UTF-8": b'{"findings": {"\xff": []}, "errors": {}}',
    "empty": b"",
    "null": b"null",
}


def _edited(edit: Callable[[dict], None], sign: bool) -> Callable[[Path], None]:
    def corrupt(path: Path) -> None:
        entry = json.loads(path.read_text(encoding="utf-8"))
        edit(entry)
        if not sign:
            path.write_text(json.dumps(entry), encoding="utf-8")
            return
        from zerograd_lint.cache import entry_text

        path.write_text(entry_text(path.stem, entry.get("findings"), entry.get("errors")), encoding="utf-8")

    return corrupt


def _signed_for_another_entry(path: Path) -> None:
    from zerograd_lint.cache import entry_text

    entry = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(entry_text("another", entry["findings"], entry["errors"]), encoding="utf-8")


CORRUPTIONS = {
    "signed for another entry": _signed_for_another_entry,
    **{f"signed, {name}": _edited(edit, sign=True) for name, edit in SIGNED.items()},
    **{f"unsigned, {name}": _edited(edit, sign=False) for name, edit in UNSIGNED.items()},
    **{name: (lambda raw: lambda path: path.write_bytes(raw))(raw) for name, raw in RAW.items()},
    "padded past the size bound": lambda path: path.write_bytes(path.read_bytes() + b" " * (20 * 2**20)),
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_an_odd_entry_is_a_miss_that_the_run_writes_again(tmp_path: Path, hits: list[bool], corrupt) -> None:
    cache, sources = Cache(tmp_path / FOLDER), _sources()
    expected = _plain(check_project(sources, Vocabulary()))
    assert expected[0]["train.py"]  # the project has a finding to lose
    checked(sources, Vocabulary(), cache)
    entries = sorted((tmp_path / FOLDER).glob("*.json"))
    assert len(entries) == 2  # the whole result, and the chosen files' analysis
    for entry in entries:
        corrupt(entry)
    hits.clear()
    assert _plain(checked(sources, Vocabulary(), cache)) == expected
    assert hits == [False, False]
    hits.clear()
    assert _plain(checked(sources, Vocabulary(), cache)) == expected
    assert hits == [True]  # written again, whole


def test_an_entry_that_is_a_directory_is_a_miss(tmp_path: Path, hits: list[bool]) -> None:
    cache, sources = Cache(tmp_path / FOLDER), _sources()
    expected = _plain(check_project(sources, Vocabulary()))
    checked(sources, Vocabulary(), cache)
    for entry in (tmp_path / FOLDER).glob("*.json"):
        entry.unlink()
        entry.mkdir()
    hits.clear()
    assert _plain(checked(sources, Vocabulary(), cache)) == expected and hits == [False, False]


# ------------------------------------------------------------------ the command line, special files


def _lint(folder: Path, *options: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def limited() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "zerograd_lint", *options, "."], cwd=folder, capture_output=True, text=True,
        timeout=120, preexec_fn=limited if limit else None,  # the timeout only guards against a hang
    )


def _entries(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Each entry's kind, inode and mtime: a run that reads an entry leaves them as they are."""
    return {
        path.name: (stat.S_IFMT(status.st_mode), status.st_ino, status.st_mtime_ns)
        for path in (folder / FOLDER).glob("*.json") for status in [path.lstat()]
    }


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _nested(path: Path) -> None:
    path.write_bytes(b"[" * 100_000)


@pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, /dev/zero and RLIMIT_AS as on Linux")
@pytest.mark.parametrize("replace", [_nested, _fifo, _dev_zero], ids=["nested", "fifo", "symlink to /dev/zero"])
def test_the_cli_reports_what_no_cache_does_and_mends_the_entry(tmp_path: Path, replace) -> None:
    folder = tmp_path / "project"
    shutil.copytree(PROJECT, folder)
    expected = _lint(folder, "--no-cache")
    assert expected.returncode == 1 and "ZG001" in expected.stdout
    _lint(folder)
    for entry in (folder / FOLDER).glob("*.json"):
        entry.unlink()
        replace(entry)
    mended = _lint(folder, limit=2 * 2**30)  # reading /dev/zero must not take the machine's memory
    assert (mended.returncode, mended.stdout, mended.stderr) == (1, expected.stdout, expected.stderr)
    written = _entries(folder)
    assert len(written) == 2 and {kind for kind, _, _ in written.values()} == {stat.S_IFREG}
    again = _lint(folder)
    assert (again.returncode, again.stdout) == (1, expected.stdout)
    assert _entries(folder) == written  # read, not written again


# ------------------------------------------------------------------ the key: the linter's own files


def test_the_key_holds_a_hash_of_the_linters_files(tmp_path: Path, hits: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Cache(tmp_path / FOLDER)
    checked({"train.py": STALE}, Vocabulary(), cache)
    monkeypatch.setattr("zerograd_lint.cache._linter", lambda: "another build of the same version")
    hits.clear()
    checked({"train.py": STALE}, Vocabulary(), cache)
    assert hits == [False, False]


def _build(folder: Path) -> Path:
    """A copy of the linter laid out as a wheel installs it (the rule pages inside)."""
    package = folder / "zerograd_lint"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PAGES, package / "rule_pages", dirs_exist_ok=True)
    return package


def _same_size_and_mtime(path: Path, old: bytes, new: bytes) -> None:
    status = path.stat()
    content = path.read_bytes()
    assert len(old) == len(new) and old in content
    path.write_bytes(content.replace(old, new, 1))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def test_the_fingerprint_is_of_content_not_of_size_and_mtime(tmp_path: Path) -> None:
    from zerograd_lint.cache import fingerprint

    package = _build(tmp_path / "one")
    first = fingerprint(package)
    assert fingerprint(_build(tmp_path / "elsewhere")) == first  # where it is installed is not the build
    _same_size_and_mtime(package / "codes.py", b"RULES", b"RULEZ")
    second = fingerprint(package)
    assert second != first
    _same_size_and_mtime(package / "rule_pages" / "ZG001.md", b"ZG001", b"ZG00I")
    assert fingerprint(package) != second


def test_a_checkout_fingerprints_its_rule_pages_in_docs(tmp_path: Path) -> None:
    from zerograd_lint.cache import fingerprint

    package = tmp_path / "zerograd_lint"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "rule_pages"))
    shutil.copytree(PAGES, tmp_path / "docs" / "rules")
    first = fingerprint(package)
    _same_size_and_mtime(tmp_path / "docs" / "rules" / "ZG002.md", b"ZG002", b"ZG00Z")
    assert fingerprint(package) != first


def test_two_builds_of_one_version_share_no_entries(tmp_path: Path) -> None:
    project, build = tmp_path / "project", tmp_path / "build"
    project.mkdir()
    (project / "train.py").write_text(STALE)
    package = _build(build)
    (package / "codes.py").write_text((package / "codes.py").read_text() + "# another build\n")
    first = _lint(project)
    names = set(_entries(project))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    env["PYTHONPATH"] = str(build)  # before the installed copy on `sys.path`
    second = subprocess.run([sys.executable, "-m", "zerograd_lint", "."], cwd=project, capture_output=True,
                            text=True, timeout=120, env=env)
    assert first.stdout == second.stdout and first.returncode == second.returncode == 1
    assert len(names) == 2 and len(set(_entries(project)) - names) == 2


# ------------------------------------------------------------------ temporary files (item 13)


def test_temporaries_that_killed_runs_left_are_pruned(tmp_path: Path) -> None:
    folder = tmp_path / FOLDER
    checked({"train.py": STALE}, Vocabulary(), Cache(folder))
    killed, writing = folder / ".entry-killed.tmp", folder / ".entry-writing.tmp"
    for temporary in (killed, writing):
        temporary.write_text('{"findings": {"train.py": [')
    an_hour_ago = time.time() - 3600
    os.utime(killed, (an_hour_ago, an_hour_ago))
    checked({"train.py": STALE + "\n"}, Vocabulary(), Cache(folder))  # a miss: written, then pruned
    assert not killed.exists()
    assert writing.exists()  # a concurrent run's, still being written


def test_a_write_that_fails_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    result = checked({"train.py": STALE}, Vocabulary(), Cache(tmp_path / FOLDER))
    assert [f.code for f in result.findings["train.py"]] == ["ZG001"]
    assert not list((tmp_path / FOLDER).glob(".entry-*"))
