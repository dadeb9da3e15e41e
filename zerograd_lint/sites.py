"""Where a finding is: the call sites and loops of a graph (`graph.py`), in a module without
LibCST, so that a finding made in a helper process unpickles here without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    column: int  # 0-based
    text: str
    subject: str = ""  # for a step or a clear: the code naming the optimizer (`self.optimizer`)


@dataclass
class Loop:
    id: int
    keyword: str  # "for", "while", "def" (a per-batch callback), "step" (step(closure))
    path: str
    line: int
    column: int  # 0-based, at the keyword
    length: int  # of the keyword
    parent: int | None
    counters: frozenset[str] = frozenset()  # names that advance by one per iteration
    node: cst.CSTNode | None = field(default=None, repr=False, compare=False)
