"""The one line on stderr that closes a run: how many findings, files and failures (and, with
`--fix` or `--diff`, how many findings were fixed or would be), or that there was no file to check
(ruff's warning, and exit code 0). A file that could not be checked is not counted as checked.
After a check with findings, a second line can say what `--fix` has fixes for, as ruff's does."""

from __future__ import annotations

from collections.abc import Sequence

from zerograd_lint.findings import Finding

HINTED = frozenset({"concise", "full"})  # the formats a person reads, after which ruff says what --fix can do
NOTHING_FOUND = "No Python files found under the given paths: nothing was checked."


def _count(number: int, noun: str, plural: str = "") -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def _checked(files: int, errors: int) -> str:
    """`files` asked for (found in the folders or named), `errors` of which could not be checked."""
    checked = f"{_count(files - errors, 'file')} checked"
    return f"{checked}, {errors} could not be" if errors else checked


def summary(files: int, findings: Sequence[Finding], errors: int, searched: bool = True) -> str:
    """`searched`: the files were looked for in the paths given (not read from stdin), so finding
    none is said."""
    if searched and not files and not errors:
        return NOTHING_FOUND
    checked = _checked(files, errors)
    if not findings:
        return f"{'No findings' if errors else 'All checks passed'} ({checked})."
    places = len({f.path for f in findings})
    return f"Found {_count(len(findings), 'finding')} in {_count(places, 'file')} ({checked})."


def fix_hint(fixable: int, hidden: int, too_large: int, largest: int) -> str | None:
    """`[*] 2 fixable with the `--fix` option.`, in ruff's words; `hidden` fixes only `--unsafe-fixes`
    makes; `too_large` files (over `largest` characters) whose findings were not looked at for
    fixes. None when there is nothing to say."""
    notes = [_hidden(hidden)] if hidden else []
    if too_large:
        over = f"{_count(too_large, 'file')} over {largest / 1e6:g} MB"
        notes.append(f"fixes not looked for in {over}: `--diff` shows them")
    more = f" ({'; '.join(notes)})" if notes else ""
    if fixable:
        return f"[*] {fixable} fixable with the `--fix` option{more}."
    return f"No fixes available{more}." if notes else None


def _hidden(hidden: int) -> str:
    return f"{_count(hidden, 'hidden fix', 'hidden fixes')} can be enabled with the `--unsafe-fixes` option"


def fix_summary(files: int, fixed: Sequence[Finding], remaining: Sequence[Finding], errors: int, diff: bool,
                unwritten: int = 0, searched: bool = True, hidden: int = 0) -> str:
    """`Fixed 3 findings in 2 files, 1 remaining (5 files checked).`; with `diff`, what would be.
    `unwritten` fixed files could not be written (their findings are among the remaining); `hidden`
    unsafe fixes were not made, as ruff says."""
    if searched and not files and not errors:
        return NOTHING_FOUND
    checked = _checked(files, errors)
    if unwritten:
        checked += f"; {_count(unwritten, 'file')} could not be written"
    if not fixed and not remaining:
        return f"{'No findings' if errors else 'All checks passed'} ({checked})."
    where = f" in {_count(len({f.path for f in fixed}), 'file')}" if fixed else ""
    done = f"{'Would fix' if diff else 'Fixed'} {_count(len(fixed), 'finding')}{where}"
    left = f"{len(remaining)} would remain" if diff else f"{len(remaining)} remaining"
    if hidden:
        left += f"; {_hidden(hidden)}"
    return f"{done}, {left} ({checked})."
