"""The texts of a run's sources, each decoded when first read.

This process decodes every source (`decode_all`: a file that cannot be decoded is an error, and
leaves the mapping). A helper forked before that inherits the sources undecoded and decodes only
what its jobs read: on a large tree the first helper is forked before anything is decoded, and
imports LibCST while this process decodes.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Iterator, Mapping

from zerograd_lint.findings import SourceError


class Texts(Mapping[str, str]):
    def __init__(self, sources: Mapping[str, str | bytes]) -> None:
        self._sources = sources
        self._texts: dict[str, str] = {}
        self._paths = list(sources)  # those that can be decoded, once `decode_all` knows which
        self._known = set(self._paths)

    def decode_all(self) -> dict[str, SourceError]:
        """Decode every source; those that cannot be leave the mapping, their errors returned."""
        errors = {}
        for path in self._paths:
            try:
                self[path]
            except SourceError as exc:
                errors[path] = exc
        if errors:
            self._paths = [path for path in self._paths if path not in errors]
            self._known.difference_update(errors)
        return errors

    def ascii_bytes(self, path: str) -> bytes | None:
        """The file's bytes, when they spell every ASCII letter as its text does: not for a text
        given as such (a buffer, a notebook's code), nor for a file that may declare an encoding
        in its first two lines (UTF-7 spells `ZG` as `+AFoARw-`)."""
        source = self._sources[path]
        if not isinstance(source, bytes):
            return None
        first = source.find(b"\n")
        second = source.find(b"\n", first + 1) if first != -1 else -1
        return None if b"coding" in (source if second == -1 else source[:second]) else source

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


def decode(source: str | bytes, path: str) -> str:
    """A file's text, decoded as Python decodes source files (a coding cookie, a BOM, else UTF-8)."""
    if isinstance(source, str):
        return source
    if b"\x00" in source:
        raise SourceError(path, "binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise SourceError(path, f"cannot decode: {exc}") from None
