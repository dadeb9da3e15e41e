"""JUnit XML, which CI servers (Jenkins, GitLab's test reports, Azure) show as test results: one
`<testsuite>` per file, one failed `<testcase>` per finding, as ruff's `junit` format does.

A test case is named by its code and position (`ZG001 at 4:1`, or `at cell 3:4:1`), its
`classname` is the file, and its `<failure>` (an `<error>` for a file that could not be checked)
has the code as `type` and the message. A run without findings is one passing test case, so the
report is never empty. Valid against the Jenkins JUnit schema (`junit-10.xsd`), which has no
attributes for lines: the position is in the name and the text.
"""

from __future__ import annotations

from collections.abc import Sequence

from zerograd_lint.codes import RULES
from zerograd_lint.findings import Finding
from zerograd_lint.report.concise import line, position
from zerograd_lint.report.context import Context

NAME = "zerograd-lint"


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    from xml.sax.saxutils import escape, quoteattr  # here: it imports urllib, http and ssl (20 ms a run)

    files: dict[str, list[Finding]] = {}
    for finding in findings:
        files.setdefault(finding.path, []).append(finding)
    failures = sum(f.code in RULES for f in findings)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="{NAME}" tests="{max(len(findings), 1)}" failures="{failures}" '
           f'errors="{len(findings) - failures}">']
    if not findings:
        out += [f'  <testsuite name="{NAME}" tests="1" failures="0" errors="0">',
                f'    <testcase name="No findings" classname="{NAME}"/>', "  </testsuite>"]
    for path, found in files.items():
        failed = sum(f.code in RULES for f in found)
        out.append(f'  <testsuite name={quoteattr(path)} tests="{len(found)}" failures="{failed}" '
                   f'errors="{len(found) - failed}" file={quoteattr(path)}>')
        for finding in found:
            kind = "failure" if finding.code in RULES else "error"
            out += [
                f"    <testcase name={quoteattr(f'{finding.code} at {position(finding)}')} classname={quoteattr(path)}>",
                f"      <{kind} type={quoteattr(finding.code)} message={quoteattr(finding.message)}>"
                f"{escape(line(finding))}</{kind}>",
                "    </testcase>",
            ]
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
