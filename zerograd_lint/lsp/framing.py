"""The client's messages as the server reads them: LSP's framing, checked.

A message is header lines (`Content-Length: N` among them), a blank line, then N bytes of JSON.
pygls 2's stdio loop reads them with `readline()` and `read(n)` and trusts what it reads: a length
of 10**12 bytes is allocated at once (MemoryError), and a header it does not understand is
skipped, so one wrong length puts every later message out of step and the server answers nothing
again, without a word. `FramedStdin` is the stdin given to pygls's `start_io` instead (the same
two methods, over the real stdin), and ends the connection with `FramingError` on:

- a header line that is not `name: value` ending in CRLF, or a blank line with no Content-Length
  before it (a message without one, or the rest of a message whose length was too short);
- a Content-Length that is not a number, or over `MAX_MESSAGE`, or given twice;
- a body holding one whole JSON value followed by more (a length too long: the next message went
  into it), seen as soon as the next message's header has arrived, whether or not the length is
  ever reached;
- the input ending inside a message.

Once the framing is lost the next message cannot be found for sure, so the server does as
rust-analyzer and vscode-languageserver do: it closes the connection (one line on stderr, a
non-zero exit), and the editor restarts it. A body that is framed correctly but is not JSON stays
pygls's to report, and the server goes on.
"""

from __future__ import annotations

import json
import re
from typing import BinaryIO

MAX_MESSAGE = 64 * 1024 * 1024  # bytes of one message's JSON: far above what the analysis takes in a document
MAX_HEADER_LINE = 8 * 1024
CHUNK = 1024 * 1024

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]"  # what a header's name is made of (RFC 9110)
_HEADER = re.compile(rb"(" + _TOKEN + rb"+):[ \t]*([^\r\n]*?)[ \t]*\r\n")
_NAME_SO_FAR = re.compile(_TOKEN + rb"*")
_HEADER_START = re.compile(r"\s*[!#$%&'*+\-.^_`|~0-9A-Za-z]+:")
_WHITESPACE = re.compile(r"\s*")
_END_OF_HEADER = b"\r\n\r\n"


class FramingError(Exception):
    """The client's messages cannot be told apart any more; the message says why, in one line."""


class FramedStdin:
    """`readline()` and `read(n)` for pygls's loop, over `stream` (stdin's buffer), checking the framing."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.pending = bytearray()  # read from the stream, not yet handed to pygls
        self.length: int | None = None  # the Content-Length of the message whose header is being read

    def readline(self) -> bytes:
        """The next header line (Content-Length spelt as pygls matches it), or b"" when the input
        ends between two messages."""
        while (end := self.pending.find(b"\n")) < 0:
            self._check_line_so_far()
            if not self._fill():
                if self.pending or self.length is not None:
                    raise FramingError("a message cut short: the input ended inside its header")
                return b""
        line = bytes(self.pending[: end + 1])
        del self.pending[: end + 1]
        return self._header(line)

    def read(self, size: int) -> bytes:
        """The body of the message whose header was just read: `size` bytes."""
        self.length = None
        checked = 0
        while True:
            have = min(len(self.pending), size)
            if self.pending.find(_END_OF_HEADER, max(0, checked - 3), have) >= 0:
                _check_not_overrun(self.pending[:have], size, complete=False)
            checked = have
            if have == size:
                break
            if not self._fill():
                raise FramingError(f"a message cut short: the input ended {size - have} bytes before "
                                   f"its Content-Length ({size})")
        body = bytes(self.pending[:size])
        del self.pending[:size]
        if not body.rstrip().endswith((b"}", b"]")):  # as every JSON-RPC message does
            _check_not_overrun(body, size, complete=True)
        if self.pending:  # what follows is here already: it must be able to start a header
            self._check_line_so_far(after_body=True)
        return body

    def _header(self, line: bytes) -> bytes:
        if line == b"\r\n":
            if self.length is None:
                raise FramingError("a message without a Content-Length header")
            if self.length == 0:  # pygls skips an empty message; so does this
                self.length = None
            return line
        match = _HEADER.fullmatch(line)
        if match is None:
            raise FramingError(f"a malformed header line: {_shown(line)}")
        name, value = match.groups()
        if name.lower() != b"content-length":
            return line
        if self.length is not None:
            raise FramingError("a message with two Content-Length headers")
        if not value.isdigit():
            raise FramingError(f"a Content-Length that is not a number of bytes: {_shown(value)}")
        if len(value) > len(str(MAX_MESSAGE)) or int(value) > MAX_MESSAGE:
            shown = value[:20].decode() + ("..." if len(value) > 20 else "")
            raise FramingError(f"a message of {shown} bytes (Content-Length), over the limit of "
                               f"{MAX_MESSAGE >> 20} MiB")
        self.length = int(value)
        return b"Content-Length: %d\r\n" % self.length

    def _check_line_so_far(self, after_body: bool = False) -> None:
        """Fail now, rather than wait for the rest of a line that cannot be a header anyway (the
        client may be waiting for an answer and send nothing more)."""
        line = self.pending[: self.pending.find(b"\n") + 1 or len(self.pending)]
        name = _NAME_SO_FAR.match(line).end()
        if line in (b"\r", b"\r\n"):
            return
        if name < len(line) and (name == 0 or line[name] != ord(":")):
            if after_body:
                raise FramingError(f"a Content-Length shorter than its message's JSON: {_shown(line)} follows it")
            raise FramingError(f"a malformed header line: {_shown(line)}")
        if len(line) > MAX_HEADER_LINE:
            raise FramingError(f"a header line longer than {MAX_HEADER_LINE} bytes")

    def _fill(self) -> bool:
        chunk = self.stream.read1(CHUNK)
        self.pending += chunk
        return bool(chunk)


def _check_not_overrun(content: bytes | bytearray, size: int, complete: bool) -> None:
    """Fail if `content` (a message's body, or its start when not `complete`) holds one whole JSON
    value and then more: anything, or, before the body is complete, the start of a header."""
    text = content.decode("utf-8", "replace")
    try:
        _, end = json.JSONDecoder().raw_decode(text, _WHITESPACE.match(text).end())
    except (ValueError, RecursionError):  # not (yet) one whole JSON value: pygls reports it if it never is
        return
    if text[end:].strip() and (complete or _HEADER_START.match(text, end)):
        raise FramingError(f"a Content-Length ({size}) longer than its message's JSON: "
                           f"{_shown(text[end:].encode())} follows it")


def _shown(data: bytes | bytearray) -> str:
    return repr(bytes(data[:40])) + (" ..." if len(data) > 40 else "")
