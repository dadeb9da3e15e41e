"""What `pip install zerograd-lint` gets: every package, the rule pages, the entry points."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from zerograd_lint.codes import RULES
from zerograd_lint.config import toml_module

ROOT = Path(__file__).parent.parent
PYPROJECT = toml_module().loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_folder_is_listed() -> None:
    folders = {
        ".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "zerograd_lint").rglob("__init__.py")
    }
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert listed == folders | {"zerograd_lint.rule_pages"}
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"zerograd_lint.rule_pages": "docs/rules"}


def test_extras_and_entry_points() -> None:
    project = PYPROJECT["project"]
    assert project["optional-dependencies"]["lsp"] == ["pygls>=2.0,<3"]
    assert project["entry-points"]["flake8.extension"] == {"ZG": "zerograd_lint.flake8:Plugin"}
    assert "torch>=2.1,<2.14" in project["optional-dependencies"]["test"]


def test_the_test_extra_is_what_the_readme_says() -> None:
    """Issue 19, item 2: the runtime tests' torch is bounded (an open range pulls a multi-GB CUDA
    build), numpy comes with it (torch warns on every run without it), and the README says what
    `pip install '.[test]'` really downloads and how to get the CPU build instead."""
    test = PYPROJECT["project"]["optional-dependencies"]["test"]
    assert "torch>=2.1,<2.14" in test and any(requirement.startswith("numpy") for requirement in test)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in readme
    assert "a CPU build of torch for the runtime tests" not in readme  # what it is depends on the machine


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the files a wheel is made of (the checkout is left as it is)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for folder in ("zerograd_lint", "docs"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
                           str(source)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    [built] = out.glob("zerograd_lint-*.whl")
    return built


def test_the_wheel_carries_the_rule_pages_and_the_flake8_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        registered = archive.read(entry_points).decode()
    assert {f"zerograd_lint/rule_pages/{code}.md" for code in RULES} <= names
    assert "[flake8.extension]\nZG = zerograd_lint.flake8:Plugin" in registered


def test_explain_works_from_an_installed_copy(wheel: Path, tmp_path: Path) -> None:
    installed = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)
    env = {**os.environ, "PYTHONPATH": str(installed)}
    done = subprocess.run([sys.executable, "-m", "zerograd_lint", "--explain", "ZG002"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (ROOT / "docs" / "rules" / "ZG002.md").read_text(encoding="utf-8")
    where = subprocess.run([sys.executable, "-c", "import zerograd_lint; print(zerograd_lint.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert where.stdout.startswith(str(installed))
