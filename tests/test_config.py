"""[tool.zerograd-lint] in pyproject.toml: discovery, precedence, validation, vocabulary."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import DISCARDED
from snippets import STALE_BRIEF as STALE

from zerograd_lint.cli import main
from zerograd_lint.config import Config, load_config

# `scrub(model)` is a function given the model: no clear, so nothing clears (ZG001), unless the
# project says that scrub clears (then the clear sits before the step, ZG002). A name that says it
# clears (`reset_grads`) needs no configuration.
OWN_CLEAR = """\
import torch
from mylib import scrub
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in data:
    model(x).sum().backward()
    scrub(model)
    optimizer.step()
"""
# `sync_state(optimizer)` cannot be seen into and is given the optimizer: it may clear (quiet),
# unless the project says it is harmless (then nothing clears).
OWN_HARMLESS = """\
import torch
from mylib import sync_state
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in data:
    model(x).sum().backward()
    optimizer.step()
    sync_state(optimizer)
"""
# Quiet unless the project says that `learner` is an optimizer (then it steps without clearing).
OWN_OPTIMIZER = """\
import torch
model = torch.nn.Linear(3, 1)
learner = make_learner(model)
for x, y in data:
    model(x).sum().backward()
    learner.step()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """project/{pyproject.toml?, train.py (ZG001), pkg/discarded.py (ZG003)}, as the current directory."""
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text(STALE)
    (root / "pkg" / "discarded.py").write_text(DISCARDED)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.chdir(root)
    return root


def configure(root: Path, text: str) -> None:
    (root / "pyproject.toml").write_text(f"[project]\nname = 'demo'\n\n[tool.zerograd-lint]\n{text}\n")


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def reported(*args: str) -> set[tuple[str, str]]:
    """(path, code) of every finding."""
    return {(line.split(":")[0], line.split()[1]) for line in run(*args).stdout.splitlines()}


def test_found_by_walking_up_from_the_paths(project: Path, tmp_path: Path) -> None:
    configure(project, 'select = ["ZG003"]')
    assert reported() == {("pkg/discarded.py", "ZG003")}
    os.chdir(project / "pkg")
    assert reported(".") == {("discarded.py", "ZG003")}
    os.chdir(tmp_path)
    assert reported("project/train.py", "project/pkg") == {("project/pkg/discarded.py", "ZG003")}


def test_a_pyproject_without_the_table_is_passed_over(project: Path) -> None:
    configure(project, 'ignore = ["ZG001"]')
    (project / "pkg" / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    os.chdir(project / "pkg")
    assert run("-v", ".").stderr.splitlines()[0] == f"zerograd-lint: configuration: {project / 'pyproject.toml'}"


def test_command_line_beats_configuration(project: Path) -> None:
    configure(project, 'select = ["ZG003"]\nextend-exclude = ["pkg/"]')
    assert reported() == set()
    assert reported("--select", "ZG001") == {("train.py", "ZG001")}
    assert reported("--extend-exclude", "train.py") == {("pkg/discarded.py", "ZG003")}
    assert reported("--extend-exclude", "train.py", "--select", "ZG") == {("pkg/discarded.py", "ZG003")}


def test_output_format_from_the_configuration(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line, then ZEROGRAD_LINT_OUTPUT_FORMAT, then pyproject.toml, then the default."""
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    assert run("train.py").stdout.startswith("train.py:4:1: ZG001 ")
    configure(project, 'output-format = "json"')
    [finding] = json.loads(run("train.py").stdout)
    assert (finding["path"], finding["code"]) == ("train.py", "ZG001")
    monkeypatch.setenv("ZEROGRAD_LINT_OUTPUT_FORMAT", "github")
    assert run("train.py").stdout.startswith("::error title=zerograd-lint (ZG001),file=train.py,")
    assert run("--output-format", "concise", "train.py").stdout.startswith("train.py:4:1: ZG001 ")


def test_extend_select_adds_to_select(project: Path) -> None:
    configure(project, 'select = ["ZG003"]\nextend-select = ["ZG001"]')
    assert reported() == {("train.py", "ZG001"), ("pkg/discarded.py", "ZG003")}


def test_an_empty_select_selects_no_rule(project: Path) -> None:
    """As in ruff: `select = []` is a selection of none (extend-select still adds to it), not the
    default, and a pattern's empty list of ignores ignores nothing; an empty code in a list is an
    error (test_bad_configuration_exits_2_naming_the_key)."""
    configure(project, "select = []")
    result = run()
    assert (result.exit_code, result.stdout) == (0, "")
    assert "ZG001" not in load_config(project / "pyproject.toml").settings().selection
    assert "ZG001" in Config().settings().selection
    assert reported("--select", "ZG001") == {("train.py", "ZG001")}
    configure(project, 'select = []\nextend-select = ["ZG003"]')
    assert reported() == {("pkg/discarded.py", "ZG003")}
    configure(project, '[tool.zerograd-lint.per-file-ignores]\n"pkg/*" = []')  # ignores nothing there
    assert reported() == {("train.py", "ZG001"), ("pkg/discarded.py", "ZG003")}
    assert load_config(project / "pyproject.toml").settings().reports(str(project / "pkg" / "discarded.py"), "ZG003")


def test_per_file_ignores_are_relative_to_the_project_root(project: Path) -> None:
    configure(project, '[tool.zerograd-lint.per-file-ignores]\n"pkg/*" = ["ZG0"]')
    assert reported() == {("train.py", "ZG001")}
    os.chdir(project / "pkg")
    assert reported(".", "../train.py") == {("../train.py", "ZG001")}
    assert reported("--per-file-ignores", "train.py:ZG001", ".", "../train.py") == {("discarded.py", "ZG003")}
    assert reported("--per-file-ignores", "discarded.py:ZG003", ".", "../train.py") == {("../train.py", "ZG001")}


def test_exclude_from_the_configuration_holds_for_pre_commit(project: Path) -> None:
    configure(project, 'extend-exclude = ["pkg/"]\nforce-exclude = true')
    result = run("pkg/discarded.py")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "No Python files found under the given paths: nothing was checked.\n"
    assert reported("--no-force-exclude", "pkg/discarded.py") == {("pkg/discarded.py", "ZG003")}


def test_respect_gitignore_from_the_configuration(project: Path) -> None:
    (project / ".gitignore").write_text("pkg/\n")
    assert reported() == {("train.py", "ZG001")}
    configure(project, "respect-gitignore = false")
    assert reported() == {("train.py", "ZG001"), ("pkg/discarded.py", "ZG003")}


@pytest.mark.parametrize(
    ("source", "vocabulary", "before", "expected"),
    [
        (OWN_CLEAR, 'clears = ["scrub"]', {("own.py", "ZG001")}, "ZG002"),
        (OWN_OPTIMIZER, 'optimizers = ["learner"]', set(), "ZG001"),
        (OWN_HARMLESS, 'harmless = ["sync_state"]', set(), "ZG001"),
    ],
)
def test_the_projects_own_vocabulary(project: Path, source: str, vocabulary: str, before: set, expected: str) -> None:
    (project / "own.py").write_text(source)
    assert reported("own.py") == before
    configure(project, f"[tool.zerograd-lint.vocabulary]\n{vocabulary}")
    assert reported("own.py") == {("own.py", expected)}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('slect = ["ZG001"]', "[tool.zerograd-lint] slect: unknown key (known keys: select, extend-select, ignore, "),
        ('select = "ZG001"', "[tool.zerograd-lint] select: expected a list of strings, got a string ('ZG001')"),
        ('ignore = ["E501"]', "[tool.zerograd-lint] ignore: unknown rule code or prefix: E501"),
        ('select = ["ZG001", " "]', "[tool.zerograd-lint] select: empty rule code in ['ZG001', ' ']"),
        ('per-file-ignores = { "tests/*" = [""] }', '[tool.zerograd-lint] per-file-ignores."tests/*": empty rule code in [\'\']'),
        ('extend-exclude = "build/"', "[tool.zerograd-lint] extend-exclude: expected a list of strings"),
        ('force-exclude = "yes"', "[tool.zerograd-lint] force-exclude: expected true or false, got a string ('yes')"),
        ('per-file-ignores = ["tests/*:ZG001"]', "[tool.zerograd-lint] per-file-ignores: expected a table of pattern = [codes]"),
        ('per-file-ignores = { "tests/*" = ["W1"] }', '[tool.zerograd-lint] per-file-ignores."tests/*": unknown rule code or prefix: W1'),
        ("vocabulary = 3", "[tool.zerograd-lint] vocabulary: expected a table, got an integer (3)"),
        ('vocabulary = { clear = ["reset"] }', "[tool.zerograd-lint] vocabulary.clear: unknown key (known keys: optimizers, clears, steps, backwards, harmless)"),
        ('vocabulary = { clears = ["utils.reset_grads"] }', "vocabulary.clears: 'utils.reset_grads' is not a bare name: the analysis matches the last part of a call or receiver, so write 'reset_grads'"),
        ('vocabulary = { steps = ["apply-update"] }', "vocabulary.steps: 'apply-update' is not a Python name"),
        ('output-format = "xml"', "[tool.zerograd-lint] output-format: unknown output format 'xml' (formats: concise, "),
        ('output-format = ["json"]', "[tool.zerograd-lint] output-format: expected a string, got a list (['json'])"),
        ("select = [", "pyproject.toml: not valid TOML: "),
    ],
)
def test_bad_configuration_exits_2_naming_the_key(project: Path, table: str, message: str) -> None:
    configure(project, table)
    result = run()
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("zerograd-lint: error: pyproject.toml: ")
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_table_that_is_not_a_table(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool]\nzerograd-lint = "strict"\n')
    result = run()
    assert result.exit_code == 2
    assert result.stderr == "zerograd-lint: error: pyproject.toml: [tool.zerograd-lint] must be a table, got a string ('strict')\n"


def test_explicit_config_file(project: Path) -> None:
    configure(project, 'select = ["ZG003"]')
    (project / "ci.toml").write_text('[tool.zerograd-lint]\nselect = ["ZG001"]\n')
    assert reported("--config", "ci.toml") == {("train.py", "ZG001")}
    (project / "empty.toml").write_text("[tool.black]\n")
    result = run("--config", "empty.toml")
    assert result.exit_code == 2
    assert result.stderr == "zerograd-lint: error: empty.toml: has no [tool.zerograd-lint] table\n"
    assert run("--config", "nope.toml").exit_code == 2


def test_isolated_reads_no_configuration(project: Path) -> None:
    configure(project, 'select = ["ZG003"]\nunknown-key = 1')
    assert reported("--isolated") == {("train.py", "ZG001"), ("pkg/discarded.py", "ZG003")}
    (project / "ci.toml").write_text('[tool.zerograd-lint]\nselect = ["ZG001"]\n')
    for args in (("--isolated", "--config", "ci.toml"), ("--config", "ci.toml", "--isolated")):
        result = run(*args)
        assert result.exit_code == 2
        assert "--config and --isolated cannot be used together" in result.stderr


def test_verbose_names_the_configuration_and_counts_files(project: Path) -> None:
    configure(project, "")
    result = run("-v")
    assert result.stderr.splitlines()[:3] == [
        f"zerograd-lint: configuration: {project / 'pyproject.toml'}",
        f"zerograd-lint: project root: {project}",
        "zerograd-lint: 2 files to check",
    ]
    assert run("-v", "--isolated").stderr.splitlines()[0] == "zerograd-lint: configuration: none (--isolated)"


def test_help_works_whatever_the_configuration(project: Path) -> None:
    configure(project, "slect = 1")
    result = run("--help")
    assert result.exit_code == 0 and "--output-format" in result.stdout


# Issue 19, item 16: the extend-* forms of ignore and per-file-ignores, in pyproject and on the command line.


def test_extend_ignore_and_extend_per_file_ignores_add_to_the_base_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from snippets import DISCARDED, STALE

    from zerograd_lint.cli import main

    (tmp_path / "pyproject.toml").write_text(
        '[tool.zerograd-lint]\nignore = ["ZG002"]\nextend-ignore = ["ZG003"]\n'
        '[tool.zerograd-lint.per-file-ignores]\n"a/*" = ["ZG001"]\n'
        '[tool.zerograd-lint.extend-per-file-ignores]\n"b/*" = ["ZG001"]\n'
    )
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "stale.py").write_text(STALE)
    (tmp_path / "c" / "discarded.py").write_text(DISCARDED)
    monkeypatch.chdir(tmp_path)
    found = CliRunner().invoke(main, ["--no-cache", "."]).stdout
    assert [line.split(" ")[0:2] for line in found.splitlines()] == [["c/stale.py:4:1:", "ZG001"]]
    # on the command line it replaces the configured extend-ignore, as every option replaces its key
    more = CliRunner().invoke(main, ["--no-cache", "--extend-ignore", "ZG001,ZG003", "."])
    assert (more.exit_code, more.stdout) == (0, "")
    extra = CliRunner().invoke(main, ["--no-cache", "--extend-per-file-ignores", "b/*:ZG001",
                                     "--extend-per-file-ignores", "c/*:ZG001", "."])
    assert (extra.exit_code, extra.stdout) == (0, "")
