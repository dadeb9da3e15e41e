"""From a finding to the one edit that fixes it, or the reason there is none.

Every rule has the same cure: clear once per step, right after the step that applied the
gradients. So each fix puts a clear right after the step's statement (after the
`scaler.update()` that directly follows a `scaler.step(opt)`), in the same block:

- ZG001 inserts `<optimizer>.zero_grad()`, naming the optimizer as the step does
  (`self.optimizer`, `opt_d`, the `opt` of a `for opt in optimizers:` loop);
- ZG002 and ZG003 move the clear the finding names there.

A fix is planned only when nothing is left to judgement: the calls it edits are in the file of
the finding, the step runs in the body of the loop the finding is reported at (not in a helper),
each is a statement of its own on its own line, a moved clear runs inside the same loops and
`with` blocks as the step (so it runs as often, under the same context), and no other fix wants
the same statement elsewhere. Anything else is declined with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

import libcst as cst

from zerograd_lint.findings import Finding, Fix, Related
from zerograd_lint.fix.located import Elsewhere, Frame, Inside, Located, Loop
from zerograd_lint.fix.rewrite import Placement, moving
from zerograd_lint.settings import Vocabulary

FIXABLE = ("ZG001", "ZG002", "ZG003")
NOT_FIXABLE = {"ZG100": "an unused marker is not removed by --fix: whether it goes is your call"}
# Context managers that change how tensors are computed, and nothing about gradients' clearing.
_GRADIENT_NEUTRAL = frozenset({"no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast"})
# Nodes that do something when evaluated: an optimizer named through one is not named again.
_EFFECTS = (cst.Call, cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda)


@dataclass(frozen=True)
class Operation:
    """The fix of one finding: a placement, and what it says it does. `unsafe` says why the fix
    may change more than the bug (empty: it is safe)."""

    finding: Finding
    placement: Placement
    title: str
    unsafe: str = ""


@dataclass(frozen=True)
class Declined:
    """A finding left as it is, and why; `fix` is the unsafe fix held back, when that is why."""

    finding: Finding
    reason: str
    fix: Fix | None = None


class _Declined(Exception):
    pass


def placements(
    findings: Sequence[Finding],
    here: Located,
    vocabulary: Vocabulary = Vocabulary(),
    other_file: Callable[[str], Located | None] = lambda path: None,
) -> list[Operation | Declined]:
    """The fix, or the reason there is none, of each finding of the module `here` (in order).
    `other_file` parses another file of the project, to name the function a call is in."""
    planned: list[Operation | Declined] = []
    for finding in findings:
        try:
            planned.append(_Planner(finding, here, vocabulary, other_file).operation())
        except _Declined as declined:
            planned.append(Declined(finding, str(declined)))
    return _without_conflicts(planned, here)


@dataclass
class _Planner:
    finding: Finding
    here: Located
    vocabulary: Vocabulary
    other_file: Callable[[str], Located | None]

    def operation(self) -> Operation:
        code = self.finding.code
        if code not in FIXABLE:
            raise _Declined(NOT_FIXABLE.get(code, f"{code} has no fix"))
        loop = self.here.loop_at(self.finding.line, self.finding.column)
        if loop is None:  # the analysis and LibCST disagree about the file: touch nothing
            raise _Declined(f"no loop or function starts at line {self.finding.line}, column {self.finding.column}")
        step = self._one("step")
        step_line, step_frames = self._statement(step, loop)
        anchor = self._after_scaler_update(step_line)
        if code == "ZG001":
            return self._insert_clear(step, step_line, anchor)
        clear = self._one("clear")
        clear_line, clear_frames = self._statement(clear, loop)
        return self._move_clear(clear, clear_line, clear_frames, step, anchor, step_frames)

    def _insert_clear(self, step: Related, step_line: cst.SimpleStatementLine,
                      anchor: cst.SimpleStatementLine) -> Operation:
        earlier = [r for r in self._related("earlier step") if _place(r) != _place(step)]
        if earlier:
            raise _Declined(
                f"{self._call(step)} applies what another step applied, {self._call(earlier[0])}: "
                "which of the two a clear should follow is a judgement the fix does not make"
            )
        subject = self._optimizer(step)
        call = self._call_starting_at(step_line, step)
        if call is not None and _closure(call, subject, self.here):
            raise _Declined(
                f"{self._call(step)} evaluates a closure: whether its backward passes need a clear inside "
                "the closure is a judgement the fix does not make"
            )
        clear = cst.parse_statement(f"{subject}.zero_grad()\n", config=self.here.module.config_for_parsing)
        assert isinstance(clear, cst.SimpleStatementLine)
        following = self.here.next_in_block(anchor)
        if isinstance(following, cst.SimpleStatementLine) and following.body[0].deep_equals(clear.body[0]):
            raise _Declined(f"`{subject}.zero_grad()` already follows {self._anchor_text(anchor, step)}")
        return Operation(self.finding, Placement(anchor, clear),
                         f"Insert `{subject}.zero_grad()` after {self._anchor_text(anchor, step)}")

    def _move_clear(self, clear: Related, clear_line: cst.SimpleStatementLine, clear_frames: tuple[Frame, ...],
                    step: Related, anchor: cst.SimpleStatementLine, step_frames: tuple[Frame, ...]) -> Operation:
        if not _is_the_whole_statement(clear_line.body[0], clear, self.here):
            raise _Declined(f"the clear {self._call(clear)} is part of a larger statement")
        differing = [f for f in clear_frames if f not in step_frames]
        differing += [f for f in step_frames if f not in clear_frames]
        if differing:
            inside = "clear" if differing[0] in clear_frames else "step"
            outside = "step" if inside == "clear" else "clear"
            raise _Declined(
                f"the {inside} is inside the {_frame_kind(differing[0])} at line {self.here.first_line(differing[0])} "
                f"and the {outside} is not: moved, the clear would run a different number of times, or under "
                "another context"
            )
        block = self.here.block_of(clear_line)
        if block is None or len(block.body) == 1:
            raise _Declined(f"the clear {self._call(clear)} is the only statement of its block, which moving it "
                            "would empty")
        if self.here.next_in_block(anchor) is clear_line:
            raise _Declined(f"the clear {self._call(clear)} already follows {self._anchor_text(anchor, step)}")
        text = self.here.code(clear_line.body[0])
        return Operation(self.finding, Placement(anchor, moving(clear_line), clear_line),
                         f"Move `{text}` (line {clear.line}) to right after {self._anchor_text(anchor, step)}")

    def _related(self, role: str) -> list[Related]:
        return [r for r in self.finding.related if r.role == role]

    def _one(self, role: str) -> Related:
        found = self._related(role)
        if not found:
            raise _Declined(f"the finding names no {role}")
        if len({_place(r) for r in found}) > 1:
            raise _Declined(f"the finding names several calls as its {role}: where the clear goes is a judgement")
        return found[0]

    def _statement(self, call: Related, loop: Loop) -> tuple[cst.SimpleStatementLine, tuple[Frame, ...]]:
        """The statement line of a call in the loop's body, and the loops and `with` blocks around it."""
        role = call.role
        if call.path != self.finding.path:
            raise _Declined(f"the {role} is {self._where_elsewhere(call)}")
        small = self.here.small_statement_at(call.line, call.column)
        if small is None:
            raise _Declined(f"the {role} {self._call(call)} is in the header of a compound statement")
        line = self.here.parent(small)
        if not isinstance(line, cst.SimpleStatementLine):
            raise _Declined(f"the {role} {self._call(call)} is on the line of its block's header")
        if len(line.body) != 1:
            raise _Declined(f"the {role} {self._call(call)} shares its line with other statements")
        place = self.here.enclosure(line, loop)
        if isinstance(place, Elsewhere):
            raise _Declined(f"the {role} is {self._where(place, call)}")
        assert isinstance(place, Inside)
        return line, tuple(frame for frame in place.frames if not _gradient_neutral(frame))

    def _where(self, place: Elsewhere, call: Related) -> str:
        if place.function is None:
            return f"{self._call(call)}, outside the loop at line {self.finding.line}"
        return f"{_function_name(place.function)} ({self._position(call)})"

    def _where_elsewhere(self, call: Related) -> str:
        other = self.other_file(call.path)
        small = other.small_statement_at(call.line, call.column) if other is not None else None
        function = _enclosing_function(other, small) if other is not None and small is not None else None
        where = _function_name(function) if function is not None else "in another file"
        return f"{where} ({self._position(call)})"

    def _optimizer(self, step: Related) -> str:
        subject = step.subject
        if not subject:
            raise _Declined(
                f"{self._call(step)} is an update by hand: there is no optimizer whose `zero_grad()` the fix "
                "could call; clear the gradients it reads (`p.grad = None`) after it"
            )
        try:
            expression = cst.parse_expression(subject)
        except cst.ParserSyntaxError:
            raise _Declined(f"the optimizer `{subject}` is not named by an expression the fix can repeat") from None
        if any(isinstance(node, _EFFECTS) for node in _descendants(expression)):
            raise _Declined(f"the optimizer is reached through a call (`{subject}`), which the fix does not repeat")
        if _last_name(expression) in self.vocabulary.optimizers:
            raise _Declined(f"`{subject}` is an optimizer by the project's vocabulary, which does not say it has "
                            "`zero_grad()`")
        return subject

    def _after_scaler_update(self, step_line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        """`scaler.update()` when it directly follows `scaler.step(optimizer)`, else the step's line."""
        step = _call_of(step_line)
        following = self.here.next_in_block(step_line)
        update = _call_of(following) if isinstance(following, cst.SimpleStatementLine) else None
        if step is None or update is None or not step.args:
            return step_line
        if not (isinstance(step.func, cst.Attribute) and isinstance(update.func, cst.Attribute)):
            return step_line
        if (step.func.attr.value, update.func.attr.value) != ("step", "update"):
            return step_line
        same_receiver = self.here.code(step.func.value) == self.here.code(update.func.value)
        return following if same_receiver and isinstance(following, cst.SimpleStatementLine) else step_line

    def _anchor_text(self, anchor: cst.SimpleStatementLine, step: Related) -> str:
        if self.here.first_line(anchor) == step.line:
            return self._call(step)
        return f"`{self.here.code(anchor.body[0])}` (line {self.here.first_line(anchor)})"

    def _call_starting_at(self, line: cst.SimpleStatementLine, call: Related) -> cst.Call | None:
        return next((n for n in _descendants(line.body[0])
                     if isinstance(n, cst.Call) and self.here.starts_at(n, call.line, call.column)), None)

    def _call(self, call: Related) -> str:
        return f"`{call.text}` ({self._position(call)})"

    def _position(self, call: Related) -> str:
        where = "" if call.path == self.finding.path else f"{PurePath(call.path).name} "
        return f"{where}line {call.line}"


def _without_conflicts(planned: list[Operation | Declined], here: Located) -> list[Operation | Declined]:
    """Decline fixes that want the same statement in two places, or move what another follows."""
    operations = [p for p in planned if isinstance(p, Operation)]
    reasons: dict[int, str] = {}
    for index, operation in enumerate(operations):
        for other in operations[index + 1:]:
            one, two = operation.placement, other.placement
            if one.moved is not None and one.moved is two.moved and one.anchor is not two.anchor:
                reason = (f"the clear at line {here.first_line(one.moved)} would have to follow two steps (lines "
                          f"{here.first_line(one.anchor)} and {here.first_line(two.anchor)}): a judgement")
            elif one.anchor is two.moved or two.anchor is one.moved:
                reason = "one fix would move the statement another fix puts a clear after: a judgement"
            else:
                continue
            reasons.setdefault(id(operation), reason)
            reasons.setdefault(id(other), reason)
    return [Declined(p.finding, reasons[id(p)]) if id(p) in reasons else p for p in planned]


def _place(call: Related) -> tuple[str, int, int]:
    return call.path, call.line, call.column


def _descendants(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _descendants(child)


def _call_of(line: cst.BaseStatement | None) -> cst.Call | None:
    """The call a statement line consists of (`x.y(...)`), if that is all it is."""
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    statement = line.body[0]
    if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
        return statement.value
    return None


def _closure(call: cst.Call, subject: str, here: Located) -> bool:
    """`opt.step(closure)` or `scaler.step(opt, closure)`: the step is given something to evaluate."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"):
        return False
    return any(here.code(arg.value).strip() != subject for arg in call.args)


def _is_the_whole_statement(statement: cst.BaseSmallStatement, call: Related, here: Located) -> bool:
    """The clear is the statement (`opt.zero_grad()`, `p.grad = None`), not a part of one."""
    if not here.starts_at(statement, call.line, call.column):
        return False
    if isinstance(statement, (cst.Assign, cst.AugAssign)):
        return True
    if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
        return not any(isinstance(n, cst.Call) for n in _descendants(statement.value.func))
    return False


def _last_name(expression: cst.BaseExpression) -> str:
    """`learner` of `self.learner`, `optimizers` of `optimizers[k]`."""
    while isinstance(expression, cst.Subscript):
        expression = expression.value
    if isinstance(expression, cst.Attribute):
        return expression.attr.value
    return expression.value if isinstance(expression, cst.Name) else ""


def _gradient_neutral(frame: Frame) -> bool:
    """`with torch.no_grad():`, `with torch.autocast(...):` and the like change how tensors are
    computed, not how often a statement runs nor what a clear does: a clear may move in or out."""
    if not isinstance(frame, cst.With):
        return False
    return all(
        isinstance(item.item, cst.Call) and _last_name(item.item.func) in _GRADIENT_NEUTRAL and item.asname is None
        for item in frame.items
    )


def _frame_kind(frame: Frame) -> str:
    return "`with` block" if isinstance(frame, cst.With) else "loop"


def _function_name(node: cst.FunctionDef | cst.Lambda | cst.ClassDef) -> str:
    if isinstance(node, cst.FunctionDef):
        return f"in `{node.name.value}()`"
    if isinstance(node, cst.ClassDef):
        return f"in class `{node.name.value}`"
    return "in a lambda"


def _enclosing_function(located: Located, node: cst.CSTNode) -> cst.FunctionDef | cst.Lambda | cst.ClassDef | None:
    parent = located.parent(node)
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        parent = located.parent(parent)
    return parent
