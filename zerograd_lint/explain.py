"""The rule pages, `docs/rules/<CODE>.md`: what `zerograd-lint --explain CODE` prints.

A wheel carries the pages as `zerograd_lint/rule_pages/` (pyproject.toml maps that package folder
onto `docs/rules/`); a source checkout, or an editable install of one, reads `docs/rules/` itself.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from zerograd_lint.codes import RULES

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # Python 3.11+; only for the annotation

INSTALLED = "rule_pages"  # the folder inside the package, in a wheel
CHECKOUT = Path(__file__).resolve().parent.parent / "docs" / "rules"


def rule_page(code: str) -> str:
    """The page of a rule, as Markdown; KeyError for a code that is not a rule."""
    if code not in RULES:
        raise KeyError(code)
    return (_pages() / f"{code}.md").read_text(encoding="utf-8")


def _pages() -> Traversable:
    installed = resources.files("zerograd_lint") / INSTALLED
    return installed if installed.is_dir() else CHECKOUT
