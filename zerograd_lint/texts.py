"""The texts of a run's sources, each decoded when first read.

This process decodes every source (`decode_all`: a file that cannot be decoded is an error, and
leaves the mapping). A helper forked before that inherits the sources undecoded and decodes only
what its jobs read: on a large tree the first helper is forked before anything is decoded, or
even read (it is given the sources later, `fill`), and imports LibCST while this process reads
and decodes. A source is text, or bytes, or a view of the bytes a file was read into
(`zerograd_lint.schedule.arena`), decoded where it lies.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from collections.abc import Collection, Iterator, Mapping

from zerograd_lint.findings import SourceError

Source = str | bytes | memoryview
_NUL = re.compile(b"\x00")  # searched in place
_LINE_END = re.compile(b"\n")
_UTF_8 = ("utf-8", "utf-8-sig")  # as `tokenize.detect_encoding` names them
BINARY = "binary file (contains NUL bytes)"
_SAMPLE = 64  # bytes: enough to tell UTF-16 or UTF-32 from their first characters


class Texts(Mapping[str, str]):
    def __init__(self, sources: Mapping[str, Source]) -> None:
        self._texts: dict[str, str] = {}
        self.fill(sources)

    def fill(self, sources: Mapping[str, Source]) -> None:
        """Hold these sources (a helper forked before they were read is given them so)."""
        self._sources = sources
        self._paths = list(sources)  # those that can be decoded, once `decode_all` knows which
        self._known = set(self._paths)

    def decode_all(self) -> dict[str, SourceError]:
        """Decode every source; those that cannot be leave the mapping, their errors returned."""
        errors = self.decode(self._paths)
        self.drop(errors)
        return errors

    def decode(self, paths: list[str]) -> dict[str, SourceError]:
        """Decode these sources: the errors of those that cannot be (see `drop`)."""
        errors = {}
        for path in paths:
            try:
                self[path]
            except SourceError as exc:
                errors[path] = exc
        return errors

    def drop(self, paths: Collection[str]) -> None:
        """These sources leave the mapping (they cannot be decoded)."""
        if paths:
            self._paths = [path for path in self._paths if path not in paths]
            self._known.difference_update(paths)

    def size(self, path: str) -> int:
        """The length of its source (as bytes, or as text): known without decoding it."""
        return len(self._sources[path])

    def ascii_bytes(self, path: str) -> bytes | None:
        """The file's bytes, when they spell every ASCII letter as its text does: not for a text
        given as such (a buffer, a notebook's code), nor for a file that may declare an encoding
        in its first two lines (UTF-7 spells `ZG` as `+AFoARw-`)."""
        source = self._sources[path]
        if isinstance(source, str) or b"coding" in _first_lines(source):
            return None
        return source if isinstance(source, bytes) else source.tobytes()

    def __getitem__(self, path: str) -> str:
        text = self._texts.get(path)
        if text is None:
            if path not in self._known:
                raise KeyError(path)
            text = self._texts[path] = decode(self._sources[path], path)
        return text

    def __contains__(self, path: object) -> bool:
        return path in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def decode(source: Source, path: str) -> str:
    """A file's text, decoded as Python decodes source files (a coding cookie, a BOM, else UTF-8).
    A file with a NUL byte is binary: in UTF-8, that is a NUL in the text (found fast, in place)."""
    if isinstance(source, str):
        return source
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(_first_lines(source)).readline)
        text = str(source, encoding)
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        if _NUL.search(source):
            raise SourceError(path, _wide(source) or BINARY) from None
        raise SourceError(path, f"cannot decode: {exc}") from None
    if ("\x00" in text) if encoding in _UTF_8 else _NUL.search(source):
        raise SourceError(path, _wide(source) or BINARY)
    return text


def _wide(source: bytes | memoryview) -> str | None:
    """Why a file with NUL bytes is not binary but text Python cannot read: UTF-16 or UTF-32, told
    by its byte order mark, or by the NUL bytes of its first characters (ASCII, as code starts)."""
    start = bytes(source[:_SAMPLE])
    if start.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        wide = "UTF-32"
    elif start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        wide = "UTF-16"
    else:
        width = next((width for width in (2, 4) if _nul_padded(start, width)), None)
        if width is None:
            return None
        wide = f"UTF-{8 * width}"
    return f"{wide} is not supported: Python source must be UTF-8 or declare its encoding"


def _nul_padded(start: bytes, width: int) -> bool:
    """Each character `width` bytes wide, one of them not NUL and the others NUL (little or big
    endian), for two characters at least."""
    start = start[: len(start) // width * width]
    if len(start) < 2 * width:
        return False
    for low in (0, width - 1):
        if all(start[i] for i in range(low, len(start), width)) and not any(
            start[i] for i in range(len(start)) if i % width != low
        ):
            return True
    return False


def _first_lines(source: bytes | memoryview) -> bytes:
    """The first two lines, all that declares an encoding."""
    first = _LINE_END.search(source)
    second = _LINE_END.search(source, first.end()) if first else None
    return bytes(source if second is None else source[: second.end()])
