"""Issue 22, item 13: a path holding a line break does not split a finding, an error or a loop
over lines. Such a path is quoted as git quotes it (`"train\\nv2.py"`); other paths are printed as
they are; JSON, JSON Lines and SARIF escape by construction, GitHub annotations as the toolkit does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE

from zerograd_lint.cli import main
from zerograd_lint.report.escaping import escape_text, quote_path

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no line break in a Windows file name")

NAME = "train\nv2.py"
QUOTED = '"train\\nv2.py"'


@pytest.mark.parametrize(("path", "shown"), [
    ("train.py", "train.py"),
    ("runs\\v2\\train.py", "runs\\v2\\train.py"),  # Windows separators stay as they are
    ('say "hi".py', 'say "hi".py'),
    (NAME, QUOTED),
    ("a\r\nb\tc.py", '"a\\r\\nb\\tc.py"'),
    ('"quoted".py', '"\\"quoted\\".py"'),  # starts with a quote: quoted, so it reads back
    ("back\\slash\n.py", '"back\\\\slash\\n.py"'),
    ("esc\x1b[31m.py", '"esc\\x1b[31m.py"'),
    ("line\u2028sep.py", '"line\\u2028sep.py"'),
    ("not-utf-8-\udcff.py", '"not-utf-8-\\xff.py"'),
    ("é.py", "é.py"),
])
def test_quote_path(path: str, shown: str) -> None:
    assert quote_path(path) == shown
    assert len(shown.splitlines()) == 1


def test_escape_text_keeps_a_message_on_its_line() -> None:
    assert escape_text("opt.zero_grad() (a\nb.py line 3)") == "opt.zero_grad() (a\\nb.py line 3)"
    assert escape_text("plain") == "plain"


def _run(folder: Path, *options: str) -> tuple[int, list[str], list[str]]:
    result = CliRunner().invoke(main, ["--no-cache", "--isolated", "--no-color", *options, "."],
                                catch_exceptions=False)
    return result.exit_code, result.stdout.splitlines(), result.stderr.splitlines()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / NAME).write_text(STALE, encoding="utf-8")
    (tmp_path / "broken\n.py").write_text(STALE + "optimizer.step(\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_concise_and_error_lines(folder: Path) -> None:
    code, out, err = _run(folder)
    assert code == 2
    assert out == ["\"broken\\n.py\":8:15: invalid-syntax: '(' was never closed",  # a diagnostic too (issue 19)
                   f"{QUOTED}:4:1: ZG001 optimizer.step() (line 7) applies gradients an earlier step already "
                   "applied: nothing clears them in this loop"]
    errors = [line for line in err if line.startswith("zerograd-lint: error:")]
    assert errors == ["zerograd-lint: error: \"broken\\n.py\": syntax error at 8:15: '(' was never closed"]


def test_github_annotations(folder: Path) -> None:
    _, out, _ = _run(folder, "--output-format", "github")
    assert len(out) == 2
    assert out[1].startswith("::error title=zerograd-lint (ZG001),file=train%0Av2.py,line=4,")
    assert out[1].split("::", 2)[2].startswith(f"{QUOTED}:4:1: ZG001 ")


def test_pylint_lines(folder: Path) -> None:
    _, out, _ = _run(folder, "--output-format", "pylint")
    assert out[1] == f"{QUOTED}:4: [ZG001] optimizer.step() (line 7) applies gradients an earlier step already " \
                     "applied: nothing clears them in this loop"


def test_full_format_and_show_loops(folder: Path) -> None:
    _, out, _ = _run(folder, "--output-format", "full")
    assert f" --> {QUOTED}:4:1" in out
    _, out, _ = _run(folder, "--show-loops")
    assert out == [f"{QUOTED}:4:1: for  optimizer: ZG001"]


@pytest.mark.parametrize("output_format", ["json", "json-lines", "sarif", "gitlab", "junit"])
def test_json_formats_keep_the_path_as_it_is(folder: Path, output_format: str) -> None:
    _, out, _ = _run(folder, "--output-format", output_format)
    text = "\n".join(out)
    assert NAME not in text  # never a raw line break
    if output_format == "json":
        assert [finding["path"] for finding in json.loads(text)] == ["broken\n.py", NAME]
