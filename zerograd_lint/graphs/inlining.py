"""Calls into the project in the graph: a project function that touches gradients runs at its call
site. Its graph (a `Fragment`) is built once per calling context and copied in (spliced) at every
call with that context; recursion and depth are bounded. An optimizer stepped with a closure
(`optimizer.step(closure)`) evaluates it in a loop of its own, which LBFGS repeats.

`Inlining` is a part of `Builder` (`builder.py`): it uses the state the builder keeps.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint.bindings import Frame
from zerograd_lint.graphs.branches import ACTS
from zerograd_lint.graphs.nodes import ASSUME, BACK, ENTER, EVENT, NOP, Fragment, Graph
from zerograd_lint.graphs.statements import FunctionJumps
from zerograd_lint.graphs.try_and_with import decorated_grad_mode

MAX_INLINE_DEPTH = 8


class Inlining:
    def inline(self, action: ev.Inline) -> None:
        """A call of a project function that touches gradients: its body runs here.

        The callee's graph is built once per calling context (its parameters' bindings, `self`,
        the enclosing frames, an Accelerate gate, an exception handler) and copied in at every
        call site with that context: a summary of the function, computed once and reused."""
        if action.func in self.stack or len(self.stack) > MAX_INLINE_DEPTH or not self.followed(action.func):
            return
        parent = next((f for f in reversed(self.frames) if f.scope is action.scope.parent), None)
        if parent is None and action.enclosing is not None:  # a closure a factory made and returned
            made = action.enclosing
            parent = Frame(made.scope, made.subst, None, made.cls, arguments=made.arguments, caller=self.frame)
        frame = Frame(action.scope, action.subst, parent, action.cls, arguments=action.arguments, caller=self.frame)
        counted = tuple((id(c.frame), c.counter) for c in self.counted)  # last-iteration tests read them
        grad_mode = decorated_grad_mode(action.func, self.grad_mode)  # `@torch.no_grad() def evaluate(...)`
        key = (action.func, _context(frame), self.gate, self.handlers > 0, grad_mode, counted)
        fragment = self.fragments.get(key)
        if fragment is None:
            saved_mode, self.grad_mode = self.grad_mode, grad_mode
            try:
                fragment = self.fragments[key] = self._fragment(action.func, frame)
            finally:
                self.grad_mode = saved_mode
        self.inlined |= fragment.inlined | {action.func}
        self._splice(fragment)

    def _fragment(self, func: cst.FunctionDef, frame: Frame) -> Fragment:
        saved = (self.graph, self.loops, self.preds, self.jump_targets, self.inlined)
        self.graph, self.loops, self.inlined = Graph(), (), set()
        self.preds = [self.graph.add(NOP, None, ())]
        function = FunctionJumps()
        self.jump_targets = [function]
        self.stack.append(func)
        self.frames.append(frame)
        try:
            self.block(func.body)
            graph = self.graph
            if not any(op == EVENT and graph.args[i].event.op in ACTS for i, op in enumerate(graph.ops)):
                # a function that does nothing to gradients (sampling, logging): what it tests is not
                # worth tracking, however it returns (a training script's sampler, inlined three
                # times, tested enough counters to make the states of its caller's loop too many)
                graph.idle.update(i for i, op in enumerate(graph.ops) if op == ASSUME)
            return Fragment(graph, self.preds + function.returns, frozenset(self.inlined))
        finally:
            self.frames.pop()
            self.stack.pop()
            self.graph, self.loops, self.preds, self.jump_targets, self.inlined = saved

    def _splice(self, fragment: Fragment) -> None:
        """Copy a fragment in at the current point, its loops nested in the current ones."""
        source, graph = fragment.graph, self.graph
        loops: dict[int, int] = {}
        for loop in source.loops:
            parent = loops.get(loop.parent) if loop.parent is not None else (self.loops[-1] if self.loops else None)
            copy = dataclasses.replace(loop, id=len(graph.loops), parent=parent)
            if loop.keyword == "step" and loop.parent is None and self.loops:  # re-anchor at the caller's loop
                outer = graph.loops[self.loops[-1]]
                copy = dataclasses.replace(copy, path=outer.path, line=outer.line, column=outer.column, length=outer.length)
            graph.loops.append(copy)
            loops[loop.id] = copy.id
        base = len(graph.ops)
        for i, op in enumerate(source.ops):
            arg = loops[source.args[i]] if op in (ENTER, BACK) else source.args[i]
            graph.add(op, arg, self.loops + tuple(loops[l] for l in source.loops_of[i]), source.sites[i])
            graph.succ[base + i] = [base + j for j in source.succ[i]]
        graph.idle.update(base + i for i in source.idle)
        for p in self.preds:
            graph.succ[p].append(base)
        self.preds = [base + e for e in fragment.exits]

    def step_with_closure(self, action: ev.StepWithClosure, call: cst.CSTNode) -> None:
        """The optimizer evaluates the closure and steps; LBFGS evaluates it again and again."""
        site = self.site(call)
        if self.loops:
            anchor = self.graph.loops[self.loops[-1]]
            loop = self._new_loop("step", anchor.line, anchor.column, anchor.length, anchor.node, frozenset(), anchor.path)
        else:
            loop = self._new_loop("step", site.line, site.column, len(site.text), call, frozenset(), site.path)

        def body() -> None:
            closure = action.closure
            if isinstance(closure, cst.Lambda):
                self.expr(closure.body)
            else:
                self.inline(closure)
            self.event(ev.Event(ev.STEP, action.keys, action.subject), call)

        first = len(self.graph.ops)
        self._loop_body(loop, body, infinite=True)
        back = len(self.graph.ops) - 1
        step_node = back - 1  # the step event precedes the back edge
        self.preds = [step_node]
        accumulates = any(
            self.graph.ops[n] == EVENT and self.graph.args[n].event.op == ev.ACC for n in range(first, step_node)
        )
        repeats = any(self.resolver.info(k).reevaluates_closure for k in action.keys)
        if not (accumulates and repeats):  # evaluated once, or re-evaluated without effect
            self.graph.succ[step_node].remove(back)


def _context(frame: Frame) -> tuple:
    """What the graph of a function depends on besides its code: the bindings up its frames."""
    out = []
    while frame is not None:
        bound = tuple(sorted((k, tuple(v)) for k, v in frame.subst.items()))
        out.append((frame.scope, bound, frame.cls, tuple(frame.arguments.items())))
        frame = frame.parent
    return tuple(out)
