"""The prefilter (files chosen from their text, functions from a first look, bodies emptied for
LibCST) only saves time: every fixture gives the same findings with it and without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from zerograd_lint.checker import check_project

FIXTURES = Path(__file__).parent / "fixtures"
SINGLE = sorted(p for p in FIXTURES.rglob("*.py") if "projects" not in p.parts and "fixes" not in p.parts)
PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())


def both(sources: dict[str, bytes]) -> tuple[dict, dict]:
    fast, thorough = check_project(sources), check_project(sources, exhaustive=True)
    return fast.findings, thorough.findings


@pytest.mark.parametrize("path", SINGLE, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_fixture_gives_the_same_findings_without_the_prefilter(path: Path) -> None:
    fast, thorough = both({str(path): path.read_bytes()})
    assert fast == thorough


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_a_project_gives_the_same_findings_without_the_prefilter(project: Path) -> None:
    fast, thorough = both({str(p): p.read_bytes() for p in sorted(project.rglob("*.py"))})
    assert fast == thorough


def test_all_fixtures_together_give_the_same_findings_without_the_prefilter() -> None:
    fast, thorough = both({str(p): p.read_bytes() for p in [*SINGLE, *(f for d in PROJECTS for f in d.rglob("*.py"))]})
    assert fast == thorough
