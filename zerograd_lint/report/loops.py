"""`--show-loops`: every loop the analysis checked, one per line, instead of the findings.

    train.py:12:5: for  optimizer: ok, cleared by optimizer.zero_grad() (line 14)
    gan.py:40:9: for  opt_d: ok, cleared by netD.zero_grad() (line 41); opt_g: ZG001
    trainer.py:120:5: def training_step  engine: ok, stepped and cleared by engine.step() (line 130)
    train.py:48:1: def main  not checked: too many paths to follow; the functions it calls are checked on their own

The position is the keyword's, as a finding's would be; each gradient set (named as the code names
it) says its finding or what makes it quiet (`zerograd_lint.checked_loops`). As `json`, a list of
objects; as `json-lines`, one object per line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from zerograd_lint.checked_loops import CheckedLoop, Verdict, describe, verdicts_text
from zerograd_lint.report.concise import place
from zerograd_lint.report.escaping import escape_text, quote_path
from zerograd_lint.sites import Site


def position(loop: CheckedLoop) -> str:
    return place(loop.cell, loop.line, loop.column)


def heading(loop: CheckedLoop) -> str:
    """`for`, `while`, `def training_step` (a per-batch callback), `step` (a closure's re-evaluations)."""
    return f"{loop.keyword} {loop.function}" if loop.function else loop.keyword


def line(loop: CheckedLoop, styled: bool = False) -> str:
    path = click.style(quote_path(loop.path), bold=True) if styled else quote_path(loop.path)
    return f"{path}:{position(loop)}: {heading(loop)}  {escape_text(verdicts_text(loop))}"


def render_text(loops: Sequence[CheckedLoop], styled: bool = False) -> str:
    return "".join(line(loop, styled) + "\n" for loop in loops)


def as_dict(loop: CheckedLoop) -> dict[str, Any]:
    """The JSON form: the loop's position (1-based) and keyword, and a verdict per gradient set."""
    found: dict[str, Any] = {
        "path": loop.path,
        "line": loop.line,
        "column": loop.column,
        "keyword": loop.keyword,
        "function": loop.function or None,
        "sets": [_verdict(v, loop.path) for v in loop.verdicts],
    }
    if loop.cell is not None:
        found["cell"] = loop.cell
    return found


def _verdict(verdict: Verdict, here: str) -> dict[str, Any]:
    """`set` is the code naming the gradient set (null for a loop with a backward and no step, and
    for a function not checked);
    `verdict` one of the kinds of `checked_loops`; `text` what the line says of it."""
    return {
        "set": verdict.subject or None,
        "verdict": verdict.kind,
        "text": describe(verdict, here),
        "code": verdict.code or None,
        "message": verdict.message or None,
        "marker": _place(verdict.marker) if verdict.marker is not None else None,
        "calls": [{"role": role, **_place(site)} for role, site in verdict.calls],
    }


def _place(site: Site) -> dict[str, Any]:
    """A call or a marker: its code, file and 1-based position (in a notebook, in its cell)."""
    call: dict[str, Any] = {"text": site.text, "path": site.path, "line": site.line, "column": site.column + 1}
    cell = getattr(site, "cell", None)
    if cell is not None:
        call["cell"] = cell
    return call


def render_json(loops: Sequence[CheckedLoop], styled: bool = False) -> str:
    return json.dumps([as_dict(loop) for loop in loops], indent=2) + "\n"


def render_json_lines(loops: Sequence[CheckedLoop], styled: bool = False) -> str:
    return "".join(json.dumps(as_dict(loop), separators=(",", ":")) + "\n" for loop in loops)


# --output-format -> how --show-loops prints; the other formats have no place for loops.
RENDERERS = {"concise": render_text, "json": render_json, "json-lines": render_json_lines}
