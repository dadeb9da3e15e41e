"""The language server, `zerograd-lint server` (the `lsp` extra, on pygls 2).

- `document.py`: a document's text and path in, findings (or why there are none) out; no pygls.
- `diagnostics.py`: findings as LSP diagnostics, in the client's 0-based, UTF-16 positions.
- `server.py`: the pygls server: open, change (debounced), save and close.

Importing this package imports nothing else; `server.py` imports pygls.
"""
