"""What the statements a fix reads look like: a call that is a whole statement, a step given a
closure, a `with` block that changes nothing about clearing, the names of things."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from zerograd_lint.findings import Related
from zerograd_lint.fix.located import Frame, Located
from zerograd_lint.fix.rewrite import carried_lines

# Context managers that change how tensors are computed, and nothing about gradients' clearing.
GRADIENT_NEUTRAL = frozenset({"no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast"})
# Nodes that do something when evaluated: an optimizer named through one is not named again.
EFFECTS = (cst.Call, cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda)


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from descendants(child)


def call_of(line: cst.BaseStatement | None) -> cst.Call | None:
    """The call a statement line consists of (`x.y(...)`), if that is all it is."""
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    statement = line.body[0]
    if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
        return statement.value
    return None


def closure(call: cst.Call, subject: str, here: Located) -> bool:
    """`opt.step(closure)` or `scaler.step(opt, closure)`: the step is given something to evaluate."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"):
        return False
    return any(here.code(arg.value).strip() != subject for arg in call.args)


def is_the_whole_statement(statement: cst.BaseSmallStatement, call: Related, here: Located) -> bool:
    """The clear is the statement (`opt.zero_grad()`, `p.grad = None`), not a part of one."""
    if not here.starts_at(statement, call.line, call.column):
        return False
    if isinstance(statement, (cst.Assign, cst.AugAssign)):
        return True
    if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
        return not any(isinstance(n, cst.Call) for n in descendants(statement.value.func))
    return False


def last_name(expression: cst.BaseExpression) -> str:
    """`learner` of `self.learner`, `optimizers` of `optimizers[k]`."""
    while isinstance(expression, cst.Subscript):
        expression = expression.value
    if isinstance(expression, cst.Attribute):
        return expression.attr.value
    return expression.value if isinstance(expression, cst.Name) else ""


def gradient_neutral(frame: Frame) -> bool:
    """`with torch.no_grad():`, `with torch.autocast(...):` and the like change how tensors are
    computed, not how often a statement runs nor what a clear does: a clear may move in or out."""
    if not isinstance(frame, cst.With):
        return False
    return all(
        isinstance(item.item, cst.Call) and last_name(item.item.func) in GRADIENT_NEUTRAL and item.asname is None
        for item in frame.items
    )


def root_name(subject: str) -> str:
    """`self` of `self.optimizer`, `opt` of `opt`; empty when the subject is not a dotted name."""
    root = subject.split(".", 1)[0]
    return root if root.isidentifier() else ""


def frame_kind(frame: Frame) -> str:
    return "`with` block" if isinstance(frame, cst.With) else "loop"


def function_name(node: cst.FunctionDef | cst.Lambda | cst.ClassDef) -> str:
    if isinstance(node, cst.FunctionDef):
        return f"in `{node.name.value}()`"
    if isinstance(node, cst.ClassDef):
        return f"in class `{node.name.value}`"
    return "in a lambda"


def enclosing_function(located: Located, node: cst.CSTNode) -> cst.FunctionDef | cst.Lambda | cst.ClassDef | None:
    parent = located.parent(node)
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        parent = located.parent(parent)
    return parent


def accumulates(frame: cst.With) -> bool:
    """`with accelerator.accumulate(model):`: a block in which a prepared optimizer steps and clears
    only on the micro-batch that ends a window."""
    return any(isinstance(item.item, cst.Call) and last_name(item.item.func) == "accumulate" for item in frame.items)


def is_docstring(statement: cst.BaseStatement) -> bool:
    """A string on a line of its own (what Python takes as a docstring when it comes first)."""
    return (isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def gated_clear(here: Located, clear: cst.SimpleStatementLine, optimizer: str) -> cst.SimpleStatementLine | None:
    """Inside `with accelerator.accumulate(model):`, the prepared optimizer's `zero_grad()` runs
    only when the step really steps; a module's does not. A one-line `model.zero_grad(...)` there
    becomes the optimizer's (its arguments kept): the clear that waits for the step. None for
    another statement."""
    call = call_of(clear)
    if (call is None or not isinstance(call.func, cst.Attribute) or call.func.attr.value != "zero_grad"
            or here.first_line(clear) != here.last_line(clear)):
        return None
    statement = cst.Expr(call.with_changes(func=call.func.with_changes(value=cst.parse_expression(optimizer))))
    return clear.with_changes(body=[statement], leading_lines=carried_lines(clear))


def after_scaler_update(here: Located, step_line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """`scaler.update()` when it directly follows `scaler.step(optimizer)`, else the step's line:
    where a clear after the step goes."""
    step = call_of(step_line)
    following = here.next_in_block(step_line)
    update = call_of(following) if isinstance(following, cst.SimpleStatementLine) else None
    if step is None or update is None or not step.args:
        return step_line
    if not (isinstance(step.func, cst.Attribute) and isinstance(update.func, cst.Attribute)):
        return step_line
    if (step.func.attr.value, update.func.attr.value) != ("step", "update"):
        return step_line
    same_receiver = here.code(step.func.value) == here.code(update.func.value)
    return following if same_receiver and isinstance(following, cst.SimpleStatementLine) else step_line


def call_starting_at(here: Located, line: cst.SimpleStatementLine, call: Related) -> cst.Call | None:
    """The call of the statement `line` that starts where `call` does."""
    return next((n for n in descendants(line.body[0])
                 if isinstance(n, cst.Call) and here.starts_at(n, call.line, call.column)), None)
