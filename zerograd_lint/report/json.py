"""A JSON array of findings with 1-based positions (`end_column` is one past the last character)."""

from __future__ import annotations

import json

from zerograd_lint.findings import Finding


def render(findings: list[Finding]) -> str:
    return json.dumps([f.as_dict() for f in findings], indent=2) + "\n"
