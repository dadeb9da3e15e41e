"""The autofix: put the clear where it belongs, right after the step, and change nothing else.

    >>> from zerograd_lint.fix import fix_source
    >>> fixed, fixes = fix_source(open("train.py").read(), "train.py")  # doctest: +SKIP
    >>> [(f.code, f.fix.message) for f in fixes.fixed]  # doctest: +SKIP
    [('ZG001', 'Insert `optimizer.zero_grad()` after `optimizer.step()` (line 12)')]

The path: findings -> `placements` (one placement per finding, or the reason there is none) ->
`rewrite` (LibCST: the placements made, nothing else touched) -> `verify` and `pipeline` (the
fixed source parses, differs only by the intended statements, no longer has the finding, brings
no new one, and would not change again) -> `output` (a unified diff, or an atomic write). Every fix
is unsafe in ruff's sense: it changes what the model trains on, which is its point; the command
line applies fixes only when asked (`--fix`, `--diff`). Nothing here prints or exits.
"""

from __future__ import annotations

from zerograd_lint.fix.pipeline import Check, Fixes, fix_project
from zerograd_lint.fix.placements import Declined
from zerograd_lint.settings import Vocabulary

__all__ = ["Check", "Declined", "Fixes", "fix_project", "fix_source"]


def fix_source(source: str | bytes, path: str = "<stdin>",
               vocabulary: Vocabulary = Vocabulary()) -> tuple[str | bytes, Fixes]:
    """The source with its findings fixed (of the same type as given), and what was done.
    Raises `SourceError` when the source cannot be checked."""
    from zerograd_lint.checker import check_project

    def check(sources):
        return check_project(sources, vocabulary)

    result = check({path: source})
    if path in result.errors:
        raise result.errors[path]
    fixes = fix_project({path: source}, result, check, vocabulary=vocabulary)
    return fixes.changed.get(path, (source, source))[1], fixes
