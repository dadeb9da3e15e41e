"""zerograd-lint: find PyTorch training loops that clear gradients wrongly.

    >>> from zerograd_lint import check_source
    >>> [f.code for f in check_source(open("train.py").read(), "train.py")]  # doctest: +SKIP
    ['ZG001']

Importing this package is cheap: LibCST loads on the first `check_source` call.
"""

from __future__ import annotations

import sys

if sys.argv[:1] == ["-m"] and sys.path and not sys.flags.safe_path:  # `python -m zerograd_lint`, being located
    # -m puts the current folder first on the path, and that folder is usually the one being checked:
    # its `ast.py` or `tokenize.py` would run in place of the standard library's. Nothing is imported
    # from it (the package itself, if found there, is loaded already; its modules come from its folder).
    del sys.path[0]

TYPE_CHECKING = False  # `typing` is not imported: the console script forks before it imports anything

__version__ = "0.1.0"
__all__ = ["check_source", "Finding", "Fix", "Edit", "SourceError", "__version__"]

if TYPE_CHECKING:
    from typing import Any

    from zerograd_lint.checker import check_source
    from zerograd_lint.findings import Edit, Finding, Fix, SourceError


def __getattr__(name: str) -> Any:
    if name == "check_source":
        from zerograd_lint.checker import check_source

        return check_source
    if name in ("Finding", "Fix", "Edit", "SourceError"):
        from zerograd_lint import findings

        return getattr(findings, name)
    raise AttributeError(f"module 'zerograd_lint' has no attribute {name!r}")
