"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request.

    ::error title=zerograd-lint (ZG001),file=train.py,line=4,col=1,endLine=4,endColumn=4::train.py:4:1: ZG001 ...

Escaped exactly as actions/toolkit's `command.ts` does: in the message `%`, CR and LF; in
property values also `:` and `,`. `file` is relative to the repository root, which is what
GitHub resolves it against; the message keeps the path as it was checked.

A notebook's lines are not lines of the `.ipynb` file GitHub shows (that is JSON), so a finding
in a notebook is annotated at line 1, column 1 of the file, as ruff does, and the message says
where it is: `nb.ipynb:cell 3:2:1: ZG001 ...`.
"""

from __future__ import annotations

from collections.abc import Sequence

from zerograd_lint.findings import Finding
from zerograd_lint.report.concise import line
from zerograd_lint.report.context import Context, level


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, context: Context) -> str:
    properties: dict[str, object] = {
        "title": f"zerograd-lint ({finding.code})",
        "file": context.repository_path(finding.path) or finding.path,
    }
    if finding.cell is None:
        properties.update(line=finding.line, col=finding.column, endLine=finding.end_line, endColumn=finding.end_column)
    else:
        properties.update(line=1, col=1)
    listed = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{level(finding.code)} {listed}::{escape_data(line(finding))}"


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    return "".join(annotation(f, context) + "\n" for f in findings)
