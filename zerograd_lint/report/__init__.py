"""Output formats. Each module renders a list of findings to text; none of them prints."""

from __future__ import annotations

from collections.abc import Callable

from zerograd_lint.findings import Finding
from zerograd_lint.report import concise, json

Renderer = Callable[[list[Finding]], str]

FORMATS: dict[str, Renderer] = {
    "concise": concise.render,
    "json": json.render,
}
