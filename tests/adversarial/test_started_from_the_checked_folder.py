"""The linter never imports from the folder it checks, however it is started (issue 22, item 5).

`python -m zerograd_lint .` puts the current folder first on `sys.path`; a project with its own
`ast.py`, `tokenize.py` or `pickle.py` at its root (or a `libcst/` folder) must be checked, not run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from snippets import STALE

# Modules the linter imports after Python hands over to it (the standard library's and its own
# dependencies'). Each planted copy leaves a mark when it runs.
PLANTED = ["ast", "tokenize", "pickle", "typing", "json", "dataclasses", "difflib", "bisect", "hashlib"]
PLANTED_PACKAGES = ["libcst", "click"]


def _plant(folder: Path) -> None:
    mark = "open(__file__ + '.ran', 'w').close()\n"
    for name in PLANTED:
        (folder / f"{name}.py").write_text(mark)
    for name in PLANTED_PACKAGES:
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(mark)
    (folder / "train.py").write_text(STALE)


def _ran(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.ran"))


def test_python_dash_m_imports_nothing_from_the_current_folder(tmp_path: Path) -> None:
    _plant(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    run = subprocess.run(
        [sys.executable, "-m", "zerograd_lint", "--no-cache", "--output-format", "concise", "train.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert _ran(tmp_path) == []
    assert run.returncode == 1, run.stderr
    assert "train.py:4:1: ZG001" in run.stdout


def test_python_dash_m_on_the_whole_folder_checks_the_planted_modules_without_running_them(tmp_path: Path) -> None:
    _plant(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    run = subprocess.run(
        [sys.executable, "-m", "zerograd_lint", "--no-cache", "--output-format", "concise", "."],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert _ran(tmp_path) == []
    assert run.returncode == 1, run.stderr
    assert "ZG001" in run.stdout
