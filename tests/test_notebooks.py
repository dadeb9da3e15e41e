"""Jupyter notebooks: fixtures with inline expectations, IPython syntax, cells mapped back, bad files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from test_fixtures import expectations
from test_formats import schema_path

from zerograd_lint import check_source
from zerograd_lint.cli import main
from zerograd_lint.notebook import Index, NotANotebook, read_notebook
from zerograd_lint.notebook.magics import NEUTRALISED, neutralise
from zerograd_lint.runner import check_files

NOTEBOOKS = Path(__file__).parent / "fixtures" / "notebooks"
FIXED = ".fixed.ipynb"  # what `--fix` makes of the notebook beside it (`tests/test_notebook_fix.py`)
CASES = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.endswith(FIXED))


def code_cells(path: Path) -> list[tuple[int, str]]:
    """(cell number, source) of each code cell; cells count from 1 among all cells."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(n, "".join(c["source"])) for n, c in enumerate(cells, start=1) if c["cell_type"] == "code"]


def notebook_expectations(path: Path) -> tuple[set[tuple[int, int, str]], dict[tuple[int, int, str], int]]:
    expected, columns = set(), {}
    for cell, source in code_cells(path):
        found, found_columns = expectations(source)
        expected |= {(cell, line, code) for line, code in found}
        columns |= {(cell, line, code): column for (line, code), column in found_columns.items()}
    return expected, columns


def notebook(*cells: tuple[str, str], language: str = "python") -> str:
    return json.dumps({
        "cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
                   **({"outputs": [], "execution_count": None} if kind == "code" else {})} for kind, text in cells],
        "metadata": {"language_info": {"name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    })


STALE_CELLS = (
    ("code", "import torch\nmodel = torch.nn.Linear(3, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"),
    ("markdown", "Training:"),
    ("code", "for x, y in data:\n    model(x).sum().backward()\n    optimizer.step()\n"),
)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_notebook_fixture(path: Path) -> None:
    expected, columns = notebook_expectations(path)
    report = check_files([str(path)])
    assert not report.errors
    got = {(f.cell, f.line, f.code) for f in report.findings}
    shown = "\n".join(f"cell {f.cell}:{f.line}:{f.column}: {f.code} {f.message}" for f in report.findings)
    assert got == expected, shown
    for f in report.findings:
        if (f.cell, f.line, f.code) in columns:
            assert f.column == columns[(f.cell, f.line, f.code)]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*" + FIXED)), ids=lambda p: p.name)
def test_a_fixed_snapshot_is_quiet_and_has_its_notebook_beside_it(path: Path) -> None:
    assert (path.parent / path.name.replace(FIXED, ".ipynb")).is_file()
    report = check_files([str(path)])
    assert (report.findings, report.errors) == ([], [])


def test_there_are_notebook_fixtures_for_each_case() -> None:
    names = {p.stem for p in CASES}
    assert {"quiet", "magics", "cross_cell_optimizer", "suppression"} <= names
    codes = {code for path in CASES for _, _, code in notebook_expectations(path)[0]}
    assert codes == {"ZG001", "ZG002", "ZG003", "ZG100"}
    assert not notebook_expectations(NOTEBOOKS / "quiet.ipynb")[0]
    assert len(CASES) >= 6


def test_an_optimizer_built_in_one_cell_is_understood_in_the_next() -> None:
    cells = dict(code_cells(NOTEBOOKS / "cross_cell_optimizer.ipynb"))
    loop_alone = cells[5]
    assert "learner.step()" in loop_alone and "torch.optim" not in loop_alone
    assert check_source(loop_alone, "loop.py") == []  # `learner` does not read as an optimizer by itself
    [finding] = check_files([str(NOTEBOOKS / "cross_cell_optimizer.ipynb")]).findings
    assert (finding.cell, finding.line, finding.code) == (5, 1, "ZG001")


def test_messages_name_cells_and_lines_of_the_calls() -> None:
    [finding] = check_files([str(NOTEBOOKS / "cleared_before_step.ipynb")]).findings
    assert finding.message == (
        "optimizer.zero_grad() (cell 3, line 5) clears the gradients of loss.backward() (cell 3, line 4) before "
        "optimizer.step() (cell 3, line 6) can apply them: clear before the backward or after the step"
    )


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["%matplotlib inline", "import torch"], [NEUTRALISED, "import torch"]),
        (["!pip install torch \\", "    torchvision", "x = 1"], [NEUTRALISED, NEUTRALISED, "x = 1"]),
        (["files = !ls", "a, b = %timeit -o f()", "a != b"], [NEUTRALISED, NEUTRALISED, "a != b"]),
        (["model.fit?", "?torch.optim", "model.fit??", "print('why?')  # why?"],
         [NEUTRALISED, NEUTRALISED, NEUTRALISED, "print('why?')  # why?"]),
        (["for x in data:", "    %time step(x)"], ["for x in data:", "    " + NEUTRALISED]),
        (["%%time", "for x in data:", "    step(x)"], [NEUTRALISED, "for x in data:", "    step(x)"]),
        (["", "%%bash", "echo hi", "", "  ls"], ["", NEUTRALISED, NEUTRALISED, "", NEUTRALISED]),
        (["%%writefile train.py", "import torch"], [NEUTRALISED, NEUTRALISED]),
        (["!echo '# noqa: ZG001'"], [NEUTRALISED]),
    ],
)
def test_ipython_syntax_is_neutralised_line_for_line(lines: list[str], expected: list[str]) -> None:
    assert neutralise(lines) == expected


@pytest.mark.parametrize(
    "lines",
    [
        ["ready = (i", "         % steps == 0)"],  # the modulo operator, continuing an expression
        ["if a \\", "        != b:", "    pass"],
        ['doc = """', "!important", "%d items", "really?", '"""'],
        ["s = 'a' \\", "    '!b'"],
        ["x = {", "    'k': 1,", "}", "# %matplotlib inline"],
    ],
)
def test_python_that_looks_like_ipython_is_left_alone(lines: list[str]) -> None:
    assert neutralise(lines) == lines


def test_rows_map_back_to_cells() -> None:
    text = notebook(("markdown", "# title"), ("code", "a = 1\nb = 2\n"), ("raw", "x"), ("code", "c = 3"))
    read = read_notebook(text)
    assert read.source == "a = 1\nb = 2\n\nc = 3\n\n"
    assert read.index == Index(starts=(1, 4), cells=(2, 4))
    assert [read.index.locate(row) for row in (1, 2, 4)] == [(2, 1), (2, 2), (4, 1)]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not a notebook: invalid JSON: "),
        ('{"cells": {}}', "not a notebook: no list of cells (nbformat 4 is needed)"),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "not a notebook: cell 1 has no source text"),
        ('{"cells": ["x"]}', "not a notebook: cell 1 is not an object"),
    ],
)
def test_what_is_not_a_notebook_says_why(content: str, reason: str) -> None:
    with pytest.raises(NotANotebook, match="^" + reason.replace("(", r"\(").replace(")", r"\)")):
        read_notebook(content)


def test_a_notebook_of_another_language_has_nothing_to_check() -> None:
    text = notebook(*STALE_CELLS, language="R")
    assert read_notebook(text).source == ""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(main, ["--isolated", *args], catch_exceptions=False)


def test_an_invalid_notebook_gets_one_line_and_the_run_goes_on(folder: Path) -> None:
    (folder / "broken.ipynb").write_text("{not json")
    (folder / "train.ipynb").write_text(notebook(*STALE_CELLS))
    result = run(".")
    assert result.exit_code == 2
    assert "\ntrain.ipynb:cell 3:1:1: ZG001 optimizer.step() (cell 3, line 3) applies" in result.stdout
    assert result.stdout.startswith("broken.ipynb:1:1: not-checked: not a notebook: invalid JSON: ")
    errors = [line for line in result.stderr.splitlines() if line.startswith("zerograd-lint: error:")]
    assert errors == [(
        "zerograd-lint: error: broken.ipynb: not a notebook: invalid JSON: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )]


def test_a_syntax_error_is_placed_in_its_cell(folder: Path) -> None:
    cells = (STALE_CELLS[0], ("code", "loss.backward()\noptimizer.step()\ndef f(:\n"))
    (folder / "typo.ipynb").write_text(notebook(*cells))
    result = run("typo.ipynb")
    assert result.exit_code == 2
    assert "zerograd-lint: error: typo.ipynb: syntax error at cell 2:3:" in result.stderr


def test_folders_are_searched_for_notebooks_but_not_checkpoints(folder: Path) -> None:
    (folder / "nb").mkdir()
    (folder / "nb" / "train.ipynb").write_text(notebook(*STALE_CELLS))
    (folder / "nb" / ".ipynb_checkpoints").mkdir()
    (folder / "nb" / ".ipynb_checkpoints" / "train-checkpoint.ipynb").write_text(notebook(*STALE_CELLS))
    result = run(".")
    assert result.exit_code == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["nb/train.ipynb"]
    assert result.stderr == "Found 1 finding in 1 file (1 file checked).\n[*] 1 fixable with the `--fix` option.\n"


def test_a_check_never_writes_a_notebook(folder: Path) -> None:
    shutil.copy(NOTEBOOKS / "magics.ipynb", folder / "magics.ipynb")
    before = (folder / "magics.ipynb").read_bytes()
    run("magics.ipynb")
    assert (folder / "magics.ipynb").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == [".zerograd_lint_cache", "magics.ipynb"]  # and the cache


@pytest.fixture
def notebook_project(folder: Path) -> Path:
    for name in ("stale_gradients.ipynb", "suppression.ipynb", "quiet.ipynb"):
        shutil.copy(NOTEBOOKS / name, folder / name)
    return folder


@pytest.mark.parametrize(
    ("output_format", "golden_name"),
    [("concise", "notebooks/concise.txt"), ("json", "notebooks/json.json"), ("github", "notebooks/github.txt"),
     ("sarif", "notebooks/sarif.json"), ("full", "notebooks/full.txt"), ("junit", "notebooks/junit.xml"),
     ("gitlab", "notebooks/gitlab.json"), ("pylint", "notebooks/pylint.txt")],
)
def test_golden_notebook_output(notebook_project: Path, golden: Callable[[str, str], None], output_format: str,
                                golden_name: str) -> None:
    from test_formats import versionless

    result = run("--output-format", output_format, ".")
    assert result.exit_code == 1, result.stderr
    golden(golden_name, versionless(result.stdout))


def test_json_has_the_cell_and_the_line_in_it(notebook_project: Path) -> None:
    result = run("--output-format", "json", "stale_gradients.ipynb")
    [finding] = json.loads(result.stdout)
    assert (finding["cell"], finding["line"], finding["column"], finding["end_line"]) == (3, 1, 1, 1)


def test_json_of_a_python_file_has_no_cell(folder: Path) -> None:
    (folder / "train.py").write_text("".join(text for kind, text in STALE_CELLS if kind == "code"))
    [finding] = json.loads(run("--output-format", "json", "train.py").stdout)
    assert "cell" not in finding


def test_sarif_of_a_notebook_is_valid_and_says_the_cell(notebook_project: Path) -> None:
    schema = json.loads(schema_path().read_text(encoding="utf-8"))
    log = json.loads(run("--output-format", "sarif", "stale_gradients.ipynb").stdout)
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    [result] = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "startColumn": 1}
    assert result["message"]["text"].startswith("cell 3, line 1, column 1: optimizer.step() (cell 3, line 4)")
    assert result["properties"] == {"cell": 3, "cellLine": 1, "cellColumn": 1}


def test_github_annotates_line_1_and_says_the_cell(notebook_project: Path) -> None:
    [line] = run("--output-format", "github", "stale_gradients.ipynb").stdout.splitlines()
    assert line.startswith("::error title=zerograd-lint (ZG001),file=stale_gradients.ipynb,line=1,col=1::"
                           "stale_gradients.ipynb:cell 3:1:1: ZG001 ")


def test_per_file_ignores_apply_to_notebooks(notebook_project: Path) -> None:
    result = run("--per-file-ignores", "*.ipynb:ZG001", "stale_gradients.ipynb")
    assert (result.exit_code, result.stdout) == (0, "")
