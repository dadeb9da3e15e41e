"""The graph the builder (`builder.py`) makes and the dataflow (`flow.py`) reads.

A graph is a list of nodes in parallel arrays: each node has an operation, an argument (an
`EventNode` for EVENT, a fact for ASSUME), its successors, the loops it lies in and, for events, the
call site. Loops are kept apart with their header position, where a finding is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint.conditions import Fact
from zerograd_lint.sites import Loop, Site

MAX_NODES = 20_000

# node operations
NOP = "nop"
EVENT = "event"
ASSUME = "assume"
KILL = "kill"
SHIFT = "shift"
ENTER = "enter"  # a loop is entered from outside
BACK = "back"
# the gradients pending here are given up on purpose: an exception handler, the branch of a check
# on the gradients or the loss that skips the step (docs/contract.md, "Deliberate discards are not ZG003")
EXCUSE = "excuse"


class TooComplex(Exception):
    """The function is too large to analyse within the node budget."""


@dataclass
class Graph:
    ops: list[str] = field(default_factory=list)
    args: list[object] = field(default_factory=list)
    succ: list[list[int]] = field(default_factory=list)
    loops_of: list[tuple[int, ...]] = field(default_factory=list)
    sites: list[Site | None] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    entry: int = 0
    idle: set[int] = field(default_factory=set)  # ASSUME nodes of branches that do nothing to gradients

    def add(self, op: str, arg: object, loops: tuple[int, ...], site: Site | None = None) -> int:
        if len(self.ops) >= MAX_NODES:
            raise TooComplex
        self.ops.append(op)
        self.args.append(arg)
        self.succ.append([])
        self.loops_of.append(loops)
        self.sites.append(site)
        return len(self.ops) - 1


@dataclass(frozen=True)
class Fragment:
    """A function body's graph, ready to be copied in at a call site (node 0 is its entry)."""

    graph: Graph
    exits: list[int]
    inlined: frozenset[cst.FunctionDef]  # the functions it holds, at any depth


@dataclass(frozen=True)
class EventNode:
    event: ev.Event
    gate: Fact | None = None  # inside accelerator.accumulate(): runs only when the fact holds
    recovery: bool = False  # inside an exception handler: a deliberate discard, never ZG003
