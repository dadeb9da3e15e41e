"""`path:line:col: CODE message`, one finding per line: what flake8, ruff and every editor parse."""

from __future__ import annotations

from collections.abc import Sequence

import click

from zerograd_lint.findings import Finding
from zerograd_lint.report.context import Context


def line(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.code} {finding.message}"


def styled_line(finding: Finding) -> str:
    colon = click.style(":", fg="cyan")
    return (
        f"{click.style(finding.path, bold=True)}{colon}{finding.line}{colon}{finding.column}{colon} "
        f"{click.style(finding.code, fg='red', bold=True)} {finding.message}"
    )


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    shown = styled_line if context.styled else line
    return "".join(shown(f) + "\n" for f in findings)
