"""A JSON array of findings with 1-based positions (`end_column` is one past the last character)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from zerograd_lint.findings import Finding
from zerograd_lint.report.context import Context


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    return json.dumps([f.as_dict() for f in findings], indent=2) + "\n"
