"""Fixture projects: small multi-file packages checked together, expectations written inline.

A file that must be refused (it does not parse) says so on a line of its own: `# expect: refused`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_fixtures import expectations
from zerograd_lint.checker import check_project

FIXTURES = Path(__file__).parent / "fixtures"
# one folder each, in projects/ or, a framework's, in frameworks/<name>/projects/
FOLDERS = [FIXTURES / "projects", *sorted(FIXTURES.glob("frameworks/*/projects"))]
CASES = sorted((p for folder in FOLDERS for p in folder.iterdir() if p.is_dir()), key=lambda p: p.name)
REFUSED = re.compile(r"^#\s*expect:\s*refused\b", re.MULTILINE)


def refused(file: Path) -> bool:
    """Does the fixture expect the file to be refused (a syntax error) rather than checked?"""
    return bool(REFUSED.search(file.read_text(encoding="utf-8")))


@pytest.mark.parametrize("project", CASES, ids=lambda p: p.name)
def test_project(project: Path) -> None:
    files = sorted(project.rglob("*.py"))
    result = check_project({str(f): f.read_bytes() for f in files})
    assert set(result.errors) == {str(f) for f in files if refused(f)}
    for file in files:
        if refused(file):
            continue
        expected, _ = expectations(file.read_text())
        found = result.findings[str(file)]
        got = {(f.line, f.code) for f in found}
        assert got == expected, f"{file.relative_to(project)}:\n" + "\n".join(
            f"{f.line}:{f.column}: {f.code} {f.message}" for f in found
        )


@pytest.mark.parametrize("project", CASES, ids=lambda p: p.name)
def test_project_expects_what_it_is_named_for(project: Path) -> None:
    expected = {code for f in project.rglob("*.py") for _, code in expectations(f.read_text())[0]}
    if project.name.startswith("quiet"):
        assert not expected
    else:
        assert project.name.split("_")[0].upper() in expected
