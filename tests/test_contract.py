"""The contract (docs/contract.md) and the fixtures cannot drift apart.

Every file the contract links to exists, inside the repository; every must-stay-quiet fixture
and every suppression fixture is linked from it at least once; and every section that code, tests
or docs cite as `docs/contract.md, "<title>"` is a heading of it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
CONTRACT = ROOT / "docs" / "contract.md"
FIXTURES = ROOT / "tests" / "fixtures"
# folders whose every file is a case of the contract, so each must be linked from it (quiet/ also
# inside frameworks/<name>/)
CITED_IN_FULL = ("quiet", "suppression")
LINK = re.compile(r"\]\(([^)\s]+)\)")
EXTERNAL = ("http://", "https://", "mailto:")
# a citation may wrap over lines of a comment (each starting with `#`) or of a docstring
CITATION = re.compile(r'docs/contract\.md,\s+"([^"]{1,200})"')
CITING = ("zerograd_lint", "tests", "docs", "benchmarks")


def contract() -> str:
    return CONTRACT.read_text(encoding="utf-8")


def relative_links() -> list[str]:
    return [link for link in LINK.findall(contract()) if not link.startswith((*EXTERNAL, "#"))]


def target(link: str) -> Path:
    return (CONTRACT.parent / link.partition("#")[0]).resolve()


def headings() -> list[str]:
    return re.findall(r"^#{1,4} (.+?)\s*$", contract(), re.MULTILINE)


def plain(title: str) -> str:
    """A title as cited: one line, without the backticks of the heading's code spans."""
    lines = (line.strip().lstrip("#").strip() for line in title.splitlines())
    return " ".join(line for line in lines if line).replace("`", "")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_every_link_of_the_contract_exists() -> None:
    missing = [link for link in relative_links() if not target(link).exists()]
    assert not missing, f"docs/contract.md links to files that do not exist: {missing}"


def test_every_link_stays_inside_the_repository() -> None:
    outside = [link for link in relative_links() if not target(link).is_relative_to(ROOT.resolve())]
    assert not outside


def test_every_anchor_of_the_contract_is_a_heading() -> None:
    anchors = {slug(h) for h in headings()}
    missing = [link for link in LINK.findall(contract()) if link.startswith("#") and link[1:] not in anchors]
    assert not missing


@pytest.mark.parametrize("folder", CITED_IN_FULL)
def test_every_fixture_of_the_folder_is_linked(folder: str) -> None:
    linked = {target(link) for link in relative_links()}
    folders = [FIXTURES / folder, *sorted(FIXTURES.glob(f"frameworks/*/{folder}"))]
    files = [p for top in folders for p in sorted(top.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    unlinked = [p.relative_to(FIXTURES).as_posix() for p in files if p.resolve() not in linked]
    assert files
    assert not unlinked, f"fixtures docs/contract.md does not link to (add each to its case): {unlinked}"


def test_the_contract_shows_a_fixture_for_every_code() -> None:
    linked = {target(link) for link in relative_links()}
    for folder in ("ZG001", "ZG002", "ZG003", "quiet", "suppression", "projects"):
        assert any(path.is_relative_to((FIXTURES / folder).resolve()) for path in linked), folder


def test_every_cited_section_is_a_heading() -> None:
    titles = {plain(h) for h in headings()}
    unknown = []
    sources = [p for folder in CITING for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md")]
    for path in sources + sorted(ROOT.glob("*.md")):
        for match in CITATION.finditer(path.read_text(encoding="utf-8", errors="replace")):
            title = plain(match.group(1))
            if not title.startswith("<") and title not in titles:
                unknown.append(f"{path.relative_to(ROOT)}: {title!r}")
    assert not unknown, f"sections cited that docs/contract.md does not have: {unknown}"
