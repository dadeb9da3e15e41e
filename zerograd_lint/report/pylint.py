"""`path:line: [CODE] message`, pylint's parseable form, as ruff's `pylint` format prints it (for
tools that read pylint's output). A finding in a notebook says its cell: `nb.ipynb:cell 3:1: ...`.
"""

from __future__ import annotations

from collections.abc import Sequence

from zerograd_lint.findings import Finding
from zerograd_lint.report.context import Context


def line(finding: Finding) -> str:
    where = f"cell {finding.cell}:{finding.line}" if finding.cell is not None else str(finding.line)
    return f"{finding.path}:{where}: [{finding.code}] {finding.message}"


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    return "".join(line(f) + "\n" for f in findings)
