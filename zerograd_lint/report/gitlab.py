"""GitLab Code Quality: the JSON array a job's `artifacts:reports:codequality` takes, so findings
show in the merge request's widget and diff (a subset of the Code Climate issue format).

Each issue has `description` (the message), `check_name` (the code), `severity` (`major` for a
wrong clear, `minor` for a stale marker), `location` with the path relative to the repository root
(where GitLab resolves it) and `lines.begin`/`end`, and a `fingerprint` that GitLab uses to tell an
issue that stays from one that is new: an MD5 of the path, the code and the message (less the
line numbers in it, so code moving up or down keeps it), with a counter for otherwise equal issues, as ruff makes it. A
finding in a notebook is at line 1 (the notebook's lines are JSON), its description saying where.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from zerograd_lint.findings import Finding
from zerograd_lint.report.context import Context, in_cell, level

_SEVERITY = {"error": "major", "warning": "minor"}
_LINES = re.compile(r"\bline \d+")  # the lines a message names: they move with the code


def issue(finding: Finding, context: Context, seen: Counter[tuple[str, str, str]]) -> dict[str, object]:
    import hashlib  # here, as everywhere in the package: only the formats and the cache that hash need it

    path = context.repository_path(finding.path) or finding.path
    description = finding.message
    if finding.cell is not None:
        description = f"{in_cell(finding.cell, finding.line, finding.column)}: {description}"
    key = (path, finding.code, _LINES.sub("line", description))
    seen[key] += 1
    fingerprint = hashlib.md5("\0".join([*key, str(seen[key])]).encode(), usedforsecurity=False).hexdigest()
    begin, end = (1, 1) if finding.cell is not None else (finding.line, finding.end_line)
    return {
        "description": description,
        "check_name": finding.code,
        "fingerprint": fingerprint,
        "severity": _SEVERITY[level(finding.code)],
        "location": {"path": path, "lines": {"begin": begin, "end": end}},
    }


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    seen: Counter[tuple[str, str, str]] = Counter()
    return json.dumps([issue(f, context, seen) for f in findings], indent=2) + "\n"
