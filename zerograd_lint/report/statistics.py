"""`--statistics`: how many findings of each code, most frequent first, instead of the findings."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from zerograd_lint.codes import RULES
from zerograd_lint.findings import Finding


def counts(findings: Sequence[Finding]) -> list[dict[str, object]]:
    tally = Counter(f.code for f in findings)
    ordered = sorted(tally.items(), key=lambda item: (-item[1], item[0]))
    return [{"code": code, "name": RULES[code].name, "count": count} for code, count in ordered]


def render_text(findings: Sequence[Finding]) -> str:
    rows = counts(findings)
    width = max((len(str(row["count"])) for row in rows), default=1)
    return "".join(f"{row['count']:>{width}}\t{row['code']}\t{row['name']}\n" for row in rows)


def render_json(findings: Sequence[Finding]) -> str:
    return json.dumps(counts(findings), indent=2) + "\n"


def render_json_lines(findings: Sequence[Finding]) -> str:
    return "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in counts(findings))


# --output-format -> how --statistics prints; the other formats have no place for counts.
RENDERERS = {"concise": render_text, "json": render_json, "json-lines": render_json_lines}
