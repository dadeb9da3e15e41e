"""The autofix: put the clear where it belongs, right after the step, and change nothing else.

    >>> from zerograd_lint.fix import fix_source
    >>> fixed, fixes = fix_source(open("train.py").read(), "train.py")  # doctest: +SKIP
    >>> [(f.code, f.fix.message) for f in fixes.fixed]  # doctest: +SKIP
    [('ZG001', 'Insert `optimizer.zero_grad()` after `optimizer.step()` (line 12)')]

The path: findings -> `placements` (one placement per finding, or the reason there is none) ->
`rewrite` (LibCST: the placements made, nothing else touched) -> `verify` and `pipeline` (the
fixed source parses, differs only by the intended statements, no longer has the finding, brings
no new one, and would not change again) -> `output` (a unified diff, or an atomic write). A fix is
safe, in ruff's sense, when it changes nothing but the bug: what the model trains on, which is
its point. One that may change more (a helper other code calls too) is unsafe, made only with
`unsafe=True` (`--unsafe-fixes`). Nothing here prints or exits.
"""

from __future__ import annotations

from zerograd_lint.fix.pipeline import Check, Fixes, fix_project
from zerograd_lint.fix.operations import Declined
from zerograd_lint.settings import Vocabulary

__all__ = ["Check", "Declined", "Fixes", "fix_project", "fix_source"]


def fix_source(source: str | bytes, path: str = "<stdin>", vocabulary: Vocabulary = Vocabulary(),
               unsafe: bool = False) -> tuple[str | bytes, Fixes]:
    """The source with its findings fixed (of the same type as given), and what was done.
    Raises `SourceError` when the source cannot be checked."""
    from zerograd_lint.checker import check_project

    def check(sources):
        return check_project(sources, vocabulary)

    result = check({path: source})
    if path in result.errors:
        raise result.errors[path]
    fixes = fix_project({path: source}, result, check, vocabulary=vocabulary, unsafe=unsafe)
    return fixes.changed.get(path, (source, source))[1], fixes
