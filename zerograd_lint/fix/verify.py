"""Checks made on a fixed source before anything is written.

- It parses.
- It differs from the original only by the intended statements: the fixed source is parsed from
  its text, the moved statements are taken out of the original (as parsed for planning) and the
  placed ones out of the fixed source (found where the line bookkeeping says they are, and
  compared with what was meant to be there), and what is left must be the same tree, whitespace
  and comments included (`deep_equals`).
- Findings are matched across the edit by `identity`: code, loop position and the position of
  each step, mapped through the edit's `Shift` (a step never moves; only clears do).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from zerograd_lint.findings import Finding
from zerograd_lint.fix.located import Located
from zerograd_lint.fix.noqa import compile_problem
from zerograd_lint.fix.rewrite import Placement, Shift, carried_lines, without

Identity = tuple[str, str, int, int, tuple[tuple[str, int, int], ...]]


def shift_of(placements: Sequence[Placement], here: Located) -> Shift:
    """The line bookkeeping of these placements (distinct, in the order they are made)."""
    insertions: list[tuple[int, int]] = []
    moves: list[tuple[int, int, int]] = []
    for index, placement in enumerate(placements):
        anchor = placement.anchor
        after = here.header_line(anchor) if isinstance(anchor, cst.IndentedBlock) else here.end_line(anchor)
        if placement.moved is None:
            insertions.append((after, here.code(placement.statement).count("\n") or 1))
            continue
        first = here.first_line(placement.moved) - len(carried_lines(placement.moved))
        last = here.end_line(placement.moved)
        insertions.append((after, last - first + 1))
        moves.append((first, last, index))
    return Shift(tuple(insertions), tuple(moves))


def structural_problem(original: str | bytes, fixed: str | bytes, placements: Sequence[Placement],
                       here: Located, shift: Shift) -> str | None:
    """Why the fixed source is not the original (`here`, as parsed) plus the placements, or None
    when it is."""
    try:
        after = Located(fixed)
    except cst.ParserSyntaxError as exc:
        return f"the fixed source does not parse ({exc.message})"
    problem = compile_problem(original, fixed)
    if problem is not None:
        return problem
    moved = [placement.moved for placement in placements if placement.moved is not None]
    placed = []
    for index, placement in enumerate(placements):
        line = shift.start(index) + len(carried_lines(placement.statement))
        statement = after.statement_starting_on(line)
        if statement is None or after.code(statement) != here.code(placement.statement):
            return f"line {line} of the fixed source is not the statement meant to be there"
        placed.append(statement)
    if not without(here.module, moved).deep_equals(without(after.module, placed)):
        return "the fixed source differs from the original by more than the intended statements"
    return None


def identity(finding: Finding, shift: Callable[[str], Shift]) -> Identity:
    """What makes a finding the same one after an edit: its code, its loop and its steps."""
    steps = tuple(sorted((r.path, shift(r.path).line(r.line), r.column) for r in finding.related if r.role == "step"))
    return finding.path, finding.code, shift(finding.path).line(finding.line), finding.column, steps
