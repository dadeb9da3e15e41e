"""Reading a file to check: a regular file only, and no larger than a limit.

A named pipe blocks whoever opens it until something writes to it, and a device such as
`/dev/zero` never ends: a path that is not a regular file is not opened at all (`open_source`
looks at it first, then opens it without blocking and looks again at what it opened). A file is
checked only up to `LIMIT` bytes of Python: checking takes about 6 s and 70 MB per megabyte of
source, and no training script comes near it (they hold tens of kilobytes; torch's largest
hand-written module about 1.4 MB; generated API modules reach 6 MB). A notebook's file may be
larger, up to `NOTEBOOK_LIMIT` (its outputs, images among them, count too), as long as its code
cells hold no more than `LIMIT`. The text of stdin and of an editor's buffer are held to the same
limits (`check_size`). What is refused is a `NotRead`, an `OSError` whose message is the reason.
"""

from __future__ import annotations

import math
import os
import select
import stat
from typing import BinaryIO, TextIO

LIMIT = 10_000_000  # bytes of Python
NOTEBOOK_LIMIT = 100_000_000  # bytes of a notebook's file

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
_KINDS = (
    (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)


class NotRead(OSError):
    """A file that is not read: it is not a regular file, or it is too large. The message says which."""


class Head(bytes):
    """The first bytes of a stream that holds more than the limit (how much more is not known):
    what is left of it is still to be read."""


def open_source(path: str, limit: int = LIMIT) -> tuple[int, int]:
    """A descriptor open on the regular file at `path`, and its size. Raises `NotRead` for any
    other file or one over `limit` bytes, `OSError` for one that cannot be opened."""
    _check(os.stat(path), limit)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        _check(info, limit)  # it may have been replaced in between
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_source(path: str, limit: int = LIMIT) -> bytes:
    """The bytes of the regular file at `path` (see `open_source`), read to its end (`open`, `fstat`
    and one `read`: a third cheaper than `Path.read_bytes` on a tree of small files). A file that
    gave its whole size and no more has ended; one that grew or shrank is read on until a read
    returns nothing, or until it holds more than `limit`."""
    fd, size = open_source(path, limit)
    try:
        chunk = os.read(fd, size + 1)
        if len(chunk) == size:
            return chunk
        chunks, total = [chunk], len(chunk)
        while total <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - total))):
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise too_large(None, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_stream(stream: BinaryIO | TextIO, limit: int = LIMIT) -> bytes:
    """What `stream` holds (text: as UTF-8), or a `Head` of it: its first `limit` + 1 bytes (or
    characters), the rest left unread. A stream that does not block (a pipe set `O_NONBLOCK` by
    whoever made it) is waited on until it ends, as one that blocks would be."""
    parts: list[str | bytes] = []
    size = 0
    while size <= limit:
        part = stream.read(limit + 1 - size)
        if part is None:  # nothing yet, from a stream that does not block
            select.select([stream], [], [])
            continue
        if not part:
            break
        parts.append(part)
        size += len(part)
    content = "".join(parts) if parts and isinstance(parts[0], str) else b"".join(parts)  # type: ignore[arg-type]
    data = content.encode() if isinstance(content, str) else content
    return Head(data) if size > limit else data


def check_size(source: str | bytes | memoryview, limit: int = LIMIT, holder: str = "") -> None:
    """Raise `NotRead` if `source` (text: as UTF-8) holds more than `limit` bytes. `holder`: what
    holds them, when it is not the file itself ("its code cells hold ")."""
    if isinstance(source, Head):
        raise too_large(None, limit, holder)
    if isinstance(source, str):
        if len(source) * 4 <= limit:  # no character takes more than 4 bytes
            return
        size = len(source.encode("utf-8", "surrogatepass"))
    else:
        size = len(source)
    if size > limit:
        raise too_large(size, limit, holder)


def too_large(size: int | None, limit: int, holder: str = "") -> NotRead:
    """`size`: None when it is only known to be over `limit`."""
    held = f"more than {_megabytes(limit)}" if size is None else _megabytes(size)
    return NotRead(f"too large to check ({holder}{held} MB; the limit is {_megabytes(limit)} MB)")


def _check(info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "a special file")
        raise NotRead(f"not a regular file ({kind}): only regular files are checked")
    if info.st_size > limit:
        raise too_large(info.st_size, limit)


def _megabytes(size: int) -> str:
    """In MB (10^6 bytes), rounded up to a tenth, without a trailing '.0'."""
    return f"{math.ceil(size / 100_000) / 10:.1f}".removesuffix(".0")
