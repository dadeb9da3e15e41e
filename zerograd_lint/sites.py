"""Where a finding is: the call sites and loops of a graph (`graphs/nodes.py`), in a module without
LibCST, so that a finding made in a helper process unpickles here without importing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst


class Site:
    """A call: where it is (`column` 0-based), its code, and for a step or a clear the code naming
    the optimizer (`subject`: `self.optimizer`). Either code may be given as the function that
    makes it, called when first asked for: LibCST makes a node's code by generating it again, and
    most sites are never reported (a tenth of the analysis of a large test module, made eagerly).
    Pickled, and compared, with both made."""

    __slots__ = ("path", "line", "column", "_text", "_subject")

    def __init__(self, path: str, line: int, column: int, text: str | Callable[[], str],
                 subject: str | Callable[[], str] = "") -> None:
        self.path, self.line, self.column = path, line, column
        self._text, self._subject = text, subject

    @property
    def text(self) -> str:
        if not isinstance(self._text, str):
            self._text = self._text()
        return self._text

    @property
    def subject(self) -> str:
        if not isinstance(self._subject, str):
            self._subject = self._subject()
        return self._subject

    def about(self, subject: Callable[[], str]) -> Site:
        """This site with its subject."""
        return Site(self.path, self.line, self.column, self._text, subject)

    def made(self) -> Site:
        """This site with its code made, holding nothing of the tree it was found in."""
        return Site(self.path, self.line, self.column, self.text, self.subject)

    def _key(self) -> tuple[str, int, int, str, str]:
        return self.path, self.line, self.column, self.text, self.subject

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Site) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple:
        return Site, self._key()

    def __repr__(self) -> str:
        return f"Site(path={self.path!r}, line={self.line}, column={self.column}, text={self.text!r}, subject={self.subject!r})"


@dataclass
class Loop:
    id: int
    keyword: str  # "for", "while", "def" (a per-batch callback), "step" (step(closure))
    path: str
    line: int
    column: int  # 0-based, at the keyword
    length: int  # of the keyword
    parent: int | None
    counters: frozenset[str] = frozenset()  # names that advance by one per iteration
    node: cst.CSTNode | None = field(default=None, repr=False, compare=False)
