"""Writing a fixed file: atomically, with its permissions, never over a file that changed, and a
crash at any point leaves the original intact and no temporary file behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from zerograd_lint.cli import main
from zerograd_lint.fix import output
from zerograd_lint.fix.output import NotWritten, unified_diff, write_atomically

ORIGINAL = b"for x in data:\n    loss.backward()\n    optimizer.step()\n"
FIXED = ORIGINAL + b"    optimizer.zero_grad()\n"


@pytest.fixture
def train(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_bytes(ORIGINAL)
    path.chmod(0o640)
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(output.TEMPORARY_SUFFIX))


def test_the_file_is_replaced_and_keeps_its_permissions(train: Path) -> None:
    write_atomically(str(train), ORIGINAL, FIXED)
    assert train.read_bytes() == FIXED
    assert stat.S_IMODE(train.stat().st_mode) == 0o640
    assert leftovers(train.parent) == []


def test_a_symbolic_link_stays_a_link_to_the_fixed_file(train: Path) -> None:
    link = train.parent / "link.py"
    link.symlink_to(train.name)
    write_atomically(str(link), ORIGINAL, FIXED)
    assert link.is_symlink() and train.read_bytes() == FIXED


def test_a_file_that_changed_since_it_was_checked_is_left_alone(train: Path) -> None:
    train.write_bytes(ORIGINAL + b"# edited meanwhile\n")
    with pytest.raises(NotWritten, match="it changed on disk while it was being checked"):
        write_atomically(str(train), ORIGINAL, FIXED)
    assert train.read_bytes() == ORIGINAL + b"# edited meanwhile\n"


def test_a_read_only_file_is_left_alone(train: Path) -> None:
    train.chmod(0o444)
    with pytest.raises(NotWritten, match="the file is read-only"):
        write_atomically(str(train), ORIGINAL, FIXED)
    assert train.read_bytes() == ORIGINAL


@pytest.mark.parametrize("crash", [KeyboardInterrupt, SystemExit, OSError])
@pytest.mark.parametrize("where", ["fsync", "chmod", "replace"])
def test_a_crash_midway_leaves_the_original_intact(train: Path, monkeypatch: pytest.MonkeyPatch,
                                                   where: str, crash: type[BaseException]) -> None:
    def crashing(*args, **kwargs):
        raise crash()

    monkeypatch.setattr(os, where, crashing)
    with pytest.raises(NotWritten if crash is OSError else crash):
        write_atomically(str(train), ORIGINAL, FIXED)
    monkeypatch.undo()
    assert train.read_bytes() == ORIGINAL
    assert leftovers(train.parent) == []


def test_a_crash_while_writing_the_bytes_leaves_the_original_intact(train: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    real_fdopen = os.fdopen

    class HalfWay:
        def __init__(self, handle):
            self.file = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, data):
            self.file.write(data[: len(data) // 2])
            self.file.flush()
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: HalfWay(real_fdopen(fd, mode)))
    with pytest.raises(KeyboardInterrupt):
        write_atomically(str(train), ORIGINAL, FIXED)
    assert train.read_bytes() == ORIGINAL
    assert leftovers(train.parent) == []


def test_the_command_line_reports_a_file_it_could_not_write_as_it_was(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_bytes(ORIGINAL)
    monkeypatch.chdir(tmp_path)
    real_replace = os.replace

    def replace(source, target):
        if os.path.basename(target) == "b.py":
            raise PermissionError(13, "Permission denied")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    result = CliRunner().invoke(main, ["--isolated", "--fix", "a.py", "b.py"], catch_exceptions=False)
    assert result.exit_code == 2
    assert (tmp_path / "a.py").read_bytes() == FIXED and (tmp_path / "b.py").read_bytes() == ORIGINAL
    assert result.stdout.startswith("b.py:1:1: ZG001 ")  # still there, where it was
    assert "zerograd-lint: error: b.py: cannot write the fixes: Permission denied" in result.stderr
    assert "Fixed 1 finding in 1 file, 1 remaining (2 files checked; 1 file could not be written)." in result.stderr
    assert leftovers(tmp_path) == []


def test_the_diff_names_a_missing_final_line_break() -> None:
    diff = unified_diff("t.py", "a\nb", "a\nb\nc")
    assert diff.endswith("-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n")


def test_the_diff_decodes_as_python_does() -> None:
    original = "# -*- coding: latin-1 -*-\nx = 'é'\n".encode("latin-1")
    assert "+y = 'é'\n" in unified_diff("t.py", original, original + "y = 'é'\n".encode("latin-1"))
