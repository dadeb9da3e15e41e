"""What `--show-loops` reports: every training loop (and per-batch callback) the analysis checked,
and for each gradient set stepped there what decided it, a finding or what makes it quiet.

The verdicts are made where the analysis runs (`zerograd_lint.verdicts`, in whichever process
analysed the loop), pickled like raw findings, merged once every part is in (a root inlined by a
caller is dropped, its loops shown in the caller's analysis, as its findings are), then settled
here: a finding suppressed by a marker says which, one the settings do not report says so. No
LibCST in this module: it unpickles anywhere.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import TYPE_CHECKING

from zerograd_lint import rules
from zerograd_lint.findings import Finding
from zerograd_lint.sites import Loop, Site

if TYPE_CHECKING:
    from zerograd_lint.notebook import Index
    from zerograd_lint.settings import Settings

# What a gradient set's verdict is. A finding, reported or not:
FINDING = "finding"  # reported
SUPPRESSED = "suppressed"  # by a `# noqa` or `# zerograd-lint: noqa` marker
ACCUMULATES = "accumulates"  # a ZG001 the loop's `# zerograd: accumulate` marker says is on purpose
NOT_SELECTED = "not-selected"  # a code the settings do not report (--select, --ignore, per-file-ignores)
# Quiet, because of what the analysis saw:
CLEARED = "cleared"  # a clear of the set runs in the loop
STEPPED_AND_CLEARED = "stepped-and-cleared"  # one call steps and clears (DeepSpeed engine, mmengine)
NO_BACKWARD = "no-backward"  # no backward reaches its step: nothing is applied twice
NEVER_STALE = "never-stale"  # no path repeats its step on gradients it applied (the loop ends after it)
# Quiet, because of an assumption:
MAY_BE_CLEARED = "may-be-cleared"  # only a call the analysis cannot see into, which may clear
# A loop with a backward and no step of any set (gradient inspection, an inner accumulation loop):
NO_STEP = "no-step"
# A function the analysis gave up on (its loops unchecked, its callees checked on their own); the
# verdict's message says why:
NOT_CHECKED = "not-checked"

# The role of a call in a verdict: what it does for the set.
CLEAR = "clear"  # clears it for certain
ASSUMED_CLEAR = "assumed clear"  # clears a model taken to be the set's: the only set, built from what is unknown
REPLACE = "replace"  # overwrites its `.grad` (`p.grad = g`)
RENEW = "renew"  # binds a new model or tensor: it has no `.grad` yet
STEP_AND_CLEAR = "step and clear"
MAY_CLEAR = "may clear"
STEP = "step"
BACKWARD = "backward"
FEEDS = "feeds"  # a step (in another loop) that applies what the loop's backward accumulated


@dataclass(frozen=True)
class Verdict:
    """One gradient set's verdict at a loop. `subject` is the code naming the set (`self.optimizer`,
    `opt_d`), empty for NO_STEP; `calls` what made the verdict, each with its role (for a finding,
    the calls its message names). A finding has its code and message, and, suppressed, the marker
    (where it is, and its text)."""

    kind: str
    subject: str = ""
    calls: tuple[tuple[str, Site], ...] = ()
    code: str = ""
    message: str = ""
    marker: Site | None = None

    @property
    def finding(self) -> bool:
        return bool(self.code)


@dataclass(frozen=True)
class CheckedLoop:
    """A loop the analysis checked. `line` and `column` are 1-based, at the keyword (`for`,
    `while`, the `def` of a per-batch callback, or the call of a `step(closure)` outside any loop);
    `function` names a callback. In a notebook, `cell` is the cell, and `line` counts in it."""

    path: str
    line: int
    column: int
    keyword: str
    function: str
    verdicts: tuple[Verdict, ...]
    cell: int | None = None

    def order(self) -> tuple:
        return self.path, self.cell or 0, self.line, self.column


def merged(loops: list[CheckedLoop]) -> list[CheckedLoop]:
    """One loop for each position: the verdicts of every context it was analysed in (a callee's loop
    inlined at two call sites, a base class's method for each subclass), each said once. A set with
    a finding in one context shows its findings only."""
    by_place: dict[tuple[str, int, int], list[CheckedLoop]] = {}
    for loop in loops:
        by_place.setdefault((loop.path, loop.line, loop.column), []).append(loop)
    out = []
    for same in by_place.values():
        verdicts = list(dict.fromkeys(v for loop in same for v in loop.verdicts))
        found = {v.subject for v in verdicts if v.finding}
        verdicts = [v for v in verdicts if v.finding or v.subject not in found]
        keyword = next((l.keyword for l in same if l.keyword != "step"), same[0].keyword)
        function = next((l.function for l in same if l.function), "")
        out.append(replace(same[0], keyword=keyword, function=function, verdicts=tuple(verdicts)))
    return sorted(out, key=CheckedLoop.order)


def settled(loops: list[CheckedLoop], texts: dict[str, str]) -> list[CheckedLoop]:
    """The loops of the files among `texts`, their findings settled by the markers of those files:
    suppressed (which marker), accumulating on purpose, or reported."""
    markers: dict[str, list[rules.Marker]] = {}
    out = []
    for loop in loops:
        if loop.path not in texts:
            continue
        if loop.path not in markers:
            markers[loop.path] = rules.scan_markers(texts[loop.path])
        out.append(replace(loop, verdicts=tuple(_settled(v, loop, markers[loop.path]) for v in loop.verdicts)))
    return out


def _settled(verdict: Verdict, loop: CheckedLoop, markers: list[rules.Marker]) -> Verdict:
    if verdict.kind != FINDING:
        return verdict
    at = Loop(0, loop.keyword, loop.path, loop.line, loop.column - 1, len(loop.keyword), None)
    raw = rules.Raw(loop.path, verdict.code, loop.line, loop.column - 1, 0, verdict.message, at)
    marker = rules.suppressor(raw, markers)
    if marker is None:
        return verdict
    kind = ACCUMULATES if marker.kind == "accumulate" else SUPPRESSED
    return replace(verdict, kind=kind, marker=Site(loop.path, marker.line, marker.column, marker.text))


def reported(loops: Iterable[CheckedLoop], paths: Container[str], settings: Settings,
             notebooks: Mapping[str, Index]) -> list[CheckedLoop]:
    """The loops of the files among `paths` (those a run was asked to check) as the run reports
    them: a finding the settings do not report (`--ignore`, per-file-ignores) said so, and a
    notebook's loops placed in its cells."""
    out = []
    for loop in loops:
        if loop.path not in paths:
            continue
        loop = replace(loop, verdicts=tuple(
            replace(v, kind=NOT_SELECTED) if v.kind == FINDING and not settings.reports(loop.path, v.code) else v
            for v in loop.verdicts
        ))
        out.append(placed(loop, notebooks[loop.path]) if loop.path in notebooks else loop)
    return sorted(out, key=CheckedLoop.order)


def placed(loop: CheckedLoop, index: Index) -> CheckedLoop:
    """A loop of a notebook as the notebook shows it: its cell and line in the cell, and the lines
    of the calls and markers its verdicts name in the same terms (as `Index.place` does findings)."""

    def site(found: Site) -> Site:
        if found.path != loop.path:
            return found
        cell, line = index.locate(found.line)
        return _CellSite(found.path, line, found.column, found.text, found.subject, cell)

    def verdict(v: Verdict) -> Verdict:
        calls = tuple((role, site(s)) for role, s in v.calls)
        marker = site(v.marker) if v.marker is not None else None
        return replace(v, calls=calls, message=_placed_message(v, index), marker=marker)

    cell, line = index.locate(loop.line)
    return replace(loop, cell=cell, line=line, verdicts=tuple(verdict(v) for v in loop.verdicts))


def _placed_message(verdict: Verdict, index: Index) -> str:
    """A finding's message with the lines it names in cells, as `Index.place` makes it."""
    if not verdict.message:
        return verdict.message
    finding = Finding("", 1, 1, verdict.code, verdict.message, name="", end_line=1, end_column=1)
    return index.place(finding).message


class _CellSite(Site):
    """A call in a notebook: its line counts in its cell."""

    __slots__ = ("cell",)

    def __init__(self, path: str, line: int, column: int, text: str, subject: str, cell: int) -> None:
        super().__init__(path, line, column, text, subject)
        self.cell = cell

    def __reduce__(self) -> tuple:
        return _CellSite, (*self._key(), self.cell)


# ------------------------------------------------------------------------- words


def calls_text(calls: list[Site], here: str) -> str:
    """`opt.zero_grad() (line 14)`, `net.zero_grad() (engine.py line 5)`, in a notebook
    `(cell 3, line 2)`; one call made in several places once: `optimizer.zero_grad() (lines 14, 17)`."""
    lines: dict[tuple[str, str, int | None], list[int]] = {}
    for site in calls:
        found = lines.setdefault((site.text, site.path, getattr(site, "cell", None)), [])
        if site.line not in found:
            found.append(site.line)
    shown = []
    for (text, path, cell), numbers in lines.items():
        where = f"cell {cell}, " if cell is not None else "" if path == here else f"{PurePath(path).name} "
        which = f"line {numbers[0]}" if len(numbers) == 1 else f"lines {', '.join(map(str, numbers))}"
        shown.append(f"{text} ({where}{which})")
    return ", ".join(shown)


# What a verdict of each kind says: from its code and marker, or from the calls of some roles.
_SAID = {
    FINDING: "{code}",
    SUPPRESSED: "{code} suppressed by {marker}",
    ACCUMULATES: "accumulates on purpose, {marker}",
    NOT_SELECTED: "{code} not reported (--select, --ignore or per-file-ignores)",
}
_SAID_OF_CALLS = {
    STEPPED_AND_CLEARED: ("ok, stepped and cleared by {}", (STEP_AND_CLEAR,)),
    MAY_BE_CLEARED: ("ok, may be cleared by {}", (MAY_CLEAR,)),
    NO_BACKWARD: ("ok, no backward reaches {}", (STEP,)),
    NEVER_STALE: ("ok, {} never meets gradients it applied already", (STEP,)),
}


def describe(verdict: Verdict, here: str) -> str:
    """What the verdict says, after the set's name: `ok, cleared by optimizer.zero_grad() (line 14)`.
    `here`: the loop's file (calls elsewhere name theirs)."""

    def calls(*roles: str) -> str:
        return calls_text([site for role, site in verdict.calls if role in roles], here)

    kind = verdict.kind
    if kind == NOT_CHECKED:
        return verdict.message
    marker = calls_text([verdict.marker], here) if verdict.marker is not None else ""
    if kind in _SAID:
        return _SAID[kind].format(code=verdict.code, marker=marker)
    if kind in _SAID_OF_CALLS:
        template, roles = _SAID_OF_CALLS[kind]
        return template.format(calls(*roles))
    if kind == NO_STEP:
        backward, feeds = calls(BACKWARD), calls(FEEDS)
        return f"{backward} accumulates for {feeds}" if feeds else f"{backward}, and no step applies it"
    parts = []
    if cleared := calls(CLEAR, STEP_AND_CLEAR):
        parts.append(f"cleared by {cleared}")
    if assumed := calls(ASSUMED_CLEAR):
        parts.append(f"cleared by {assumed}, assumed to hold {verdict.subject}'s parameters")
    if replaced := calls(REPLACE):
        parts.append(f"gradients replaced by {replaced}")
    if renewed := calls(RENEW):
        parts.append(f"made anew by {renewed}")
    return "ok, " + "; ".join(parts)


def verdicts_text(loop: CheckedLoop) -> str:
    """The loop's verdicts, a set at a time: `opt_d: ok, cleared by netD.zero_grad() (line 41); opt_g: ZG001`."""
    by_subject: dict[str, list[str]] = {}
    for verdict in loop.verdicts:
        name = {NO_STEP: "no step in this loop", NOT_CHECKED: "not checked"}.get(verdict.kind, verdict.subject)
        by_subject.setdefault(name, []).append(describe(verdict, loop.path))
    return "; ".join(f"{name}: {' and '.join(said)}" for name, said in by_subject.items())
