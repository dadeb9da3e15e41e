"""`path:line:col: CODE message`, one finding per line: what flake8, ruff and every editor parse.

A finding in a notebook says its cell first, as ruff prints it: `nb.ipynb:cell 3:2:1: ZG001 ...`.
A path that would break its line is quoted (`zerograd_lint.report.escaping`).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from zerograd_lint.codes import RULES
from zerograd_lint.findings import Finding
from zerograd_lint.report.context import Context
from zerograd_lint.report.escaping import escape_text, quote_path


def position(finding: Finding, separator: str = ":") -> str:
    """`line:col`, or `cell N:line:col` in a notebook."""
    return place(finding.cell, finding.line, finding.column, separator)


def place(cell: int | None, line: int, column: int, separator: str = ":") -> str:
    """`position` of any place: a finding's, or a call it is about."""
    shown = f"cell {cell}{separator}" if cell is not None else ""
    return f"{shown}{line}{separator}{column}"


def line(finding: Finding) -> str:
    return f"{quote_path(finding.path)}:{position(finding)}: {_code(finding)} {escape_text(finding.message)}"


def _code(finding: Finding) -> str:
    """A rule's code, or `invalid-syntax:` for what is not a rule's (ruff's form)."""
    return finding.code if finding.code in RULES else f"{finding.code}:"


def styled_line(finding: Finding) -> str:
    colon = click.style(":", fg="cyan")
    return (
        f"{click.style(quote_path(finding.path), bold=True)}{colon}{position(finding, colon)}{colon} "
        f"{click.style(_code(finding), fg='red', bold=True)} {escape_text(finding.message)}"
    )


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    shown = styled_line if context.styled else line
    return "".join(shown(f) + "\n" for f in findings)
