"""ZG100's fix: `--fix` removes an unused marker, as ruff's RUF100 fix removes an unused `noqa`, and
keeps the codes of a `noqa` list that are still needed. The fixtures' shapes are their snapshots
(`tests/fixtures/suppression/*.fixed.py`, run by test_fix.py); here, the shapes a fixture cannot
hold (a marker alone on its line carries no `# expect:`), selection, the interplay with the other
fixes and `--add-noqa`, and what stops a removal."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE
from test_notebook_fix import NOTEBOOKS
from test_fix import apply

from zerograd_lint import check_source
from zerograd_lint.checker import Result, check_project
from zerograd_lint.cli import main
from zerograd_lint.findings import SourceError
from zerograd_lint.fix import fix_project, fix_source

CORRECT = """\
import torch
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in data:
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
"""

# (source, what --fix makes of it): outside a training loop, every ZG marker is unused.
SHAPES = {
    "the comment ends the line": ("x = 1  # noqa: ZG001\ny = 2\n", "x = 1\ny = 2\n"),
    "another comment follows": ("x = 1  # noqa: ZG001  # because\n", "x = 1  # because\n"),
    "text follows in the comment": ("x = 1  # noqa: ZG001 because\n", "x = 1\n"),
    "after another comment": ("x = 1  # why  # noqa: ZG001\n", "x = 1  # why\n"),
    "alone on its line": ("x = 1\n    # noqa: ZG001\ny = 2\n", "x = 1\ny = 2\n"),
    "alone, followed by a comment": ("# noqa: ZG001  # because\nx = 1\n", "# because\nx = 1\n"),
    "alone, followed by text": ("if x:\n    # zerograd: accumulate over 4 batches\n    y = 2\n", "if x:\n    y = 2\n"),
    "the last line, without a line break": ("x = 1\n# zerograd: accumulate", "x = 1\n"),
    "a list keeps another tool's codes": ("x = 1  # noqa: E501, ZG002, F401  # why\n", "x = 1  # noqa: E501, F401  # why\n"),
    "as ruff writes a list": ("x = 1  #noqa:zg002,e501 ,W291\n", "x = 1  # noqa: e501, W291\n"),
    "a code named twice, once": ("x = 1  # noqa: E501, E501, ZG002\n", "x = 1  # noqa: E501\n"),
    "two markers on a line": ("x = 1  # zerograd: accumulate  # noqa: ZG001\n", "x = 1\n"),
    "a marker before a used one": ("x = 1  # zerograd: accumulate  # noqa: E501\n", "x = 1  # noqa: E501\n"),
    "line breaks kept": ("x = 1  # noqa: ZG001\r\n# noqa: ZG003\r\ny = 2\r\n", "x = 1\r\ny = 2\r\n"),
    "a bare noqa stays": ("x = 1  # noqa\n", "x = 1  # noqa\n"),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_of_marker_is_removed_as_ruff_removes_a_noqa(shape: str) -> None:
    source, expected = SHAPES[shape]
    out, fixes = fix_source(source, "train.py")
    assert out == expected and check_source(out, "train.py") == []
    for finding in fixes.fixed:
        assert finding.code == "ZG100" and finding.fix is not None and finding.fix.applicability == "safe"
        assert finding.fix.message.startswith("Remove ")
    if len(fixes.fixed) == 1:
        assert apply(source, fixes.fixed[0].fix.edits) == expected
    assert fix_source(out, "train.py")[0] == out


def test_the_accumulate_marker_above_a_loop_goes_with_its_line() -> None:
    source = CORRECT.replace("for x, y in data:", "# zerograd: accumulate\nfor x, y in data:")
    out, fixes = fix_source(source, "train.py")
    assert out == CORRECT
    assert [(f.line, f.fix.message) for f in fixes.fixed] == [(4, "Remove the unused `# zerograd: accumulate`")]


def test_a_list_keeps_the_code_in_use() -> None:
    source = STALE.replace("for x, y in data:", "for x, y in data:  # noqa: ZG001, ZG002")
    out, fixes = fix_source(source, "train.py")
    assert out == STALE.replace("for x, y in data:", "for x, y in data:  # noqa: ZG001")
    assert [f.fix.message for f in fixes.fixed] == ["Remove ZG002 from `# noqa: ZG001, ZG002`"]


def test_the_fix_of_a_marker_is_its_own_edit_beside_a_statement_fix() -> None:
    source = STALE.replace("for x, y in data:", "for x, y in data:  # noqa: ZG003")
    out, fixes = fix_source(source, "train.py")
    assert out == STALE + "    optimizer.zero_grad()\n"
    zg001, zg100 = fixes.fixed
    assert (zg001.code, zg100.code, zg100.line, zg100.column) == ("ZG001", "ZG100", 4, 20)
    assert apply(source, zg100.fix.edits) == STALE  # each fix alone, on the source as it was
    assert apply(source, zg001.fix.edits) == source + "    optimizer.zero_grad()\n"


def test_a_marker_a_fix_leaves_unused_goes_in_the_same_run() -> None:
    """The check below reports the marker as used (no ZG100) until the loop is fixed: as when the
    finding it suppressed goes with the fix of another."""
    source = STALE.replace("for x, y in data:", "for x, y in data:  # noqa: ZG003")

    def check(sources):
        result = check_project(sources)
        if sources["train.py"] == source:
            result.findings["train.py"] = [f for f in result.findings["train.py"] if f.code != "ZG100"]
        return result

    sources: dict[str, str | bytes] = {"train.py": source}
    fixes = fix_project(sources, check(sources), check)
    once = fixes.changed["train.py"][1]
    assert once == STALE + "    optimizer.zero_grad()\n"
    assert [(f.code, f.line) for f in fixes.fixed] == [("ZG001", 4), ("ZG100", 4)]
    assert fixes.result.findings.get("train.py", []) == []
    again = fix_project({"train.py": once}, check({"train.py": once}), check)
    assert again.changed == {} and again.fixed == []


def test_removals_honour_the_selection() -> None:
    source = CORRECT.replace("for x, y in data:", "for x, y in data:  # zerograd: accumulate")
    sources: dict[str, str | bytes] = {"train.py": source}
    fixes = fix_project(sources, check_project(sources), check_project, wanted=lambda f: f.code != "ZG100")
    assert fixes.changed == {} and fixes.fixed == [] and fixes.declined == []


def test_a_file_not_fixed_keeps_its_markers_and_says_why() -> None:
    sources: dict[str, str | bytes] = {"train.py": "x = 1  # noqa: ZG001\n"}
    fixes = fix_project(sources, check_project(sources), check_project, not_fixed={"train.py": "not this one"})
    assert fixes.changed == {}
    assert [(d.finding.code, d.reason) for d in fixes.declined] == [("ZG100", "not this one")]


def test_a_removal_the_check_does_not_confirm_is_not_made() -> None:
    source = "x = 1  # noqa: ZG001\ny = 2  # noqa: ZG002\n"

    def reporting_more(sources):
        result = check_project(sources)
        if sources["train.py"] != source:  # as if the removal brought a finding
            result.findings["train.py"] = [*result.findings.get("train.py", []), *check_project(
                {"train.py": STALE}).findings["train.py"]]
        return result

    def failing(sources):
        if sources["train.py"] != source:
            raise RuntimeError("boom")
        return check_project(sources)

    def refusing(sources):
        if sources["train.py"] != source:
            return Result(errors={"train.py": SourceError("train.py", "too deeply nested")})
        return check_project(sources)

    sources: dict[str, str | bytes] = {"train.py": source}
    for check, reason in [(reporting_more, "removing the marker would change what is reported in train.py"),
                          (failing, "the fixed sources could not be checked again (RuntimeError: boom)"),
                          (refusing, "the fixed source cannot be checked: too deeply nested")]:
        fixes = fix_project(sources, check_project(sources), check)
        assert fixes.changed == {} and fixes.fixed == []
        assert [d.reason for d in fixes.declined] == [reason, reason]


def test_a_removal_that_would_take_a_marker_in_use_with_it_is_declined() -> None:
    # ruff's rule: text after the marker in its comment goes with it, here the marker in use
    source = STALE.replace("for x, y in data:", "for x, y in data:  # noqa: ZG001 see # zerograd: accumulate")
    out, fixes = fix_source(source, "train.py")
    assert out == source
    [declined] = fixes.declined
    assert declined.reason == "removing the marker would change another marker on its line"


# The command line.


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    Path("train.py").write_text(CORRECT.replace("for x, y in data:", "for x, y in data:  # noqa: E501, ZG001"))
    Path("stale.py").write_text(STALE.replace("for x, y in data:", "for x, y in data:  # zerograd: accumulate  # why"))
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(main, ["--no-cache", *args], catch_exceptions=False)


def test_fix_removes_unused_markers_and_a_second_run_changes_nothing(project: Path) -> None:
    result = run("--fix", "--show-fixes", ".")
    assert result.exit_code == 0, result.output
    assert Path("train.py").read_text() == CORRECT.replace("for x, y in data:", "for x, y in data:  # noqa: E501")
    assert Path("stale.py").read_text() == STALE.replace("for x, y in data:", "for x, y in data:  # zerograd: accumulate  # why")
    assert "1 × ZG100 (unused-marker)" in result.stderr
    assert result.stderr.endswith("Fixed 1 finding in 1 file, 0 remaining (2 files checked).\n")
    again = run("--fix", ".")
    assert (again.exit_code, again.stderr) == (0, "All checks passed (2 files checked).\n")


def test_diff_shows_the_removal() -> None:
    result = CliRunner().invoke(main, ["--isolated", "--diff", "--stdin-filename", "train.py"],
                                input="x = 1  # noqa: ZG001  # why\n")
    assert "-x = 1  # noqa: ZG001  # why\n+x = 1  # why\n" in result.stdout


@pytest.mark.parametrize("setting", [["--ignore", "ZG100"], ["--select", "ZG001"], ["--per-file-ignores", "train.py:ZG100"]])
def test_fix_removes_no_marker_whose_zg100_is_not_selected(project: Path, setting: list[str]) -> None:
    before = Path("train.py").read_bytes()
    assert run("--fix", *setting, "train.py").exit_code == 0
    assert Path("train.py").read_bytes() == before


def test_per_file_ignores_of_the_configuration_keep_the_markers(project: Path) -> None:
    Path("pyproject.toml").write_text('[tool.zerograd-lint.per-file-ignores]\n"train.py" = ["ZG100"]\n')
    before = Path("train.py").read_bytes()
    assert run("--fix", "train.py").exit_code == 0
    assert Path("train.py").read_bytes() == before


def test_add_noqa_then_fix_do_not_fight(project: Path) -> None:
    """--add-noqa adds what suppresses a finding (never for a ZG100); --fix removes what suppresses
    nothing: one after the other, each once, and neither undoes the other."""
    Path("stale.py").write_text(STALE.replace("for x, y in data:", "for x, y in data:  # noqa: ZG002"))
    assert run("--add-noqa", ".").exit_code == 0
    assert "for x, y in data:  # noqa: ZG002, ZG001\n" in Path("stale.py").read_text()
    assert run("--fix", ".").exit_code == 0
    assert "for x, y in data:  # noqa: ZG001\n" in Path("stale.py").read_text()
    settled = {p: p.read_bytes() for p in project.glob("*.py")}
    assert run("--add-noqa", ".").stderr == "Added 0 noqa directives.\n"
    assert run("--fix", ".").exit_code == 0
    assert {p: p.read_bytes() for p in project.glob("*.py")} == settled


def test_a_notebooks_unused_marker_is_removed_in_its_cell(project: Path) -> None:
    original = (NOTEBOOKS / "suppression.ipynb").read_text()
    Path("suppression.ipynb").write_text(original)
    result = run("--fix", "suppression.ipynb")
    assert result.exit_code == 1  # the ZG001 of the same cell is declined, and remains
    assert "Fixed 1 finding in 1 file, 1 remaining" in result.stderr
    assert Path("suppression.ipynb").read_text() == original.replace("data:  # noqa: ZG002  # expect", "data:  # expect")
    fixed = Path("suppression.ipynb").read_bytes()
    assert "Fixed 0 findings" in run("--fix", "suppression.ipynb").stderr
    assert Path("suppression.ipynb").read_bytes() == fixed
