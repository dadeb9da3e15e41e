"""Issue 22, item 6: a notebook whose JSON is nested deeper than the parser recurses, or holds an
integer longer than Python converts, is one line `path: not a notebook: ...`; the other files of
the run are still checked, and the run exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE

from zerograd_lint.cli import main
from zerograd_lint.notebook import NotANotebook, read_notebook

DEEP = '{"cells": [], "metadata": {"deep": ' + "[" * 100_000 + "]" * 100_000 + "}}"
LONG_INTEGER = '{"cells": [], "metadata": {"n": 1' + "0" * 5_000 + "}}"


@pytest.mark.parametrize(("text", "reason"), [
    (DEEP, "not a notebook: JSON nested too deeply to read"),
    (LONG_INTEGER, "not a notebook: an integer of more than 4,300 digits"),
], ids=["deep", "long-integer"])
def test_read_notebook_refuses_in_one_line(text: str, reason: str) -> None:
    for data in (text, text.encode()):
        with pytest.raises(NotANotebook) as refused:
            read_notebook(data)
        assert str(refused.value) == reason


def test_a_malformed_notebook_costs_that_notebook_only(tmp_path: Path) -> None:
    (tmp_path / "deep.ipynb").write_text(DEEP, encoding="utf-8")
    (tmp_path / "long.ipynb").write_text(LONG_INTEGER, encoding="utf-8")
    (tmp_path / "stale.py").write_text(STALE, encoding="utf-8")
    result = CliRunner().invoke(main, ["--no-cache", "--isolated", "--no-color", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "stale.py:4:1: ZG001" in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("zerograd-lint: error:")]
    assert sorted(errors) == [
        f"zerograd-lint: error: {tmp_path / 'deep.ipynb'}: not a notebook: JSON nested too deeply to read",
        f"zerograd-lint: error: {tmp_path / 'long.ipynb'}: not a notebook: an integer of more than 4,300 digits",
    ]
    assert "Traceback" not in result.stderr
    assert "(1 file checked, 2 could not be)" in result.stderr
