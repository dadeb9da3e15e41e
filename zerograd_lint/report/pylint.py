"""`path:line: [CODE] message`, pylint's parseable form, as ruff's `pylint` format prints it (for
tools that read pylint's output). A finding in a notebook says its cell: `nb.ipynb:cell 3:1: ...`.
A path that would break the line is quoted, as in `concise` (`zerograd_lint.report.escaping`).
"""

from __future__ import annotations

from collections.abc import Sequence

from zerograd_lint.findings import Finding
from zerograd_lint.report.context import Context
from zerograd_lint.report.escaping import escape_text, quote_path


def line(finding: Finding) -> str:
    where = f"cell {finding.cell}:{finding.line}" if finding.cell is not None else str(finding.line)
    return f"{quote_path(finding.path)}:{where}: [{finding.code}] {escape_text(finding.message)}"


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    return "".join(line(f) + "\n" for f in findings)
