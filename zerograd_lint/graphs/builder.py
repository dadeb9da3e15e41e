"""The control-flow graph of one analysed function, reduced to what gradients care about.

Nodes are gradient events (from `events.py`), branch facts (from `conditions.py`), loop back
edges and plain joins. Calls to functions of the project are inlined at their call site
(recursion and depth are bounded), so a helper that steps or clears is seen in the caller's loop.

`Builder` is assembled from one part per family of statements (the package's docstring lists
them); this module holds the state they share, the entry point, the nodes' emission and the
expressions.

A `for` loop is taken to run at least once: a training loop over an empty loader is a bug of its
own, and the "skipped the loop" path would only produce findings nobody can act on.
"""

from __future__ import annotations

from functools import partial

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint import walk
from zerograd_lint.bindings import Frame, Resolver
from zerograd_lint.classifier import Classifier
from zerograd_lint.conditions import EVERY, Fact, FactMaker
from zerograd_lint.frameworks.accelerate import AccelerateGate
from zerograd_lint.graphs.assumptions import Assumptions
from zerograd_lint.graphs.branches import Branches
from zerograd_lint.graphs.inlining import Inlining
from zerograd_lint.graphs.loops import Counted, Cycled, Loops
from zerograd_lint.graphs.nodes import ASSUME, EVENT, KILL, NOP, EventNode, Fragment, Graph
from zerograd_lint.graphs.statements import FunctionJumps, JumpTarget, Statements, target_paths
from zerograd_lint.graphs.try_and_with import TryAndWith, decorated_grad_mode
from zerograd_lint.positions import code_for
from zerograd_lint.scopes import ELEMENT, Scope
from zerograd_lint.sites import Site


class Builder(Statements, Loops, Branches, TryAndWith, AccelerateGate, Inlining, Assumptions):
    """Builds the graph of a function (`build`); one builder serves every function of a share,
    so the summaries of inlined functions (`fragments`) and the facts of tests are made once."""

    def __init__(self, resolver: Resolver, classifier: Classifier, followed) -> None:
        self.followed = followed  # does a function touch gradients? Calls to others are skipped
        self.resolver = resolver
        self.classifier = classifier
        self.inlined: set[cst.FunctionDef] = set()  # by the graph being built
        self.fragments: dict[tuple, Fragment] = {}
        self._facts: dict[tuple[cst.CSTNode, bool], list] = {}
        self._spelled: dict[tuple, cst.BaseExpression] = {}  # `_spelt`, by (test, scope)
        self._advanced: dict[cst.CSTNode, frozenset[str]] = {}  # `Branches._counters`, by loop
        self._sites: dict[cst.CSTNode, Site] = {}
        self.statements: list[cst.CSTNode] = []  # those being built, innermost last

    # ---------------------------------------------------------------- entry point

    def build(self, body: cst.CSTNode, frame: Frame, callback: cst.FunctionDef | None = None) -> Graph:
        """The graph of a module body or a function; `callback` wraps it in a per-batch loop.
        Afterwards `inlined` holds the project functions whose bodies it contains."""
        self.graph = Graph()
        self.inlined = set()
        self.loops: tuple[int, ...] = ()
        function = FunctionJumps()
        self.jump_targets: list[JumpTarget] = [function]
        self.frames = [frame]
        self.gate: Fact | None = None  # inside `with accelerator.accumulate(...)`
        self.synced: Fact | None = None  # the last such block's fact, still in force after it
        self.handlers = 0
        # False inside `with torch.no_grad():` or a function decorated so: no backward there counts
        self.grad_mode = decorated_grad_mode(frame.scope.node, True)
        self.counted: list[Counted] = []  # the enclosing loops that count their iterations from 0
        self.cycled: list[Cycled] = []  # the enclosing loops whose targets cycle (`Loops._cycle_of`)
        # a loop's `if i // k >= n: break` keeping whole windows only: what its break says (`Loops._truncated`)
        self.window_starts: dict[cst.If, list[tuple[Fact, bool]]] = {}
        # what an inlined function shadows, by its scope and its callers' (`_shadowing`)
        self._shadowed: dict[tuple, frozenset[str]] = {}
        self.stack: list[cst.FunctionDef] = [callback] if callback is not None else []
        start = self.graph.add(NOP, None, ())
        self.preds = [start]
        if callback is not None:
            line, column = self.module.start(callback)
            offset = 6 if callback.asynchronous else 0
            loop = self._new_loop("def", line, column + offset, 3, callback, frozenset({EVERY}))

            def batch() -> None:  # one call of the callback: `return` ends the iteration
                self.block(body)
                self.preds += function.returns
                function.returns.clear()

            self._loop_body(loop, batch, infinite=True)
        else:
            self.block(body)
        return self.graph

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    @property
    def module(self):
        """The project module of the code being built (an inlined callee may live elsewhere)."""
        return self.frame.scope.module

    @property
    def facts(self) -> FactMaker:
        return FactMaker(self.module.cst)

    # ---------------------------------------------------------------- nodes

    def emit(self, op: str, arg: object = None, site: Site | None = None) -> int:
        scope = self.frame.scope
        if op in (KILL, ASSUME) and scope is not self.frames[0].scope and (own := self._shadowing(scope)):
            arg = _own_names(op, arg, scope.qualname, own)
        node = self.graph.add(op, arg, self.loops, site)
        for p in self.preds:
            self.graph.succ[p].append(node)
        self.preds = [node]
        return node

    def _shadowing(self, scope: Scope) -> frozenset[str]:
        """The variables an inlined function assigns (not its parameters, not a loop's targets:
        its counters keep their names) that a caller's function binds too."""
        callers = tuple(dict.fromkeys(frame.scope for frame in self.frames[:-1] if frame.scope is not scope))
        if (scope, callers) not in self._shadowed:
            bound_there = {name for caller in callers for name in caller.bindings}
            self._shadowed[scope, callers] = frozenset(
                name for name, bound in scope.bindings.items()
                if name in bound_there and not any(b.is_param or b.path[:1] == (ELEMENT,) for b in bound)
            )
        return self._shadowed[scope, callers]

    def site(self, node: cst.CSTNode) -> Site:
        if node not in self._sites:
            self._sites[node] = self._site(node)
        return self._sites[node]

    def _site(self, node: cst.CSTNode) -> Site:
        # a one-line suite (`if x: opt.step()`) is generated from the statement it belongs to
        statement = next((s for s in reversed(self.statements) if not isinstance(s, cst.SimpleStatementSuite)), None)
        line, column = self.module.start(node, statement)
        return Site(self.module.path, line, column, partial(_shown, self.module.cst, node))

    # ---------------------------------------------------------------- expressions and calls

    def expr(self, node: cst.CSTNode | None) -> None:
        if node is None:
            return
        for call, frame in self.calls(node):
            self.frames.append(frame)
            try:
                self.actions(self.classifier.classify_call(call, frame), call)
            finally:
                self.frames.pop()

    def calls(self, node: cst.CSTNode) -> list[tuple[cst.Call, Frame]]:
        """The calls of `node` in evaluation order, each with the frame it runs in (comprehension
        targets bound to what they iterate over)."""

        def enter(comprehension, frame: Frame) -> Frame:
            extra: dict = {}
            comp = comprehension.for_in
            while comp is not None:
                inner = frame.child_locals(extra)
                for name, path in target_paths(comp.target):
                    extra[name] = self.resolver.value_keys(comp.iter, (ELEMENT,) + path, inner)
                comp = comp.inner_for_in
            return frame.child_locals(extra)

        return walk.calls(node, self.frame, enter)

    def actions(self, actions: list[ev.Action], node: cst.CSTNode) -> None:
        for action in actions:
            if isinstance(action, ev.Event):
                self.event(action, node)
            elif isinstance(action, ev.Inline):
                self.inline(action)
            else:
                self.step_with_closure(action, node)

    def event(self, event: ev.Event, node: cst.CSTNode) -> None:
        """Under `torch.no_grad()` nothing requires grad: a backward there accumulates nothing (the
        `if loss.requires_grad: loss.backward()` of an evaluation loop is never taken). A step or
        a clear may be gated by Accelerate (`frameworks/accelerate.py`)."""
        if event.op == ev.ACC and not self.grad_mode:
            return
        gate = self._gate_of(event) if event.op in (ev.STEP, ev.CLEAR) else None
        site = self.site(node)
        if event.subject is not None:
            site = site.about(partial(code_for, self.module.cst, event.subject))
        self.emit(EVENT, EventNode(event, gate, self.handlers > 0), site)


def _own_names(op: str, arg, qualname: str, own: frozenset[str]):
    """In an inlined function, the names of its own variables (`own`) as a condition reads them or
    an assignment rebinds them, told from the caller's: `use_amp = ...` in the callee leaves the
    caller's `if use_amp:` standing (a trainer's closure rebinding a name its caller tests made the
    caller's branches mix). Its parameters are shared by name: a test of `step % k` in a helper is
    the caller's when the caller passes its own `step` and `k`."""
    def renamed(name: str) -> str:
        return f"{qualname}:{name}" if name.split(".", 1)[0] in own else name

    if op == KILL:
        return frozenset(map(renamed, arg))
    fact, truth = arg
    return fact._replace(names=frozenset(map(renamed, fact.names))), truth


def _shown(module: cst.Module, node: cst.CSTNode) -> str:
    """A call's code as a finding shows it: on one line, its arguments left out if long."""
    text = " ".join(code_for(module, node).split())
    if len(text) > 60 and isinstance(node, cst.Call):
        text = code_for(module, node.func) + ("(...)" if node.args else "()")
    return text
