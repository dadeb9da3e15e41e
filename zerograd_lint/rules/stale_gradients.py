"""ZG001 stale-gradients: a step applies gradients an earlier step already applied, because no
clear runs on some path between the two steps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from zerograd_lint.rules.raw import Anchor, Raw, Rule, anchor, call_text

if TYPE_CHECKING:
    from zerograd_lint.bindings import Key
    from zerograd_lint.flow import Analysis
    from zerograd_lint.graphs.nodes import Graph
    from zerograd_lint.sites import Loop

RULE = Rule("ZG001", "stale-gradients", "a step applies gradients an earlier step already applied")
# what the message says when the earlier step is of another set over the same parameters (the fix
# then clears this set right after that step: `fix.placements`)
SHARED = "applied those of the parameters they share"


def judge(analysis: Analysis) -> Iterator[Raw]:
    """A finding per stale step, at the deepest loop the earlier step's gradients went around."""
    graph = analysis.graph
    for (step, key), tags in sorted(analysis.observations.stale_steps.items()):
        anchors = [anchor(graph, step, tag.crossed) for tag in tags]
        at = max(anchors, key=lambda a: (a.loop is not None and _depth(graph, a.loop), a.line))
        earlier = min(tags).node
        if key in analysis.resolved[earlier].steps:
            why = _why_stale(analysis, key, at)
        else:  # a step of another set over the same parameters applied them, and a backward added to them
            why = f"{call_text(graph, earlier, at.path)} {SHARED}, and nothing clears them before the next backward adds to them"
        related = (("step", graph.sites[step]), ("earlier step", graph.sites[earlier]))
        # each clear once, though a function inlined at two calls holds two copies of it
        clears = dict.fromkeys(graph.sites[c] for c in analysis.nodes("clear", key))
        related += tuple(("clear", site) for site in clears)
        message = f"{call_text(graph, step, at.path)} applies gradients an earlier step already applied: {why}"
        yield at.raw(RULE.code, message, related)


def _depth(graph: Graph, loop: Loop) -> int:
    depth = 0
    while loop.parent is not None:
        depth += 1
        loop = graph.loops[loop.parent]
    return depth


def _why_stale(analysis: Analysis, key: Key, at: Anchor) -> str:
    graph = analysis.graph
    loop = at.loop
    clears = analysis.nodes("clear", key)
    if not clears:
        return "nothing clears them" + (" in this loop" if loop is not None else "")
    if loop is not None and loop.keyword == "step":
        return "the closure it evaluates calls backward without clearing them first"
    inside = [c for c in clears if loop is not None and loop.id in graph.loops_of[c]]
    if loop is not None and not inside:
        return f"{call_text(graph, clears[0], at.path)} runs outside this loop"
    return f"{call_text(graph, (inside or clears)[0], at.path)} does not run on every path between two steps"
