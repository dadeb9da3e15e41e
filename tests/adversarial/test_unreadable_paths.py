"""What cannot be read is reported, with its real reason, and the rest is checked (issue 22, item 11).

An unreadable file named on the command line was a usage error of click's (`Path 'x.py' is not
readable`) and no other file was checked; a folder that cannot be searched was skipped without a
word; a file inside such a folder was "no such file or directory" (or the search for
pyproject.toml failed first). Each is now one line `path: reason`, exit 2, the other files
checked. Each case runs with real permissions (not as root, which reads whatever a mode says) and
with the same refusals simulated (anywhere).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE

from zerograd_lint.cli import main

HOW = [
    pytest.param("chmod", marks=pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                                                   reason="needs POSIX permissions, and a user they apply to")),
    "simulated",
]


class Denier:
    """Makes files unreadable and folders unsearchable: by their mode, or by making the system
    calls that reach them fail as the kernel would."""

    def __init__(self, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.how, self.monkeypatch = how, monkeypatch
        self.files: set[str] = set()
        self.folders: set[str] = set()
        self.modes: list[tuple[Path, int]] = []
        if how == "simulated":
            self._patch()

    def file(self, path: Path) -> None:
        self._chmod(path, 0o000)
        self.files.add(str(path.resolve()))

    def folder(self, path: Path) -> None:
        self._chmod(path, 0o000)
        self.folders.add(str(path.resolve()))

    def restore(self) -> None:
        for path, mode in reversed(self.modes):
            path.chmod(mode)

    def _chmod(self, path: Path, mode: int) -> None:
        if self.how == "chmod":
            self.modes.append((path, path.stat().st_mode))
            path.chmod(mode)

    def _inside(self, path) -> bool:
        if isinstance(path, int):
            return False
        absolute = os.path.abspath(os.fspath(path))
        return any(absolute.startswith(folder + os.sep) for folder in self.folders)

    def _patch(self) -> None:
        real_open, real_stat, real_scandir, real_access = os.open, os.stat, os.scandir, os.access

        def deny(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))

        def unreadable(path) -> bool:
            return self._inside(path) or (not isinstance(path, int) and os.path.abspath(path) in self.files)

        def fake_open(path, *args, **kwargs):
            return deny(path) if unreadable(path) else real_open(path, *args, **kwargs)

        def fake_stat(path, *args, **kwargs):
            return deny(path) if self._inside(path) else real_stat(path, *args, **kwargs)

        def fake_scandir(path="."):
            if not isinstance(path, int) and (os.path.abspath(path) in self.folders or self._inside(path)):
                deny(path)
            return real_scandir(path)

        def fake_access(path, mode, *args, **kwargs):
            return False if unreadable(path) else real_access(path, mode, *args, **kwargs)

        fakes = {"open": fake_open, "stat": fake_stat, "scandir": fake_scandir, "access": fake_access}
        for name, fake in fakes.items():
            self.monkeypatch.setattr(os, name, fake)


@pytest.fixture(params=HOW)
def deny(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Denier]:
    for name in ("a.py", "secret.py", "b.py", "locked/c.py", "closed/d.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(STALE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    denier = Denier(request.param, monkeypatch)
    yield denier
    denier.restore()


def _lint(*args: str):
    return CliRunner().invoke(main, ["--isolated", "--no-cache", *args], catch_exceptions=False)


def _reported(stdout: str) -> list[str]:
    """The files with findings (a file not checked is a diagnostic of stdout too, `not-checked`)."""
    return sorted(line.split(":")[0] for line in stdout.splitlines() if ": ZG" in line)


def test_an_unreadable_file_named_is_one_line_and_the_others_are_checked(deny: Denier) -> None:
    deny.file(Path("secret.py"))
    result = _lint("a.py", "secret.py", "b.py")
    assert "zerograd-lint: error: secret.py: cannot read: Permission denied" in result.stderr.splitlines()
    assert "not readable" not in result.stderr
    assert _reported(result.stdout) == ["a.py", "b.py"]
    assert result.exit_code == 2


def test_a_folder_that_cannot_be_searched_is_reported(deny: Denier) -> None:
    deny.folder(Path("locked"))
    result = _lint(".")
    assert "zerograd-lint: error: locked: cannot search this folder: Permission denied" in result.stderr.splitlines()
    assert _reported(result.stdout) == ["a.py", "b.py", "closed/d.py", "secret.py"]
    assert result.exit_code == 2


def test_a_file_in_a_folder_that_cannot_be_searched_gets_the_real_reason(deny: Denier) -> None:
    deny.folder(Path("closed"))
    result = _lint("closed/d.py", "a.py")
    assert "zerograd-lint: error: closed/d.py: cannot read: Permission denied" in result.stderr.splitlines()
    assert "no such file" not in result.stderr
    assert _reported(result.stdout) == ["a.py"]
    assert result.exit_code == 2
