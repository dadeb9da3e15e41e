"""`--statistics`: how many findings of each code, most frequent first, instead of the findings.

As in ruff, a code is marked fixable (`[*]` before its name; `"fixable": true` in JSON) when
`--fix` has a fix for at least one of its findings (`runner.Fixable`, as the summary's hint counts
them). When no code is, the text has no marks."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Sequence

from zerograd_lint.codes import RULES
from zerograd_lint.findings import Finding


def counts(findings: Sequence[Finding], fixable: Collection[str] = ()) -> list[dict[str, object]]:
    """Each code's row; `fixable`, the codes `--fix` has a fix for in some finding of."""
    tally = Counter(f.code for f in findings)
    ordered = sorted(tally.items(), key=lambda item: (-item[1], item[0]))
    return [{"code": code, "name": RULES[code].name, "count": count, "fixable": code in fixable}
            for code, count in ordered]


def render_text(findings: Sequence[Finding], fixable: Collection[str] = ()) -> str:
    rows = counts(findings, fixable)
    width = max((len(str(row["count"])) for row in rows), default=1)
    marked = any(row["fixable"] for row in rows)
    return "".join(f"{row['count']:>{width}}\t{row['code']}\t{_mark(row) if marked else ''}{row['name']}\n"
                   for row in rows)


def _mark(row: dict[str, object]) -> str:
    return "[*] " if row["fixable"] else "[ ] "


def render_json(findings: Sequence[Finding], fixable: Collection[str] = ()) -> str:
    return json.dumps(counts(findings, fixable), indent=2) + "\n"


def render_json_lines(findings: Sequence[Finding], fixable: Collection[str] = ()) -> str:
    return "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in counts(findings, fixable))


# --output-format -> how --statistics prints; the other formats have no place for counts.
RENDERERS = {"concise": render_text, "json": render_json, "json-lines": render_json_lines}
