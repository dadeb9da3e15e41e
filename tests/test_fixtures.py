"""Every fixture's findings equal the expectations written inline in it, and every fixed snapshot
(`case.fixed.py`, what `--fix` makes of `case.py` beside it) has none."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import pytest

from zerograd_lint import check_source, frameworks
from zerograd_lint.rules import JUDGES

FIXTURES = Path(__file__).parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>ZG\d{3}(?:@\d+)?(?:\s*,\s*ZG\d{3}(?:@\d+)?)*)")
FIXED = ".fixed.py"


def is_fixed(path: Path) -> bool:
    """A fixed snapshot keeps the `# expect:` comments of the fixture it was made from, unearned."""
    return path.name.endswith(FIXED)


def unfixed(snapshot: Path) -> Path:
    """The fixture a fixed snapshot was made from: `case.py` beside `case.fixed.py`."""
    return snapshot.with_name(snapshot.name.removesuffix(FIXED) + ".py")


# projects/ and frameworks/<name>/projects/: multi-file packages, checked together (test_projects.py)
CASES = sorted(p for p in FIXTURES.rglob("*.py") if "projects" not in p.relative_to(FIXTURES).parts and not is_fixed(p))
SNAPSHOTS = sorted(FIXTURES.rglob("*" + FIXED))


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
    folder = path.parent.name  # its code folder, also inside frameworks/<name>/
    if folder == "quiet":
        assert not expected
    elif folder.startswith("ZG"):
        assert any(code == folder for _, code in expected)
    elif folder == "fixes":  # a shape only the autofix cares about
        assert expected and path.with_name(path.stem + FIXED).is_file()


def test_each_framework_has_its_fixtures_in_code_folders() -> None:
    """`frameworks/<name>/` holds the fixtures of `zerograd_lint/frameworks/<name>.py`: its ZG and
    quiet files in the code folders, its multi-file projects in `projects/`."""
    modules = {module.name for module in pkgutil.iter_modules(frameworks.__path__)}
    files = [p.relative_to(FIXTURES / "frameworks").parts for p in (FIXTURES / "frameworks").rglob("*.py")]
    assert {parts[0] for parts in files} == modules
    misfiled = ["/".join(parts) for parts in files if not re.fullmatch(r"ZG\d{3}|quiet|projects", parts[1])]
    assert not misfiled


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_fixed_snapshot_is_quiet_beside_its_fixture(snapshot: Path) -> None:
    assert unfixed(snapshot).is_file()
    findings = check_source(snapshot.read_text(encoding="utf-8"), str(snapshot))
    assert findings == [], "\n".join(f"{f.line}:{f.column}: {f.code} {f.message}" for f in findings)


def test_there_are_enough_fixtures() -> None:
    """Ten cases at least for each rule registered (its folder is named by its code), more for the
    commonest finding and for what stays quiet."""
    judged = [module.RULE.code for module in JUDGES]
    counts = {folder: sum(p.parent.name == folder for p in CASES) for folder in [*judged, "quiet"]}
    assert all(counts[code] >= 10 for code in judged), counts
    assert counts["ZG001"] >= 25 and counts["quiet"] >= 25
    assert len(CASES) >= 100
