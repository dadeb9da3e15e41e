"""ZG002 cleared-before-step: a clear between a backward and the step meant to apply its
gradients, so that step finds nothing to apply."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from zerograd_lint.rules.raw import Raw, Rule, anchor, call_text

if TYPE_CHECKING:
    from zerograd_lint.flow import Analysis

RULE = Rule("ZG002", "cleared-before-step", "a clear between backward and step leaves the step nothing to apply")


def judge(analysis: Analysis) -> Iterator[Raw]:
    """A finding per step and clear that emptied it, at the loop the backward's gradients went around."""
    graph = analysis.graph
    for (step, _), discards in sorted(analysis.observations.empty_steps.items()):
        for discard in sorted(discards):
            at = anchor(graph, step, discard.crossed)
            here = at.path
            related = (("clear", graph.sites[discard.clear]), ("backward", graph.sites[discard.backward]),
                       ("step", graph.sites[step]))
            yield at.raw(RULE.code, (
                f"{call_text(graph, discard.clear, here)} clears the gradients of "
                f"{call_text(graph, discard.backward, here)} before {call_text(graph, step, here)} can apply them: "
                "clear before the backward or after the step"
            ), related)
