"""The fix of a step that evaluates a closure running backward without a clear.

`optimizer.step(closure)` (LBFGS re-evaluates it several times per step) needs the clear inside
the closure, before its backward: `optimizer.zero_grad()` goes first in the closure's body (after
its docstring), naming the optimizer as the step does. The closure is found in the file of the
step: a function named by the argument (`closure`), the function of a
`functools.partial(objective, ...)`, or the nested function a factory of the file returns
(`make_closure(model, x, y)`). The optimizer must be the same variable inside the closure as at
the step; the fix is unsafe when the function (or its factory) is used elsewhere too, where the
clear would run as well.
"""

from __future__ import annotations

import functools

import libcst as cst
from libcst.metadata import Assignment, MetadataWrapper, Scope, ScopeProvider

from zerograd_lint.fix.by_hand import Unplanned
from zerograd_lint.fix.located import Located
from zerograd_lint.fix.rewrite import Placement
from zerograd_lint.fix.shapes import is_docstring, root_name


def clear_inside(here: Located, step: cst.Call, subject: str) -> tuple[Placement, str, str]:
    """The placement of `<subject>.zero_grad()` first in the closure the step evaluates, its
    title, and why it is unsafe (empty when it is safe)."""
    given = [arg for arg in step.args if here.code(arg.value).strip() != subject]
    if len(given) != 1:
        raise Unplanned(f"`{here.code(step)}` is given several things besides the optimizer: which is the "
                        "closure is a judgement the fix does not make")
    scopes = _scopes(here)
    closure, used = _closure_of(here, scopes, given[0].value, subject)
    root = root_name(subject)
    at_step = scopes.get(step)
    inside = scopes.get(closure.body.body[0]) if isinstance(closure.body, cst.IndentedBlock) else None
    if not isinstance(closure.body, cst.IndentedBlock) or closure.asynchronous is not None:
        raise Unplanned(f"`{closure.name.value}()` has no block of statements to put a clear first in")
    if not root or inside is None or at_step is None or not _same_binding(at_step, inside, root):
        raise Unplanned(f"`{root or subject}` is not the same variable in `{closure.name.value}()` as at the step: "
                        "inside the closure the clear would have to name something else, a judgement the fix does not "
                        "make")
    clear = cst.parse_statement(f"{subject}.zero_grad()\n", config=here.module.config_for_parsing)
    body = list(closure.body.body)
    # after a docstring and the `global`/`nonlocal` lines that open the body, which must come first
    opening = 1 if is_docstring(body[0]) else 0
    while opening < len(body) and _declares(body[opening]):
        opening += 1
    anchor: cst.BaseStatement | cst.IndentedBlock = body[opening - 1] if opening else closure.body
    title = (f"Insert `{subject}.zero_grad()` first in `{closure.name.value}()` (line {here.first_line(closure)}), "
             f"which `{here.code(step)}` evaluates")
    return Placement(anchor, clear), title, used


@functools.lru_cache(maxsize=4)
def _scopes(here: Located) -> dict[cst.CSTNode, Scope | None]:
    return dict(MetadataWrapper(here.module, unsafe_skip_copy=True).resolve(ScopeProvider))


def _closure_of(here: Located, scopes, given: cst.BaseExpression, subject: str) -> tuple[cst.FunctionDef, str]:
    """The function the step evaluates, and why a clear in it changes more (empty: nothing)."""
    if isinstance(given, cst.Name):
        function, assignment = _function(scopes, given, subject)
        return function, _used_elsewhere(here, assignment, given)
    if isinstance(given, cst.Call) and here.code(given.func).strip() in ("partial", "functools.partial"):
        first = given.args[0].value if given.args and not given.args[0].keyword else None
        if isinstance(first, cst.Name):
            function, assignment = _function(scopes, first, subject)
            return function, _used_elsewhere(here, assignment, first)
    if isinstance(given, cst.Call) and isinstance(given.func, cst.Name):
        factory, assignment = _function(scopes, given.func, subject)
        returned = [r.value for r in _returns(factory)]
        if len(returned) == 1 and isinstance(returned[0], cst.Name):
            function, _ = _function(scopes, returned[0], subject)
            if here.parent(here.parent(function)) is factory:
                return function, _used_elsewhere(here, assignment, given.func)
        raise Unplanned(f"`{factory.name.value}()` does not return one function of its own the fix can find")
    if isinstance(given, cst.Lambda):
        raise Unplanned("the closure is a lambda: there is no statement to put a clear before")
    raise Unplanned(f"the closure `{here.code(given)}` is not a function of this file the fix can find")


def _function(scopes, name: cst.Name, subject: str) -> tuple[cst.FunctionDef, Assignment]:
    """The one `def` the name refers to, in this file."""
    scope = scopes.get(name)
    assignments = list(scope[name.value]) if scope is not None else []
    if len(assignments) == 1 and isinstance(assignments[0], Assignment):
        node = assignments[0].node
        if isinstance(node, cst.FunctionDef):
            return node, assignments[0]
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            raise Unplanned(
                f"the closure comes from `{name.value}`, imported from another module, where "
                f"`{subject}` is not in scope: inside it the clear would have to name something else "
                "(the parameters the optimizer holds), a judgement the fix does not make")
    raise Unplanned(f"`{name.value}` is not one function defined in this file")


def _used_elsewhere(here: Located, assignment: Assignment, use: cst.Name) -> str:
    others = sorted(here.first_line(access.node) for access in assignment.references if access.node is not use)
    if not others:
        return ""
    return (f"`{assignment.name}()` is used elsewhere too (line {others[0]}), where the added clear would run as "
            "well")


def _returns(function: cst.FunctionDef) -> list[cst.Return]:
    """The function's own `return` statements (not those of functions nested in it)."""
    found: list[cst.Return] = []

    class Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

    function.visit(Returns())
    return [r for r in found if r.value is not None]


def _same_binding(at_step: Scope, inside: Scope, name: str) -> bool:
    """`name` refers to the same variable in both scopes (a global, or a variable the closure sees)."""
    here_, there = {a.scope for a in at_step[name]}, {a.scope for a in inside[name]}
    return bool(here_) and here_ == there


def _declares(statement: cst.BaseStatement) -> bool:
    """`global name` or `nonlocal name`, alone on its line."""
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Global, cst.Nonlocal)) for small in statement.body)
