"""Issue 22, item 12: a file that cannot be checked is told why, truly. A NUL in a notebook's cell
and a lone surrogate (a JSON escape `\\ud800`) are named where they are, as Python refuses them
before parsing; a UTF-16 or UTF-32 file is named so, not "binary"; a binary file still is."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE

from zerograd_lint import check_source
from zerograd_lint.cli import main
from zerograd_lint.findings import SourceError

NOT_UTF_8 = "is not supported: Python source must be UTF-8 or declare its encoding"


def notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({
        "cells": [{"cell_type": kind, "metadata": {}, "source": text} for kind, text in cells],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    })


def errors_of(paths: list[Path]) -> tuple[list[str], str]:
    result = CliRunner().invoke(main, ["--no-cache", "--isolated", "--no-color", *map(str, paths)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("zerograd-lint: error:")], result.stdout


@pytest.mark.parametrize(("cell", "reason"), [
    ("b = '\x00'\n", "a NUL character at cell 2:8:6: source code cannot contain null bytes"),
    ("b = '\ud800'\n", "a lone surrogate U+D800 at cell 2:8:6: surrogates are not allowed in source code"),
], ids=["nul", "lone-surrogate"])
def test_a_refused_character_in_a_cell_is_named_where_it_is(tmp_path: Path, cell: str, reason: str) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(notebook(("markdown", "# training"), ("code", STALE + cell)), encoding="utf-8")
    (tmp_path / "stale.py").write_text(STALE, encoding="utf-8")
    errors, stdout = errors_of([path, tmp_path / "stale.py"])
    assert errors == [f"zerograd-lint: error: {path}: {reason}"]
    assert "stale.py:4:1: ZG001" in stdout


@pytest.mark.parametrize(("text", "reason"), [
    (STALE + "b = '\x00'\n", "a NUL character at 8:6: source code cannot contain null bytes"),
    (STALE.replace("\n", "\r\n") + "b = '\udfff'\n", "a lone surrogate U+DFFF at 8:6: surrogates are not allowed in source code"),
], ids=["nul", "lone-surrogate"])
def test_a_refused_character_in_a_text_is_named_where_it_is(text: str, reason: str) -> None:
    with pytest.raises(SourceError) as refused:
        check_source(text, "buffer.py")
    assert refused.value.reason == reason


@pytest.mark.parametrize(("encoding", "bom", "wide"), [
    ("utf-16-le", codecs.BOM_UTF16_LE, "UTF-16"),
    ("utf-16-be", codecs.BOM_UTF16_BE, "UTF-16"),
    ("utf-16-le", b"", "UTF-16"),
    ("utf-16-be", b"", "UTF-16"),
    ("utf-32-le", codecs.BOM_UTF32_LE, "UTF-32"),
    ("utf-32-be", b"", "UTF-32"),
])
def test_a_wide_encoding_is_named(tmp_path: Path, encoding: str, bom: bytes, wide: str) -> None:
    path = tmp_path / "wide.py"
    path.write_bytes(bom + STALE.encode(encoding))
    errors, _ = errors_of([path])
    assert errors == [f"zerograd-lint: error: {path}: {wide} {NOT_UTF_8}"]


def test_a_binary_file_is_still_binary(tmp_path: Path) -> None:
    path = tmp_path / "blob.py"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + STALE.encode())
    errors, _ = errors_of([path])
    assert errors == [f"zerograd-lint: error: {path}: binary file (contains NUL bytes)"]


def test_out_of_memory_while_parsing_is_not_called_deep_nesting(monkeypatch: pytest.MonkeyPatch) -> None:
    from zerograd_lint import survey

    def exhausted(text: str) -> None:
        raise MemoryError

    monkeypatch.setattr(survey.ast, "parse", exhausted)
    with pytest.raises(survey.Unparsable, match=r"^too large to analyse \(out of memory\)$"):
        survey.survey_module("loss.backward()\nopt.step()\n")
