"""`full`: each finding with the source of every line involved, as ruff's default format shows one.

    ZG001 stale-gradients: optimizer.step() (line 7) applies gradients an earlier step applied ...
     --> train.py:5:1
      |
    5 | for x, y in data:
      | ^^^
    6 |     loss.backward()
      |     --------------- backward
    7 |     optimizer.step()
      |     ---------------- step
      |
    help: Insert `optimizer.zero_grad()` ...

The finding's own position is marked `^`, each call it is about (`Related`) `-` with its role.
Lines of the same file (or cell) are shown together in order, `...` where lines are skipped; a
call in another file (or another cell of a notebook) gets a block of its own, headed ` ::: `.
The source is the text that was checked: given in the context (standard input, a fixed text), else
read again; a line that cannot be shown (the file changed or went away) is left out, not guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import click

from zerograd_lint.codes import RULES
from zerograd_lint.findings import Finding
from zerograd_lint.report.concise import place
from zerograd_lint.report.context import Context
from zerograd_lint.report.escaping import escape_text, quote_path


@dataclass(frozen=True)
class _Mark:
    line: int
    column: int  # 1-based, in code points
    width: int  # at least 1
    label: str
    primary: bool


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    return "".join(block(finding, context) + "\n" for finding in findings)


def block(finding: Finding, context: Context) -> str:
    style = _Style(context.styled)
    name = RULES[finding.code].name if finding.code in RULES else ""
    message = escape_text(finding.message)
    out = [f"{style.code(finding.code)} {style.bold(name + ':')} {message}" if name else
           f"{style.code(finding.code)}: {message}"]
    width = finding.end_column - finding.column if finding.end_line == finding.line else 0
    marks = {(finding.path, finding.cell): [_Mark(finding.line, finding.column, width, "", True)]}
    for site in finding.related:
        marked = marks.setdefault((site.path, site.cell), [])
        same = next((i for i, m in enumerate(marked) if (m.line, m.column, m.primary) == (site.line, site.column, False)), None)
        if same is None:
            marked.append(_Mark(site.line, site.column, len(site.text), site.role, False))
        else:  # one call in two roles: the step that is also the earlier step, in a loop
            marked[same] = replace(marked[same], label=f"{marked[same].label}, {site.role}")
    for index, ((path, cell), marked) in enumerate(marks.items()):
        first = marked[0]
        where = f"{quote_path(path)}:{place(cell, first.line, first.column)}"
        lines = context.lines(path, cell)
        out.extend(_snippet("-->" if index == 0 else ":::", where, marked, lines, style))
    if finding.fix is not None:
        out.append(f"{style.help('help')}: {finding.fix.message}")
    return "\n".join(out) + "\n"


def _snippet(arrow: str, where: str, marks: list[_Mark], lines: Sequence[str] | None, style: _Style) -> list[str]:
    shown = sorted({m.line for m in marks if lines is not None and 0 < m.line <= len(lines)})
    gutter = len(str(max(shown, default=1)))
    pad = " " * gutter
    out = [f"{pad}{style.arrow(arrow)} {where}"]
    if not shown:
        return out
    out.append(f"{pad} {style.arrow('|')}")
    previous = None
    for number in shown:
        if previous is not None and number > previous + 1:
            out.append(style.arrow("..."))
        text = lines[number - 1].rstrip("\r\n").expandtabs(4) if lines is not None else ""
        out.append(f"{style.arrow(str(number).rjust(gutter) + ' |')} {text}".rstrip())
        for mark in sorted((m for m in marks if m.line == number), key=lambda m: (not m.primary, m.column)):
            out.append(f"{pad} {style.arrow('|')} {_underline(mark, text, style)}".rstrip())
        previous = number
    out.append(f"{pad} {style.arrow('|')}")
    return out


def _underline(mark: _Mark, text: str, style: _Style) -> str:
    start = max(mark.column - 1, 0)
    width = mark.width if mark.width > 0 else len(text) - start
    width = max(1, min(width, len(text) - start))
    line = " " * start + ("^" if mark.primary else "-") * width
    if mark.label:
        line += " " + mark.label
    return style.primary(line) if mark.primary else style.secondary(line)


class _Style:
    """ruff's colours for a terminal: the code red and bold, gutters and arrows blue."""

    def __init__(self, styled: bool) -> None:
        self.styled = styled

    def _paint(self, text: str, **how: object) -> str:
        return click.style(text, **how) if self.styled and text else text

    def code(self, text: str) -> str:
        return self._paint(text, fg="red", bold=True)

    def bold(self, text: str) -> str:
        return self._paint(text, bold=True)

    def arrow(self, text: str) -> str:
        return self._paint(text, fg="blue", bold=True)

    primary = code  # the carets under the finding's own position
    secondary = arrow  # the dashes under the calls it is about

    def help(self, text: str) -> str:
        return self._paint(text, fg="cyan", bold=True)
