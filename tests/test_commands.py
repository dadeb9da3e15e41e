"""The commands: `zerograd-lint [PATHS]` is `zerograd-lint check [PATHS]`; `zerograd-lint server`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import STALE_BRIEF as STALE

from zerograd_lint import __version__
from zerograd_lint.cli import main

ROOT = Path(__file__).parent.parent

# Put on PYTHONPATH, Python imports this at start-up: from then on pygls cannot be imported.
BLOCK_PYGLS = """\
import sys


class NoPygls:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pygls", "lsprotocol"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None


sys.meta_path.insert(0, NoPygls())
"""


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "train.py").write_text(STALE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_shows_the_check_options_and_the_commands(flag: str) -> None:
    result = run(flag)
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: main [OPTIONS] [PATHS]...\n")
    for option in ("--select", "--stdin-filename", "--output-format", "--explain"):
        assert option in result.stdout
    commands = result.stdout.split("Commands:\n")[1]
    assert [line.split()[0] for line in commands.splitlines() if line.startswith("  ") and line[2] != " "] == [
        "check", "rule", "server"]


def test_check_is_the_default_command(tree: Path) -> None:
    implicit, explicit = run("--isolated", "server/train.py"), run("check", "--isolated", "server/train.py")
    assert (implicit.exit_code, implicit.stdout) == (explicit.exit_code, explicit.stdout)
    assert explicit.exit_code == 1 and explicit.stdout.startswith("server/train.py:4:1: ZG001 ")
    assert run("--isolated", "./server").stdout == explicit.stdout  # a folder named like a command


def test_version_and_usage_errors_still_work() -> None:
    assert run("--version").stdout == f"zerograd-lint {__version__}\n"
    wrong = run("--select", "E501")
    assert wrong.exit_code == 2 and "unknown rule code or prefix: E501" in wrong.stderr


def test_server_help() -> None:
    result = run("server", "--help")
    assert result.exit_code == 0
    assert "--debounce SECONDS" in result.stdout and "Language Server Protocol" in result.stdout


def test_server_without_pygls_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCK_PYGLS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "zerograd_lint", "server"], cwd=tmp_path, env=env, input="",
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == (
        "zerograd-lint: error: the language server is an extra (lsprotocol is not installed): "
        "pip install 'zerograd-lint[lsp]'\n"
    )


def test_start_up_imports_neither_the_server_nor_the_analysis() -> None:
    importtime = subprocess.run([sys.executable, "-X", "importtime", "-c", "import zerograd_lint.cli"], cwd=ROOT,
                                capture_output=True, text=True, check=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in importtime.stderr.splitlines()}
    assert "zerograd_lint.cli" in imported
    assert not {name for name in imported if name.split(".")[0] in ("pygls", "lsprotocol", "libcst", "torch")}
