"""A run's texts: decoded when first read, the undecodable ones left out, the bytes kept for the
markers test; and that test on bytes answers as it does on the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from zerograd_lint import prefilter, rules
from zerograd_lint.schedule import run
from zerograd_lint.findings import SourceError
from zerograd_lint.texts import Texts

FIXTURES = Path(__file__).parent / "fixtures"


def test_texts_are_decoded_when_first_read_and_the_undecodable_leave() -> None:
    sources = {"a.py": b"x = 1\n", "b.py": "y = 2\n", "bin.py": b"\x00\x01", "latin.py": b"# coding: latin-1\ns = '\xe9'\n"}
    texts = Texts(sources)
    assert len(texts) == 4 and "bin.py" in texts  # nothing decoded yet: a helper forked now knows no better
    assert texts["latin.py"] == "# coding: latin-1\ns = '\u00e9'\n"
    with pytest.raises(SourceError):
        texts["bin.py"]
    errors = texts.decode_all()
    assert list(errors) == ["bin.py"] and "binary" in errors["bin.py"].reason
    assert list(texts) == ["a.py", "b.py", "latin.py"] and "bin.py" not in texts
    with pytest.raises(KeyError):
        texts["bin.py"]
    assert texts.ascii_bytes("a.py") == b"x = 1\n" and texts.ascii_bytes("b.py") is None
    assert texts.ascii_bytes("latin.py") is None  # it declares an encoding


def test_the_markers_test_on_bytes_answers_as_on_the_text() -> None:
    """Every fixture, and cases of every letter case: a file whose bytes say no has no ZG100."""
    cases = {str(p): p.read_bytes() for p in FIXTURES.rglob("*.py")}
    cases |= {f"case{i}.py": text.encode() for i, text in enumerate([
        "x = 1  # NOQA: zg001\n", "x = 1  # noqa: E501\n", "# ZeroGrad: Accumulate\nx = 1\n", "x = 1  # noqa\n",
        "s = 'zg001 noqa'\n", "x = 1  # NoQa:ZG003\n",
    ])}
    for path, data in cases.items():
        text = data.decode("utf-8")
        assert rules.may_concern_us(data) == rules.may_concern_us(text.encode("utf-8")), path
        if not rules.may_concern_us(data):
            assert rules.unused_markers(path, text) == [], path
    assert rules.may_concern_us(b"x = 1  # NOQA: zg001\n") and not rules.may_concern_us(b"x = 1  # noqa: E501\n")


def test_markers_are_looked_for_in_the_files_a_helper_was_given_only() -> None:
    texts = Texts({"a.py": b"x = 1  # noqa: ZG001\n", "b.py": b"y = 2  # noqa: ZG001\n", "c.py": b"z = 3\n"})
    texts.decode_all()
    found = run._unused_markers_of_part(texts, 0, 1, skip={"b.py"})
    assert sorted(found) == ["a.py"] and [raw.code for raw in found["a.py"]] == ["ZG100"]


def test_a_file_that_declares_its_encoding_is_tested_as_text() -> None:
    """In UTF-7, `+AFoARw-` is `ZG`: the bytes name no code, the text does."""
    texts = Texts({"seven.py": b"# -*- coding: utf-7 -*-\nx = 1  # noqa: +AFoARw-001\n"})
    texts.decode_all()
    found = run._unused_markers_of_part(texts, 0, 1, skip=set())
    assert [raw.code for raw in found["seven.py"]] == ["ZG100"]


def test_another_framework_is_told_by_its_import_lines_as_by_the_whole_text() -> None:
    cases = {
        "import tensorflow as tf\n": True,
        "from jax import numpy\nimport torch\n": False,
        "from tensorflow \\\n    import keras\n": True,
        "x = 'import jax'\n": False,
        '"""\nfrom jax we took the idea\n"""\n': True,  # as a pattern over every line read it
        "import os\n": False,
    }
    for text, expected in cases.items():
        assert prefilter._other_framework(text) is expected, text


def test_an_error_comes_back_from_a_helper_as_it_was_made() -> None:
    import pickle

    error = pickle.loads(pickle.dumps(SourceError("train.py", "too deeply nested")))
    assert (error.path, error.reason, str(error)) == ("train.py", "too deeply nested", "train.py: too deeply nested")
