"""Fixes of updates and clears written by hand.

- An update by hand (`w -= lr * w.grad`, `p.data.add_(p.grad, alpha=-lr)`) has no optimizer whose
  `zero_grad()` a fix could call: the clear is of the tensor the update reads, right after the
  update, in its block (so inside its `for p in model.parameters():` loop when it is in one):
  `w.grad = None`, or `w.grad.zero_()` where the file already zeroes gradients that way.
- A clear by hand over the parameters (`for p in model.parameters(): p.grad = None`) is a loop
  whose body only clears: it is moved whole, as one statement. An update by hand over them is a
  loop whose body updates and runs no backward: a clear that belongs after the update goes after
  that loop, not into it (where it would run once per parameter).
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint.fix.located import Frame, Located, Loop
from zerograd_lint.fix.shapes import EFFECTS, descendants


class Unplanned(Exception):
    """No fix for the finding: the message says why."""


_CLEARING_METHODS = frozenset({"zero_", "detach_", "requires_grad_"})


# What the fixes look for, tested node by node: `libcst.matchers` took 0.15 to 0.25 s to import, in
# every run that fixes.
def _grads(node: cst.CSTNode) -> list[cst.Attribute]:
    """Every `x.grad` in `node` (itself included), in the order of the source."""
    return [n for n in descendants(node) if isinstance(n, cst.Attribute) and _is_grad(n)]


def _is_grad(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "grad"


def _zeroes(node: cst.CSTNode) -> bool:
    """`x.grad.zero_()` or `x.grad.data.zero_()`."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "zero_"):
        return False
    zeroed = node.func.value
    return _is_grad(zeroed) or (isinstance(zeroed, cst.Attribute) and zeroed.attr.value == "data"
                                and _is_grad(zeroed.value))


def _backward(node: cst.CSTNode) -> bool:
    """`x.backward(...)` or `backward(...)`."""
    return isinstance(node, cst.Call) and (
        (isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward")
        or (isinstance(node.func, cst.Name) and node.func.value == "backward"))


def _is_none(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def clear_after_update(here: Located, update: cst.SimpleStatementLine, loop: Loop) -> cst.SimpleStatementLine:
    """The clear of the tensor an update by hand reads, to put right after the update."""
    statement = update.body[0]
    reads = [node for node in _grads(statement) if not _written(here, node)]
    tensors = list(dict.fromkeys(here.code(node.value).strip() for node in reads))
    if not tensors:
        raise Unplanned(f"`{here.code(statement)}` reads no `.grad` the fix can name")
    if len(tensors) > 1:
        names = ", ".join(f"`{t}`" for t in tensors)
        raise Unplanned(f"the update by hand reads the gradients of several tensors ({names}): which of them "
                        "to clear is a judgement the fix does not make")
    [tensor] = tensors
    if any(isinstance(n, EFFECTS) for node in reads for n in descendants(node.value)):
        raise Unplanned(f"the updated tensor is reached through a call (`{tensor}`), which the fix does not repeat")
    zeroes = any(map(_zeroes, descendants(here.module)))
    text = f"{tensor}.grad.zero_()" if zeroes else f"{tensor}.grad = None"
    clear = cst.parse_statement(f"{text}\n", config=here.module.config_for_parsing)
    assert isinstance(clear, cst.SimpleStatementLine)
    following = here.next_in_block(update)
    if isinstance(following, cst.SimpleStatementLine) and following.body[0].deep_equals(clear.body[0]):
        raise Unplanned(f"`{text}` already follows the update at line {here.first_line(update)}")
    again = _read_elsewhere(here, loop, tensor, statement)
    if again is not None:
        cleared = "zeros" if zeroes else "None"
        raise Unplanned(f"`{tensor}.grad` is read again at line {again}: cleared right after the update, it "
                        f"would be {cleared} there")
    return clear


def whole_clearing_loop(here: Located, clear: cst.SimpleStatementLine, frames: tuple[Frame, ...],
                        step_frames: tuple[Frame, ...]) -> tuple[cst.BaseStatement, tuple[Frame, ...]]:
    """The clear's `for` loop and the frames around it, when the loop only clears (by hand) and
    the step is not in it; else the clear and its frames."""
    loop = frames[-1] if frames else None
    if not isinstance(loop, cst.For) or loop in step_frames or not _plain_loop(loop):
        return clear, frames
    assert isinstance(loop.target, cst.Name) and isinstance(loop.body, cst.IndentedBlock)
    if not all(_only_clears(here, s, loop.target.value) for s in loop.body.body):
        return clear, frames
    return loop, frames[:-1]


def whole_update_loop(here: Located, update: cst.BaseStatement, frames: tuple[Frame, ...],
                      clear_frames: tuple[Frame, ...]) -> tuple[cst.BaseStatement, tuple[Frame, ...]]:
    """The `for` loop of an update by hand and the frames around it, when the loop runs no
    backward and the clear is not in it; else the update and its frames."""
    loop = frames[-1] if frames else None
    if not isinstance(loop, cst.For) or loop in clear_frames or not _plain_loop(loop):
        return update, frames
    assert isinstance(loop.target, cst.Name)
    reads_its_gradient = any(here.code(node.value).strip() == loop.target.value for node in _grads(update))
    if not reads_its_gradient or any(map(_backward, descendants(loop.body))):
        return update, frames
    return loop, frames[:-1]


def described(here: Located, statement: cst.BaseStatement, where: str = "") -> str:
    """`p.grad = None` (line 12), or `for p in model.parameters(): ...` (lines 11-12); `where`
    names another file (`engine.py `)."""
    if isinstance(statement, cst.SimpleStatementLine):
        return f"`{here.code(statement.body[0])}` ({where}line {here.first_line(statement)})"
    if isinstance(statement, cst.For):
        header = f"for {here.code(statement.target)} in {here.code(statement.iter)}: ..."
    else:
        header = f"the {type(statement).__name__.lower()} statement"
    return f"`{header}` ({where}lines {here.first_line(statement)}-{here.end_line(statement)})"


def _plain_loop(loop: cst.For) -> bool:
    """`for p in <parameters>:` with a block of its own and no `else`."""
    return (loop.orelse is None and loop.asynchronous is None and isinstance(loop.target, cst.Name)
            and isinstance(loop.body, cst.IndentedBlock))


def _only_clears(here: Located, statement: cst.BaseStatement, name: str) -> bool:
    """The statement clears `name.grad` and does nothing else (`if p.grad is not None:` around it
    included)."""
    if isinstance(statement, cst.SimpleStatementLine):
        return all(_clears(here, small, name) for small in statement.body)
    if isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.body, cst.IndentedBlock):
        return not any(isinstance(n, EFFECTS) for n in descendants(statement.test)) and all(
            _only_clears(here, s, name) for s in statement.body.body)
    return False


def _clears(here: Located, small: cst.BaseSmallStatement, name: str) -> bool:
    """`p.grad = None`, `p.grad.zero_()`, `p.grad.detach_()`, `p.grad.data.zero_()`."""
    if isinstance(small, cst.Assign):
        return (len(small.targets) == 1 and here.code(small.targets[0].target).strip() == f"{name}.grad"
                and _is_none(small.value))
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        return (isinstance(func, cst.Attribute) and func.attr.value in _CLEARING_METHODS
                and here.code(func.value).strip() in (f"{name}.grad", f"{name}.grad.data"))
    return False


def _written(here: Located, grad: cst.Attribute) -> bool:
    """`p.grad` is assigned (`p.grad = None`), not read."""
    return isinstance(here.parent(grad), cst.AssignTarget)


def _read_elsewhere(here: Located, loop: Loop, tensor: str, update: cst.BaseSmallStatement) -> int | None:
    """The line of a read of `tensor.grad` in the loop other than the update's, a clear's or a
    test of whether it is None (which still holds, or is moot, once it is cleared)."""
    for node in _grads(loop):
        if here.code(node.value).strip() != tensor or _within(here, node, update) or _written(here, node):
            continue
        if _cleared(here, node) or _tested_for_none(here, node):
            continue
        return here.first_line(node)
    return None


def _within(here: Located, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = here.parent(node)
    return False


def _cleared(here: Located, grad: cst.Attribute) -> bool:
    """`p.grad.zero_()`, `p.grad.data.zero_()`, `p.grad.detach_()`."""
    method = here.parent(grad)
    if isinstance(method, cst.Attribute) and method.attr.value == "data":
        method = here.parent(method)
    return (isinstance(method, cst.Attribute) and method.attr.value in _CLEARING_METHODS
            and isinstance(here.parent(method), cst.Call))


def _tested_for_none(here: Located, grad: cst.Attribute) -> bool:
    comparison = here.parent(grad)
    return isinstance(comparison, cst.Comparison) and all(
        isinstance(target.operator, (cst.Is, cst.IsNot)) and _is_none(target.comparator)
        for target in comparison.comparisons)
