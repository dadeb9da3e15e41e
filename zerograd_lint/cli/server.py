"""`zerograd-lint server`: the language server, on stdin and stdout. It imports the server, and pygls
with it, only when it runs."""

from __future__ import annotations

import gc

import click

from zerograd_lint.cli.options import CONTEXT_SETTINGS, Failure, serve_until_interrupted


@click.command("server", context_settings=CONTEXT_SETTINGS,
              short_help="Start the language server, on stdin and stdout (needs: pip install 'zerograd-lint[lsp]').")
@click.option("--debounce", type=click.FloatRange(min=0), default=0.3, show_default=True, metavar="SECONDS",
              help="After an edit, wait this long for the next one before checking the document again.")
@click.option("--stdio", is_flag=True, help="Talk over stdin and stdout: the only way it talks; accepted because "
                                            "some clients pass it.")
def server(debounce: float, stdio: bool) -> None:
    """Start the language server: diagnostics for Python files as they are opened, edited and saved.

    It talks the Language Server Protocol over stdin and stdout, reads [tool.zerograd-lint] from the
    pyproject.toml above each document, and never writes a file.
    """
    gc.enable()  # a long-lived process: see `run`
    try:
        from zerograd_lint.lsp.server import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        raise Failure(f"the language server is an extra ({exc.name} is not installed): "
                      "pip install 'zerograd-lint[lsp]'") from None
    from zerograd_lint.lsp.framing import FramingError

    try:
        serve_until_interrupted(lambda: serve(debounce))
    except FramingError as exc:  # the editor restarts a server that exits
        raise Failure(f"language server: the client sent {exc}; connection closed") from None
