"""What a test makes true on each side of a branch: its facts (`conditions.py`), made of the test
as the code means it. A parameter an inlined function tests is the argument its caller passed, or
its default; a name bound to a test is that test, spelt out (`is_window_end = (i + 1) % k == 0`);
a constant, or whether grad mode is on, decides the branch outright.

`Assumptions` is a part of `Builder` (`builder.py`): it uses the state the builder keeps.
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint.bindings import STARRED, Frame
from zerograd_lint.conditions import FactMaker
from zerograd_lint.graphs.nodes import ASSUME
from zerograd_lint.scopes import dotted_name


class Assumptions:
    def assume(self, test: cst.BaseExpression, truth: bool) -> None:
        test, module = self._condition(test, self.frame)
        constant = constant_truth(test) if not _asks_grad_mode(test, self.frame) else self.grad_mode
        if constant is not None:
            if constant != truth:
                self.preds = []  # `if True:`, `while False:`, `if update_grad:` given True
            return
        key = (test, truth, self.frame if self.counted else None)  # last-iteration tests depend on the loops
        if key not in self._facts:
            cycle_of = self._cycle_of if self.cycled else None  # as a rule none: no lookup per test
            self._facts[key] = FactMaker(module.cst, self._last_iteration, cycle_of).facts(test, truth)
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
            if param.name.value == test.value and param.default is not None and constant_truth(param.default) is not None:
                return param.default
        return None


def constant_truth(test: cst.BaseExpression) -> bool | None:
    """What a test is whatever runs: `True`, `not None`, `0`; None when that depends on the run."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = constant_truth(test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.Name) and test.value in ("True", "False", "None"):
        return test.value == "True"
    if isinstance(test, cst.Integer):
        return int(test.value, 0) != 0
    return None


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
