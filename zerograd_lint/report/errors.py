"""Files that could not be checked, as diagnostics: ruff reports invalid syntax as one, so that CI
annotations, SARIF viewers and JSON consumers see it where they see findings.

A syntax error is `invalid-syntax` at its position (in its cell, in a notebook); anything else
that kept a file from being checked (unreadable, binary, not a notebook, too deeply nested) is
`not-checked` at line 1, column 1. Neither is a rule: selection and `noqa` do not apply, and the
run still exits 2 with the one-line error on standard error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from zerograd_lint.findings import Finding, SourceError

INVALID_SYNTAX = "invalid-syntax"
NOT_CHECKED = "not-checked"

_SYNTAX_ERROR = re.compile(r"^syntax error at (?:cell (?P<cell>\d+):)?(?P<line>\d+):(?P<column>\d+): (?P<message>.*)$", re.DOTALL)


def diagnostic(error: SourceError) -> Finding:
    """The error as a finding whose code is not a rule's."""
    match = _SYNTAX_ERROR.match(error.reason)
    if match is None:
        return Finding(error.path, 1, 1, NOT_CHECKED, error.reason, NOT_CHECKED, 1, 1)
    line, column = int(match["line"]), max(int(match["column"]), 1)
    cell = int(match["cell"]) if match["cell"] else None
    return Finding(error.path, line, column, INVALID_SYNTAX, match["message"], INVALID_SYNTAX, line, column + 1, cell=cell)


def diagnostics(errors: Iterable[SourceError]) -> list[Finding]:
    return [diagnostic(error) for error in errors]
