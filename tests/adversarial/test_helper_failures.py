"""Issue 22, item 2 (and the dead helper of item 10): a failure is reported, never turned into other
findings.

The project is never checked file by file instead of as a whole: an internal error of the
project's analysis is one line naming it, exit 2, nothing fixed. A job that fails in a helper
raises what it raised; a helper that dies (LibCST's parser aborts the process when memory runs
out) is reported, its job never done again in the process that would abort too. Every exception
the package defines crosses from a helper intact. The issue's reproduction: the
`zg001_step_in_engine` project, correct training scripts and one file ending in `opt.step(`, with
helpers: the cross-file ZG001 every run, with --diff too. A folder with one unparsable notebook:
--fix fixes every other finding it can.
"""

from __future__ import annotations

import faulthandler
import importlib
import inspect
import json
import os
import pickle
import pkgutil
import resource
import shutil
import signal
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import PADDED_SCRIPT

import zerograd_lint
from zerograd_lint.cli import main
from zerograd_lint.findings import SourceError
from zerograd_lint.schedule import processes, run
from zerograd_lint.schedule.endings import HelperDied

FIXTURES = Path(__file__).parents[1] / "fixtures"
ENGINE_PROJECT = FIXTURES / "projects" / "zg001_step_in_engine"
ZG001 = "train.py:8:1: ZG001 optimizer.step() (engine.py line 8)"
PARENT = os.getpid()

needs_fork = pytest.mark.skipif(not processes.can_fork(), reason="this platform or process does not fork")

BROKEN_TAIL = "\nfor x, y in loader:\n    model(x).sum().backward()\n    opt.step("


def _script(size: int) -> str:
    padding = "".join(f"\n\ndef transform_{k}(batch, scale={k}):\n    return [item * scale for item in batch]\n"
                      for k in range(size // 70))
    return PADDED_SCRIPT.format(padding=padding)


def _issue_project(folder: Path, scripts: int = 8, size: int = 8_000) -> Path:
    """The fixture project, `scripts` correct training scripts, and one file ending in `opt.step(`."""
    shutil.copytree(ENGINE_PROJECT, folder)
    for i in range(scripts):
        (folder / f"script_{i:02d}.py").write_text(_script(size))
    (folder / "broken.py").write_text(_script(size) + BROKEN_TAIL)
    return folder


def _with_helpers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every run shares its work out to helpers, however small; the names of the jobs given them."""
    given = []
    real = processes.Helper.submit

    def spy(self, work, *args):
        job = real(self, work, *args)
        if job.given:
            given.append(work.__name__)
        return job

    monkeypatch.setattr(processes.Helper, "submit", spy)
    for threshold in ("APART_FROM", "SURVEYS_APART_FROM", "ANALYSIS_APART_FROM"):
        monkeypatch.setattr(run, threshold, 0)
    return given


def _lint(folder: Path, *options: str):
    return CliRunner().invoke(main, ["--no-cache", "--isolated", "--no-color", *options, "."], catch_exceptions=False)


@pytest.fixture(autouse=True)
def _plain_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)


# --- every exception crosses a process boundary intact ----------------------------------------


def _exception_types() -> list[type[BaseException]]:
    """Every exception class the package defines (a job that raises one in a helper sends it)."""
    for module in pkgutil.walk_packages(zerograd_lint.__path__, "zerograd_lint."):
        if module.name != "zerograd_lint.__main__":
            try:
                importlib.import_module(module.name)
            except ImportError:  # an extra not installed (the language server's pygls)
                continue
    found, todo = set(), [BaseException]
    while todo:
        for cls in todo.pop().__subclasses__():
            todo.append(cls)
            if cls.__module__.startswith("zerograd_lint"):
                found.add(cls)
    return sorted(found, key=lambda cls: (cls.__module__, cls.__qualname__))


def _example(cls: type[BaseException]) -> BaseException:
    """An instance, made with a string for each argument its constructor requires."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except ValueError:  # the constructor of a built-in exception: any arguments
        return cls("value 0")
    required = [p for p in parameters if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return cls(*(f"value {i}" for i in range(len(required))))


# Raised where no helper works: never sent from one (any other is, if a job raises it).
NEVER_IN_A_HELPER = {
    "zerograd_lint.config.ConfigError": "the configuration is read before anything is shared out",
    "zerograd_lint.runtime._findings.GradientMisuseError": "the runtime guard, raised in the user's own training",
}


def test_every_exception_the_package_defines_round_trips_through_pickle() -> None:
    types = _exception_types()
    assert {"SourceError", "Unparsable", "TooDeep", "HelperDied", "HelperFailed", "NotChecked"} <= {
        cls.__name__ for cls in types}
    for cls in types:
        if f"{cls.__module__}.{cls.__qualname__}" in NEVER_IN_A_HELPER:
            continue
        original = _example(cls)
        copy = pickle.loads(pickle.dumps(original, pickle.HIGHEST_PROTOCOL))
        assert type(copy) is cls, cls
        assert (copy.args, str(copy), vars(copy)) == (original.args, str(original), vars(original)), cls
    error = pickle.loads(pickle.dumps(SourceError("a.py", "syntax error at 1:2: x")))
    assert (error.path, error.reason) == ("a.py", "syntax error at 1:2: x")


# --- an internal error of the whole project's analysis -----------------------------------------


@pytest.mark.parametrize("options", [(), ("--diff",), ("--fix",)], ids=["check", "diff", "fix"])
def test_an_internal_error_of_the_project_is_one_line_never_file_by_file_findings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: tuple[str, ...]) -> None:
    """Checked file by file, train.py's loop calls an unseen `train_step(model, optimizer, ...)`,
    which may clear: the ZG001 was silently lost ("All checks passed", exit 0)."""
    project = _issue_project(tmp_path / "project", scripts=0)
    before = {p.name: p.read_bytes() for p in project.iterdir()}

    def planned(*args, **kwargs):
        raise RuntimeError("injected")

    monkeypatch.setattr(run, "planned", planned)
    monkeypatch.chdir(project)
    result = _lint(project, *options)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "zerograd-lint: error: the project could not be checked: internal error: RuntimeError: injected\n"
    assert {p.name: p.read_bytes() for p in project.iterdir()} == before  # nothing written, not even a cache


# --- the issue's reproduction, with helpers ----------------------------------------------------


@needs_fork
@pytest.mark.parametrize("options", [(), ("--diff",)], ids=["check", "diff"])
def test_a_file_that_does_not_parse_never_costs_the_cross_file_finding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: tuple[str, ...]) -> None:
    project = _issue_project(tmp_path / "project")
    given = _with_helpers(monkeypatch)
    monkeypatch.chdir(project)
    for _ in range(3):
        result = _lint(project, *options)
        assert result.exit_code == 2, result.output
        assert "zerograd-lint: error: broken.py: syntax error at " in result.stderr
        if options:
            assert "Would fix 1 finding in 1 file, 0 would remain" in result.stderr  # after the call of engine's step
            assert "+++ b/train.py\n" in result.stdout and "+    optimizer.zero_grad()\n" in result.stdout
        else:
            assert [line for line in result.stdout.splitlines() if ": ZG" in line] == [
                ZG001 + " applies gradients an earlier step already applied: nothing clears them in this loop"]
    assert {"surveys", "_analyse_in_helper"} <= set(given)


REAL_ANALYSIS = run._analyse_in_helper


def _dies_in_a_helper(*args, **kwargs):
    """The analysis, which kills a helper as LibCST's parser does when memory runs out."""
    if os.getpid() != PARENT:
        faulthandler.disable()  # pytest's, inherited: no traceback
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # nor core file
        os.abort()
    return REAL_ANALYSIS(*args, **kwargs)


@needs_fork
def test_a_helper_that_dies_is_reported_and_its_work_never_done_again_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _issue_project(tmp_path / "project")
    given = _with_helpers(monkeypatch)
    monkeypatch.setattr(run, "_analyse_in_helper", _dies_in_a_helper)
    monkeypatch.chdir(project)
    result = _lint(project)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("zerograd-lint: error: the project could not be checked: "
                             "a helper process was killed by SIGABRT (out of memory?)\n")
    assert "_dies_in_a_helper" in given


def _exit_at_once(_context: object) -> None:
    if os.getpid() != PARENT:  # a helper (done again here, it returns)
        os._exit(0)


def _square(_context: object, n: int) -> int:
    return n * n


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@needs_fork
def test_a_helper_reaped_elsewhere_is_closed_and_reported_without_error() -> None:
    """With SIGCHLD ignored the kernel reaps a helper as it ends: killing it then raised
    ProcessLookupError, which the runner took for an internal error of the analysis."""
    was = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        with processes.Team(None) as team:
            with pytest.raises(HelperDied, match="^a helper process died$"):
                team.helper(0).submit(_exit_at_once).result()
            with pytest.raises(HelperDied):  # its spawner is gone: no pid that may be another process's is killed
                team.helper(1).submit(_square, 3).result()
        with processes.Helper(None) as helper:  # closed once it has ended and been reaped
            helper.submit(_exit_at_once)
            deadline = time.monotonic() + 30  # a guard against a hang only
            while not _gone(helper._pid) and time.monotonic() < deadline:
                time.sleep(0.01)
        processes.reap()
    finally:
        signal.signal(signal.SIGCHLD, was)


# --- --fix beside a notebook that does not parse ------------------------------------------------


def _notebook(source: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("helpers", [False, pytest.param(True, marks=needs_fork)], ids=["alone", "with-helpers"])
@pytest.mark.parametrize("notebook", [
    "{ this is not json",
    _notebook("for x in data:\n    loss.backward()\n    opt.step(\n"),
], ids=["not-json", "cell-syntax-error"])
def test_fix_fixes_every_other_finding_beside_a_notebook_that_does_not_parse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notebook: str, helpers: bool) -> None:
    if helpers:  # a platform that forks: only a thread another test left running could stop it
        assert processes.can_fork(), "a thread left running keeps this process from forking helpers"
    fixable = (FIXTURES / "fixes" / "two_loops.py").read_text()
    for folder in ("with", "without"):
        (tmp_path / folder).mkdir()
        for i in range(4):
            (tmp_path / folder / f"train_{i}.py").write_text(fixable)
    (tmp_path / "with" / "broken.ipynb").write_text(notebook)
    if helpers:
        _with_helpers(monkeypatch)
    outcomes = {}
    for folder in ("with", "without"):
        monkeypatch.chdir(tmp_path / folder)
        result = _lint(tmp_path / folder, "--fix")
        outcomes[folder] = result
        assert {p.read_text() for p in (tmp_path / folder).glob("*.py")} == {
            (FIXTURES / "fixes" / "two_loops.fixed.py").read_text()}, result.output
    assert "Fixed 8 findings" in outcomes["without"].stderr
    assert "Fixed 8 findings" in outcomes["with"].stderr
    assert outcomes["with"].exit_code == 2
    assert [line for line in outcomes["with"].stderr.splitlines() if "error" in line] == [
        line for line in outcomes["with"].stderr.splitlines() if line.startswith("zerograd-lint: error: broken.ipynb")]
