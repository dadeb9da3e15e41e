"""The rule table: codes, names and one-line summaries. Data only, cheap to import."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str


RULES = {
    rule.code: rule
    for rule in (
        Rule("ZG001", "stale-gradients", "a step applies gradients an earlier step already applied"),
        Rule("ZG002", "cleared-before-step", "a clear between backward and step leaves the step nothing to apply"),
        Rule("ZG003", "accumulation-discarded", "a clear throws away accumulated gradients before the step that should apply them"),
        Rule("ZG100", "unused-marker", "a suppression marker that suppresses nothing"),
    )
}
