"""Keys, the names the analysis gives objects, and frames, the functions active while they are found.

A *key* names one object for the analysis: `("optimizer",)` for a module global,
`("train:opt",)` for a local of `train`, `("Trainer.self", "optimizer")` for an attribute of
`self` in class `Trainer`, with `"[0]"` and `"['g']"` for the elements a literal index names
(`opts[0]`, `opts["g"]`) and `"[*]"` for "an element of" (any other index, a loop's target).
Aliases (`o = self.optimizer`, `for opt in optimizers`, a parameter bound at an inlined call)
resolve to the key of what they alias (`aliases.py`), so two spellings of one optimizer meet in
one gradient set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from zerograd_lint.scopes import Scope

Key = tuple[str, ...]
EACH = "[each]"  # every element: what a loop over a collection reaches in each iteration (`covers`)


@dataclass(eq=False)
class Frame:
    """One active function: its scope, its parameters bound to the caller's keys, and `self`."""

    scope: Scope
    subst: dict[str, list[Key]] = field(default_factory=dict)
    parent: Frame | None = None
    cls: Scope | None = None
    locals: dict[str, list[Key]] = field(default_factory=dict)
    # for a function inlined at a call: each parameter's argument, and the frame that passed it
    arguments: dict[str, cst.BaseExpression] = field(default_factory=dict)
    caller: Frame | None = None

    def child_locals(self, extra: dict[str, list[Key]]) -> Frame:
        return Frame(self.scope, self.subst, self.parent, self.cls, {**self.locals, **extra}, self.arguments, self.caller)


def self_key(cls: Scope) -> Key:
    return (f"{cls.qualname}.self",)


def last_name(key: Key) -> str:
    for part in reversed(key):
        if part.startswith("["):
            continue
        part = part.removesuffix("()")
        return part.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    return ""


def is_prefix(a: Key, b: Key) -> bool:
    return len(a) <= len(b) and b[: len(a)] == a


def covers(a: Key, b: Key) -> bool:
    """Clearing `a` clears `b`: `b` is `a` or a part of it, where an `EACH` element of `a` is any
    element (`opts[EACH]` covers `opts[0]` and `opts['g']`)."""
    return len(a) <= len(b) and all(x == y or x == EACH and y.startswith("[") for x, y in zip(a, b))


def related(a: Key, b: Key) -> bool:
    """One object contains the other (`model` and `model.encoder`)."""
    return is_prefix(a, b) or is_prefix(b, a)


def own_key(scope: Scope, name: str) -> Key:
    """The key of a name bound in `scope` (not an alias of something else)."""
    return (f"{scope.qualname}:{name}",)


def param_root(key: Key) -> Key:
    """`model.parameters()[*]` -> `model`: the object the parameters belong to."""
    parts = list(key)
    while parts and (parts[-1].startswith("[") or parts[-1] in ("parameters()", "named_parameters()")):
        parts.pop()
    return tuple(parts) if parts else key
