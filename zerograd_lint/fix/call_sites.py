"""A clear after the loop's call of a helper that steps, instead of in the helper.

When a helper that steps has other callers, a clear added in it changes what it does for them
all. A clear right after this loop's call of it changes this loop only, and is the same as one
after the helper's step when that step is a statement of the helper's body that nothing touching
gradients follows. The optimizer is named as the loop can name it: the argument given for the
helper's parameter, the object a method is called on for `self`, or the same global of the file.
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint.fix.helpers import assigned_in, bound_argument, call_of_statement, call_statements, \
    grad_read_after, imported_as, locals_of, touches_gradients
from zerograd_lint.fix.located import Located, Loop
from zerograd_lint.fix.rewrite import Placement
from zerograd_lint.fix.shapes import root_name


def clear_after_the_call(here: Located, loop: Loop, helper_here: Located, helper: cst.FunctionDef,
                         step: cst.BaseStatement, anchor: cst.BaseStatement, subject: str,
                         same_file: bool) -> tuple[Placement, str] | None:
    """The placement of `<optimizer>.zero_grad()` right after the loop's one call of `helper`
    (whose `step` line, or `anchor` after it, names the optimizer `subject`), and its title; None
    when that is not the same as a clear after the step, or the loop cannot name the optimizer."""
    body = helper.body
    if not isinstance(body, cst.IndentedBlock) or helper_here.block_of(step) is not body or anchor not in body.body:
        return None
    after = list(body.body)[list(body.body).index(anchor) + 1:]
    if any(touches_gradients(helper_here.code(statement)) for statement in after):
        return None
    name = helper.name.value
    calls = call_statements(here, loop, frozenset({name}) if same_file else imported_as(here, name))
    call = call_of_statement(calls[0]) if len(calls) == 1 else None
    mapped = as_the_caller_names(here, subject, helper, call, same_file) if call is not None else None
    if mapped is None:
        return None
    clear = cst.parse_statement(f"{mapped}.zero_grad()\n", config=here.module.config_for_parsing)
    following = here.next_in_block(calls[0])
    if isinstance(following, cst.SimpleStatementLine) and following.body[0].deep_equals(clear.body[0]):
        return None
    if grad_read_after(here, calls[0]) is not None:  # a read after the call would find the gradients cleared
        return None
    title = (f"Insert `{mapped}.zero_grad()` after `{here.code(call)}` (line {here.first_line(calls[0])}), the call "
             f"of `{name}()` that steps")
    return Placement(calls[0], clear), title


def as_the_caller_names(here: Located, subject: str, helper: cst.FunctionDef, call: cst.Call,
                        same_file: bool) -> str | None:
    """The optimizer `subject` (as the helper names it) as the call's caller names it: a
    parameter becomes its argument, `self` the object the method is called on, a global of the
    same file stays itself; None when the caller cannot name it without doing something."""
    root = root_name(subject)
    if root in assigned_in(helper):  # rebound in the helper: not what the caller gave
        return None
    argument = bound_argument(helper, call, root)
    if argument is not None:  # a name or an attribute of one: the same object at the call
        return here.code(argument).strip() + subject[len(root):] if _dotted(argument) else None
    if root in locals_of(helper) or not same_file:
        return None
    return subject


def _dotted(expression: cst.BaseExpression) -> bool:
    """`optimizer`, `self.opt`, `trainer.optimizers.main`: evaluating it makes nothing new."""
    while isinstance(expression, cst.Attribute):
        expression = expression.value
    return isinstance(expression, cst.Name)
