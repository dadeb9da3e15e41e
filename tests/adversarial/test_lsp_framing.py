"""The language server against a client that breaks LSP's framing (issue 22, item 7): `zerograd-lint
server` in a real subprocess, fed raw bytes over stdin.

A clean initialize, shutdown, exit ends with exit 0 and nothing on stderr. A message whose
framing is wrong (a Content-Length too large to hold, too short, too long, negative, not a number,
or missing) ends the server with exit 2 and one line on stderr, as soon as it can be seen, even
while the client waits for an answer it will never get: never a MemoryError, never a server that
runs on answering nothing. A message framed correctly whose JSON is broken is still survived.
The timeout only guards against a hang.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from zerograd_lint.lsp.framing import FramedStdin, FramingError  # noqa: E402

HANG = 60  # seconds: a hung server fails the test instead of hanging it

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"processId": None, "rootUri": None, "capabilities": {}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
SHUTDOWN = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
EXIT = {"jsonrpc": "2.0", "method": "exit"}
OPEN = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
    "uri": "file:///nowhere/train.py", "languageId": "python", "version": 1, "text": "x = 1\n"}}}


def body(message: dict) -> bytes:
    return json.dumps(message).encode()


def frame(message: dict, length: object = None, header: bytes | None = None) -> bytes:
    content = body(message)
    if header is None:
        header = b"Content-Length: %s\r\n\r\n" % str(len(content) if length is None else length).encode()
    return header + content


def talk(tmp_path: Path, *chunks: bytes, close: bool = False) -> tuple[int, bytes, str]:
    """Send each chunk in one write, keep stdin open (a client waiting for an answer) unless
    `close`, and wait for the server to end."""
    server = subprocess.Popen([sys.executable, "-m", "zerograd_lint", "server"], cwd=tmp_path,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for chunk in chunks:
            server.stdin.write(chunk)
            server.stdin.flush()
        if close:
            server.stdin.close()
        server.wait(HANG)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        pytest.fail(f"the server still runs {HANG} s after the client's last message")
    finally:
        if not server.stdin.closed:
            server.stdin.close()
    return server.returncode, server.stdout.read(), server.stderr.read().decode()


def test_initialize_shutdown_exit_ends_with_0_and_nothing_on_stderr(tmp_path: Path) -> None:
    code, out, err = talk(tmp_path, frame(INITIALIZE), frame(INITIALIZED), frame(SHUTDOWN), frame(EXIT))
    assert (code, err) == (0, "")
    assert b'"id": 1' in out and b'"id": 2' in out


INIT = body(INITIALIZE)
BROKEN = {
    "a length too large to hold": (frame(INITIALIZE, 10**12), "a message of 1000000000000 bytes (Content-Length), "
                                                               "over the limit of 64 MiB"),
    "a length too short": (frame(INITIALIZE, len(INIT) - 10), "a Content-Length shorter than its message's JSON"),
    "a length a little too long": (frame(INITIALIZE, len(INIT) + 10),
                                   f"a Content-Length ({len(INIT) + 10}) longer than its message's JSON"),
    "a length far too long": (frame(INITIALIZE, len(INIT) + 10_000),
                              f"a Content-Length ({len(INIT) + 10_000}) longer than its message's JSON"),
    "a negative length": (frame(INITIALIZE, -5), "a Content-Length that is not a number of bytes: b'-5'"),
    "a length that is not a number": (frame(INITIALIZE, "12a"),
                                      "a Content-Length that is not a number of bytes: b'12a'"),
    "no Content-Length": (frame(INITIALIZE, header=b"Content-Type: application/json\r\n\r\n"),
                          "a message without a Content-Length header"),
    "no header at all": (frame(INITIALIZE, header=b""), "a malformed header line: b'{\"jsonrpc\""),
}


@pytest.mark.parametrize("broken", BROKEN, ids=list(BROKEN))
def test_a_broken_frame_ends_the_server_with_one_line(tmp_path: Path, broken: str) -> None:
    """The broken message comes first, then a request the client waits for an answer to."""
    message, reason = BROKEN[broken]
    code, _, err = talk(tmp_path, message, frame(SHUTDOWN))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(
        f"zerograd-lint: error: language server: the client sent {reason}"), err
    assert err.endswith("; connection closed\n")


def test_the_input_ending_inside_a_message_is_an_error(tmp_path: Path) -> None:
    code, _, err = talk(tmp_path, frame(INITIALIZE), frame(OPEN)[:-10], close=True)
    assert code == 2
    assert err == ("zerograd-lint: error: language server: the client sent a message cut short: the input ended "
                   f"10 bytes before its Content-Length ({len(body(OPEN))}); connection closed\n")


def test_broken_json_in_a_good_frame_and_other_spellings_of_the_header_are_survived(tmp_path: Path) -> None:
    broken = b'{"jsonrpc": "2.0", "id": 7, "method": '
    shutdown, exit_ = body(SHUTDOWN), body(EXIT)
    code, out, _ = talk(tmp_path, frame(INITIALIZE), b"Content-Length: %d\r\n\r\n" % len(broken) + broken,
                        b"content-length: %d\r\n\r\n" % len(shutdown) + shutdown,
                        b"Content-Length:%d \r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
                        % len(exit_) + exit_)
    assert code == 0
    assert b'"id": 2, "jsonrpc": "2.0", "result": null' in out


def test_json_that_merely_looks_like_a_frame_is_read_whole() -> None:
    """Blank lines between a message's JSON tokens, and a header's text inside its strings, are
    that message's: the body is what Content-Length says."""
    pretty = json.dumps(OPEN | {"note": "Content-Length: 5\r\n\r\n{}"}, indent=1).replace("\n", "\r\n\r\n").encode()
    stdin = FramedStdin(io.BytesIO(b"Content-Length: %d\r\n\r\n" % len(pretty) + pretty + frame(SHUTDOWN)))
    assert (stdin.readline(), stdin.readline()) == (b"Content-Length: %d\r\n" % len(pretty), b"\r\n")
    assert json.loads(stdin.read(len(pretty)))["note"] == "Content-Length: 5\r\n\r\n{}"
    assert stdin.readline() == b"Content-Length: %d\r\n" % len(body(SHUTDOWN))
    stdin.readline()
    assert json.loads(stdin.read(len(body(SHUTDOWN)))) == SHUTDOWN
    assert stdin.readline() == b""


def test_a_header_line_without_end_is_bounded() -> None:
    stdin = FramedStdin(io.BytesIO(b"X-Padding: " + b"a" * 20_000))
    with pytest.raises(FramingError, match="a header line longer than 8192 bytes"):
        stdin.readline()
