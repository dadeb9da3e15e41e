"""The control-flow graph of one analysed function, reduced to what gradients care about.

Nodes are gradient events (from `events.py`), branch facts (from `conditions.py`), loop back
edges and plain joins. Calls to functions of the same module are inlined at their call site
(recursion and depth are bounded), so a helper that steps or clears is seen in the caller's loop.

Structure handled: if/elif/else, for/async for/while with else, break, continue, return,
raise, try/except/else/finally (finally runs on every exit), with (Accelerate's
`accumulate()` gates the optimizer's step and zero_grad), match, comprehensions.

A `for` loop is taken to run at least once: a training loop over an empty loader is a bug of its
own, and the "skipped the loop" path would only produce findings nobody can act on.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import libcst as cst
from libcst.metadata import CodeRange

from zerograd_lint import elementwise, vocabulary, walk
from zerograd_lint import events as ev
from zerograd_lint.bindings import ACCELERATOR, PREPARE_METHODS, STARRED, WRAPPERS, Frame, Resolver, last_name, own_key
from zerograd_lint.conditions import EVERY, Fact, FactMaker, compact_text as _text
from zerograd_lint.graphs.nodes import (
    ASSUME,
    BACK,
    ENTER,
    EVENT,
    EXCUSE,
    KILL,
    NOP,
    SHIFT,
    EventNode,
    Fragment,
    Graph,
)
from zerograd_lint.scopes import ELEMENT, dotted_name
from zerograd_lint.sites import Loop, Site

MAX_INLINE_DEPTH = 8


# Events whose being run or not is worth a correlated condition (not renames, not unknown calls).
_ACTS = frozenset({ev.ACC, ev.STEP, ev.STEP_CLEAR, ev.UPDATE, ev.CLEAR, ev.CLEAR_MODELS, ev.OVERWRITE})


def _context(frame: Frame) -> tuple:
    """What the graph of a function depends on besides its code: the bindings up its frames."""
    out = []
    while frame is not None:
        bound = tuple(sorted((k, tuple(v)) for k, v in frame.subst.items()))
        out.append((frame.scope, bound, frame.cls, tuple(frame.arguments.items())))
        frame = frame.parent
    return tuple(out)


class _Ctx:
    """A jump target on the builder's stack."""


@dataclass
class _LoopCtx(_Ctx):
    breaks: list[int] = field(default_factory=list)
    continues: list[int] = field(default_factory=list)


@dataclass
class _FunctionCtx(_Ctx):
    returns: list[int] = field(default_factory=list)


@dataclass
class _FinallyCtx(_Ctx):
    body: cst.BaseSuite


@dataclass
class _TryCtx(_Ctx):
    raises: list[int] = field(default_factory=list)


def _counter_from_zero(node: cst.For) -> str | None:
    """`for i, x in enumerate(xs)` and `for i in range(n)`: `i` is 0 on the first iteration."""
    iterable, target = node.iter, node.target
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
        return None
    args = iterable.args
    if iterable.func.value == "enumerate" and len(args) == 1 and isinstance(target, cst.Tuple):
        first = target.elements[0].value
        return first.value if isinstance(first, cst.Name) else None
    if iterable.func.value == "range" and isinstance(target, cst.Name):
        if len(args) == 1 or len(args) >= 2 and isinstance(args[0].value, cst.Integer) and args[0].value.value == "0":
            return target.value
    return None


_NO_GRAD = frozenset({"no_grad", "inference_mode"})


def _ends_an_iterator(handler: cst.ExceptHandler) -> bool:
    """`except StopIteration:`: the data ran out, an epoch's end, nothing failed."""
    return isinstance(handler.type, (cst.Name, cst.Attribute)) and (dotted_name(handler.type) or "").endswith("StopIteration")


def _grad_mode(item: cst.BaseExpression, mode: bool) -> bool:
    """Grad mode inside `with item:`: off under `torch.no_grad()`, `torch.inference_mode()` (not
    `inference_mode(False)`), back on under `torch.enable_grad()`."""
    if not isinstance(item, cst.Call):
        return mode
    last = (dotted_name(item.func) or "").rsplit(".", 1)[-1]
    if last == "enable_grad":
        return True
    if last == "set_grad_enabled":  # `torch.set_grad_enabled(phase == "train")`: as given, if shown
        given = _constant(item.args[0].value) if item.args else None
        return mode if given is None else given
    if last in _NO_GRAD:
        disabled = item.args and isinstance(item.args[0].value, cst.Name) and item.args[0].value.value == "False"
        return mode if disabled else False
    return mode


# Methods of a module that return the module itself.
_RETURN_SELF = frozenset({"train", "eval", "requires_grad_", "apply", "share_memory", "zero_grad", "type", "to_empty"})


def _makes_a_new_object(call: cst.Call) -> bool:
    last = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    if isinstance(call.func, cst.Attribute) and (last in _RETURN_SELF or last in WRAPPERS):
        return False  # `self.model = self.model.train()`: the same module
    return bool(last) and last not in WRAPPERS and last not in PREPARE_METHODS and last not in ("parameters", "module")


def _asks_grad_mode(test: cst.BaseExpression, frame: Frame) -> bool:
    """`torch.is_grad_enabled()`: a closure's `if torch.is_grad_enabled(): opt.zero_grad()` runs
    its clear whenever the optimizer evaluates it (LBFGS does so with grad enabled). So does
    `if loss.requires_grad:` of a value the function computed (`loss = loss.mean()`): it requires
    grad unless computed under `torch.no_grad()` (not a parameter, nor an element of a loop)."""
    if isinstance(test, cst.Call):
        return (dotted_name(test.func) or "").endswith("is_grad_enabled") and not test.args
    if isinstance(test, cst.Attribute) and test.attr.value == "requires_grad" and isinstance(test.value, cst.Name):
        found = frame.scope.lookup(test.value.value)
        return found is not None and bool(found[1]) and all(
            not b.is_param and not b.path and isinstance(b.value, (cst.Call, cst.BinaryOperation)) for b in found[1]
        )
    return False


def _counter_from_one(node: cst.For) -> str | None:
    """`for i, x in enumerate(xs, start=1)` (or `enumerate(xs, 1)`): `i` runs from 1 to `len(xs)`."""
    iterable, target = node.iter, node.target
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate"):
        return None
    args = iterable.args
    if len(args) != 2 or not isinstance(args[1].value, cst.Integer) or args[1].value.value != "1":
        return None
    if args[1].keyword is not None and args[1].keyword.value != "start" or not isinstance(target, cst.Tuple):
        return None
    first = target.elements[0].value
    return first.value if isinstance(first, cst.Name) else None


def _is_progress_bar(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Call) and bool(expr.args) and expr.args[0].keyword is None
        and (dotted_name(expr.func) or "").rsplit(".", 1)[-1] in ("tqdm", "track", "Bar", "progress_bar")
    )


def _constant(test: cst.BaseExpression) -> bool | None:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _constant(test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.Name) and test.value in ("True", "False", "None"):
        return test.value == "True"
    if isinstance(test, cst.Integer):
        return int(test.value, 0) != 0
    return None


def _target_paths(target: cst.BaseExpression, path: tuple = ()):
    if isinstance(target, cst.Name):
        yield target.value, path
    elif isinstance(target, (cst.Tuple, cst.List)):
        for i, element in enumerate(target.elements):
            yield from _target_paths(element.value, path + (i,))


def _target_names(target: cst.BaseExpression) -> frozenset[str]:
    return frozenset(name for name, _ in _target_paths(target))


def _assigned_names(target: cst.BaseExpression) -> frozenset[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for element in target.elements:
            out |= _assigned_names(element.value)
        return frozenset(out)
    name = dotted_name(target)
    if name:
        return frozenset({name})
    if isinstance(target, cst.Subscript):
        return _assigned_names(target.value)
    return frozenset()


class Builder:
    def __init__(self, resolver: Resolver, classifier: ev.Classifier, followed) -> None:
        self.followed = followed  # does a function touch gradients? Calls to others are skipped
        self.resolver = resolver
        self.classifier = classifier
        self.inlined: set[cst.FunctionDef] = set()  # by the graph being built
        self.fragments: dict[tuple, Fragment] = {}
        self._facts: dict[tuple[cst.CSTNode, bool], list] = {}
        self._spelled: dict[tuple, cst.BaseExpression] = {}  # `_spelt`, by (test, scope)
        self._sites: dict[cst.CSTNode, Site] = {}

    # ---------------------------------------------------------------- entry points

    def build(self, body: cst.CSTNode, frame: Frame, callback: cst.FunctionDef | None = None) -> Graph:
        """The graph of a module body or a function; `callback` wraps it in a per-batch loop.
        Afterwards `inlined` holds the project functions whose bodies it contains."""
        self.graph = Graph()
        self.inlined = set()
        self.loops: tuple[int, ...] = ()
        function = _FunctionCtx()
        self.ctx: list[_Ctx] = [function]
        self.frames = [frame]
        self.gate: Fact | None = None  # inside `with accelerator.accumulate(...)`
        self.synced: Fact | None = None  # the last such block's fact, still in force after it
        self.handlers = 0
        self.grad_mode = True  # False inside `with torch.no_grad():`: no backward there counts
        self.counted: list[_Counted] = []  # the enclosing loops that count their iterations from 0
        self.stack: list[cst.FunctionDef] = [callback] if callback is not None else []
        start = self.graph.add(NOP, None, ())
        self.preds = [start]
        if callback is not None:
            pos = self.positions[callback]
            offset = 6 if callback.asynchronous else 0
            loop = self._new_loop("def", pos.start.line, pos.start.column + offset, 3, callback, frozenset({EVERY}))

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
    def positions(self):
        return self.module.positions

    @property
    def facts(self) -> FactMaker:
        return FactMaker(self.module.cst)

    # ---------------------------------------------------------------- nodes

    def emit(self, op: str, arg: object = None, site: Site | None = None) -> int:
        node = self.graph.add(op, arg, self.loops, site)
        for p in self.preds:
            self.graph.succ[p].append(node)
        self.preds = [node]
        return node

    def site(self, node: cst.CSTNode) -> Site:
        if node not in self._sites:
            self._sites[node] = self._site(node)
        return self._sites[node]

    def _site(self, node: cst.CSTNode) -> Site:
        pos: CodeRange = self.positions[node]
        return Site(self.module.path, pos.start.line, pos.start.column, partial(_shown, self.module.cst, node))

    def _new_loop(self, keyword: str, line: int, column: int, length: int, node, counters, path: str | None = None) -> Loop:
        parent = self.loops[-1] if self.loops else None
        loop = Loop(len(self.graph.loops), keyword, path or self.module.path, line, column, length, parent, counters, node)
        self.graph.loops.append(loop)
        return loop

    def _loop_body(
        self, loop: Loop, body, infinite: bool, test: cst.BaseExpression | None = None, at_least_once: bool = False
    ) -> list[int]:
        """Head, body, back edge; leaves normally through `self.preds`, returns the breaks."""
        self.emit(ENTER, loop.id)
        head = self.emit(NOP)
        outer_loops = self.loops
        self.loops = outer_loops + (loop.id,)
        ctx = _LoopCtx()
        self.ctx.append(ctx)
        if test is not None:
            self.expr(test)
            self.assume(test, True)
        body()
        self.preds += ctx.continues
        back = self.emit(BACK, loop.id)
        self.graph.succ[back].append(head)
        self.ctx.pop()
        self.loops = outer_loops
        exits: list[int] = []
        if not infinite:
            self.preds = [back] if at_least_once else [head]
            if test is not None:
                self.expr(test)
                self.assume(test, False)
            exits = self.preds
        self.preds = exits
        return ctx.breaks

    def assume(self, test: cst.BaseExpression, truth: bool) -> None:
        test, module = self._condition(test, self.frame)
        constant = _constant(test) if not _asks_grad_mode(test, self.frame) else self.grad_mode
        if constant is not None:
            if constant != truth:
                self.preds = []  # `if True:`, `while False:`, `if update_grad:` given True
            return
        key = (test, truth, self.frame if self.counted else None)  # last-iteration tests depend on the loops
        if key not in self._facts:
            self._facts[key] = FactMaker(module.cst, self._last_iteration).facts(test, truth)
        for fact, value in self._facts[key]:
            self.emit(ASSUME, (fact, value))

    def _condition(self, test: cst.BaseExpression, frame: Frame):
        """The condition as the caller wrote it: a parameter tested by an inlined function
        (`if update_grad:`) is the argument it received (`(i + 1) % k == 0`), so the two agree."""
        while (
            isinstance(test, cst.Name) and test.value in frame.arguments and frame.caller is not None
            and all(b.is_param for b in frame.scope.bindings.get(test.value, []))
        ):
            test, frame = frame.arguments[test.value], frame.caller
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._default(test.expression, frame)
            if inner is not None:
                return test.with_changes(expression=inner), frame.scope.module
        return self._spelt(self._default(test, frame) or test, frame.scope), frame.scope.module

    def _spelt(self, test: cst.BaseExpression, scope) -> cst.BaseExpression:
        """`_spelt_out`, once per test and scope: the same node each time, so that the facts made
        of it are made once too (a new node would miss `_facts`)."""
        key = (test, scope)
        if key not in self._spelled:
            self._spelled[key] = _spelt_out(test, scope)
        return self._spelled[key]

    @staticmethod
    def _default(test: cst.BaseExpression, frame: Frame) -> cst.BaseExpression | None:
        """A parameter the caller did not pass, of a function inlined at a call: its default
        (`step_model(model, x, y, accelerator)` runs with `do_backward=True`)."""
        if not (isinstance(test, cst.Name) and frame.caller is not None and test.value not in frame.arguments):
            return None
        if STARRED in frame.arguments:
            return None  # `f(x, **options)`: it may have been passed
        node = frame.scope.node
        if not isinstance(node, cst.FunctionDef):
            return None
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == test.value and param.default is not None and _constant(param.default) is not None:
                return param.default
        return None

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
                for name, path in _target_paths(comp.target):
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
        """Inside `accelerator.accumulate()` the optimizer's step and zero_grad are gated on the
        sync step; so are a prepared optimizer's after such a block (Accelerate keeps the state).
        Under `torch.no_grad()` nothing requires grad: a backward there accumulates nothing (the
        `if loss.requires_grad: loss.backward()` of an evaluation loop is never taken)."""
        if event.op == ev.ACC and not self.grad_mode:
            return
        gate = None
        if event.op in (ev.STEP, ev.CLEAR):
            if self.gate is not None:
                gate = self.gate
            elif self.synced is not None and any(self.resolver.prepared(k) for k in event.keys):
                gate = self.synced
        site = self.site(node)
        if event.subject is not None:
            site = site.about(partial(self.module.cst.code_for_node, event.subject))
        self.emit(EVENT, EventNode(event, gate, self.handlers > 0), site)

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
        key = (action.func, _context(frame), self.gate, self.handlers > 0, self.grad_mode, counted)
        fragment = self.fragments.get(key)
        if fragment is None:
            fragment = self.fragments[key] = self._fragment(action.func, frame)
        self.inlined |= fragment.inlined | {action.func}
        self._splice(fragment)

    def _fragment(self, func: cst.FunctionDef, frame: Frame) -> Fragment:
        saved = (self.graph, self.loops, self.preds, self.ctx, self.inlined)
        self.graph, self.loops, self.inlined = Graph(), (), set()
        self.preds = [self.graph.add(NOP, None, ())]
        function = _FunctionCtx()
        self.ctx = [function]
        self.stack.append(func)
        self.frames.append(frame)
        try:
            self.block(func.body)
            return Fragment(self.graph, self.preds + function.returns, frozenset(self.inlined))
        finally:
            self.frames.pop()
            self.stack.pop()
            self.graph, self.loops, self.preds, self.ctx, self.inlined = saved

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

    # ---------------------------------------------------------------- statements

    def block(self, body) -> None:
        statements = body.body if isinstance(body, (cst.IndentedBlock, cst.Module)) else [body]
        if isinstance(body, cst.SimpleStatementSuite):
            statements = [body]
        for statement in statements:
            if not self.preds:
                return  # unreachable
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        method = getattr(self, f"stmt_{type(node).__name__}", None)
        if method is not None:
            method(node)

    def stmt_SimpleStatementLine(self, node) -> None:
        for small in node.body:
            if not self.preds:
                return
            self.small(small)

    stmt_SimpleStatementSuite = stmt_SimpleStatementLine

    def small(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Expr):
            self.expr(node.value)
        elif isinstance(node, (cst.Assign, cst.AnnAssign)):
            self.expr(node.value)
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                self.actions(self.classifier.classify_assign(target, node.value, self.frame), node)
                self._rebind(target, node)
                self._kill(_assigned_names(target))
        elif isinstance(node, cst.AugAssign):
            self.expr(node.value)
            self.actions(self.classifier.classify_augassign(node, self.frame), node)
            name = dotted_name(node.target)
            if name and isinstance(node.operator, cst.AddAssign) and isinstance(node.value, cst.Integer):
                self.emit(SHIFT, name)
            else:
                self._kill(_assigned_names(node.target))
        elif isinstance(node, cst.Del):
            self.actions(self.classifier.classify_assign(node.target, None, self.frame), node)
        elif isinstance(node, cst.Return):
            self.expr(node.value)
            self.jump(_FunctionCtx)
        elif isinstance(node, cst.Raise):
            self.expr(node.exc)
            self.jump(_TryCtx)
        elif isinstance(node, cst.Break):
            self.jump(_LoopCtx, "breaks")
        elif isinstance(node, cst.Continue):
            self.jump(_LoopCtx, "continues")
        elif isinstance(node, cst.Assert):
            self.expr(node.test)

    def _rebind(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        """A name bound to a new object: a new model or tensor has no `.grad` yet. So is an
        attribute given the result of a call that makes one (`self.image = torch.randn(...)`,
        not `self.model = model.to(device)`, the same module)."""
        keys = []
        value = getattr(node, "value", None)
        if isinstance(target, cst.Attribute) and isinstance(value, cst.Call) and _makes_a_new_object(value):
            keys.extend(self.resolver.keys(target, self.frame))
        for name, _ in _target_paths(target):
            found = self.frame.scope.lookup(name)
            if found is None or name in self.frame.locals:
                continue
            own = own_key(found[0], name)
            if own in self.resolver.keys(cst.Name(name), self.frame):
                keys.append(own)
        if keys:
            self.event(ev.Event(ev.REBIND, tuple(keys)), node)

    def _kill(self, names: frozenset[str]) -> None:
        if names:
            self.emit(KILL, names)

    def jump(self, target: type, attr: str = "returns") -> None:
        """break/continue/return/raise: run the finally blocks on the way, then leave."""
        for index in range(len(self.ctx) - 1, -1, -1):
            ctx = self.ctx[index]
            if isinstance(ctx, _FinallyCtx):
                saved = self.ctx
                self.ctx = self.ctx[:index]
                self.block(ctx.body)
                self.ctx = saved
            elif isinstance(ctx, target):
                getattr(ctx, "raises" if target is _TryCtx else attr).extend(self.preds)
                break
            elif isinstance(ctx, _FunctionCtx):
                break  # an exception leaving the function: the path ends here
        self.preds = []

    def stmt_If(self, node: cst.If) -> None:
        """An `elif` chain is built in a loop, not by recursion: generated code has hundreds."""
        taken: list[list[int]] = []  # the exits of each test's true branch
        chained: list[tuple[int, int, int]] = []  # (first, start, level) of each false branch going on
        while True:
            self.expr(node.test)
            before = self.preds
            # a check of the gradients or the loss, as the code spells it (`skip = torch.isnan(loss)`),
            # on the last test of a chain: the branch that skips the step gives up what is pending
            checked = not isinstance(node.orelse, cst.If) and _gives_up_when_skipped(self._spelt(node.test, self.frame.scope))
            on_true = self._branch(node.test, True, lambda: self.block(node.body), checked)
            taken.append(self.preds)
            self.preds = before
            if not isinstance(node.orelse, cst.If):
                break
            first = len(self.graph.ops)
            self.assume(node.test, False)
            chained.append((first, len(self.graph.ops), len(taken)))
            node = node.orelse
        if isinstance(node.orelse, cst.Else):
            on_false = self._branch(node.test, False, lambda: self.block(node.orelse.body), checked)
        else:
            on_false = self._branch(node.test, False, lambda: None, checked)
        last = self.preds
        for first, start, level in chained:  # once the rest of the chain is built, as `_branch` does
            self._idle_unless_acting(first, start, falls_through=bool(last) or any(taken[level:]))
        if checked:
            self._excuse_the_skipping_branch(on_true, on_false)
        self.preds = [n for exits in taken for n in exits] + last

    def _branch(self, test: cst.BaseExpression, truth: bool, body, checked: bool = False) -> "_Built":
        first = len(self.graph.ops)
        self.assume(test, truth)
        excuse = self.emit(EXCUSE) if checked and self.preds else None
        start = len(self.graph.ops)
        body()
        self._idle_unless_acting(first, start, falls_through=bool(self.preds))
        return _Built(excuse, start, len(self.graph.ops), not self.preds)

    def _excuse_the_skipping_branch(self, on_true: "_Built", on_false: "_Built") -> None:
        """A check on the gradients or the loss (`if torch.isfinite(norm): opt.step()`,
        `if not math.isfinite(loss.item()): continue`): the branch that skips the step gives up the
        pending gradients on purpose, and the next clear discards them deliberately (rules.md,
        "Deliberate discards are not ZG003"). The other branch's mark is taken out again."""
        steps = [self._steps_in(b) for b in (on_true, on_false)]
        jumps = [on_true.jumps, on_false.jumps]
        skipping = None
        for i, j in ((0, 1), (1, 0)):
            if (jumps[i] and not jumps[j]) or (steps[j] and not steps[i]):
                skipping = i if skipping is None else -1
        for index, built in enumerate((on_true, on_false)):
            if built.excuse is not None and index != skipping:
                self.graph.ops[built.excuse] = NOP

    def _steps_in(self, built: "_Built") -> bool:
        graph = self.graph
        return any(
            graph.ops[n] == EVENT and graph.args[n].event.op in (ev.STEP, ev.STEP_CLEAR, ev.UPDATE)
            for n in range(built.start, built.end)
        )

    def _idle_unless_acting(self, first: int, start: int, falls_through: bool) -> None:
        """A branch (its facts assumed from `first`, its code built from `start`) that runs no
        event and falls through (logging, metrics) makes its facts idle: not worth tracking."""
        graph = self.graph
        acts = any(op == EVENT and graph.args[n].event.op in _ACTS for n, op in enumerate(graph.ops[start:], start))
        if falls_through and not acts:
            graph.idle.update(n for n in range(first, start) if graph.ops[n] == ASSUME)

    def stmt_For(self, node: cst.For) -> None:
        self.expr(node.iter)
        if self._is_collection_loop(node):
            self.flat(node.body)
            return
        targets = _target_names(node.target)
        self._kill(targets)
        pos = self.positions[node]
        column = pos.start.column
        if node.asynchronous is not None:
            column += len("async") + len(node.asynchronous.whitespace_after.value)
        loop = self._new_loop("for", pos.start.line, column, 3, node, targets)
        counter = _counter_from_zero(node)
        if counter is not None:
            self.emit(ASSUME, (FactMaker.first_iteration(counter), True))
        counter = counter or _counter_from_one(node)
        if counter is not None:
            from_one = _counter_from_one(node) is not None
            self.counted.append(_Counted(self.frame, counter, *self._lengths(node, from_one), from_one))

        def body() -> None:
            self._rebind(node.target, node)
            self.block(node.body)

        breaks = self._loop_body(loop, body, False, at_least_once=True)
        if counter is not None:
            self.counted.pop()
            # leaving normally, the last iteration made its last-iteration tests true (`i + 1 == n`)
            self.emit(ASSUME, (FactMaker.was_last(counter), True))
        if node.orelse is not None:
            self.block(node.orelse.body)
        self.preds += breaks

    def _lengths(self, node: cst.For, from_one: bool) -> tuple[frozenset[str], frozenset[str]]:
        """How many iterations a counted loop runs (`len(loader)` for `enumerate(loader)`, `n` for
        `range(n)`), and the last value of its counter, as texts, with the names of the function
        bound to them (`num_batches = len(loader)`, `last_idx = len(loader) - 1`). A progress bar
        has its loader's length (`enumerate(tqdm(loader))`, `pbar = tqdm(loader)`)."""
        call = node.iter
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
        if call.func.value == "range" and len(call.args) > 2:
            return frozenset(), frozenset()  # a step other than 1: no last value worth telling
        if call.func.value == "range":
            lengths = {_text(self.module.cst, call.args[-1].value)}
        else:
            iterable = call.args[0].value
            if isinstance(iterable, cst.Name):
                found = self.frame.scope.bindings.get(iterable.value, [])
                if len(found) == 1 and found[0].value is not None and not found[0].path:
                    iterable = found[0].value if _is_progress_bar(found[0].value) else iterable
            lengths = {f"len({_text(self.module.cst, iterable)})"}
            if _is_progress_bar(iterable):
                lengths.add(f"len({_text(self.module.cst, iterable.args[0].value)})")
        lasts = set(lengths) if from_one else {f"{length}-1" for length in lengths}
        for name, bindings in self.frame.scope.bindings.items():
            if len(bindings) == 1 and _a_length(bindings[0].value) and not bindings[0].path:
                value = _text(self.module.cst, bindings[0].value)
                if value in lengths:
                    lengths.add(name)
                    if from_one:
                        lasts.add(name)
                    else:
                        lasts.add(f"{name}-1")
                elif value in lasts:
                    lasts.add(name)
        return frozenset(lengths), frozenset(lasts)

    def _last_iteration(self, test: cst.BaseExpression) -> str | None:
        """The counter of an enclosing loop of this function whose last iteration `test` tells:
        `i + 1 == len(loader)`, `i + 1 == num_batches`, `step == last_idx`, or a name bound to such
        a test (`is_last = i + 1 == len(loader)`)."""
        if not self.counted:
            return None
        if isinstance(test, cst.Name):
            _, found = self.frame.scope.lookup(test.value) or (None, [])
            if len(found) != 1 or not isinstance(found[0].value, cst.Comparison):
                return None
            test = found[0].value
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        test, frame = _as_the_caller_wrote(test, self.frame)
        enclosing = []  # a nested function reads the names of the functions around it
        while frame is not None:
            enclosing.append(frame)
            frame = frame.parent
        counted = [c for c in self.counted if any(c.frame is f for f in enclosing)]
        if not counted:
            return None
        operator = test.comparisons[0].operator
        if not isinstance(operator, (cst.Equal, cst.GreaterThanEqual)):
            return None
        names = {n.value for n in walk.nodes(test) if isinstance(n, cst.Name)}
        if not any(c.counter in names for c in self.counted):
            return None  # no counter of an enclosing loop in it: no text to make
        left, right = _text(self.module.cst, test.left), _text(self.module.cst, test.comparisons[0].comparator)
        pairs = [(left, right), (right, left)] if isinstance(operator, cst.Equal) else [(left, right)]
        for c in reversed(counted):
            for ours, theirs in pairs:
                plus_one = not c.from_one and ours in (f"{c.counter}+1", f"({c.counter}+1)") and theirs in c.lengths
                if plus_one or ours == c.counter and theirs in c.lasts:
                    return c.counter
        return None

    def stmt_While(self, node: cst.While) -> None:
        pos = self.positions[node]
        loop = self._new_loop("while", pos.start.line, pos.start.column, 5, node, frozenset())
        test = node.test
        infinite = isinstance(test, (cst.Name, cst.Integer)) and getattr(test, "value", None) in ("True", "1")
        breaks = self._loop_body(loop, lambda: self.block(node.body), infinite, None if infinite else test)
        if node.orelse is not None:
            self.block(node.orelse.body)
        self.preds += breaks

    def stmt_Try(self, node) -> None:
        final = _FinallyCtx(node.finalbody.body) if node.finalbody else None
        if final:
            self.ctx.append(final)
        try_ctx = _TryCtx()
        self.ctx.append(try_ctx)
        sources: list[int] = []
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]
        for statement in body:
            sources += self.preds
            if not self.preds:
                break
            self.statement(statement)
        sources += self.preds + try_ctx.raises
        self.ctx.pop()
        if node.orelse is not None:
            self.block(node.orelse.body)
        exits = self.preds
        for handler in node.handlers:
            self.preds = list(dict.fromkeys(sources))
            failed = not _ends_an_iterator(handler)  # `except StopIteration:` is an epoch's end
            if failed:
                self.emit(EXCUSE)  # an iteration that failed gives up what it accumulated
            self.handlers += failed
            self.block(handler.body)
            self.handlers -= failed
            exits = exits + self.preds
        self.preds = exits
        if final:
            self.ctx.pop()
            if self.preds:
                self.block(final.body)

    stmt_TryStar = stmt_Try

    def stmt_With(self, node: cst.With) -> None:
        gate = None
        grad_mode = self.grad_mode
        for item in node.items:
            self.expr(item.item)
            gate = gate or self._accumulate_gate(item.item)
            grad_mode = _grad_mode(item.item, grad_mode)
        if gate is None:
            saved_mode, self.grad_mode = self.grad_mode, grad_mode
            try:
                self.block(node.body)
            finally:
                self.grad_mode = saved_mode
            return
        self._kill(gate.names)
        before = self.preds
        self.preds = before
        self.emit(ASSUME, (gate, True))
        synced = self.preds
        self.preds = before
        self.emit(ASSUME, (gate, False))
        self.preds = synced + self.preds
        saved, self.gate = self.gate, gate
        self.block(node.body)
        self.gate, self.synced = saved, gate

    def _accumulate_gate(self, item: cst.BaseExpression) -> Fact | None:
        """`with accelerator.accumulate(model):` gates the prepared optimizers' step and zero_grad."""
        if not (isinstance(item, cst.Call) and isinstance(item.func, cst.Attribute)):
            return None
        if item.func.attr.value != "accumulate":
            return None
        keys = self.resolver.keys(item.func.value, self.frame)
        if not any(self.resolver.info(k).kind == ACCELERATOR or "accelerat" in last_name(k) for k in keys):
            return None
        receiver = dotted_name(item.func.value) or "accelerator"
        return self.facts.named(f"{receiver}.sync_gradients")

    def stmt_Match(self, node) -> None:
        self.expr(node.subject)
        before = self.preds
        exits: list[int] = []
        irrefutable = False
        for case in node.cases:
            self.preds = before
            self.expr(case.guard)
            self.block(case.body)
            exits += self.preds
            pattern = case.pattern
            if case.guard is None and isinstance(pattern, cst.MatchAs) and pattern.pattern is None:
                irrefutable = True
        self.preds = exits + ([] if irrefutable else before)

    def stmt_IndentedBlock(self, node) -> None:
        self.block(node)

    # ---------------------------------------------------------------- loops over collections

    def _is_collection_loop(self, node: cst.For) -> bool:
        """`for p in model.parameters(): p.grad = None`, `for opt in optimizers: opt.step()`.

        Such a loop applies one operation to every element of a collection: it is one event, not
        a loop of the training, and it runs for every element (no "zero iterations" path).
        """
        names = _target_names(node.target)
        return bool(names) and elementwise.applies_to_each(elementwise.body_actions(self, node.body), names)

    def flat(self, body: cst.BaseSuite) -> None:
        """Emit the events of a collection loop's body once, in source order, ignoring branches."""
        for actions, node, frame in elementwise.body_actions(self, body):
            self.frames.append(frame)
            try:
                self.actions(actions, node)
            finally:
                self.frames.pop()


def _a_length(value: cst.BaseExpression | None) -> bool:
    """`len(x)` or `len(x) - 1`, before its text is made."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract):
        value = value.left
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "len"


class _Counted(NamedTuple):
    """A loop counting its iterations from 0 (or from 1): how many it runs and the counter's last
    value, as texts."""

    frame: Frame
    counter: str
    lengths: frozenset[str]
    lasts: frozenset[str]
    from_one: bool = False


_TESTS = (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)


def _spelt_out(test: cst.BaseExpression, scope, depth: int = 0) -> cst.BaseExpression:
    """A condition with the names it tests replaced by the test each is bound to, once, in the
    function: `if is_window_end or is_last:` with `is_window_end = (i + 1) % k == 0` is a counter
    window that agrees with `(i + 1) % k == 0` tested elsewhere, and that `k == 1` always fills."""
    if depth > 4:
        return test
    if isinstance(test, cst.Name):
        owner, found = scope.lookup(test.value) or (scope, [])  # a closure reads its function's names
        if len(found) == 1 and not found[0].path and isinstance(found[0].value, _TESTS):
            return _spelt_out(found[0].value, owner, depth + 1)
        return test
    if isinstance(test, cst.BooleanOperation):
        left, right = _spelt_out(test.left, scope, depth + 1), _spelt_out(test.right, scope, depth + 1)
        if left is test.left and right is test.right:
            return test
        return test.with_changes(left=_parenthesized(left), right=_parenthesized(right))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _spelt_out(test.expression, scope, depth + 1)
        return test if inner is test.expression else test.with_changes(expression=_parenthesized(inner))
    return test


def _parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.BooleanOperation, cst.Comparison, cst.UnaryOperation)) and not expr.lpar:
        return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr


class _Substitute(cst.CSTTransformer):
    def __init__(self, arguments: dict[str, cst.BaseExpression]) -> None:
        self.arguments = arguments

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.arguments.get(original.value, updated)


def _as_the_caller_wrote(test: cst.BaseExpression, frame: Frame) -> tuple[cst.BaseExpression, Frame]:
    """A test of an inlined function with its parameters replaced by the arguments its callers
    passed (`batch_index + 1 == last` called with `len(loader)`), and the frame it then reads in."""
    while frame.caller is not None and frame.arguments:
        names = {n.value for n in walk.nodes(test) if isinstance(n, cst.Name)} & frame.arguments.keys()
        params = {n for n in names if all(b.is_param for b in frame.scope.bindings.get(n, []))}
        if not params:
            break
        test = test.visit(_Substitute({n: frame.arguments[n] for n in params}))
        frame = frame.caller
    return test, frame


class _Built(NamedTuple):
    """One branch of an `if` as built: its EXCUSE node (if any), its nodes, whether it jumps away."""

    excuse: int | None
    start: int
    end: int
    jumps: bool


# Words of a condition that checks whether the gradients or the loss are usable.
_USABILITY = re.compile(
    r"(?i)finite|^isnan$|^isinf$|^nan$|_nan$|^nan_|^inf$|_inf$|^inf_|overflow|_ok$|^ok$|^valid$|^is_valid|healthy|spike|diverg"
)


# Words of a condition that (also) tells whether an accumulation window is full.
_WINDOW = re.compile(r"(?i)accum|sync_grad|micro|should_step|do_step|update_step|step_now")


def _empty(node: cst.CSTNode) -> bool:
    """`len(x) == 0`, `len(x) <= 0`, `len(x) < 1`."""
    if not (isinstance(node, cst.Comparison) and len(node.comparisons) == 1):
        return False
    left, target = node.left, node.comparisons[0]
    counted = isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "len"
    bound = target.comparator.value if isinstance(target.comparator, cst.Integer) else None
    return counted and (
        bound == "0" and isinstance(target.operator, (cst.Equal, cst.LessThanEqual))
        or bound == "1" and isinstance(target.operator, cst.LessThan)
    )


_WINDOW_WORDS = frozenset({"step", "steps", "update", "updates", "window", "boundary", "sync", "synced"})


def _gives_up_when_skipped(test: cst.BaseExpression) -> bool:
    """Does a step this test guards give up what is pending when it is skipped? Yes, unless the
    test tells whether an accumulation window is full (rules.md: ZG003 is about a step skipped
    *because gradients are still being accumulated*): a modulo, a name about accumulating or
    syncing, or about the step or update itself (`should_step`, `need_update`). A check that the
    gradients or the loss are usable (`torch.isfinite(norm)`, `found_inf`, `gradients_ok(model)`,
    an iteration that produced nothing) gives up what is pending even beside a word about the
    step, and so does a step skipped for another reason (`if not skip_points:`)."""
    usable = window = False
    for node in walk.nodes(test):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return False
        usable = usable or _empty(node)  # `if len(outputs) <= 0: continue`
        word = node.value if isinstance(node, cst.Name) else node.attr.value if isinstance(node, cst.Attribute) else None
        if word is not None:
            if _WINDOW.search(word):
                return False
            usable = usable or bool(_USABILITY.search(word))
            window = window or not _WINDOW_WORDS.isdisjoint(vocabulary.tokens(word))
    return usable or not window


def _shown(module: cst.Module, node: cst.CSTNode) -> str:
    """A call's code as a finding shows it: on one line, its arguments left out if long."""
    text = " ".join(module.code_for_node(node).split())
    if len(text) > 60 and isinstance(node, cst.Call):
        text = module.code_for_node(node.func) + ("(...)" if node.args else "()")
    return text
