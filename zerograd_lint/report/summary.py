"""The one line on stderr that closes a run: how many findings, files and failures."""

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
        return f"All checks passed ({checked})."
    places = len({f.path for f in findings})
    return f"Found {_count(len(findings), 'finding')} in {_count(places, 'file')} ({checked})."
