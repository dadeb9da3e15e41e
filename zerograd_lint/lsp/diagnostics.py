"""Findings as LSP diagnostics.

A finding's line and column are 1-based and its column counts code points; an LSP position is
0-based in both, and its `character` counts in the encoding client and server agreed on: UTF-16
code units unless the client offered another (pygls's `PositionCodec` knows which). A character
outside the Basic Multilingual Plane (an emoji) is one code point but two UTF-16 units, so the
column is converted from the line's own text, not shifted by one.

The calls a finding is about (the step, the clear, the backward) are its `relatedInformation`:
an editor lists them under the diagnostic and jumps to each. One in the document itself is
placed in the client's units like the diagnostic; one in another file (a training step the loop
calls) counts code points, which is the same for the ASCII that names calls.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import PositionCodec

from zerograd_lint.codes import RULES
from zerograd_lint.findings import Finding, Related
from zerograd_lint.report.context import level
from zerograd_lint.report.sarif import help_uri

SOURCE = "zerograd-lint"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


def diagnostic(finding: Finding, lines: Sequence[str], codec: PositionCodec, uri: str) -> types.Diagnostic:
    """`uri`: the document's."""
    return types.Diagnostic(
        range=types.Range(
            start=position(finding.line, finding.column, lines, codec),
            end=position(finding.end_line, finding.end_column, lines, codec),
        ),
        message=finding.message,
        severity=SEVERITY[level(finding.code)],
        code=finding.code,
        code_description=types.CodeDescription(href=help_uri(finding.code)) if finding.code in RULES else None,
        source=SOURCE,
        data={"code": finding.code, "line": finding.line, "column": finding.column},  # for its code actions
        related_information=[_related(site, finding.path, uri, lines, codec) for site in finding.related] or None,
    )


def _related(site: Related, path: str, uri: str, lines: Sequence[str], codec: PositionCodec) -> types.DiagnosticRelatedInformation:
    if site.path == path:
        start = position(site.line, site.column, lines, codec)
    else:
        uri, start = _uri(site.path), types.Position(line=site.line - 1, character=site.column - 1)
    end = types.Position(line=start.line, character=start.character + codec.client_num_units(site.text))
    return types.DiagnosticRelatedInformation(
        location=types.Location(uri=uri, range=types.Range(start=start, end=end)), message=f"{site.role}: {site.text}"
    )


def _uri(path: str) -> str:
    return from_fs_path(os.path.abspath(path))


def position(line: int, column: int, lines: Sequence[str], codec: PositionCodec) -> types.Position:
    """A 1-based line and code-point column as a 0-based position in the client's units."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return types.Position(line=line - 1, character=codec.client_num_units(text[: column - 1]))
