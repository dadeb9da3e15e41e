"""The rules, registered in one place: what the dataflow observed becomes findings (one judge per
code), which markers then suppress (`suppression.py`).

`JUDGES` are the modules that judge an analysis (`flow.Analysis`), in the order their findings are
listed; with suppression's ZG100 they are every code reported (`REPORTED`). Each declares its
`RULE` (code, name, summary); a judge also has `judge(analysis)`, which yields its findings
(`Raw`). The code table (`codes.RULES`) and the fixture folders the tests expect
(`tests/fixtures/<CODE>/`) come from here: a new rule is a module, a line below, a fixture folder
and a page in `docs/rules/`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerograd_lint.rules import accumulation_discarded, cleared_before_step, stale_gradients, suppression
from zerograd_lint.rules.raw import Raw
from zerograd_lint.rules.suppression import Marker, may_concern_us, scan_markers, suppress, suppressor, unused_markers

if TYPE_CHECKING:
    from zerograd_lint.flow import Analysis

JUDGES = (stale_gradients, cleared_before_step, accumulation_discarded)
REPORTED = (*JUDGES, suppression)

__all__ = [
    "JUDGES", "REPORTED", "Marker", "Raw", "judge", "may_concern_us", "scan_markers", "suppress", "suppressor",
    "unused_markers",
]


def judge(analysis: Analysis) -> list[Raw]:
    """Findings of one graph. Code outside any loop runs once: "once per step" is a property of
    loops, so only findings anchored at a loop (or a per-batch callback) are kept."""
    return [raw for rule in JUDGES for raw in rule.judge(analysis) if raw.loop is not None]
