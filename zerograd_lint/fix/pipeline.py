"""Fix a whole run: plan each file, make the edits, check them, and give up what does not hold.

One round: every planned edit is made; each fixed file must parse and differ from its original
by the intended statements only (`verify.structural_problem`); then the whole project is checked
again, in one call, with the fixed texts. A fix is kept only if its finding is gone, no finding
appears that was not there before (an unused marker aside: a fix may make a `# noqa` unused, and
ZG100 then says so), and a second `--fix` over the result would find nothing new to change. What
fails is declined with the reason, and the round starts again without it: each round drops at
least one fix or ends, so it ends. Then the unused markers (ZG100) of what the rounds made are
removed (`markers`), those the fixes left unused too.

A fix is safe or unsafe (`Operation.unsafe` says why). The rounds run first with every fix; when
unsafe fixes are not wanted and some of them held, they run again with the safe ones alone, and
each unsafe fix that held is declined with it: `--unsafe-fixes` would make it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace

import libcst as cst

from zerograd_lint.checker import Result
from zerograd_lint.findings import Finding, Fix, describe
from zerograd_lint.fix.helpers import Project
from zerograd_lint.fix.located import Located
from zerograd_lint.fix.markers import UNUSED_MARKER, removable, unused_markers_removed
from zerograd_lint.fix.operations import Declined, Operation
from zerograd_lint.fix.placements import placements
from zerograd_lint.fix.rewrite import NO_SHIFT, Placement, Shift, distinct, edits_between, place, rendered
from zerograd_lint.fix.verify import identity, shift_of, structural_problem
from zerograd_lint.settings import Vocabulary

Check = Callable[[Mapping[str, "str | bytes"]], Result]


@dataclass
class Fixes:
    changed: dict[str, tuple[str | bytes, str | bytes]] = field(default_factory=dict)  # path -> (original, fixed)
    fixed: list[Finding] = field(default_factory=list)  # each with its `fix`
    declined: list[Declined] = field(default_factory=list)
    result: Result = field(default_factory=Result)  # the check of the sources as fixed


@dataclass
class _File:
    """One file's fixes still in play."""

    source: str | bytes
    here: Located
    operations: list[Operation]

    @functools.cached_property
    def placements(self) -> list[Placement]:
        return distinct(placement for op in self.operations for placement in op.placements)

    @functools.cached_property
    def shift(self) -> Shift:
        return shift_of(self.placements, self.here)

    @functools.cached_property
    def fixed(self) -> str | bytes:
        return rendered(place(self.here.module, self.placements), self.source)

    def without(self, dropped: Iterable[Operation]) -> _File:
        gone = {id(op) for op in dropped}
        return _File(self.source, self.here, [op for op in self.operations if id(op) not in gone])

    def fix_of(self, operation: Operation) -> Fix:
        alone = place(self.here.module, operation.placements).code
        return Fix(operation.title, edits_between(self.here.text, alone), "unsafe" if operation.unsafe else "safe",
                   operation.path or None)

    def safe(self) -> _File:
        return self.without(op for op in self.operations if op.unsafe)


def planned(sources: Mapping[str, str | bytes], result: Result, wanted: Callable[[Finding], bool] = lambda f: True,
            vocabulary: Vocabulary = Vocabulary(), not_fixed: Mapping[str, str] | None = None,
            unsafe: bool = False, with_fix: Collection[str] = ()) -> tuple[list[Finding], int]:
    """The `wanted` findings of `result` that `fix_project` has a fix for, as ruff counts its
    fixable ones: planned, and each fixed file parses and differs from its original by the
    intended statements only, before the fixed project is checked again (which can still decline
    a fix, and says why); and how many more fixes only `unsafe` makes. A statement fix of a file in
    `with_fix` comes with its `fix`. It parses only the files with findings, and those their fixes
    edit."""
    not_fixed = not_fixed or {}
    fixable: list[Finding] = []
    for path, found in result.findings.items():
        markers = [f for f in found if wanted(f) and f.code == UNUSED_MARKER]
        if markers and path not in not_fixed and removable(sources[path], markers):
            fixable += markers
    hidden = 0
    for edited, file in _planned_files(sources, result, wanted, vocabulary, not_fixed)[0].items():
        if structural_problem(file.source, file.fixed, file.placements, file.here, file.shift) is None:
            fixable += [replace(op.finding, fix=file.fix_of(op)) if edited in with_fix else op.finding
                        for op in file.operations if unsafe or not op.unsafe]
            hidden += 0 if unsafe else sum(bool(op.unsafe) for op in file.operations)
    return sorted(fixable), hidden


def fix_project(sources: Mapping[str, str | bytes], result: Result, check: Check,
                wanted: Callable[[Finding], bool] = lambda finding: True,
                vocabulary: Vocabulary = Vocabulary(), not_fixed: Mapping[str, str] | None = None,
                unsafe: bool = False) -> Fixes:
    """Fix the `wanted` findings of `result` (the check of `sources`). `check` checks sources as
    one project; `not_fixed` names files never fixed and why. Unsafe fixes are made only when
    `unsafe`; otherwise each one that would hold is declined with it (ruff's hidden fixes)."""
    not_fixed = not_fixed or {}
    files, declined = _planned_files(sources, result, wanted, vocabulary, not_fixed)
    rounds = _Rounds(sources, result, check, wanted, vocabulary, not_fixed, list(declined))
    fixes = rounds.run(files)
    held = [f for f in fixes.fixed if f.fix is not None and f.fix.applicability == "unsafe"]
    if unsafe or not held:
        return unused_markers_removed(sources, result, fixes, check, wanted, not_fixed)
    # The fixes as they would hold all together; the safe ones again, alone.
    safe = _Rounds(sources, result, check, wanted, vocabulary, not_fixed, declined, unsafe=False)
    fixes = safe.run({path: file.safe() for path, file in files.items()})
    for finding in held:
        alone = replace(finding, fix=None)
        why = next(op.unsafe for file in files.values() for op in file.operations if op.finding == alone)
        fixes.declined.append(Declined(alone, f"unsafe fix held back: {why}; --unsafe-fixes makes it", finding.fix))
    fixes.declined = sorted_declined(fixes.declined)
    return unused_markers_removed(sources, result, fixes, check, wanted, not_fixed)


def _planned_files(sources: Mapping[str, str | bytes], result: Result, wanted: Callable[[Finding], bool],
                   vocabulary: Vocabulary, not_fixed: Mapping[str, str]) -> tuple[dict[str, _File], list[Declined]]:
    """The fixes planned for the `wanted` findings of `result` (unused markers aside), by the file
    they edit; and the findings that have none, each with the reason."""
    declined: list[Declined] = []
    operations: dict[str, list[Operation]] = {}  # by the file they edit
    parse = _parser(sources)
    project = Project(sources)
    for path, found in result.findings.items():
        candidates = [f for f in found if wanted(f) and f.code != UNUSED_MARKER]
        if not candidates:
            continue
        here = None if path in not_fixed else parse(path)
        if here is None:
            reason = not_fixed.get(path, "LibCST cannot parse the file")
            declined.extend(Declined(f, reason) for f in candidates)
            continue
        for plan in placements(candidates, here, vocabulary, parse, project):
            if isinstance(plan, Declined):
                declined.append(plan)
            elif plan.edited in not_fixed:
                declined.append(Declined(plan.finding, f"the fix edits {plan.edited}, which {not_fixed[plan.edited]}"))
            else:
                operations.setdefault(plan.edited, []).append(plan)
    files = {path: _File(sources[path], parse(path), ops) for path, ops in operations.items()}  # type: ignore[arg-type]
    return files, declined


@dataclass
class _Rounds:
    sources: Mapping[str, str | bytes]
    result: Result
    check: Check
    wanted: Callable[[Finding], bool]
    vocabulary: Vocabulary
    not_fixed: Mapping[str, str]
    declined: list[Declined]
    unsafe: bool = True  # unsafe fixes are made (else a second run would not make them either)
    given_up: list[Finding] = field(default_factory=list)  # planned, then declined by a check

    def run(self, files: dict[str, _File]) -> Fixes:
        while True:
            files = {path: file for path, file in files.items() if file.operations}
            if not files:
                return Fixes(declined=sorted_declined(self.declined), result=self.result)
            broken = {path: _all(file, problem) for path, file in files.items()
                      if (problem := structural_problem(file.source, file.fixed, file.placements, file.here,
                                                        file.shift))}
            if broken:
                files = self._drop(files, broken)
                continue
            fixed_sources = {path: file.fixed for path, file in files.items()}
            try:
                after = self.check({**self.sources, **fixed_sources})
            except Exception as exc:  # an internal error of the analysis: write nothing
                reason = f"the fixed sources could not be checked again ({describe(exc)})"
                self._drop(files, {path: _all(file, reason) for path, file in files.items()})
                return Fixes(declined=sorted_declined(self.declined), result=self.result)
            failed = self._failures(files, after)
            if failed:
                files = self._drop(files, failed)
                continue
            unstable = self._unstable(files, after, fixed_sources)
            if unstable:
                reason = "a second --fix would change the file again"
                files = self._drop(files, {path: _all(files[path], reason) for path in unstable})
                continue
            return self._outcome(files, after)

    def _failures(self, files: dict[str, _File], after: Result) -> dict[str, list[tuple[Operation, str]]]:
        """The fixes that do not hold once the fixed project is checked again."""
        shift = _shifts(files)
        failed: dict[str, list[tuple[Operation, str]]] = {}
        for path, error in after.errors.items():
            if path in files:
                failed[path] = _all(files[path], f"the fixed source cannot be checked: {error.reason}")
        now = [f for found in after.findings.values() for f in found]
        present = {identity(f, _unshifted) for f in now}
        for path, file in files.items():
            for op in file.operations:
                if identity(op.finding, shift) in present:
                    failed.setdefault(path, []).append((op, "the linter still reports it after the edit"))
        before = {identity(f, shift) for found in self.result.findings.values() for f in found}
        for new in now:
            if new.code == "ZG100" or identity(new, _unshifted) in before:
                continue
            why = f"the edit would bring a new finding, {new.code} at line {new.line} of {new.path} once fixed"
            for path, op in _to_blame(new, files, shift):
                failed.setdefault(path, []).append((op, why))
        return failed

    def _unstable(self, files: dict[str, _File], after: Result, fixed_sources: Mapping[str, str | bytes]) -> list[str]:
        """Files in which a second run would plan a fix that this one did not make."""
        shift = _shifts(files)
        expected = {identity(f, shift) for f in self.given_up}
        parse = _parser({**self.sources, **fixed_sources})
        unstable = []
        project = Project({**self.sources, **fixed_sources})
        concerned = {op.finding.path: path for path, file in files.items() for op in file.operations}
        for path in {*files, *concerned}:
            here = None if path in self.not_fixed else parse(path)
            candidates = [f for f in after.findings.get(path, []) if self.wanted(f)]
            again = placements(candidates, here, self.vocabulary, parse, project) if here is not None else []
            if any(isinstance(p, Operation) and (self.unsafe or not p.unsafe) and p.edited not in self.not_fixed
                   and identity(p.finding, _unshifted) not in expected for p in again):
                unstable.append(concerned.get(path, path) if path not in files else path)
        return unstable

    def _drop(self, files: dict[str, _File], drops: Mapping[str, list[tuple[Operation, str]]]) -> dict[str, _File]:
        """The files without these fixes, each declined with its reason (the first one given)."""
        out = dict(files)
        for path, pairs in drops.items():
            for op, reason in pairs:
                if not any(d.finding is op.finding for d in self.declined):
                    self.declined.append(Declined(op.finding, reason))
                    self.given_up.append(op.finding)
            out[path] = files[path].without(op for op, _ in pairs)
        return out

    def _outcome(self, files: dict[str, _File], after: Result) -> Fixes:
        changed = {path: (file.source, file.fixed) for path, file in files.items() if file.fixed != file.source}
        fixed = [replace(op.finding, fix=file.fix_of(op)) for file in files.values() for op in file.operations]
        return Fixes(changed, sorted(fixed), sorted_declined(self.declined), after)


def _all(file: _File, reason: str) -> list[tuple[Operation, str]]:
    return [(op, reason) for op in file.operations]


def sorted_declined(declined: Iterable[Declined]) -> list[Declined]:
    return sorted(declined, key=lambda d: d.finding)


def _unshifted(path: str) -> Shift:
    return NO_SHIFT


def _shifts(files: Mapping[str, _File]) -> Callable[[str], Shift]:
    return lambda path: files[path].shift if path in files else NO_SHIFT


def _to_blame(new: Finding, files: dict[str, _File], shift: Callable[[str], Shift]) -> list[tuple[str, Operation]]:
    """The fixes a finding that appeared can come from: those of its loop, else its file's, else all."""
    if new.path in files:
        ops = files[new.path].operations
        moved = shift(new.path)
        same_loop = [op for op in ops if (moved.line(op.finding.line), op.finding.column) == (new.line, new.column)]
        return [(new.path, op) for op in same_loop or ops]
    return [(path, op) for path, file in files.items() for op in file.operations]


def _parser(sources: Mapping[str, str | bytes]) -> Callable[[str], Located | None]:
    @functools.cache
    def parse(path: str) -> Located | None:
        if path not in sources:
            return None
        try:
            return Located(sources[path])
        except (cst.ParserSyntaxError, UnicodeDecodeError, LookupError, SyntaxError):
            return None

    return parse
