"""`zerograd-lint server`: diagnostics for Python documents, over stdio, with pygls 2.

- open and save: the document is checked at once;
- change: checked once no other change has come for `debounce` seconds (a burst of keystrokes
  costs one analysis, of the last version);
- close: its diagnostics are cleared;
- code action: for a diagnostic of ours, the quick fixes (`zerograd_lint.lsp.actions`): the edit
  `--fix` would make, and a `# noqa` comment.

The analysis runs in one worker thread, so the event loop keeps answering while it runs, and a
check still running when a newer version arrives is dropped, not published. A document that
cannot be checked mid-edit (a syntax error) gets an `invalid-syntax` diagnostic at the error and
a line in the client's log; the server goes on. A configuration error is shown to the user once per distinct message. Only
Python documents are checked (language `python`, or a `.py`/`.pyi` file).
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from zerograd_lint import __version__
from zerograd_lint.files import PYTHON_SUFFIXES
from zerograd_lint.findings import describe
from zerograd_lint.lines import split_lines
from zerograd_lint.lsp.actions import code_actions
from zerograd_lint.lsp.diagnostics import SOURCE, diagnostic
from zerograd_lint.lsp.document import Outcome, check_document, fixed_findings
from zerograd_lint.lsp.framing import FramedStdin

NAME = "zerograd-lint"


class ZerogradServer(LanguageServer):
    def __init__(self, debounce: float) -> None:
        super().__init__(NAME, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.debounce = debounce
        self.analyst = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zerograd-analysis")
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.shown: set[str] = set()  # configuration errors already shown to the user

    def check_soon(self, uri: str, delay: float) -> None:
        """Check the document after `delay` seconds, instead of any check still to come or running."""
        self.forget(uri)
        self.pending[uri] = asyncio.get_running_loop().create_task(self._check(uri, delay))

    def forget(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

    async def _check(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        document = self.workspace.get_text_document(uri)
        if not _is_python(document.language_id, uri):
            return
        source, version = document.source, document.version
        try:
            outcome = await asyncio.get_running_loop().run_in_executor(self.analyst, check_document, _path(uri), source)
        except Exception as exc:  # an internal error costs this check, not the server
            outcome = Outcome(problem=f"internal error: {describe(exc)}")
        if self.pending.get(uri) is asyncio.current_task():
            del self.pending[uri]
        self._tell(outcome)
        lines, codec = split_lines(source), self.workspace.position_codec
        self.publish(uri, [diagnostic(f, lines, codec, uri) for f in outcome.findings], version)

    async def actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """The quick fixes for our diagnostics among those the editor asks about."""
        uri = params.text_document.uri
        ours = [d for d in params.context.diagnostics if d.source == SOURCE]
        document = self.workspace.get_text_document(uri)
        if not ours or not _is_python(document.language_id, uri):
            return []
        source, codec = document.source, self.workspace.position_codec

        def worked_out() -> list[types.CodeAction]:  # in the worker: parsing a large document takes a while
            return code_actions(uri, source, ours, fixed_findings(_path(uri), source), codec)

        try:
            return await asyncio.get_running_loop().run_in_executor(self.analyst, worked_out)
        except Exception as exc:  # an internal error costs the fixes, not the server
            self._tell(Outcome(problem=f"internal error: {describe(exc)}"))
            return []

    def publish(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def _tell(self, outcome: Outcome) -> None:
        if outcome.problem is None:
            return
        message = f"{NAME}: {outcome.problem}"
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))
        if outcome.bad_configuration and message not in self.shown:
            self.shown.add(message)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))


def _is_python(language_id: str | None, uri: str) -> bool:
    return language_id == "python" or uri.endswith(PYTHON_SUFFIXES)


def _path(uri: str) -> str:
    """The file a document stands for; a document without one (`untitled:`) is taken to be in the
    current folder, which is where its configuration is looked for."""
    return to_fs_path(uri) or "untitled.py"


def build(debounce: float) -> ZerogradServer:
    server = ZerogradServer(debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: ZerogradServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.check_soon(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: ZerogradServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.check_soon(params.text_document.uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: ZerogradServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.check_soon(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    async def code_action(ls: ZerogradServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return await ls.actions(params)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: ZerogradServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)
        ls.publish(params.text_document.uri, [], None)

    return server


def serve(debounce: float) -> None:
    """Talk LSP over stdin and stdout until the client says exit, or until its messages can no
    longer be told apart (`framing.FramingError`)."""
    build(debounce).start_io(FramedStdin(sys.stdin.buffer))
