"""ZG100's fix: an unused marker taken out of its comment, as ruff's RUF100 fix takes out an unused
`noqa` (its `delete_comment`, and the rewritten list of codes).

- A marker that is unused as a whole (`# zerograd: accumulate`, a `# noqa:` whose ZG codes are all
  unused and which names no other code) goes, with the whitespace before it. A comment after it
  stays (`x  # noqa: ZG001  # why` becomes `x  # why`); other text after it in the same comment
  goes with it (`x  # noqa: ZG001 why` becomes `x`). A line the marker was alone on goes. Ruff
  leaves a blank line where an own-line marker was followed by text; here that line goes too.
- A `# noqa:` list keeps its other codes, in their order and spelling, written as ruff writes
  them: `# noqa: ZG001,E501` with ZG001 unused becomes `# noqa: E501`; a code named twice once.
- A bare `# noqa` is never reported (it may be another tool's: docs/rules/ZG100.md), so never
  removed, where ruff's RUF100 removes an unused one.

The edit touches comments only: the program must parse to the same syntax tree, and every other
marker of the file must still be there, with its codes. The removal is safe.

It runs once the statement fixes (`pipeline`) have settled, on the texts they made and the check
of those: a fix can leave a marker unused (the finding it suppressed gone with the fix of another),
and it goes in the same run. The project is then checked again with the markers removed, and must
report what it did, on the same lines once removed lines are gone, less the ZG100s of the removed
markers; a file for which it does not keeps its markers (all or nothing per file, as for the other
fixes), declined with the reason, and the others are checked again without it. So the fixes reach
a point where nothing is left to fix or remove, and a second `--fix` changes nothing: where ruff
runs its fixes again until nothing changes, the check shows that nothing would.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from zerograd_lint.checker import Result
from zerograd_lint.findings import Finding, Fix, describe
from zerograd_lint.fix.noqa import same_program
from zerograd_lint.fix.operations import Declined
from zerograd_lint.fix.output import codec
from zerograd_lint.fix.rewrite import edits_between
from zerograd_lint.lines import lines_of
from zerograd_lint.rules.suppression import RULE, Marker, scan_markers

if TYPE_CHECKING:
    from zerograd_lint.fix.pipeline import Check, Fixes

UNUSED_MARKER = RULE.code
_SPACE = " \t\f"  # what Python (and ruff) take for whitespace around a comment
_UNUSED_CODES = re.compile(r"suppresses nothing for (?P<codes>[A-Z0-9, ]+) on this line$")
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


class _NotRemoved(Exception):
    """Why a file's unused markers stay where they are."""


def unused_markers_removed(sources: Mapping[str, str | bytes], original: Result, fixes: Fixes, check: Check,
                           wanted: Callable[[Finding], bool], not_fixed: Mapping[str, str]) -> Fixes:
    """`fixes` (the statement fixes of `sources`, whose check was `original`) with the `wanted`
    ZG100s of its result fixed too: the texts, the findings fixed, those declined and the check."""
    texts = {path: fixed for path, (_, fixed) in fixes.changed.items()}
    result = fixes.result
    removed: list[tuple[Finding, _Removal]] = []  # each ZG100 fixed, and the removal it was part of
    declined: list[Declined] = []
    refused: set[str] = set()
    while True:
        planned: dict[str, _Removal] = {}
        for path, found in sorted(result.findings.items()):
            unused = [f for f in found if f.code == UNUSED_MARKER and wanted(f)]
            if not unused or path in refused:
                continue
            try:
                if path in not_fixed or path not in sources:
                    raise _NotRemoved(not_fixed.get(path, "the file is not one of those fixed"))
                planned[path] = _Removal.of(texts.get(path, sources[path]), unused)
            except _NotRemoved as exc:
                declined.extend(Declined(f, str(exc)) for f in unused)
                refused.add(path)
        if not planned:
            break
        try:
            after = check({**sources, **texts, **{path: r.fixed for path, r in planned.items()}})
        except Exception as exc:  # an internal error of the analysis: keep the markers
            _refuse(planned, f"the fixed sources could not be checked again ({describe(exc)})", declined, refused)
            break
        failed = _failures(result, after, planned)
        if failed:  # again without them, from the same check: each time a file fewer, so it ends
            for path, reason in failed.items():
                _refuse({path: planned[path]}, reason, declined, refused)
            continue
        for path, removal in planned.items():
            removed.extend((f, removal) for f in removal.findings)
            texts[path] = removal.fixed
        result = after
        break  # the check reports what it did, the markers aside: nothing more to fix, nor to remove
    changed = dict(fixes.changed)
    changed.update({path: (sources[path], text) for path, text in texts.items() if text != sources[path]})
    fixed = [*fixes.fixed, *_reported(removed, original, sources)]
    return replace(fixes, changed=changed, fixed=sorted(fixed), result=result,
                   declined=sorted([*fixes.declined, *declined], key=lambda d: d.finding))


def removable(source: str | bytes, unused: Sequence[Finding]) -> bool:
    """Whether the markers of these ZG100s (all of one file's) can be taken out of its source."""
    try:
        _Removal.of(source, unused)
    except _NotRemoved:
        return False
    return True


@dataclass(frozen=True)
class _Removal:
    """A source without the markers of some ZG100s (all of one file), and what each removal is."""

    source: str | bytes
    fixed: str | bytes
    findings: tuple[Finding, ...]
    lines_gone: tuple[int, ...]  # the lines that went whole

    @classmethod
    def of(cls, source: str | bytes, findings: Sequence[Finding]) -> _Removal:
        text, encode = codec(source)
        new, _, gone = without_markers(text, findings)
        if not same_program(text, new):
            raise _NotRemoved("the source without the marker does not parse to the same program")
        return cls(source, encode(new), tuple(findings), tuple(gone))

    def line(self, old: int) -> int:
        """Where a line of the source is once the removed lines are gone."""
        return old - sum(gone < old for gone in self.lines_gone)


def without_markers(text: str, findings: Sequence[Finding]) -> tuple[str, dict[Finding, str], list[int]]:
    """`text` without the markers these ZG100s are about; the title of each removal; the lines that
    went whole. Raises `_NotRemoved` when a marker is not where its finding says, or when taking it
    out would take another marker, or a code another marker still needs, with it."""
    markers = {(m.line, m.column + 1): m for m in scan_markers(text) if m.kind != "file"}
    lines = lines_of(text)
    titles: dict[Finding, str] = {}
    kept = Counter((m.kind, m.codes) for m in markers.values())
    gone: list[int] = []
    for finding in sorted(findings, key=lambda f: (f.line, -f.column)):  # a line's last marker first
        marker = markers.get((finding.line, finding.column))
        if marker is None or (finding.end_line, finding.end_column) != (finding.line, finding.column + len(marker.text)):
            raise _NotRemoved(f"no marker at line {finding.line}, column {finding.column} to remove")
        codes = _kept_codes(marker, _unused_codes(finding))
        kept[(marker.kind, marker.codes)] -= 1
        line = lines[finding.line - 1]
        body = line.rstrip("\r\n")
        start, end = marker.column, marker.column + len(marker.text)
        if codes:
            kept[(marker.kind, frozenset(c.upper() for c in codes))] += 1
            lines[finding.line - 1] = body[:start] + "# noqa: " + ", ".join(codes) + body[end:] + line[len(body):]
            titles[finding] = f"Remove {', '.join(_unused_codes(finding))} from `{marker.text}`"
            continue
        rest = _deleted(body, start, end)
        lines[finding.line - 1] = "" if rest is None else rest + line[len(body):]
        if rest is None:
            gone.append(finding.line)
        titles[finding] = f"Remove the unused `{marker.text}`"
    new = "".join(lines)
    if Counter((m.kind, m.codes) for m in scan_markers(new) if m.kind != "file") != +kept:
        raise _NotRemoved("removing the marker would change another marker on its line")
    return new, titles, sorted(gone)


def _deleted(body: str, start: int, end: int) -> str | None:
    """A line (without its break) without the comment text at [start, end), as ruff's
    `delete_comment` leaves it; None when nothing is left of the line."""
    prefix, suffix = body[:start], body[end:]
    rest = suffix.lstrip(_SPACE)
    if rest.startswith("#"):  # `x  # noqa: ZG001  # why`: the next comment stays
        kept = prefix + rest
    else:  # `x  # noqa: ZG001` or `x  # noqa: ZG001 why`: the rest of the line goes
        kept = prefix.rstrip(_SPACE)
    return kept if kept.strip(_SPACE) else None


def _unused_codes(finding: Finding) -> list[str]:
    """The codes a ZG100 of a `noqa` names as unused (none for an accumulate marker)."""
    match = _UNUSED_CODES.search(finding.message)
    return _CODE.findall(match.group("codes")) if match else []


def _kept_codes(marker: Marker, unused: Sequence[str]) -> list[str]:
    """The codes of a `noqa` that stay, as written, each once: [] when it goes whole."""
    if marker.kind != "noqa":
        return []
    gone = {c.upper() for c in unused}
    kept: list[str] = []
    for code in _CODE.findall(marker.text.partition(":")[2]):
        if code.upper() not in gone and code.upper() not in {k.upper() for k in kept}:
            kept.append(code)
    return kept


def _failures(before: Result, after: Result, planned: Mapping[str, _Removal]) -> dict[str, str]:
    """The files whose removals do not hold: the check of the project with them must report what it
    did, the removed markers' ZG100s aside, on the same lines (once the removed lines are gone)."""
    failed: dict[str, str] = {}
    for path, error in after.errors.items():
        if path in planned:
            failed[path] = f"the fixed source cannot be checked: {error.reason}"
    for path in sorted({*before.findings, *after.findings}):
        removal = planned.get(path)
        expected = Counter((f.code, removal.line(f.line) if removal else f.line)
                           for f in before.findings.get(path, []) if removal is None or f not in removal.findings)
        if Counter((f.code, f.line) for f in after.findings.get(path, [])) == expected:
            continue
        for blamed in [path] if removal else planned:
            failed.setdefault(blamed, f"removing the marker would change what is reported in {path}")
    return failed


def _refuse(planned: Mapping[str, _Removal], reason: str, declined: list[Declined], refused: set[str]) -> None:
    for path, removal in planned.items():
        declined.extend(Declined(f, reason) for f in removal.findings)
        refused.add(path)


def _reported(removed: Sequence[tuple[Finding, _Removal]], original: Result,
              sources: Mapping[str, str | bytes]) -> list[Finding]:
    """Each ZG100 removed, with its fix: as it was reported before fixing, its edits those of the
    original source, when it was (matched by its message and column, in order: a statement fix moves
    lines, never markers past one another); else as found once the other fixes were made (they left
    it unused), its edits those of that text."""
    before: dict[tuple[str, str, int], list[Finding]] = {}
    for finding in sorted(f for found in original.findings.values() for f in found if f.code == UNUSED_MARKER):
        before.setdefault((finding.path, finding.message, finding.column), []).append(finding)
    out = []
    for found, removal in sorted(removed, key=lambda pair: pair[0]):
        finding, source = found, removal.source
        if waiting := before.get((found.path, found.message, found.column)):
            finding, source = waiting.pop(0), sources[found.path]
        try:
            text, _ = codec(source)
            new, titles, _ = without_markers(text, [finding])
        except _NotRemoved:  # alone, it would take another marker of its line: the file's removals, then
            finding, text = found, codec(removal.source)[0]
            new, titles, _ = without_markers(text, removal.findings)
        out.append(replace(finding, fix=Fix(titles[finding], edits_between(text, new))))
    return out
