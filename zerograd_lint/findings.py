"""What the linter reports: findings, and the error for input it cannot check."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import total_ordering


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions; the end is exclusive."""

    start: tuple[int, int]
    end: tuple[int, int]
    content: str


@dataclass(frozen=True)
class Fix:
    """An edit that would resolve a finding, "safe" or "unsafe" as ruff means it: a safe fix keeps
    what the program does apart from the bug; an unsafe one may change more (it is applied only
    with `--unsafe-fixes`). `path` is the file the edits are in when it is not the finding's (the
    step is in a helper of another module)."""

    message: str
    edits: tuple[Edit, ...]
    applicability: str = "safe"
    path: str | None = None


@dataclass(frozen=True)
class Related:
    """A call a finding is about: `role` is "step", "earlier step", "clear" or "backward". Its
    position is 1-based; `subject` is the code naming the optimizer of a step or a clear
    (`self.optimizer`), empty for others. It may be in another file than the finding. In a
    notebook, `cell` and `line` are placed as a finding's are."""

    role: str
    path: str
    line: int
    column: int
    text: str
    subject: str = ""
    cell: int | None = None

    def as_dict(self) -> dict[str, object]:
        """The JSON form: `cell` only in a notebook, `subject` only when there is one."""
        found: dict[str, object] = {"role": self.role, "path": self.path, "line": self.line, "column": self.column}
        if self.cell is not None:
            found["cell"] = self.cell
        found["text"] = self.text
        if self.subject:
            found["subject"] = self.subject
        return found


@total_ordering
@dataclass(frozen=True)
class Finding:
    """One problem. Lines and columns are 1-based; `end_column` is one past the last character.

    In a notebook, `cell` is the cell's number (1-based, counting every cell, as ruff does) and
    `line`/`end_line` count from the top of that cell; elsewhere `cell` is None. Findings sort by
    path, cell, line, column, code and message."""

    path: str
    line: int
    column: int
    code: str
    message: str
    name: str = field(compare=False)
    end_line: int = field(compare=False)
    end_column: int = field(compare=False)
    fix: Fix | None = field(default=None, compare=False)
    cell: int | None = None
    related: tuple[Related, ...] = field(default=(), compare=False)

    def _order(self) -> tuple[str, int, int, int, str, str]:
        return (self.path, self.cell or 0, self.line, self.column, self.code, self.message)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Finding):
            return NotImplemented
        return self._order() < other._order()

    def as_dict(self) -> dict[str, object]:
        """The JSON form. `cell` is there only for a finding in a notebook."""
        found: dict[str, object] = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "fix": None if self.fix is None else {
                "message": self.fix.message,
                "applicability": self.fix.applicability,
                **({"path": self.fix.path} if self.fix.path is not None else {}),
                "edits": [
                    {"start": list(e.start), "end": list(e.end), "content": e.content} for e in self.fix.edits
                ],
            },
        }
        if self.cell is not None:
            found["cell"] = self.cell
        found["related"] = [r.as_dict() for r in self.related]
        return found


# The reason given for code deeper than the parsers and the analysis can follow.
TOO_DEEP = "too deeply nested to analyse"
# ... and for code the analysis ran out of memory on.
TOO_LARGE = "too large to analyse (out of memory)"


class SourceError(Exception):
    """The input cannot be checked (not Python, not decodable, too deeply nested...)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self):
        """Made again from its path and reason (a helper's errors come back pickled)."""
        return SourceError, (self.path, self.reason)


def describe(exc: BaseException, limit: int = 200) -> str:
    """`Type: message` on one line, even when the message cannot be made (its `str()` raises, or
    recurses through a deep syntax tree)."""
    try:
        message = " ".join(str(exc).split())
    except Exception:  # noqa: BLE001 - anything: the type alone still names the failure
        message = ""
    if len(message) > limit:
        message = message[: limit - 3] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
