"""The rules package: one judge per code, registered in one place that the code table follows,
and a suppression that needs no LibCST."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from zerograd_lint.codes import RULES
from zerograd_lint.rules import JUDGES, REPORTED

ROOT = Path(__file__).parent.parent


def test_the_code_table_is_the_registry_in_its_order() -> None:
    assert list(RULES.values()) == [module.RULE for module in REPORTED]


def test_each_judge_module_is_named_after_its_rule() -> None:
    assert [module.__name__.rsplit(".", 1)[-1] for module in JUDGES] == [module.RULE.name.replace("-", "_") for module in JUDGES]


def test_suppression_imports_no_libcst() -> None:
    """Markers are read in files that are never parsed: reading them must not load LibCST."""
    code = "import sys, zerograd_lint.rules.suppression; assert 'libcst' not in sys.modules, 'libcst was imported'"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
