"""A JSON array of findings with 1-based positions (`end_column` is one past the last character).

A finding in a notebook also has `cell` (1-based, counting every cell), and its `line` counts
from the top of that cell, as in ruff's JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from zerograd_lint.findings import Finding
from zerograd_lint.report.context import Context


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    return json.dumps([f.as_dict() for f in findings], indent=2) + "\n"
