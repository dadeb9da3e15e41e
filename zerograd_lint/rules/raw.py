"""What every rule is made of: its line in the code table (`Rule`), its findings before suppression
(`Raw`), and the loop or call a finding is reported at (`Anchor`), with the words that name a call
in a message."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # suppression runs on files never parsed: no LibCST for it
    from zerograd_lint.graphs.nodes import Graph
    from zerograd_lint.sites import Loop, Site


class Rule(NamedTuple):
    """A rule's line in the code table."""

    code: str  # ZG001
    name: str  # stale-gradients
    summary: str  # one line: SARIF's short description
    fix: str = "Sometimes"  # whether --fix can fix it: "Always", "Sometimes" or "None", as ruff says


@dataclass(frozen=True)
class Raw:
    """A finding before suppression: position (1-based line, 0-based column) and what it is about."""

    path: str
    code: str
    line: int
    column: int
    length: int
    message: str
    loop: Loop | None
    related: tuple[tuple[str, Site], ...] = ()  # (role, call)


class Anchor(NamedTuple):
    path: str
    line: int
    column: int
    length: int
    loop: Loop | None

    def raw(self, code: str, message: str, related: tuple[tuple[str, Site], ...] = ()) -> Raw:
        return Raw(self.path, code, self.line, self.column, self.length, message, self.loop, related)


def anchor(graph: Graph, node: int, crossed: frozenset[int]) -> Anchor:
    """The innermost loop around `node` that the contributions went around, else the innermost
    loop around `node`, else `node` itself."""
    loops = graph.loops_of[node]
    chosen = next((l for l in reversed(loops) if l in crossed), loops[-1] if loops else None)
    if chosen is None:
        site = graph.sites[node]
        return Anchor(site.path, site.line, site.column, len(site.text), None)
    loop = graph.loops[chosen]
    return Anchor(loop.path, loop.line, loop.column, loop.length, loop)


def call_text(graph: Graph, node: int, here: str) -> str:
    """`opt.step() (line 14)`, or `(engine.py line 14)` when the call is in another file."""
    site = graph.sites[node]
    where = "" if site.path == here else f"{PurePath(site.path).name} "
    return f"{site.text} ({where}line {site.line})"
