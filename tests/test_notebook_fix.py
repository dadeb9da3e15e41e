"""`--fix`, `--diff` and `--add-noqa` on notebooks: the fixed Python goes back into its cells, and
only the changed cells' `source` changes in the file (`zerograd_lint.notebook.writing`)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from snippets import STALE

import zerograd_lint.notebook.writing as writing
from zerograd_lint.cli import main
from zerograd_lint.notebook import read_notebook
from zerograd_lint.notebook.magics import NEUTRALISED
from zerograd_lint.notebook.mapping import NotMapped, fixed_cells

NOTEBOOKS = Path(__file__).parent / "fixtures" / "notebooks"
FIXABLE = NOTEBOOKS / "fixable.ipynb"  # cells 5 (ZG001, around magics) and 6 (ZG003, a string source) are fixed
FIXED = NOTEBOOKS / "fixable.fixed.ipynb"
FIXED_CELLS = (5, 6)
DIFF = """\
--- a/train.ipynb:cell 5
+++ b/train.ipynb:cell 5
@@ -3,4 +3,5 @@
         loss = nn.functional.mse_loss(model(x), y)
         loss.backward()
         optimizer.step()
+        optimizer.zero_grad()
     %time print(f"epoch {epoch}: {loss.item():.4f}")
--- a/train.ipynb:cell 6
+++ b/train.ipynb:cell 6
@@ -2,7 +2,7 @@
 head_optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
 accumulation = 2
 for i, (x, y) in enumerate(data):  # expect: ZG003
-    head_optimizer.zero_grad()
     (nn.functional.mse_loss(head(x), y) / accumulation).backward()
     if (i + 1) % accumulation == 0:
         head_optimizer.step()
+        head_optimizer.zero_grad()
"""
SETUP = "import torch\nmodel = torch.nn.Linear(3, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
ACROSS_CELLS = (  # the clear is in the loop's cell, its step in the next: it would move from one to the other
    SETUP,
    "for x, y in data:\n    loss = ((model(x) - y) ** 2).mean()\n    loss.backward()\n    optimizer.zero_grad()\n",
    "    optimizer.step()\n",
)


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, ["--isolated", *args], input=stdin, catch_exceptions=False)


def notebook(*sources: str, **dumped: Any) -> str:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": source.splitlines(keepends=True)} for source in sources]
    document = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, **({"indent": 1} | dumped)) + "\n"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def test_fix_writes_the_cells_back_and_nothing_else(folder: Path) -> None:
    shutil.copy(FIXABLE, folder / "train.ipynb")
    result = run("--fix", "train.ipynb")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "Fixed 2 findings in 1 file, 0 remaining (1 file checked).\n"
    original, fixed, expected = (json.loads(p.read_text(encoding="utf-8"))
                                 for p in (FIXABLE, folder / "train.ipynb", FIXED))
    assert [fixed["cells"][n - 1]["source"] for n in FIXED_CELLS] == [
        expected["cells"][n - 1]["source"] for n in FIXED_CELLS]
    unchanged = copy.deepcopy(fixed)
    for n in FIXED_CELLS:
        unchanged["cells"][n - 1]["source"] = original["cells"][n - 1]["source"]
    assert unchanged == original  # outputs, metadata, ids, execution counts, other cells
    assert (folder / "train.ipynb").read_bytes() == FIXED.read_bytes()  # indent=1, key order, final line break
    again = run("train.ipynb")
    assert (again.exit_code, again.stderr) == (0, "All checks passed (1 file checked).\n")
    assert run("--fix", "train.ipynb").exit_code == 0
    assert (folder / "train.ipynb").read_bytes() == FIXED.read_bytes()


def _restyled(text: str, style: dict[str, Any], final: str, reverse: bool) -> str:
    document = json.loads(text)
    if reverse:  # a writer that does not sort the keys
        document = json.loads(json.dumps(document), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    return json.dumps(document, **style) + final


@pytest.mark.parametrize("style", [{"indent": 1, "ensure_ascii": False}, {"indent": 2}, {"indent": 4},
                                   {"ensure_ascii": False}, {"indent": 1, "separators": (",", ":")}], ids=str)
@pytest.mark.parametrize("final", ["\n", ""], ids=["line break at the end", "none"])
@pytest.mark.parametrize("reverse", [False, True], ids=["keys sorted", "keys reversed"])
def test_the_file_keeps_its_formatting(folder: Path, style: dict[str, Any], final: str, reverse: bool) -> None:
    """The fixed file is what the same writer would have written of the fixed notebook."""
    written = _restyled(FIXABLE.read_text(encoding="utf-8"), style, final, reverse)
    (folder / "train.ipynb").write_text(written, encoding="utf-8")
    assert run("--fix", "train.ipynb").exit_code == 0
    expected = _restyled(FIXED.read_text(encoding="utf-8"), style, final, reverse)
    assert (folder / "train.ipynb").read_text(encoding="utf-8") == expected


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_a_new_line_is_written_as_the_file_writes_non_ascii_characters(folder: Path, ensure_ascii: bool) -> None:
    cell = STALE.replace("optimizer", "optimiseur_é")
    (folder / "train.ipynb").write_text(notebook(cell, ensure_ascii=ensure_ascii), encoding="utf-8")
    assert run("--fix", "train.ipynb").exit_code == 0
    expected = notebook(cell + "    optimiseur_é.zero_grad()\n", ensure_ascii=ensure_ascii)
    assert (folder / "train.ipynb").read_text(encoding="utf-8") == expected


def test_a_cells_line_breaks_and_a_byte_order_mark_are_kept(folder: Path) -> None:
    cell = STALE.replace("\n", "\r\n")
    (folder / "train.ipynb").write_bytes(b"\xef\xbb\xbf" + notebook(cell).encode())
    assert run("--fix", "train.ipynb").exit_code == 0
    fixed = (folder / "train.ipynb").read_bytes()
    assert fixed.startswith(b"\xef\xbb\xbf")
    assert json.loads(fixed.decode("utf-8-sig"))["cells"][0]["source"] == (
        (cell + "    optimizer.zero_grad()\r\n").splitlines(keepends=True))


def test_a_cell_without_a_final_line_break_gets_none(folder: Path) -> None:
    loop = "for x in data:\n    model(x).sum().backward()\n    optimizer.step()"
    (folder / "train.ipynb").write_text(notebook(SETUP, loop))
    assert run("--fix", "train.ipynb").exit_code == 0
    [_, cell] = json.loads((folder / "train.ipynb").read_text())["cells"]
    assert cell["source"] == ["for x in data:\n", "    model(x).sum().backward()\n", "    optimizer.step()\n",
                              "    optimizer.zero_grad()"]


def test_a_fix_that_would_cross_cells_leaves_the_notebook_as_it_was(folder: Path) -> None:
    (folder / "train.ipynb").write_text(notebook(*ACROSS_CELLS))
    (folder / "train.py").write_text(STALE)
    before = (folder / "train.ipynb").read_bytes()
    result = run("--fix", "train.ipynb", "train.py")
    assert (folder / "train.ipynb").read_bytes() == before
    assert (folder / "train.py").read_text() == STALE + "    optimizer.zero_grad()\n"  # the other file is fixed
    assert result.exit_code == 1 and result.stdout.startswith("train.ipynb:cell 2:1:1: ZG002 ")
    assert result.stderr.splitlines() == [
        "train.ipynb:cell 2:1:1: ZG002 not fixed: the fixed code cannot be put back into the notebook's cells: "
        "the fix would move code from cell 2 to cell 3",
        "Fixed 1 finding in 1 file, 1 remaining (2 files checked).",
    ]


# no finding; findings none fixes (its unused marker aside, which --fix removes: test_fix_markers.py)
@pytest.mark.parametrize(("name", "options"), [("quiet.ipynb", []), ("suppression.ipynb", ["--ignore", "ZG100"])])
def test_a_notebook_with_nothing_to_fix_is_not_written(folder: Path, name: str, options: list[str]) -> None:
    shutil.copy(NOTEBOOKS / name, folder / name)
    before = (folder / name).stat()
    run("--fix", *options, name)
    after = (folder / name).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert (folder / name).read_bytes() == (NOTEBOOKS / name).read_bytes()


def test_diff_shows_the_cells_and_writes_nothing(folder: Path) -> None:
    shutil.copy(FIXABLE, folder / "train.ipynb")
    result = run("--diff", "train.ipynb")
    assert (result.exit_code, result.stdout) == (1, DIFF)
    assert result.stderr == "Would fix 2 findings in 1 file, 0 would remain (1 file checked).\n"
    assert (folder / "train.ipynb").read_bytes() == FIXABLE.read_bytes()


def test_a_notebook_that_changed_on_disk_meanwhile_is_left_alone(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(FIXABLE, folder / "train.ipynb")
    saved = FIXABLE.read_bytes().replace(b'"execution_count": 3', b'"execution_count": 30')
    real = writing.written_back

    def saving(*args):  # a save lands after the notebook was read
        (folder / "train.ipynb").write_bytes(saved)
        return real(*args)

    monkeypatch.setattr(writing, "written_back", saving)
    result = run("--fix", "train.ipynb")
    assert result.exit_code == 2 and (folder / "train.ipynb").read_bytes() == saved
    assert "zerograd-lint: error: train.ipynb: cannot write the fixes: it changed on disk" in result.stderr
    assert "\ntrain.ipynb:cell 5:2:5: ZG001 " in result.stdout  # reported where it was


def test_fixed_on_stdin(folder: Path) -> None:
    result = run("--fix", "-", "--stdin-filename", "train.ipynb", stdin=FIXABLE.read_text(encoding="utf-8"))
    assert result.stdout == FIXED.read_text(encoding="utf-8")


def test_add_noqa_comments_the_lines_in_their_cells(folder: Path) -> None:
    shutil.copy(FIXABLE, folder / "train.ipynb")
    result = run("--add-noqa", "train.ipynb")
    assert (result.exit_code, result.stderr) == (0, "Added 2 noqa directives.\n")
    original, edited = (json.loads(p.read_text(encoding="utf-8")) for p in (FIXABLE, folder / "train.ipynb"))
    assert edited["cells"][4]["source"][1] == "    for x, y in data:  # expect: ZG001@5  # noqa: ZG001\n"
    assert "in enumerate(data):  # expect: ZG003  # noqa: ZG003\n" in edited["cells"][5]["source"]
    assert [c.get("outputs") for c in edited["cells"]] == [c.get("outputs") for c in original["cells"]]
    assert run("train.ipynb").exit_code == 0


def test_a_line_of_ipython_syntax_is_never_written_back_as_its_placeholder() -> None:
    cells = {1: "%time x = 1\nfor x in data:\n    step()"}
    before = read_notebook(notebook(cells[1])).source
    assert fixed_cells(cells, before, before.replace("    step()", "    step()\n    clear()")) == {
        1: "%time x = 1\nfor x in data:\n    step()\n    clear()"}
    with pytest.raises(NotMapped, match="would change a line of IPython syntax"):
        fixed_cells(cells, before, before.replace(NEUTRALISED + "\n", ""))


def test_an_edit_between_cells_is_not_mapped() -> None:
    cells = {1: "a = 1", 3: "b = 2"}
    before = read_notebook(notebook(*cells.values())).source
    assert before == "a = 1\n\nb = 2\n\n"
    with pytest.raises(NotMapped, match="span two cells"):
        fixed_cells(cells, before, "a = 1\nb = 2\n\n")
