"""Statements as the graph builder reads them: the dispatch on a statement's type, the simple
statements (expressions, assignments, `del`), and the jumps (break, continue, return, raise),
which run the `finally` blocks on their way out.

`Statements` is a part of `Builder` (`builder.py`): it uses the state the builder keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from zerograd_lint import events as ev
from zerograd_lint.bindings import PREPARE_METHODS, WRAPPERS, own_key
from zerograd_lint.graphs.nodes import KILL, SHIFT
from zerograd_lint.scopes import dotted_name


class JumpTarget:
    """A place a jump goes to, on the builder's stack (`jump_targets`)."""


@dataclass
class LoopJumps(JumpTarget):
    breaks: list[int] = field(default_factory=list)
    continues: list[int] = field(default_factory=list)


@dataclass
class FunctionJumps(JumpTarget):
    returns: list[int] = field(default_factory=list)


@dataclass
class FinallyBlock(JumpTarget):
    """Not a target: a jump out of its `try` runs it on the way."""

    body: cst.BaseSuite


@dataclass
class TryJumps(JumpTarget):
    raises: list[int] = field(default_factory=list)


class Statements:
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
            self.statements.append(node)  # where the sites of its calls are looked for
            try:
                method(node)
            finally:
                self.statements.pop()

    def stmt_SimpleStatementLine(self, node) -> None:
        for small in node.body:
            if not self.preds:
                return
            self.small(small)

    stmt_SimpleStatementSuite = stmt_SimpleStatementLine

    def stmt_IndentedBlock(self, node) -> None:
        self.block(node)

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
            self.jump(FunctionJumps)
        elif isinstance(node, cst.Raise):
            self.expr(node.exc)
            self.jump(TryJumps)
        elif isinstance(node, cst.Break):
            self.jump(LoopJumps, "breaks")
        elif isinstance(node, cst.Continue):
            self.jump(LoopJumps, "continues")
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
        for name, _ in target_paths(target):
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
        for index in range(len(self.jump_targets) - 1, -1, -1):
            around = self.jump_targets[index]
            if isinstance(around, FinallyBlock):
                saved = self.jump_targets
                self.jump_targets = self.jump_targets[:index]
                self.block(around.body)
                self.jump_targets = saved
            elif isinstance(around, target):
                getattr(around, "raises" if target is TryJumps else attr).extend(self.preds)
                break
            elif isinstance(around, FunctionJumps):
                break  # an exception leaving the function: the path ends here
        self.preds = []


# Methods of a module that return the module itself.
_RETURN_SELF = frozenset({"train", "eval", "requires_grad_", "apply", "share_memory", "zero_grad", "type", "to_empty"})


def _makes_a_new_object(call: cst.Call) -> bool:
    last = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    if isinstance(call.func, cst.Attribute) and (last in _RETURN_SELF or last in WRAPPERS):
        return False  # `self.model = self.model.train()`: the same module
    return bool(last) and last not in WRAPPERS and last not in PREPARE_METHODS and last not in ("parameters", "module")


def target_paths(target: cst.BaseExpression, path: tuple = ()):
    """The names an assignment or a `for` target binds, each with where it sits in the value
    (`a, (b, c) = x`: `b` is `x[1][0]`)."""
    if isinstance(target, cst.Name):
        yield target.value, path
    elif isinstance(target, (cst.Tuple, cst.List)):
        for i, element in enumerate(target.elements):
            yield from target_paths(element.value, path + (i,))


def target_names(target: cst.BaseExpression) -> frozenset[str]:
    return frozenset(name for name, _ in target_paths(target))


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
