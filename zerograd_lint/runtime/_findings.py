"""What the guard reports, and the exception and warning that carry it (no torch here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

OnError = Literal["raise", "warn", "record"]

_LISTED = 5


@dataclass(frozen=True)
class Finding:
    """One misuse of gradients, as the guard saw it happen."""

    code: str
    """``"ZG001"``, ``"ZG002"`` or ``"ZG003"``: the same codes as the static analysis."""
    message: str
    optimizer: str
    """The name given to ``attach``, else the class name and position, e.g. ``"Adam #0"``;
    ``"hand-written"`` for tensors updated by hand."""
    parameters: tuple[str, ...]
    """Names from the models given to ``attach``, else ``param_groups[g][i] (shape)``, or
    ``params[i] (shape)`` for tensors updated by hand."""
    at: tuple[str, int] | None = field(default=None, compare=False)
    """The user's file and line the finding is about, when that is not the line where it became
    certain: for a ZG003, the ``zero_grad()`` that discarded (None for a clear the guard only saw
    the effect of, such as ``p.grad = None``). A warning points there."""

    def __str__(self) -> str:
        return self.message


class GradientMisuseError(RuntimeError):
    """Raised with ``on_error="raise"``, at the call where the misuse became certain."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        super().__init__("\n".join(f.message for f in findings))
        self.findings = tuple(findings)
        self.code = findings[0].code


class GradientMisuseWarning(UserWarning):
    """Issued with ``on_error="warn"``, pointing at the user's line that triggered it."""


def finding(
    code: str, optimizer: str, what: str, parameters: Sequence[str], fix: str,
    at: tuple[str, int] | None = None,
) -> Finding:
    """A finding whose message reads ``<code> <optimizer> <what> (parameters: ...): <fix>``."""
    listed = ", ".join(parameters[:_LISTED])
    if len(parameters) > _LISTED:
        listed += f" and {len(parameters) - _LISTED} more"
    message = f"{code} {optimizer} {what} (parameters: {listed}): {fix}"
    return Finding(code, message, optimizer, tuple(parameters), at)
