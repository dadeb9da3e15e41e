"""What of a file code elsewhere can complete, read from its text (`beside.py` reads the files that
use such definitions when the file is checked alone)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from zerograd_lint.prefilter import definitions

_LOOP = re.compile(r"\n[ \t]+(?:async[ \t]+)?(?:for|while)\b")
_INNER_DEF = re.compile(r"\n([ \t]+)(?:async[ \t]+)?def\b")


def reached(text: str, trains: Callable[[str], bool] = lambda block: False) -> set[str]:
    """The module-level definitions of a file that code elsewhere can complete: a function or a
    class that holds a loop (a caller's epoch loop runs it, a subclass provides the step it
    calls), a function that holds a function (a per-batch callback, handed to a framework by
    whoever calls its factory), a class with a `training_step`, a function that `trains` by
    itself (`Engine(update)` elsewhere makes it a per-batch callback)."""
    found = set()
    for name, block in definitions(text).items():
        function = not block.startswith("class")
        depths = {len(match.group(1).expandtabs()) for match in _INNER_DEF.finditer(block)}
        nested = bool(depths) if function else len(depths) > 1  # a class's methods are one level in
        if _LOOP.search(block) or nested or "training_step" in block or (function and trains(block)):
            found.add(name)
    return found


def parses(text: str) -> bool:
    """Does `ast` accept it? (A file that does not is refused by any run that looks at it.)"""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
