"""`--fix` and `--diff` on the command line: what is written, what is printed, the exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import DISCARDED, STALE

from zerograd_lint.cli import main

NOTEBOOK = Path(__file__).parent / "fixtures" / "notebooks" / "stale_gradients.ipynb"
STALE_FIXED = STALE + "    optimizer.zero_grad()\n"
DISCARDED_FIXED = """\
for i, (x, y) in enumerate(data):
    model(x).sum().backward()
    if (i + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
SHARED_LINE = """\
import torch
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in data:
    model(x).sum().backward(); optimizer.step()
"""
SHARED_LINE_FINDING = ("helper.py:4:1: ZG001 optimizer.step() (line 5) applies gradients an earlier step already "
                       "applied: nothing clears them in this loop")
NOT_FIXED = "helper.py:4:1: ZG001 not fixed: the step `optimizer.step()` (line 5) shares its line with other statements"
DIFF = """\
--- a/pkg/discarded.py
+++ b/pkg/discarded.py
@@ -1,5 +1,5 @@
 for i, (x, y) in enumerate(data):
-    optimizer.zero_grad()
     model(x).sum().backward()
     if (i + 1) % 4 == 0:
         optimizer.step()
+        optimizer.zero_grad()
--- a/train.py
+++ b/train.py
@@ -5,3 +5,4 @@
     loss = ((model(x) - y) ** 2).mean()
     loss.backward()
     optimizer.step()
+    optimizer.zero_grad()
"""


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, ["--isolated", *args], input=stdin, catch_exceptions=False)


def snapshot(folder: Path) -> dict[str, bytes]:
    """The project's files (the results cache, the tool's own folder, left out)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".zerograd_lint_cache" not in p.parts
    }


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(STALE)
    (tmp_path / "helper.py").write_text(SHARED_LINE)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "discarded.py").write_text(DISCARDED)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "stale.py").write_text(STALE)
    shutil.copy(NOTEBOOK, tmp_path / "analysis.ipynb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def test_diff_prints_the_fixes_and_writes_nothing(tree: Path) -> None:
    before = snapshot(tree)
    result = run("--diff", "train.py", "pkg", "helper.py")
    assert (result.exit_code, result.stdout) == (1, DIFF)
    assert result.stderr.splitlines() == [
        NOT_FIXED, "Would fix 2 findings in 2 files, 1 would remain (3 files checked)."]
    assert snapshot(tree) == before


def test_diff_exits_0_when_there_is_nothing_to_fix(tree: Path) -> None:
    result = run("--diff", "helper.py")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.splitlines() == [NOT_FIXED, "Would fix 0 findings, 1 would remain (1 file checked)."]


def test_fix_writes_the_fixes_and_prints_what_remains(tree: Path) -> None:
    result = run("--fix", "train.py", "pkg", "helper.py")
    assert (result.exit_code, result.stdout) == (1, SHARED_LINE_FINDING + "\n")
    assert result.stderr.splitlines() == [NOT_FIXED, "Fixed 2 findings in 2 files, 1 remaining (3 files checked)."]
    assert (tree / "train.py").read_text() == STALE_FIXED
    assert (tree / "pkg" / "discarded.py").read_text() == DISCARDED_FIXED
    assert (tree / "helper.py").read_text() == SHARED_LINE


def test_fix_exits_0_when_everything_is_fixed_and_a_second_run_changes_nothing(tree: Path) -> None:
    first = run("--fix", "train.py")
    assert (first.exit_code, first.stdout) == (0, "")
    assert first.stderr == "Fixed 1 finding in 1 file, 0 remaining (1 file checked).\n"
    fixed = snapshot(tree)
    second = run("--fix", "train.py")
    assert (second.exit_code, second.stderr) == (0, "All checks passed (1 file checked).\n")
    assert snapshot(tree) == fixed


def test_a_second_fix_over_everything_changes_nothing(tree: Path) -> None:
    assert run("--fix", ".").exit_code == 1
    fixed = snapshot(tree)
    again = run("--fix", ".")
    assert again.exit_code == 1 and "Fixed 0 findings, 1 remaining (5 files checked)." in again.stderr
    assert snapshot(tree) == fixed


def test_only_the_files_named_are_written(tree: Path) -> None:
    before = snapshot(tree)
    assert run("--fix", "pkg").exit_code == 0
    after = snapshot(tree)
    assert [name for name in before if before[name] != after[name]] == ["pkg/discarded.py"]


def test_excluded_files_are_not_written(tree: Path) -> None:
    before = snapshot(tree)
    run("--fix", "--extend-exclude", "other/,pkg/", ".")
    after = snapshot(tree)
    assert [name for name in before if before[name] != after[name]] == ["analysis.ipynb", "train.py"]


def test_a_notebook_is_fixed_in_its_cell(tree: Path) -> None:
    """More in `test_notebook_fix.py`."""
    before = json.loads((tree / "analysis.ipynb").read_text(encoding="utf-8"))
    result = run("--fix", "analysis.ipynb")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "Fixed 1 finding in 1 file, 0 remaining (1 file checked).\n"
    after = json.loads((tree / "analysis.ipynb").read_text(encoding="utf-8"))
    assert after["cells"][2]["source"][-2:] == ["    optimizer.step()\n", "    optimizer.zero_grad()"]
    after["cells"][2]["source"] = before["cells"][2]["source"]
    assert after == before


def test_fix_fixes_only_the_codes_selected(tree: Path) -> None:
    run("--fix", "--select", "ZG003", "train.py", "pkg")
    assert (tree / "train.py").read_text() == STALE
    assert (tree / "pkg" / "discarded.py").read_text() == DISCARDED_FIXED


def test_diff_wins_over_fix(tree: Path) -> None:
    before = snapshot(tree)
    result = run("--fix", "--diff", "train.py", "pkg")
    assert (result.exit_code, result.stdout) == (1, DIFF)
    assert snapshot(tree) == before


def test_diff_does_not_print_statistics(tree: Path) -> None:
    result = run("--diff", "--statistics", "train.py")
    assert result.exit_code == 2 and "--diff prints the fixes, not statistics" in result.stderr


def test_json_after_a_fix_holds_what_remains(tree: Path) -> None:
    result = run("--fix", "--output-format", "json", "train.py", "helper.py")
    [remaining] = json.loads(result.stdout)
    assert (remaining["path"], remaining["line"], remaining["fix"]) == ("helper.py", 4, None)


def test_statistics_after_a_fix_count_what_remains(tree: Path) -> None:
    assert run("--fix", "--statistics", "train.py", "helper.py").stdout == "1\tZG001\tstale-gradients\n"


def test_exit_zero_applies_to_what_remains(tree: Path) -> None:
    assert run("--fix", "--exit-zero", "helper.py").exit_code == 0
    assert run("--diff", "--exit-zero", "train.py").exit_code == 0


def test_fix_is_asked_for_on_each_run_never_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.zerograd-lint]\nfix = true\n")
    (tmp_path / "train.py").write_text(STALE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["train.py"], catch_exceptions=False)
    assert result.exit_code == 2 and "fix: unknown key" in result.stderr
    assert (tmp_path / "train.py").read_text() == STALE


class TestStandardInput:
    def test_fix_prints_the_fixed_source_and_writes_nothing(self, tree: Path) -> None:
        result = run("--fix", "-", "--stdin-filename", "other/stale.py", stdin=STALE)
        assert (result.exit_code, result.stdout) == (0, STALE_FIXED)
        assert result.stderr == "Fixed 1 finding in 1 file, 0 remaining (1 file checked).\n"
        assert (tree / "other" / "stale.py").read_text() == STALE

    def test_what_remains_goes_to_stderr(self, tree: Path) -> None:
        result = run("--fix", "-", "--stdin-filename", "helper.py", stdin=SHARED_LINE)
        assert (result.exit_code, result.stdout) == (1, SHARED_LINE)
        assert result.stderr.splitlines() == [
            SHARED_LINE_FINDING, NOT_FIXED, "Fixed 0 findings, 1 remaining (1 file checked)."]

    def test_an_excluded_file_comes_back_as_it_went_in(self, tree: Path) -> None:
        result = run("--fix", "--force-exclude", "--extend-exclude", "other/", "-", "--stdin-filename",
                     "other/stale.py", stdin=STALE)
        assert (result.exit_code, result.stdout) == (0, STALE)

    def test_diff_prints_the_diff_of_the_buffer(self, tree: Path) -> None:
        result = run("--diff", "-", "--stdin-filename", "src/train.py", stdin=STALE)
        assert result.exit_code == 1
        assert result.stdout.startswith("--- a/src/train.py\n+++ b/src/train.py\n@@ -5,3 +5,4 @@\n")


def test_the_readme_shows_an_unsafe_fix_held_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(__file__).parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    start = readme.index("$ zerograd-lint --fix train.py\n")
    shown = readme[start:readme.index("```", start)].split("\n", 1)[1]
    (tmp_path / "train.py").write_bytes((root / "tests/fixtures/fixes/helper_called_from_two_loops.py").read_bytes())
    monkeypatch.chdir(tmp_path)
    result = run("--fix", "train.py")
    assert result.stdout + result.stderr == shown
    assert run("--fix", "--unsafe-fixes", "train.py").exit_code == 0


def test_the_readme_shows_what_diff_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(__file__).parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    start = readme.index("$ zerograd-lint --diff examples/\n")
    shown = readme[start:readme.index("```", start)].split("\n", 1)[1]
    monkeypatch.chdir(root)
    result = run("--diff", "examples/")
    assert result.stdout + result.stderr == shown


# Issue 19, item 16: --add-noqa, as ruff's.


def test_add_noqa_adds_merges_and_is_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from snippets import STALE

    monkeypatch.chdir(tmp_path)
    Path("plain.py").write_bytes(STALE.replace("\n", "\r\n").encode())
    Path("other.py").write_text(STALE.replace("for x, y in data:", "for x, y in data:  # noqa: E501  # long"))
    Path("bare.py").write_text(STALE.replace("for x, y in data:", "for x, y in data:  # noqa"))
    Path("continued.py").write_text(STALE.replace("for x, y in data:", "for x, y in \\\n        data:"))
    result = CliRunner().invoke(main, ["--no-cache", "--add-noqa", "."])
    assert result.exit_code == 2, result.stderr  # continued.py cannot take the comment
    assert "Added 2 noqa directives." in result.stderr
    assert "zerograd-lint: error: continued.py: cannot add noqa comments: " in result.stderr
    assert Path("plain.py").read_bytes() == STALE.replace("for x, y in data:", "for x, y in data:  # noqa: ZG001") \
        .replace("\n", "\r\n").encode()
    assert "for x, y in data:  # noqa: E501, ZG001  # long\n" in Path("other.py").read_text()
    assert Path("bare.py").read_text() == STALE.replace("for x, y in data:", "for x, y in data:  # noqa")
    assert Path("continued.py").read_text() == STALE.replace("for x, y in data:", "for x, y in \\\n        data:")
    again = CliRunner().invoke(main, ["--no-cache", "--add-noqa", "plain.py", "other.py", "bare.py"])
    assert (again.exit_code, again.stderr) == (0, "Added 0 noqa directives.\n")
    assert CliRunner().invoke(main, ["--no-cache", "plain.py", "other.py", "bare.py"]).exit_code == 0


def test_add_noqa_is_refused_with_fix(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--add-noqa", "--fix", str(tmp_path)])
    assert result.exit_code == 2 and "--add-noqa edits the files checked: not with --fix" in result.stderr


# Issue 19, item 15: ruff's habits with fixes.


def _two_files(folder: Path) -> None:
    from snippets import STALE

    (folder / "stale.py").write_text(STALE)
    (folder / "helper.py").write_text(SHARED_LINE)  # its fix is declined: the step shares its line


def test_fix_only_fixes_and_reports_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _two_files(tmp_path)
    result = CliRunner().invoke(main, ["--no-cache", "--fix-only", "."])
    assert (result.exit_code, result.stdout) == (0, "")  # helper.py's finding remains, unreported
    assert "optimizer.zero_grad()" in Path("stale.py").read_text()
    assert "Fixed 1 finding in 1 file, 0 remaining" in result.stderr


def test_exit_non_zero_on_fix_and_show_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from snippets import STALE

    monkeypatch.chdir(tmp_path)
    Path("stale.py").write_text(STALE)
    result = CliRunner().invoke(main, ["--no-cache", "--fix", "--show-fixes", "--exit-non-zero-on-fix", "."])
    assert result.exit_code == 1 and result.stdout == ""  # nothing remains, but something was fixed
    assert result.stderr.startswith("Fixed 1 finding:\n- stale.py:\n    1 × ZG001 (stale-gradients)\n\n")
    again = CliRunner().invoke(main, ["--no-cache", "--fix", "--exit-non-zero-on-fix", "."])
    assert again.exit_code == 0  # nothing left to fix


# Issue 20: a fix may edit a helper in another file, but only a file the run may write.


@pytest.mark.parametrize("stdin", [False, True], ids=["named", "stdin"])
def test_a_helper_read_beside_the_file_checked_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               stdin: bool) -> None:
    project = Path(__file__).parent / "fixtures" / "projects" / "zg002_relative_import"
    shutil.copytree(project, tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    loop, steps = Path("trainpkg/loop.py"), Path("trainpkg/steps.py")
    before = steps.read_bytes()
    if stdin:
        result = run("--fix", "-", "--stdin-filename", str(loop), stdin=loop.read_text())
        assert result.stdout == loop.read_text()  # the buffer as it was: its fix is not in it
    else:
        result = run("--fix", str(loop))
    assert result.exit_code == 1
    assert ("trainpkg/loop.py:8:5: ZG002 not fixed: the fix edits trainpkg/steps.py, which was only read beside the "
            "files checked: name it (or its folder) for --fix to edit it") in result.stderr
    assert steps.read_bytes() == before
    both = run("--fix", str(loop), str(steps))  # named, it is fixed
    assert both.exit_code == 0 and steps.read_bytes() != before
