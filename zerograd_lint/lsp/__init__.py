"""The language server, `zerograd-lint server` (the `lsp` extra, on pygls 2).

- `document.py`: a document's text and path in, findings (or why there are none) out; no pygls.
- `diagnostics.py`: findings as LSP diagnostics, in the client's 0-based, UTF-16 positions.
- `server.py`: the pygls server: open, change (debounced), save and close.
- `framing.py`: the client's messages as the server reads them, their framing checked: a broken
  one closes the connection with one line, instead of the server hanging or running out of memory.

Importing this package imports nothing else; `server.py` imports pygls.
"""
