"""ZG003 accumulation-discarded: a clear throws away contributions meant for a later step. Only
a clear that, on another path, meets nothing pending is judged (the loop's regular clear, not a
deliberate discard such as skipping a batch whose gradients are not finite), and a clear that
already emptied a step is ZG002's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from zerograd_lint.rules.raw import Raw, Rule, anchor, call_text

if TYPE_CHECKING:
    from zerograd_lint.flow import Analysis

RULE = Rule(
    "ZG003", "accumulation-discarded", "a clear throws away accumulated gradients before the step that should apply them",
)


def judge(analysis: Analysis) -> Iterator[Raw]:
    """A finding per regular clear that met pending contributions, at the loop they went around."""
    graph = analysis.graph
    obs = analysis.observations
    emptied = {(discard.clear, key) for (_, key), discards in obs.empty_steps.items() for discard in discards}
    for (clear, key), tags in sorted(obs.fresh_clears.items()):
        if (clear, key) in emptied or (clear, key) not in obs.plain_clears or graph.args[clear].recovery:
            continue
        tag = min(tags)
        at = anchor(graph, clear, tag.crossed)
        here = at.path
        steps = analysis.nodes("step", key)
        target = f" for {call_text(graph, steps[0], here)}" if steps else ""
        related = (("clear", graph.sites[clear]), ("backward", graph.sites[tag.node]))
        related += tuple(("step", graph.sites[s]) for s in steps)
        yield at.raw(RULE.code, (
            f"{call_text(graph, clear, here)} discards gradients that {call_text(graph, tag.node, here)} "
            f"accumulated{target} before the step applies them: clear right after the step instead"
        ), related)
