"""What becomes of a fixed source: a unified diff (`--diff`), or the file replaced (`--fix`).

A file is replaced atomically: the new bytes go to a temporary file beside it (same folder, so
the same filesystem), which gets the file's permission bits, is flushed to disk, then renamed
over the file. An interrupted run leaves the old file or the new one, never a mix; a temporary
file left by a run that was killed outright is named `.<name>.<random>.zerograd-lint`, which is
never checked. A symbolic link is followed: its target is replaced, the link stays a link. The
file is read again just before, and once more once the temporary file is on disk, just before
the rename (the same file, size, time and bytes): if it changed since it was checked, it is left
alone, so that a save landing meanwhile is kept; so is a file its user may not write (renaming
over it would work all the same). Owner and group are those of whoever runs the fix, as with any
editor that saves this way.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import stat
import tempfile
import tokenize
from collections.abc import Callable

from zerograd_lint.files.reading import NotRead, open_source
from zerograd_lint.fix.rewrite import lines_of

TEMPORARY_SUFFIX = ".zerograd-lint"
_NO_NEWLINE = "\\ No newline at end of file\n"
_WRITABLE = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
_CHANGED = "it changed on disk while it was being checked"


class NotWritten(Exception):
    """The fixed source was not written; the message says why."""


def unified_diff(path: str, original: str | bytes, fixed: str | bytes) -> str:
    """`--- a/path` / `+++ b/path` hunks, as git, ruff and black print them."""
    hunks = difflib.unified_diff(lines_of(decoded(original)), lines_of(decoded(fixed)), f"a/{path}", f"b/{path}")
    out = []
    for line in hunks:
        out.append(line)
        if not line.endswith(("\n", "\r")):  # the last line of a file without a final line break
            out.append("\n" + _NO_NEWLINE)
    return "".join(out)


def decoded(source: str | bytes) -> str:
    """The text of a source, decoded as Python decodes it (a coding cookie, a BOM, else UTF-8)."""
    return codec(source)[0]


def codec(source: str | bytes) -> tuple[str, Callable[[str], str | bytes]]:
    """The text of a source, and how to turn text back into a source of the same kind (bytes in
    the encoding Python reads it in, a BOM kept)."""
    if isinstance(source, str):
        return source, lambda text: text
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return source.decode(encoding), lambda text: text.encode(encoding)


def write_atomically(path: str, original: bytes, fixed: bytes) -> None:
    """Replace the file at `path`, which must still hold `original`, with `fixed`."""
    target = os.path.realpath(path)
    try:
        checked = _unchanged(target, original)
        mode = stat.S_IMODE(checked.st_mode)
        if not mode & _WRITABLE or not os.access(target, os.W_OK):  # a rename would replace it all the same
            raise NotWritten("the file is read-only")
        folder, name = os.path.split(target)
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=TEMPORARY_SUFFIX, dir=folder)
    except OSError as exc:
        raise NotWritten(exc.strerror or str(exc)) from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(fixed)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        if _identity(_unchanged(target, original)) != _identity(checked):  # a save landed while it was written
            raise NotWritten(_CHANGED)
        os.replace(temporary, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise NotWritten(exc.strerror or str(exc)) from None
        raise
    _sync_folder(folder)


def _unchanged(path: str, original: bytes) -> os.stat_result:
    """What the file at `path` is, if it still holds `original`; raises `NotWritten` if not (a file
    that is no longer a regular one, or is larger, is not read to its end), `OSError`."""
    try:
        fd, size = open_source(path, limit=len(original))
    except NotRead:  # no longer a regular file, or larger
        raise NotWritten(_CHANGED) from None
    try:
        info = os.fstat(fd)
        if size != len(original) or os.read(fd, size + 1) != original:
            raise NotWritten(_CHANGED)
        return info
    finally:
        os.close(fd)


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def _sync_folder(folder: str) -> None:
    """Make the rename itself durable, where the system allows opening a folder."""
    with contextlib.suppress(OSError, AttributeError):
        handle = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
