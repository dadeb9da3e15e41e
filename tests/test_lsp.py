"""The language server end to end: `python -m zerograd_lint server` driven over stdio by a real LSP
client (pytest-lsp, on pygls), with the capabilities real editors send.

The server runs where torch cannot be imported (as in test_without_torch.py): were it to import
torch, it would die and every test here would fail.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.lsp.client import LanguageClient as PlainClient
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from test_without_torch import BLOCK_TORCH

from zerograd_lint import __version__

ROOT = Path(__file__).parent.parent
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
DEBOUNCE = 0.5
PAUSE = 0.1  # between two edits of a burst: longer than a check of TRAIN takes, far shorter than DEBOUNCE
WAIT = 60  # seconds: a broken server fails the test instead of hanging it

# A non-ASCII line before the finding, and non-ASCII text before the marker on the loop's own line:
# "🔥" is one code point but two UTF-16 units, so the marker's column differs (30 code points, 31 UTF-16
# units, 34 UTF-8 bytes). The loop's own keyword always starts its line, so ZG001 starts at character 0.
TRAIN = """\
# Entraînement : données réelles — 训练 🚀
import torch
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in data["naïve 🔥"]:  # noqa: ZG003
    model(x).sum().backward()
    optimizer.step()
"""
LOOP = 4  # 0-based line of the `for`
MARKER_UTF16, MARKER_UTF8 = 31, 34
MARKER_LENGTH = len("# noqa: ZG003")
STEP = "optimizer.step() (line 7) applies gradients an earlier step already applied: nothing clears them in this loop"


def server_command(tmp_path: Path) -> ClientServerConfig:
    blocker = tmp_path / "no-torch"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCK_TORCH)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}
    command = [sys.executable, "-m", "zerograd_lint", "server", "--debounce", str(DEBOUNCE)]
    return ClientServerConfig(server_command=command, server_env=env)


async def start(tmp_path: Path, editor: str) -> tuple[LanguageClient, types.InitializeResult]:
    client = await server_command(tmp_path).start()
    result = await client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities(editor), root_uri=tmp_path.as_uri())
    )
    return client, result


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[LanguageClient]:
    client, _ = await start(tmp_path, "visual-studio-code")
    yield client
    await client.shutdown_session()
    await client.stop()


async def published(client: LanguageClient, send) -> types.PublishDiagnosticsParams:
    """Send a notification, then wait for the next diagnostics."""
    waiting = client.protocol.wait_for_notification_async(PUBLISH)
    send()
    return await asyncio.wait_for(waiting, WAIT)


def open_document(client: LanguageClient, path: Path, text: str, language: str = "python") -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id=language, version=1, text=text)
    ))


def edit(client: LanguageClient, path: Path, version: int, start: tuple[int, int], end: tuple[int, int],
         text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(*start), end=types.Position(*end)), text=text
        )],
    ))


def spans(params: types.PublishDiagnosticsParams) -> list[tuple[str, int, int, int, int]]:
    return [(d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
            for d in params.diagnostics]


EXPECTED = [
    ("ZG001", LOOP, 0, LOOP, 3),
    ("ZG100", LOOP, MARKER_UTF16, LOOP, MARKER_UTF16 + MARKER_LENGTH),
]


@pytest.mark.asyncio
async def test_diagnostics_on_open_at_0_based_utf16_positions(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "train.py"  # never written: the server checks the text it was sent
    params = await published(client, lambda: open_document(client, path, TRAIN))
    assert (params.uri, params.version) == (path.as_uri(), 1)
    assert spans(params) == EXPECTED
    stale, marker = params.diagnostics
    assert (stale.message, stale.severity, stale.source) == (STEP, types.DiagnosticSeverity.Error, "zerograd-lint")
    assert stale.code_description.href == "https://github.com/zerograd-lint/zerograd-lint/blob/main/docs/rules/ZG001.md"
    assert marker.severity == types.DiagnosticSeverity.Warning
    assert marker.code_description.href.endswith("/docs/rules/ZG100.md")
    assert not path.exists()


@pytest.mark.asyncio
async def test_the_server_says_who_it_is_and_what_it_listens_to(tmp_path: Path) -> None:
    client, result = await start(tmp_path, "visual-studio-code")
    try:
        assert (result.server_info.name, result.server_info.version) == ("zerograd-lint", __version__)
        assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf16
        sync = result.capabilities.text_document_sync
        assert (sync.open_close, sync.change, bool(sync.save)) == (True, types.TextDocumentSyncKind.Incremental, True)
    finally:
        await client.shutdown_session()
        await client.stop()


class Closing(PlainClient):
    """pygls's own client, which leaves the server's stderr unread (pytest-lsp's passes it on to the
    test's), and keeps how the server ended."""

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        self.ended = server.returncode, (await server.stderr.read()).decode()


@pytest.mark.asyncio
async def test_an_editor_closing_the_server_ends_it_silently(tmp_path: Path) -> None:
    """initialize, shutdown, exit: what an editor sends when it closes."""
    config, client = server_command(tmp_path), Closing("editor", "1")
    await client.start_io(*config.server_command, env=config.server_env)
    await asyncio.wait_for(client.initialize_async(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri())), WAIT)
    client.initialized(types.InitializedParams())
    await asyncio.wait_for(client.shutdown_async(None), WAIT)
    client.exit(None)
    await asyncio.wait_for(client.stop(), WAIT)
    assert client.ended == (0, "")


@pytest.mark.asyncio
async def test_a_client_that_counts_in_utf8_gets_utf8_columns(tmp_path: Path) -> None:
    client, result = await start(tmp_path, "neovim@v0.11.0")  # offers utf-8 first
    try:
        assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
        params = await published(client, lambda: open_document(client, tmp_path / "train.py", TRAIN))
        assert spans(params)[1] == ("ZG100", LOOP, MARKER_UTF8, LOOP, MARKER_UTF8 + MARKER_LENGTH)
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.asyncio
async def test_changes_are_debounced_and_checked_once(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    await published(client, lambda: open_document(client, path, TRAIN))
    clear = (LOOP + 1, 0)

    waiting = client.protocol.wait_for_notification_async(PUBLISH)
    # Three edits, each well within the debounce of the one before: add the clear, take it out, add it again.
    edit(client, path, 2, clear, clear, "    optimizer.zero_grad()\n")
    await asyncio.sleep(PAUSE)
    edit(client, path, 3, clear, (LOOP + 2, 0), "")
    await asyncio.sleep(PAUSE)
    edit(client, path, 4, clear, clear, "    optimizer.zero_grad()\n")
    params = await asyncio.wait_for(waiting, WAIT)
    assert params.version == 4  # versions 2 and 3 were never checked
    assert spans(params) == [EXPECTED[1]]  # the loop clears now; the marker still suppresses nothing
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(client.protocol.wait_for_notification_async(PUBLISH), 3 * DEBOUNCE)


@pytest.mark.asyncio
async def test_a_syntax_error_mid_edit_is_shown_where_it_is_and_the_server_goes_on(client: LanguageClient,
                                                                                     tmp_path: Path) -> None:
    """Issue 19, item 4: the syntax error is a diagnostic at its position, as ruff's server shows it."""
    path = tmp_path / "train.py"
    await published(client, lambda: open_document(client, path, TRAIN))
    broken = await published(client, lambda: edit(client, path, 2, (LOOP + 1, 28), (LOOP + 1, 29), ""))
    [syntax] = broken.diagnostics
    assert (syntax.code, syntax.severity, syntax.range.start.line) == ("invalid-syntax", types.DiagnosticSeverity.Error, 5)
    assert syntax.code_description is None and "never closed" in syntax.message
    assert any("train.py: syntax error at 6:" in m.message for m in client.log_messages)
    mended = await published(client, lambda: edit(client, path, 3, (LOOP + 1, 28), (LOOP + 1, 28), ")"))
    assert (mended.version, spans(mended)) == (3, EXPECTED)


@pytest.mark.asyncio
async def test_save_checks_at_once_and_close_clears(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    await published(client, lambda: open_document(client, path, TRAIN))
    identifier = types.TextDocumentIdentifier(uri=path.as_uri())
    saved = await published(client, lambda: client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=identifier)))
    assert spans(saved) == EXPECTED
    closed = await published(client, lambda: client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=identifier)))
    assert (closed.uri, list(closed.diagnostics)) == (path.as_uri(), [])


@pytest.mark.asyncio
async def test_the_documents_configuration_applies(client: LanguageClient, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "vendored").mkdir(parents=True)
    config = '[tool.zerograd-lint]\nignore = ["ZG100"]\nextend-exclude = ["vendored/"]\n'
    (project / "pyproject.toml").write_text(config)
    params = await published(client, lambda: open_document(client, project / "train.py", TRAIN))
    assert spans(params) == [EXPECTED[0]]
    excluded = await published(client, lambda: open_document(client, project / "vendored" / "train.py", TRAIN))
    assert list(excluded.diagnostics) == []


@pytest.mark.asyncio
async def test_a_bad_configuration_is_shown_once(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.zerograd-lint]\nselct = []\n")
    params = await published(client, lambda: open_document(client, tmp_path / "train.py", TRAIN))
    assert list(params.diagnostics) == []
    await published(client, lambda: open_document(client, tmp_path / "other.py", TRAIN))
    shown = [m.message for m in client.messages]
    assert len(shown) == 1 and "[tool.zerograd-lint] selct: unknown key" in shown[0]


@pytest.mark.asyncio
async def test_other_languages_are_left_alone(client: LanguageClient, tmp_path: Path) -> None:
    open_document(client, tmp_path / "notes.md", TRAIN, language="markdown")
    params = await published(client, lambda: open_document(client, tmp_path / "train.py", TRAIN))
    assert params.uri == (tmp_path / "train.py").as_uri()
    assert list(client.diagnostics) == [(tmp_path / "train.py").as_uri()]


SIBLING_STEP = """\
def train_step(model, optimizer, x):
    model(x).sum().backward()
    optimizer.step()
"""
CALLS_THE_SIBLING = """\
import torch
from steps import train_step
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in data:
    train_step(model, optimizer, x)
"""


@pytest.mark.asyncio
async def test_the_document_is_checked_as_part_of_its_project(client: LanguageClient, tmp_path: Path) -> None:
    """The step its loop calls is read from the module beside it; the document's own file on disk
    (which clears) is not read in the buffer's place."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    (project / "steps.py").write_text(SIBLING_STEP)
    path = project / "train.py"
    path.write_text(CALLS_THE_SIBLING.replace("for x in data:\n", "for x in data:\n    optimizer.zero_grad()\n"))
    params = await published(client, lambda: open_document(client, path, CALLS_THE_SIBLING))
    assert spans(params) == [("ZG001", 4, 0, 4, 3)]
    assert params.diagnostics[0].message == (
        "optimizer.step() (steps.py line 3) applies gradients an earlier step already applied: "
        "nothing clears them in this loop"
    )


def related(diagnostic: types.Diagnostic) -> list[tuple[str, str, int, int, int]]:
    return [(r.message, r.location.uri, r.location.range.start.line, r.location.range.start.character,
             r.location.range.end.character) for r in diagnostic.related_information or ()]


@pytest.mark.asyncio
async def test_a_diagnostic_carries_the_calls_it_is_about(client: LanguageClient, tmp_path: Path) -> None:
    """Issue 19, item 12: the step (here also the earlier step) as `relatedInformation`."""
    path = tmp_path / "train.py"
    params = await published(client, lambda: open_document(client, path, TRAIN))
    stale = params.diagnostics[0]
    uri = path.as_uri()
    assert related(stale) == [("step: optimizer.step()", uri, 6, 4, 20), ("earlier step: optimizer.step()", uri, 6, 4, 20)]
    assert params.diagnostics[1].related_information is None  # a marker is about its own comment only


@pytest.mark.asyncio
async def test_a_call_in_another_file_is_related_with_that_files_uri(client: LanguageClient, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    (project / "steps.py").write_text(SIBLING_STEP)
    params = await published(client, lambda: open_document(client, project / "train.py", CALLS_THE_SIBLING))
    [stale] = params.diagnostics
    steps = (project / "steps.py").as_uri()
    assert related(stale) == [("step: optimizer.step()", steps, 2, 4, 20), ("earlier step: optimizer.step()", steps, 2, 4, 20)]



# Issue 19, item 14: quick fixes, as code actions.


async def code_actions(client: LanguageClient, path: Path, diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    return await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        range=diagnostics[0].range, context=types.CodeActionContext(diagnostics=diagnostics),
    )), WAIT)


def applied(text: str, edits: list[types.TextEdit]) -> str:
    """The text with LSP edits made (positions in UTF-16 units, the default encoding)."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        before = sum(len(line) + 1 for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units, chars = 0, 0
        while units < position.character and chars < len(line):
            units += 2 if ord(line[chars]) > 0xFFFF else 1
            chars += 1
        return before + chars

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


@pytest.mark.asyncio
async def test_quick_fixes_are_the_fix_and_a_noqa(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    params = await published(client, lambda: open_document(client, path, TRAIN))
    stale = params.diagnostics[0]
    actions = await code_actions(client, path, [stale])
    assert [(a.title, a.kind, a.is_preferred) for a in actions] == [
        ("Fix ZG001: Insert `optimizer.zero_grad()` after `optimizer.step()` (line 7)", "quickfix", True),
        ("Add `# noqa: ZG001` on this line", "quickfix", None),
    ]
    fix, noqa = actions
    fixed = applied(TRAIN, fix.edit.changes[path.as_uri()])
    assert fixed == TRAIN + "    optimizer.zero_grad()\n"
    commented = applied(TRAIN, noqa.edit.changes[path.as_uri()])
    assert 'for x, y in data["naïve 🔥"]:  # noqa: ZG003, ZG001\n' in commented
    again = await published(client, lambda: edit(client, path, 2, (0, 0), (len(TRAIN.splitlines()), 0), fixed))
    assert [d.code for d in again.diagnostics] == ["ZG100"]  # the fix leaves the loop's old marker unused


@pytest.mark.asyncio
async def test_no_quick_fix_for_others_diagnostics_or_a_fix_that_needs_judgement(client: LanguageClient,
                                                                                 tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    params = await published(client, lambda: open_document(client, path, TRAIN))
    foreign = types.Diagnostic(range=params.diagnostics[0].range, message="x", source="pyright", code="reportFoo")
    assert list(await code_actions(client, path, [foreign])) == []
    helper = path.with_name("helper.py")
    params = await published(client, lambda: open_document(client, helper, SHARED_LINE))
    [stale] = params.diagnostics  # --fix declines it: the step shares its line with the backward
    actions = await code_actions(client, helper, [stale])
    assert [a.title for a in actions] == ["Add `# noqa: ZG001` on this line"]


SHARED_LINE = """\
import torch
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in data:
    model(x).sum().backward(); optimizer.step()
"""


def test_a_project_that_cannot_be_checked_is_said_plainly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22, item 2, in the editor: the run's one line, not 'internal error: NotChecked: ...'."""
    from zerograd_lint import runner
    from zerograd_lint.lsp.document import check_document

    def failing(*args, **kwargs):
        raise runner.NotChecked("the project could not be checked: out of memory")

    monkeypatch.setattr("zerograd_lint.lsp.document.check_files", failing)
    outcome = check_document(str(tmp_path / "train.py"), TRAIN)
    assert (outcome.findings, outcome.problem) == ([], "the project could not be checked: out of memory")
