"""A save that lands while `--fix` writes a file is kept (issue 22, item 1).

`write_atomically` reads the file, writes the fixed bytes to a temporary file, flushes it to disk
and renames it over the file. A save landing between that read and the rename was overwritten
("Fixed 1 finding"), the user's edit lost. Here the save is made to land deterministically at the
worst moment: while the temporary file is flushed to disk, just before the rename.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from zerograd_lint.cli import main
from zerograd_lint.fix import output
from zerograd_lint.fix.output import NotWritten, write_atomically

ORIGINAL = b"for x in data:\n    loss.backward()\n    optimizer.step()\n"
FIXED = ORIGINAL + b"    optimizer.zero_grad()\n"
USERS_LINE = b"# saved by the user while the fix was being written\n"


def _append(path: Path) -> bytes:
    with open(path, "ab") as handle:
        handle.write(USERS_LINE)
    return ORIGINAL + USERS_LINE


def _rename_over(path: Path) -> bytes:
    """An editor's save: a new file renamed over the old one (here of the same size)."""
    new = path.with_name(path.name + ".saving")
    new.write_bytes(ORIGINAL.replace(b"data", b"DATA"))
    os.replace(new, path)
    return ORIGINAL.replace(b"data", b"DATA")


def _touch(path: Path) -> bytes:
    """A save of the same bytes: only its time changes."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    return ORIGINAL


SAVES = {"appended": _append, "renamed over": _rename_over, "saved unchanged": _touch}


def _save_during_fsync(monkeypatch: pytest.MonkeyPatch, target: Path, save) -> list[bytes]:
    """Make `save(target)` happen when the temporary file is flushed to disk: what it saved."""
    real_fsync, saved = os.fsync, []

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if not saved:
            saved.append(save(target))

    monkeypatch.setattr(os, "fsync", fsync)
    return saved


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(output.TEMPORARY_SUFFIX))


@pytest.mark.parametrize("save", SAVES.values(), ids=SAVES.keys())
def test_a_save_landing_just_before_the_rename_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, save) -> None:
    train = tmp_path / "train.py"
    train.write_bytes(ORIGINAL)
    saved = _save_during_fsync(monkeypatch, train, save)
    with pytest.raises(NotWritten, match="^it changed on disk while it was being checked$"):
        write_atomically(str(train), ORIGINAL, FIXED)
    assert train.read_bytes() == saved[0]
    assert _leftovers(tmp_path) == []


def test_the_users_line_survives_a_fix_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_bytes(ORIGINAL)
    monkeypatch.chdir(tmp_path)
    real_fsync, calls = os.fsync, []

    def fsync(fd: int) -> None:  # b.py is written second: the user saves it meanwhile
        real_fsync(fd)
        calls.append(fd)
        if len(calls) == 3:  # a.py's temporary file, a.py's folder, then b.py's temporary file
            _append(tmp_path / "b.py")

    monkeypatch.setattr(os, "fsync", fsync)
    result = CliRunner().invoke(main, ["--isolated", "--no-cache", "--fix", "a.py", "b.py"], catch_exceptions=False)
    assert (tmp_path / "a.py").read_bytes() == FIXED
    assert (tmp_path / "b.py").read_bytes() == ORIGINAL + USERS_LINE
    assert "zerograd-lint: error: b.py: cannot write the fixes: it changed on disk while it was being checked" \
        in result.stderr
    assert "1 file could not be written" in result.stderr
    assert result.exit_code == 2
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero on this platform (Windows)")
def test_a_file_replaced_by_a_device_is_not_read_in_full(tmp_path: Path) -> None:
    """Between the check and the write, the file became a link to /dev/zero: it is declined, not
    read to the end of memory."""
    train = tmp_path / "train.py"
    train.symlink_to("/dev/zero")
    with pytest.raises(NotWritten):
        write_atomically(str(train), ORIGINAL, FIXED)
