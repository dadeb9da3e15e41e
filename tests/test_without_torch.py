"""The linter needs no torch: it reports the same where torch cannot be imported, and never imports
it where it can."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
REFUSED = "**/zg001_sibling_does_not_parse/metrics.py"  # a fixture the run must refuse: it does not parse
INSTALL_TORCH = "zerograd_lint.runtime needs torch, which is not installed: pip install torch"

# Put on PYTHONPATH, Python imports this at start-up: from then on importing torch fails.
BLOCK_TORCH = """\
import sys


class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None


sys.meta_path.insert(0, NoTorch())
"""


@pytest.fixture
def without_torch(tmp_path: Path) -> dict[str, str]:
    """An environment for a subprocess in which torch cannot be imported."""
    (tmp_path / "sitecustomize.py").write_text(BLOCK_TORCH)
    path = [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def python(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_torch_cannot_be_imported_there(without_torch: dict[str, str]) -> None:
    run = python("-c", "import torch", env=without_torch)
    assert run.returncode == 1
    assert "No module named 'torch' (blocked)" in run.stderr


def test_the_cli_reports_the_same_without_torch(without_torch: dict[str, str]) -> None:
    blocked = python("-m", "zerograd_lint", "tests/fixtures", "--extend-exclude", REFUSED, env=without_torch)
    usual = python("-m", "zerograd_lint", "tests/fixtures", "--extend-exclude", REFUSED)
    assert (blocked.returncode, usual.returncode) == (1, 1), blocked.stderr
    finding = "tests/fixtures/ZG001/no_clear.py:9:1: ZG001 "
    assert any(line.startswith(finding) for line in blocked.stdout.splitlines())
    assert blocked.stdout == usual.stdout


def test_checking_source_never_imports_torch() -> None:
    code = """\
import sys
from pathlib import Path

from zerograd_lint import check_source

paths = sorted(p for p in Path("tests/fixtures").rglob("*.py") if "does_not_parse" not in p.parts[-2])
assert any(check_source(path.read_text(encoding="utf-8"), str(path)) for path in paths)
assert "torch" not in sys.modules, "torch was imported"
"""
    run = python("-c", code)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("use", ["runtime.attach()", "runtime.guard().__enter__()", "runtime.guard_all().__enter__()",
                                 "runtime.Guard"])
def test_the_runtime_guard_without_torch_says_what_to_install(without_torch: dict[str, str], use: str) -> None:
    run = python("-c", f"from zerograd_lint import runtime\n{use}", env=without_torch)
    assert run.returncode == 1
    assert run.stderr.splitlines()[-1] == f"ModuleNotFoundError: {INSTALL_TORCH}"
    assert "During handling" not in run.stderr and "(blocked)" not in run.stderr  # no chained traceback
