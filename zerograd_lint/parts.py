"""What the analysis of a share of roots gives (`roots.Analyser`), in a form that pickles (no
CST), and the parts put back together. No LibCST here: the parts come back to a process that never
imported it, the one that hands the shares out to helpers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zerograd_lint import checked_loops, rules
from zerograd_lint.findings import SourceError


@dataclass
class Part:
    """The analysis of some of the modules holding roots, in a form that pickles (no CST)."""

    per_root: list[tuple[tuple[str, int], list[rules.Raw]]]  # (path, `def` line or MODULE): raws
    inlined: set[tuple[str, int]]  # roots analysed within a caller that was analysed
    errors: dict[str, SourceError]
    loops: list[tuple[tuple[str, int], list[checked_loops.CheckedLoop]]] = field(default_factory=list)  # if asked


def merged(parts: list[Part], errors: dict[str, SourceError]) -> list[rules.Raw]:
    """The raw findings of all parts, each once; a root inlined by a caller analysed in another
    part is dropped only now, so the findings never depend on the split. Their errors go to `errors`."""
    inlined = set().union(*(part.inlined for part in parts))
    unique: dict[tuple, rules.Raw] = {}
    for root, found_raws in sorted((item for part in parts for item in part.per_root), key=lambda item: item[0]):
        if root in inlined:
            continue  # analysed in the context of its callers
        for raw in found_raws:
            unique.setdefault((raw.path, raw.code, raw.line, raw.column, raw.message), raw)
    for part in parts:
        for path, error in part.errors.items():
            errors.setdefault(path, error)
    return list(unique.values())


def loops_merged(parts: list[Part]) -> list[checked_loops.CheckedLoop]:
    """The loops checked, shown where their findings are: a root inlined by a caller is left out
    (its loops are among the caller's), as in `merged`."""
    inlined = set().union(*(part.inlined for part in parts))
    return checked_loops.merged([
        loop for part in parts for root, found in part.loops if root not in inlined for loop in found
    ])
