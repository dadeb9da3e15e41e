"""Every fixture's findings equal the expectations written inline in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zerograd_lint import check_source

FIXTURES = Path(__file__).parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>ZG\d{3}(?:@\d+)?(?:\s*,\s*ZG\d{3}(?:@\d+)?)*)")
# projects/: multi-file packages, checked together (test_projects.py); fixes/: before/after pairs
# of the autofix, whose `after.py` keeps the `# expect:` comments it no longer earns (test_fix.py).
CASES = sorted(p for p in FIXTURES.rglob("*.py") if p.relative_to(FIXTURES).parts[0] not in ("projects", "fixes"))


def expectations(source: str) -> tuple[set[tuple[int, str]], dict[tuple[int, str], int]]:
    expected, columns = set(), {}
    for number, line in enumerate(re.split(r"\r\n|\r|\n", source), start=1):  # as Python numbers lines
        match = EXPECT.search(line)
        if match:
            for item in re.split(r"\s*,\s*", match.group("codes")):
                code, _, column = item.partition("@")
                expected.add((number, code))
                if column:
                    columns[(number, code)] = int(column)
    return expected, columns


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    expected, columns = expectations(source)
    findings = check_source(source, str(path))
    got = {(f.line, f.code) for f in findings}
    assert got == expected, "\n".join(f"{f.line}:{f.column}: {f.code} {f.message}" for f in findings)
    for f in findings:
        if (f.line, f.code) in columns:
            assert f.column == columns[(f.line, f.code)]


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_is_filed_where_it_belongs(path: Path) -> None:
    expected, _ = expectations(path.read_text(encoding="utf-8"))
    folder = path.relative_to(FIXTURES).parts[0]
    if folder == "quiet":
        assert not expected
    elif folder.startswith("ZG"):
        assert any(code == folder for _, code in expected)


def test_there_are_enough_fixtures() -> None:
    counts = {folder: len(list((FIXTURES / folder).glob("*.py"))) for folder in ("ZG001", "ZG002", "ZG003", "quiet")}
    assert counts["ZG001"] >= 25 and counts["quiet"] >= 25
    assert counts["ZG002"] >= 10 and counts["ZG003"] >= 10
    assert len(CASES) >= 100
