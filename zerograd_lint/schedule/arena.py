"""Files read once into memory that every helper sees, even one forked before the reading.

The console script forks a run's first helper before it reads anything, so that the helper
imports LibCST while this process reads (see `zerograd_lint.schedule.early`). The files are then read
into an `Arena`:
an anonymous file in memory (Linux's `memfd_create`), which the kernel fills straight from the
page cache (`sendfile`: no copy through this process), and which this process and its helpers
map. Each file's bytes are a `memoryview` of the map: decoded in place, never copied.

Each file is read once, by this process: a helper never reads the disk, so every process of a run
sees the same bytes, even of a file written to while the run reads it.
"""

from __future__ import annotations

import mmap
import os

_MOST = 0x7FFFF000  # what one `sendfile` moves at most, on Linux


class Arena:
    """Files' bytes, one after another, in memory shared with the helpers forked from here."""

    def __init__(self, fd: int | None = None, size: int = 0) -> None:
        """A new arena; raises `OSError` (or `AttributeError`, off Linux) where there is no such
        memory. (`fd`, `size`: the arena a helper inherited, as it was pickled.)"""
        self._fd = os.memfd_create("zerograd-lint", os.MFD_CLOEXEC) if fd is None else fd
        self.size = size
        self._map: mmap.mmap | None = None

    def __reduce__(self) -> tuple:
        """Pickled for a helper as its file descriptor, which a helper forked from here has too."""
        return Arena, (self._fd, self.size)

    def read(self, path: str) -> tuple[int, int]:
        """Read a regular file to its end, as `zerograd_lint.files.reading.read_source` would (raises
        `OSError`, its `NotRead` for a file that is not regular or holds more than its `LIMIT`):
        where its bytes start, and how many."""
        from zerograd_lint.files.reading import LIMIT, open_source, too_large  # after the early fork

        assert self._map is None, "read after the arena was mapped"
        limit = LIMIT
        start = self.size
        fd, size = open_source(path, limit)
        try:  # one byte more than its size is asked for: a file that gave its size has ended
            want = min(size + 1, _MOST)
            sent = os.sendfile(self._fd, fd, None, want)
            self.size += sent
            if sent != size or want == _MOST:  # it grew, shrank, or is larger than one call moves
                while self.size - start <= limit and (
                    sent := os.sendfile(self._fd, fd, None, min(_MOST, limit + 1 - (self.size - start)))
                ):
                    self.size += sent
            if self.size - start > limit:
                raise too_large(None, limit)
        except BaseException:
            os.lseek(self._fd, start, os.SEEK_SET)  # what was written of it is written over
            os.ftruncate(self._fd, start)  # and its memory given back
            self.size = start
            raise
        finally:
            os.close(fd)
        return start, self.size - start

    def write(self, data: bytes) -> tuple[int, int]:
        """Put these bytes in: where they start, and how many."""
        start = self.size
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
            self.size += written
        return start, len(data)

    def close(self) -> None:
        """Close its file; the views of it stay valid."""
        os.close(self._fd)

    def view(self, start: int, length: int) -> memoryview:
        """The bytes read there (the arena is mapped at the first view: read no more after it)."""
        if self._map is None:
            if not self.size:
                return memoryview(b"")
            self._map = mmap.mmap(self._fd, self.size, prot=mmap.PROT_READ)
        return memoryview(self._map)[start : start + length]

    def views(self, places: dict[str, tuple[int, int]]) -> dict[str, memoryview]:
        return {path: self.view(*place) for path, place in places.items()}
