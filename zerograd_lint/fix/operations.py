"""What planning a fix gives: an `Operation` (the placements that fix a finding, and whether that
is safe) or a `Declined` (why there is none); and the fixes that cannot all be made, declined."""

from __future__ import annotations

from dataclasses import dataclass

from zerograd_lint.findings import Finding, Fix
from zerograd_lint.fix.located import Located
from zerograd_lint.fix.rewrite import Placement


@dataclass(frozen=True)
class Operation:
    """The fix of one finding: a placement, and what it says it does. `unsafe` says why the fix
    may change more than the bug (empty: it is safe)."""

    finding: Finding
    placement: Placement
    title: str
    unsafe: str = ""
    path: str = ""  # the file the placement is in, when not the finding's (a helper of another module)
    also: tuple[Placement, ...] = ()  # more placements in the same file, made with the first or not at all

    @property
    def edited(self) -> str:
        return self.path or self.finding.path

    @property
    def placements(self) -> list[Placement]:
        return [self.placement, *self.also]


@dataclass(frozen=True)
class Declined:
    """A finding left as it is, and why; `fix` is the unsafe fix held back, when that is why."""

    finding: Finding
    reason: str
    fix: Fix | None = None


def without_conflicts(planned: list[Operation | Declined], here: Located) -> list[Operation | Declined]:
    """Decline fixes that want the same statement in two places, or move what another follows."""
    operations = [p for p in planned if isinstance(p, Operation)]
    reasons: dict[int, str] = {}
    for index, operation in enumerate(operations):
        for other in operations[index + 1:]:
            one, two = operation.placement, other.placement
            if one.moved is not None and one.moved is two.moved and one.anchor is not two.anchor:
                reason = (f"the clear at line {here.first_line(one.moved)} would have to follow two steps (lines "
                          f"{here.first_line(one.anchor)} and {here.first_line(two.anchor)}): a judgement")
            elif one.anchor is two.moved or two.anchor is one.moved:
                reason = "one fix would move the statement another fix puts a clear after: a judgement"
            else:
                continue
            reasons.setdefault(id(operation), reason)
            reasons.setdefault(id(other), reason)
    return [Declined(p.finding, reasons[id(p)]) if id(p) in reasons else p for p in planned]
