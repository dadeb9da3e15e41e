"""The rule table: each code's rule (code, name, one-line summary), in the order of the registry
(`rules/__init__.py`). Cheap to import (no LibCST)."""

from __future__ import annotations

from zerograd_lint.rules import REPORTED

RULES = {module.RULE.code: module.RULE for module in REPORTED}
