"""JSON Lines: one compact JSON object per finding per line, the same objects as `json`."""

from __future__ import annotations

import json
from collections.abc import Sequence

from zerograd_lint.findings import Finding
from zerograd_lint.report.context import Context


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    return "".join(json.dumps(f.as_dict(), separators=(",", ":")) + "\n" for f in findings)
