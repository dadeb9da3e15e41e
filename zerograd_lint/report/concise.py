"""`path:line:col: CODE message`, one finding per line: what flake8, ruff and every editor parse."""

from __future__ import annotations

from zerograd_lint.findings import Finding


def line(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.code} {finding.message}"


def render(findings: list[Finding]) -> str:
    return "".join(line(f) + "\n" for f in findings)
