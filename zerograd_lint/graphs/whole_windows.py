"""Window loops that keep whole windows only, and so leave no tail for a later clear to discard.

One counts its windows and breaks after the last whole one the data holds (NVIDIA's FastPitch):

    num_iters = len(loader) // k
    epoch_iter = 1
    for batch, accum_step in zip(loader, cycle(range(1, k + 1))):
        ...
        if accum_step % k == 0:
            optimizer.step()
            if epoch_iter == num_iters:
                break
            epoch_iter += 1

It never reaches a tail shorter than a window: leaving normally, its last iteration ended a
window too (it does only when the length is a multiple of `k`, the break then coming on that
same iteration). `window_end` finds it.

The other breaks first thing at the first batch past its last whole window (NVIDIA's HiFi-GAN):

    iters_num = len(loader) // k
    for step, batch in enumerate(loader):
        if step // k >= iters_num:
            break

By that break or normally, it leaves just after a window ended. `truncation` finds it.
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint import walk
from zerograd_lint.conditions import FactMaker, compact_text
from zerograd_lint.scopes import Scope


def window_end(loop: cst.For, data: cst.BaseExpression, scope: Scope, module: cst.Module) -> cst.BaseExpression | None:
    """The test of the block that ends each window of `loop` (`accum_step % k == 0`), when that
    block breaks after the last whole window of `data`, the loader the loop walks, as the
    module's docstring shows; else None."""
    for statement in _statements(loop.body):
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            continue
        modulus = _modulus(statement.test, module)
        if modulus is not None and _breaks_after_the_last_window(statement.body, loop, data, modulus, scope, module):
            return statement.test
    return None


def _breaks_after_the_last_window(block: cst.BaseSuite, loop: cst.For, data: cst.BaseExpression, modulus: str,
                                  scope: Scope, module: cst.Module) -> bool:
    """`if W == n: break` then `W += 1` in `block`, `W` counting from 1 and advanced only there (so
    it is the number of the window ending), `n` being `len(data) // modulus`."""
    statements = _statements(block)
    for at, statement in enumerate(statements):
        counted = _count_tested(statement, data, modulus, scope, module)
        if counted is None or not any(_advances(after, counted) for after in statements[at + 1:]):
            continue
        bindings = scope.bindings.get(counted, [])
        starts_at_one = (
            len(bindings) == 1 and isinstance(bindings[0].value, cst.Integer) and bindings[0].value.value == "1"
        )
        advanced = [node for node in walk.nodes(loop.body) if isinstance(node, cst.AugAssign)
                    and isinstance(node.target, cst.Name) and node.target.value == counted]
        if starts_at_one and len(advanced) == 1:
            return True
    return False


def _count_tested(statement: cst.CSTNode, data: cst.BaseExpression, modulus: str, scope: Scope,
                  module: cst.Module) -> str | None:
    """`W` of `if W == n: break` (or `W >= n`), `n` being `len(data) // modulus` or a name bound
    once to it."""
    test = _breaking_test(statement, (cst.Equal, cst.GreaterThanEqual))
    if test is None or not isinstance(test.left, cst.Name):
        return None
    length = _divided(test.comparisons[0].comparator, modulus, scope, module)
    if not (isinstance(length, cst.Call) and isinstance(length.func, cst.Name) and length.func.value == "len"
            and len(length.args) == 1 and compact_text(module, length.args[0].value) == compact_text(module, data)):
        return None
    return test.left.value


def _divided(bound: cst.BaseExpression, modulus: str, scope: Scope, module: cst.Module) -> cst.BaseExpression | None:
    """`x` of a bound `x // modulus`, written in the test or bound once to the name it tests."""
    if isinstance(bound, cst.Name):
        bindings = scope.bindings.get(bound.value, [])
        if len(bindings) != 1 or bindings[0].value is None or bindings[0].path:
            return None
        bound = bindings[0].value
    if not (isinstance(bound, cst.BinaryOperation) and isinstance(bound.operator, cst.FloorDivide)
            and compact_text(module, bound.right) == modulus):
        return None
    return bound.left


def _modulus(test: cst.BaseExpression, module: cst.Module) -> str | None:
    """`k` of a window's test (`E % k == 0`, `(i + 1) % k == 0`), as the facts spell it: the block
    it guards runs at one place in each window."""
    held = FactMaker(module).facts(test, True)
    return next((fact.key[2] for fact, value in held if fact.key[0] == "mod" and value), None)


def _advances(statement: cst.CSTNode, name: str) -> bool:
    """`name += 1`, alone on its line."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    return (isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign)
            and isinstance(small.target, cst.Name) and small.target.value == name
            and isinstance(small.value, cst.Integer) and small.value.value == "1")


def _breaking_test(statement: cst.CSTNode, operators: tuple[type, ...]) -> cst.Comparison | None:
    """The test of `if a OP b: break` (no `else`), OP one of `operators`; else None."""
    if not (isinstance(statement, cst.If) and statement.orelse is None and _only_breaks(statement.body)):
        return None
    test = statement.test
    one = isinstance(test, cst.Comparison) and len(test.comparisons) == 1
    return test if one and isinstance(test.comparisons[0].operator, operators) else None


def _only_breaks(block: cst.BaseSuite) -> bool:
    """`break`, alone, on its own line or after the colon (`if x: break`)."""
    body = block.body
    if isinstance(block, cst.IndentedBlock):
        if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
            return False
        body = body[0].body
    return len(body) == 1 and isinstance(body[0], cst.Break)


def _statements(block: cst.BaseSuite) -> list[cst.CSTNode]:
    """The statements of an indented block (one on the colon's line holds no `if`)."""
    return list(block.body) if isinstance(block, cst.IndentedBlock) else []


def truncation(statement: cst.CSTNode, counter: str, lengths: frozenset[str], scope: Scope,
               module: cst.Module) -> cst.BaseExpression | None:
    """`k` of `if counter // k >= n: break` with `n` = `len(data) // k`, `counter` counting the loop's
    iterations from 0 and `lengths` spelling its length (`len(loader)`, and the names bound to
    it): the loop keeps its whole windows only (NVIDIA's HiFi-GAN). The test first holds on the
    first iteration of the window after the last whole one, which breaks; leaving normally, the
    loop ran `len(data)` iterations, a multiple of `k` since the test never held. Either way the
    iteration that ended was the last of a window."""
    test = _breaking_test(statement, (cst.GreaterThanEqual,))
    if test is None:
        return None
    windows = test.left
    if not (isinstance(windows, cst.BinaryOperation) and isinstance(windows.operator, cst.FloorDivide)
            and isinstance(windows.left, cst.Name) and windows.left.value == counter):
        return None
    length = _divided(test.comparisons[0].comparator, compact_text(module, windows.right), scope, module)
    return windows.right if length is not None and compact_text(module, length) in lengths else None


def window_start(counter: str, modulus: cst.BaseExpression) -> cst.BaseExpression:
    """The test `counter % modulus == 0`, for the facts it makes."""
    return cst.Comparison(
        left=cst.BinaryOperation(left=cst.Name(counter), operator=cst.Modulo(), right=modulus),
        comparisons=[cst.ComparisonTarget(operator=cst.Equal(), comparator=cst.Integer("0"))],
    )

