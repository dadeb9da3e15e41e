"""The one line on stderr that closes a run: how many findings, files and failures (and, with
`--fix` or `--diff`, how many findings were fixed or would be)."""

from __future__ import annotations

from collections.abc import Sequence

from zerograd_lint.findings import Finding


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}"


def summary(files: int, findings: Sequence[Finding], errors: int) -> str:
    checked = f"{_count(files, 'file')} checked"
    if errors:
        checked += f", {errors} could not be"
    if not findings:
        return f"{'No findings' if errors else 'All checks passed'} ({checked})."
    places = len({f.path for f in findings})
    return f"Found {_count(len(findings), 'finding')} in {_count(places, 'file')} ({checked})."


def fix_summary(files: int, fixed: Sequence[Finding], remaining: Sequence[Finding], errors: int, diff: bool,
                unwritten: int = 0) -> str:
    """`Fixed 3 findings in 2 files, 1 remaining (5 files checked).`; with `diff`, what would be.
    `unwritten` fixed files could not be written (their findings are among the remaining)."""
    checked = f"{_count(files, 'file')} checked"
    if errors:
        checked += f", {errors} could not be"
    if unwritten:
        checked += f"; {_count(unwritten, 'file')} could not be written"
    if not fixed and not remaining:
        return f"{'No findings' if errors else 'All checks passed'} ({checked})."
    where = f" in {_count(len({f.path for f in fixed}), 'file')}" if fixed else ""
    done = f"{'Would fix' if diff else 'Fixed'} {_count(len(fixed), 'finding')}{where}"
    left = f"{len(remaining)} would remain" if diff else f"{len(remaining)} remaining"
    in_notebooks = sum(f.cell is not None for f in remaining)
    if in_notebooks:
        left += f", {in_notebooks} of them in notebooks, which are not fixed"
    return f"{done}, {left} ({checked})."
