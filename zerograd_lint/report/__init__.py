"""Output formats. Each module renders findings to text; none of them prints."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from zerograd_lint.findings import Finding
from zerograd_lint.report import concise, full, github, gitlab, json, json_lines, junit, pylint, sarif
from zerograd_lint.report.context import Context

Renderer = Callable[[Sequence[Finding], Context], str]

FORMATS: dict[str, Renderer] = {
    "concise": concise.render,
    "full": full.render,
    "json": json.render,
    "json-lines": json_lines.render,
    "github": github.render,
    "sarif": sarif.render,
    "gitlab": gitlab.render,
    "junit": junit.render,
    "pylint": pylint.render,
}
