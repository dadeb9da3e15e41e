"""From a finding to the one edit that fixes it, or the reason there is none.

Every rule has the same cure: clear once per step, right after the step that applied the
gradients. So each fix puts a clear right after the step's statement (after the
`scaler.update()` that directly follows a `scaler.step(opt)`), in the same block:

- ZG001 inserts `<optimizer>.zero_grad()`, naming the optimizer as the step does
  (`self.optimizer`, `opt_d`, the `opt` of a `for opt in optimizers:` loop); after an update by
  hand, the clear of the tensor it reads (`by_hand`); for a step that evaluates a closure, the
  clear goes first in the closure instead (`closures`);
- ZG002 and ZG003 move the clear the finding names there (a loop that only clears by hand moves
  whole, and a clear goes after a loop that only updates by hand, not into it).

The step or the clear may be in a function of the project the loop calls (`helpers`), in this
file or another: the edit is made there. It is safe when the loop is that function's one caller;
when the function is named anywhere else, the edit changes what it does there too, and the fix
is unsafe. A clear in a helper that does nothing else moves as the helper's call; one in a helper
that does more moves out of it when it names the optimizer as the step does.

A fix is planned only when nothing is left to judgement: each statement it edits is a statement
of its own on its own line, a moved clear runs inside the same loops and `with` blocks as the step
(so it runs as often, under the same context), and no other fix wants the same statement
elsewhere. Anything else is declined with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath

import libcst as cst

from zerograd_lint.findings import Finding, Related
from zerograd_lint.fix import by_hand, closures
from zerograd_lint.fix.by_hand import Unplanned
from zerograd_lint.fix.call_sites import clear_after_the_call
from zerograd_lint.fix.helpers import (Project, call_statements, enclosing_def, grad_read_after, imported_as,
                                       last_grad_read, locals_of, only_does, reads_gradients, span)
from zerograd_lint.fix.located import Elsewhere, Frame, Inside, Located, Loop
from zerograd_lint.fix.operations import Declined, Operation, without_conflicts
from zerograd_lint.fix.rewrite import Placement, moving
from zerograd_lint.fix.shapes import (EFFECTS, accumulates, after_scaler_update, call_starting_at, closure, descendants,
                                      enclosing_function, frame_kind, function_name, gated_clear, gradient_neutral,
                                      is_the_whole_statement, last_name, root_name)
from zerograd_lint.rules.stale_gradients import SHARED
from zerograd_lint.settings import Vocabulary

FIXABLE = ("ZG001", "ZG002", "ZG003")
_WHICH = "which of the two a clear should follow is a judgement the fix does not make"
NOT_FIXABLE = {"ZG100": "an unused marker is an edit of a comment, not of statements: `markers` removes it"}


class _Declined(Exception):
    pass


@dataclass(frozen=True)
class _Spot:
    """A step's or a clear's statement line, in the loop's body (`helper` None) or in a function
    of the project, with the loops and `with` blocks around it there; `called`: the line is the
    call of a helper whose clear it stands for."""

    line: cst.SimpleStatementLine
    frames: tuple[Frame, ...]
    here: Located
    path: str
    helper: cst.FunctionDef | None
    called: bool = False


def placements(
    findings: Sequence[Finding],
    here: Located,
    vocabulary: Vocabulary = Vocabulary(),
    other_file: Callable[[str], Located | None] = lambda path: None,
    project: Project | None = None,
) -> list[Operation | Declined]:
    """The fix, or the reason there is none, of each finding of the module `here` (in order).
    `other_file` parses another file of the project (where a helper is); `project` has the texts
    of them all (where else a helper is named)."""
    project = project or Project({findings[0].path: here.text} if findings else {})
    planned: list[Operation | Declined] = []
    for finding in findings:
        try:
            planned.append(_Planner(finding, here, vocabulary, other_file, project).operation())
        except (_Declined, Unplanned) as declined:
            planned.append(Declined(finding, str(declined)))
    return without_conflicts(planned, here)


@dataclass
class _Planner:
    finding: Finding
    here: Located
    vocabulary: Vocabulary
    other_file: Callable[[str], Located | None]
    project: Project

    def operation(self) -> Operation:
        code = self.finding.code
        if code not in FIXABLE:
            raise _Declined(NOT_FIXABLE.get(code, f"{code} has no fix"))
        loop = self.here.loop_at(self.finding.line, self.finding.column)
        if loop is None:  # the analysis and LibCST disagree about the file: touch nothing
            raise _Declined(f"no loop or function starts at line {self.finding.line}, column {self.finding.column}")
        step = self._one("step")
        at_step = self._spot(step, loop)
        anchor = after_scaler_update(at_step.here, at_step.line)
        if code == "ZG001":
            return self._insert_clear(step, at_step, anchor, loop)
        clear = self._one("clear")
        at_clear = self._spot(clear, loop)
        if at_clear.helper is not None and at_clear.helper is not at_step.helper:
            at_clear = self._clear_out_of_helper(clear, at_clear, step, at_step, loop)
        return self._move_clear(clear, at_clear, step, at_step, anchor, loop)

    def _insert_clear(self, step: Related, at_step: _Spot, anchor: cst.SimpleStatementLine, loop: Loop) -> Operation:
        """A clear after the step, and after the earlier step whose gradients it applies again
        (another loop's: the first window of an accumulation after a phase that steps alone)."""
        if not step.subject:
            clear = by_hand.clear_after_update(at_step.here, at_step.line, at_step.helper or loop)
            title = f"Insert `{at_step.here.code(clear.body[0])}` after {self._anchor_text(at_step, anchor, step)}"
            return Operation(self.finding, Placement(anchor, clear), title, self._unsafe_edit_of(at_step, loop),
                             self._other(at_step.path))
        subject = self._optimizer(step)
        call = call_starting_at(at_step.here, at_step.line, step)
        if call is not None and closure(call, subject, at_step.here):
            placement, title, used = closures.clear_inside(at_step.here, call, subject)
            return Operation(self.finding, placement, title, used or self._unsafe_edit_of(at_step, loop),
                             self._other(at_step.path))
        earlier = [r for r in self._related("earlier step") if _place(r) != _place(step)]
        spots = [(at_step, anchor, step)]
        shared = SHARED in self.finding.message  # another optimizer over the parameters stepped first: clear after it
        if earlier:
            if len({_place(r) for r in earlier}) > 1 or earlier[0].subject != step.subject and not shared:
                raise _Declined(f"{self._call(step)} applies what another step applied, {self._call(earlier[0])}: {_WHICH}")
            at_earlier = self._spot(earlier[0], loop, outside=True)
            if at_earlier.helper is not None or not shared and span(self.here, self.finding.path, loop).holds(
                    earlier[0].path, earlier[0].line):
                raise _Declined(
                    f"{self._call(step)} applies what another step of this loop applied, {self._call(earlier[0])}: {_WHICH}")
            spots.append((at_earlier, after_scaler_update(at_earlier.here, at_earlier.line), earlier[0]))
        if at_step.helper is not None and not earlier:  # a clear after its call here changes this loop only
            at_the_call = clear_after_the_call(self.here, loop, at_step.here, at_step.helper, at_step.line, anchor,
                                               subject, same_file=at_step.path == self.finding.path)
            if at_the_call is not None:
                return Operation(self.finding, *at_the_call)
        placed = []
        for spot, after, which in spots:
            after, text = self._after_the_reads(spot, after, which, loop)
            clear = cst.parse_statement(f"{subject}.zero_grad()\n", config=spot.here.module.config_for_parsing)
            assert isinstance(clear, cst.SimpleStatementLine)
            following = spot.here.next_in_block(after)
            if not (isinstance(following, cst.SimpleStatementLine) and following.body[0].deep_equals(clear.body[0])):
                placed.append((Placement(after, clear), text, spot))
        if not placed:
            raise _Declined(f"`{subject}.zero_grad()` already follows {self._anchor_text(at_step, anchor, step)}")
        if len({spot.path for _, _, spot in placed}) > 1:
            raise _Declined(f"the clears would go in two files, after {placed[0][1]} and {placed[1][1]}")
        (first, where, spot), *more = placed
        unsafe = self._unsafe_edit_of(spot, loop)
        if earlier:
            unsafe = unsafe or (f"the clear after {self._call(earlier[0])}, the step that applied the gradients "
                                "first, changes what happens after that step too")
        return Operation(self.finding, first,
                         f"Insert `{subject}.zero_grad()` after {' and after '.join(w for _, w, _ in placed)}",
                         unsafe, self._other(spot.path), tuple(p for p, _, _ in more))

    def _move_clear(self, clear: Related, at_clear: _Spot, step: Related, at_step: _Spot,
                    anchor: cst.BaseStatement, loop: Loop) -> Operation:
        here = at_clear.here
        if at_clear.path != at_step.path:
            raise _Declined(f"the clear is {self._where_elsewhere(clear)} and the step is not in that file")
        if not at_clear.called and not is_the_whole_statement(at_clear.line.body[0], clear, here):
            raise _Declined(f"the clear {self._call(clear)} is part of a larger statement")
        moved: cst.BaseStatement = at_clear.line
        if at_clear.helper is at_step.helper:
            # A loop that only clears by hand moves whole; one that only updates by hand is followed whole.
            moved, frames = by_hand.whole_clearing_loop(here, at_clear.line, at_clear.frames, at_step.frames)
            at_clear = replace(at_clear, frames=frames)
            if not step.subject:
                anchor, frames = by_hand.whole_update_loop(here, anchor, at_step.frames, at_clear.frames)
                at_step = replace(at_step, frames=frames)
            self._same_frames(at_clear, at_step)
        block = here.block_of(moved)
        if block is None or len(block.body) == 1:
            raise _Declined(f"the clear {self._call(clear)} is the only statement of its block, which moving it "
                            "would empty")
        text = here.code(at_clear.line.body[0])
        where = self._in_file(at_clear.path)
        line = f"{where}line {here.first_line(at_clear.line)}"
        unsafe = self._unsafe_edit_of(at_clear, loop) or self._unsafe_edit_of(at_step, loop)
        after = self._anchor_text(at_step, anchor, step)
        if step.subject:  # an optimizer's step (an update by hand reads the gradients it clears: by_hand)
            anchor, after = self._after_the_reads(at_step, anchor, step, loop)
        accumulating = any(isinstance(f, cst.With) and accumulates(f) for f in at_step.frames)
        gated = None
        if accumulating and not at_clear.called and step.subject and clear.subject != step.subject:
            gated = gated_clear(here, at_clear.line, self._optimizer(step))
        if gated is None and accumulating and at_clear.called and clear.subject != step.subject:
            raise _Declined(f"inside `accumulate()` only the prepared optimizer's `zero_grad()` waits for the real "
                            f"step, and `{text}` ({line}) clears otherwise: moved, it would still clear every batch")
        if gated is not None:
            subject = step.subject
            return Operation(self.finding, Placement(anchor, gated, at_clear.line),
                             f"Replace `{text}` ({line}) with `{here.code(gated.body[0])}`, right after {after}",
                             f"`{subject}.zero_grad()` waits for the real step inside `accumulate()` and clears the "
                             f"optimizer's parameters, where `{clear.subject}.zero_grad()` cleared all of them at once",
                             self._other(at_step.path))
        if here.next_in_block(anchor) is moved:
            raise _Declined(f"the clear {self._call(clear)} already follows {after}")
        return Operation(self.finding, Placement(anchor, moving(moved), moved),
                         f"Move {by_hand.described(here, moved, where)} to right after {after}", unsafe,
                         self._other(at_step.path))

    def _same_frames(self, at_clear: _Spot, at_step: _Spot) -> None:
        differing = [f for f in at_clear.frames if f not in at_step.frames]
        differing += [f for f in at_step.frames if f not in at_clear.frames]
        if differing:
            inside = "clear" if differing[0] in at_clear.frames else "step"
            outside = "step" if inside == "clear" else "clear"
            why = "moved, the clear would run a different number of times, or under another context"
            if self.finding.code == "ZG003" and inside == "step" and isinstance(differing[0], (cst.For, cst.While)):
                why = ("the clear drops the window that loop leaves unfinished, and whether to step on it or carry "
                       "it over is a judgement the fix does not make")
            raise _Declined(f"the {inside} is inside the {frame_kind(differing[0])} at line "
                            f"{at_clear.here.first_line(differing[0])} and the {outside} is not: {why}")

    def _clear_out_of_helper(self, clear: Related, at_clear: _Spot, step: Related, at_step: _Spot,
                             loop: Loop) -> _Spot:
        """The statement to move when the clear is in a helper the step is not in: the helper's
        call, when clearing is all the helper does; else the clear, out of the helper, when it
        names the optimizer as the step does, meaning the same object there."""
        helper = at_clear.helper
        assert helper is not None
        name = helper.name.value
        if only_does(helper, at_clear.line, at_clear.here):
            caller = at_step.helper or loop  # where the step is: the helper's call is moved there
            here = at_step.here
            names = imported_as(here, name) if at_clear.path != at_step.path else frozenset({name})
            calls = call_statements(here, caller, names)
            if len(calls) == 1:
                place = here.enclosure(calls[0], caller)
                assert isinstance(place, Inside)
                return _Spot(calls[0], _kept(place.frames), here, at_step.path, at_step.helper, called=True)
            raise _Declined(f"the clear is in `{name}()` ({self._position(clear)}), which is called "
                            f"{'more than once' if calls else 'through something else'} where the step is")
        if at_clear.path != at_step.path or at_clear.frames:
            raise _Declined(f"the clear is {self._where(Elsewhere(helper), clear)}")
        root = root_name(clear.subject)
        if clear.subject != step.subject or not root or root in locals_of(helper):
            raise _Declined(f"the clear is {self._where(Elsewhere(helper), clear)}, where `{clear.subject}` may "
                            f"not be the `{step.subject}` of the step")
        return at_clear

    def _in_file(self, path: str) -> str:
        """`engine.py ` before a line of another file than the finding's, else nothing."""
        return "" if path == self.finding.path else f"{PurePath(path).name} "

    def _other(self, path: str) -> str:
        """`path` when it is not the finding's file, else empty (`Operation.path`)."""
        return "" if path == self.finding.path else path

    def _after_the_reads(self, spot: _Spot, after: cst.BaseStatement, step: Related,
                         loop: Loop) -> tuple[cst.BaseStatement, str]:
        """Where a clear after the step goes, and how to say it: after the last read of gradients in
        the step's block; declined when they may be read further on, where they would be `None`."""
        text = self._anchor_text(spot, after, step)
        last = last_grad_read(spot.here, after)
        if last is not None:
            text = (f"`{spot.here.code(last).strip().splitlines()[0]}` (line {spot.here.first_line(last)}), "
                    f"the last read of a gradient after {text}")
            after = last
        read = self._read_after(spot, after, loop)
        if read is not None:
            raise _Declined(f"a gradient may be read after {text}, at {read}: cleared right after the step, it "
                            "would be None there")
        return after, text

    def _read_after(self, spot: _Spot, after: cst.BaseStatement, loop: Loop) -> str | None:
        """Where gradients may be read after `after` (for a helper: after its calls in the loop too)."""
        read = grad_read_after(spot.here, after)
        if read is not None:
            return f"{self._in_file(spot.path)}line {read}"
        if spot.helper is None:
            return None
        name = spot.helper.name.value
        same = spot.path == self.finding.path
        calls = call_statements(self.here, loop, frozenset({name}) if same else imported_as(self.here, name))
        if not calls:
            return f"line {self.here.first_line(loop)}" if reads_gradients(self.here.code(loop)) else None
        lines = [line for call in calls if (line := grad_read_after(self.here, call)) is not None]
        return f"line {min(lines)}" if lines else None

    def _unsafe_edit_of(self, spot: _Spot, loop: Loop) -> str:
        """Why editing the helper a statement is in changes more than this loop (empty: it does not)."""
        if spot.helper is None:
            return ""
        name = spot.helper.name.value
        inside = span(self.here, self.finding.path, loop)
        named = {(r.path, r.line) for r in self.finding.related}  # `opt.step()` is not a call of `step()`
        uses = [use for use in self.project.uses(name) if use not in named]
        elsewhere = [(path, line) for path, line in uses if not inside.holds(path, line)]
        if elsewhere:
            path, line = elsewhere[0]
            where = self._in_file(path)
            return f"`{name}()` is also named at {where}line {line}, and the edit changes it for every caller"
        if not uses:
            return f"the loop reaches `{name}()` through another function, and the edit changes it for every caller"
        return ""

    def _related(self, role: str) -> list[Related]:
        return [r for r in self.finding.related if r.role == role]

    def _one(self, role: str) -> Related:
        found = self._related(role)
        if not found:
            raise _Declined(f"the finding names no {role}")
        if len({_place(r) for r in found}) > 1:
            raise _Declined(f"the finding names several calls as its {role}: where the clear goes is a judgement")
        return found[0]

    def _spot(self, call: Related, loop: Loop, outside: bool = False) -> _Spot:
        """Where a call's statement is: in the loop's body, or in a function of the project (in
        this file or another), with the loops and `with` blocks around it there; `outside`: or
        anywhere else in the loop's file (no frames then)."""
        role = call.role
        here = self.here if call.path == self.finding.path else self.other_file(call.path)
        if here is None:
            raise _Declined(f"the {role} is in {PurePath(call.path).name}, which cannot be parsed")
        small = here.small_statement_at(call.line, call.column)
        if small is None:
            raise _Declined(f"the {role} {self._call(call)} is in the header of a compound statement")
        line = here.parent(small)
        if not isinstance(line, cst.SimpleStatementLine):
            raise _Declined(f"the {role} {self._call(call)} is on the line of its block's header")
        if len(line.body) != 1:
            raise _Declined(f"the {role} {self._call(call)} shares its line with other statements")
        helper = enclosing_def(here, line)
        place = here.enclosure(line, loop) if here is self.here else Elsewhere(helper)
        if isinstance(place, Inside):
            return _Spot(line, _kept(place.frames), here, call.path, None)
        if outside and here is self.here and place.function is None:
            return _Spot(line, (), here, call.path, None)
        if helper is None or place.function is not helper:
            raise _Declined(f"the {role} is {self._where_elsewhere(call) if here is not self.here else self._where(place, call)}")
        around = here.enclosure(line, helper)
        assert isinstance(around, Inside)
        return _Spot(line, _kept(around.frames), here, call.path, helper)

    def _where(self, place: Elsewhere, call: Related) -> str:
        if place.function is None:
            return f"{self._call(call)}, outside the loop at line {self.finding.line}"
        return f"{function_name(place.function)} ({self._position(call)})"

    def _where_elsewhere(self, call: Related) -> str:
        other = self.other_file(call.path)
        small = other.small_statement_at(call.line, call.column) if other is not None else None
        function = enclosing_function(other, small) if other is not None and small is not None else None
        where = function_name(function) if function is not None else "in another file"
        return f"{where} ({self._position(call)})"

    def _optimizer(self, step: Related) -> str:
        subject = step.subject
        try:
            expression = cst.parse_expression(subject)
        except cst.ParserSyntaxError:
            raise _Declined(f"the optimizer `{subject}` is not named by an expression the fix can repeat") from None
        if any(isinstance(node, EFFECTS) for node in descendants(expression)):
            raise _Declined(f"the optimizer is reached through a call (`{subject}`), which the fix does not repeat")
        if last_name(expression) in self.vocabulary.optimizers:
            raise _Declined(f"`{subject}` is an optimizer by the project's vocabulary, which does not say it has "
                            "`zero_grad()`")
        return subject

    def _anchor_text(self, at_step: _Spot, anchor: cst.BaseStatement, step: Related) -> str:
        if at_step.here.first_line(anchor) == step.line:
            return self._call(step)
        where = self._in_file(at_step.path)
        return by_hand.described(at_step.here, anchor, where)

    def _call(self, call: Related) -> str:
        return f"`{call.text}` ({self._position(call)})"

    def _position(self, call: Related) -> str:
        where = self._in_file(call.path)
        return f"{where}line {call.line}"


def _kept(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """The loops and `with` blocks that change how often, or under what, a statement runs."""
    return tuple(frame for frame in frames if not gradient_neutral(frame))


def _place(call: Related) -> tuple[str, int, int]:
    return call.path, call.line, call.column
