"""The README's editor recipes run commands that work: each is read from the README, run on an
editor's buffer, and its output parsed the way that editor's plugin parses it."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE_BRIEF as BUFFER

from zerograd_lint.cli import main

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
# ALE's ale#handlers#unix#HandleAsError
ALE_PATTERN = re.compile(r"^(([a-zA-Z]:)?[^:]+):(\d+):?(\d+)?:? ?(.+)$")


def recipe(language: str, marker: str) -> str:
    """The README's code block in `language` that contains `marker`."""
    [block] = [b for b in re.findall(rf"^```{language}\n(.*?)^```$", README, re.MULTILINE | re.DOTALL) if marker in b]
    return block


def run(args: list[str], buffer: str):
    return CliRunner().invoke(main, args, input=buffer, catch_exceptions=False)


@pytest.fixture
def buffer_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The absolute path of a buffer whose file on disk is older than the buffer (here: absent)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    (tmp_path / "vendored").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.zerograd-lint]\nextend-exclude = ["vendored/"]\n')
    return str(tmp_path / "train.py")


def ale_command(path: str) -> list[str]:
    command = re.search(r"'command': '([^']+)'", recipe("vim", "ale#linter#Define")).group(1)
    return [path if word == "%s" else word for word in shlex.split(command)]


def nvim_lint_arguments(path: str) -> list[str]:
    block = recipe("lua", "lint.linters.zerograd_lint")
    table = re.search(r"args = \{(.*?)\},\n", block, re.DOTALL).group(1)
    return [text if text else path for text, _ in re.findall(r'"([^"]*)"|(function\(\).*?end)', table)]


def test_ale_recipe(buffer_path: str) -> None:
    command = ale_command(buffer_path)
    assert command[0] == "zerograd-lint"
    result = run(command[1:], BUFFER)
    assert (result.exit_code, result.stderr) == (1, "")
    [match] = [ALE_PATTERN.match(line) for line in result.stdout.splitlines()]
    assert (match.group(1), int(match.group(3)), int(match.group(4))) == (buffer_path, 4, 1)
    assert match.group(5).startswith("ZG001 optimizer.step() (line 6)")


def test_nvim_lint_recipe(buffer_path: str) -> None:
    arguments = nvim_lint_arguments(buffer_path)
    assert '"zerograd-lint"' in recipe("lua", "lint.linters.zerograd_lint") and "stdin = true" in README
    result = run(arguments, BUFFER)
    assert (result.exit_code, result.stderr) == (1, "")
    [finding] = json.loads(result.stdout)
    # What the recipe's parser reads, turned 0-based as vim.diagnostic wants it.
    start, end = (finding["line"] - 1, finding["column"] - 1), (finding["end_line"] - 1, finding["end_column"] - 1)
    assert (start, end) == ((3, 0), (3, 3))
    assert (finding["code"], finding["path"]) == ("ZG001", buffer_path)


@pytest.mark.parametrize("command", [ale_command, nvim_lint_arguments])
def test_recipes_leave_excluded_files_alone(buffer_path: str, command) -> None:
    arguments = command(str(Path(buffer_path).parent / "vendored" / "train.py"))
    result = run(arguments[1:] if arguments[0] == "zerograd-lint" else arguments, BUFFER)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "" if "json" not in arguments else "[]\n", "")


def test_vs_code_recipe_starts_the_server() -> None:
    assert '{ command: "zerograd-lint", args: ["server"] }' in recipe("js", "vscode-languageclient")
