"""The command line as users meet it: output lines, exit codes, selection, bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from snippets import DISCARDED, STALE

from zerograd_lint import __version__
from zerograd_lint.cli import main

ROOT = Path(__file__).parent.parent
REFUSED = "**/zg001_sibling_does_not_parse/metrics.py"  # a fixture the run must refuse: it does not parse
EXAMPLES = ROOT / "examples"

CLEAN = STALE.replace("    loss = ((", "    optimizer.zero_grad()\n    loss = ((")


def run(*args: str, cwd: Path | None = None):
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(main, list(args), catch_exceptions=False)
    with runner.isolated_filesystem(temp_dir=cwd):
        return runner.invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "stale.py").write_text(STALE)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "discarded.py").write_text(DISCARDED)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_findings_print_one_line_each_and_exit_1(tree: Path) -> None:
    result = run(".")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "pkg/discarded.py:1:1: ZG003 optimizer.zero_grad() (line 2) discards gradients that "
        "model(x).sum().backward() (line 3) accumulated for optimizer.step() (line 5) before the "
        "step applies them: clear right after the step instead",
        "stale.py:4:1: ZG001 optimizer.step() (line 7) applies gradients an earlier step already "
        "applied: nothing clears them in this loop",
    ]
    assert result.stderr == "Found 2 findings in 2 files (3 files checked).\n[*] 2 fixable with the `--fix` option.\n"


def test_clean_file_exits_0(tree: Path) -> None:
    result = run("clean.py")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "All checks passed (1 file checked).\n"


def test_default_path_is_the_current_directory(tree: Path) -> None:
    assert run().stdout == run(".").stdout


def test_select_and_ignore_take_prefixes(tree: Path) -> None:
    assert {l.split()[1] for l in run("--select", "ZG00", "--ignore", "ZG003").stdout.splitlines()} == {"ZG001"}
    assert {l.split()[1] for l in run("--select", "ZG003").stdout.splitlines()} == {"ZG003"}
    result = run("--ignore", "ZG")
    assert (result.exit_code, result.stdout) == (0, "")


def test_more_specific_select_beats_broader_ignore(tree: Path) -> None:
    codes = {l.split()[1] for l in run("--ignore", "ZG", "--select", "ZG001").stdout.splitlines()}
    assert codes == {"ZG001"}


def test_unknown_code_is_a_usage_error(tree: Path) -> None:
    result = run("--select", "E501")
    assert result.exit_code == 2
    assert "unknown rule code or prefix: E501" in result.stderr


@pytest.mark.parametrize(
    "args",
    [("--select", ""), ("--select", ","), ("--select", "ZG001,"), ("--extend-select", " "), ("--ignore", ""),
     ("--per-file-ignores", "tests/*:")],
)
def test_an_empty_code_is_an_error_not_every_rule(tree: Path, args: tuple[str, str]) -> None:
    """As ruff refuses it (an unknown rule selector), rather than read no code as every code."""
    result = run(*args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"zerograd-lint: error: {args[0]} {args[1]!r}: "
                             "empty rule code (give codes or prefixes, comma separated)\n")


def test_json_output(tree: Path) -> None:
    result = run("--output-format", "json", "stale.py")
    assert result.exit_code == 1
    [item] = json.loads(result.stdout)
    assert item == {
        "code": "ZG001",
        "name": "stale-gradients",
        "message": "optimizer.step() (line 7) applies gradients an earlier step already applied: "
        "nothing clears them in this loop",
        "path": "stale.py",
        "line": 4,
        "column": 1,
        "end_line": 4,
        "end_column": 4,
        "fix": None,
        "related": [
            {"role": "step", "path": "stale.py", "line": 7, "column": 5, "text": "optimizer.step()", "subject": "optimizer"},
            {"role": "earlier step", "path": "stale.py", "line": 7, "column": 5, "text": "optimizer.step()",
             "subject": "optimizer"},
        ],
    }


def test_json_output_when_clean_is_an_empty_array(tree: Path) -> None:
    result = run("--output-format", "json", "clean.py")
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])


def test_exit_zero(tree: Path) -> None:
    result = run("--exit-zero", "stale.py")
    assert result.exit_code == 0 and "ZG001" in result.stdout


def test_version() -> None:
    result = run("--version")
    assert result.stdout == f"zerograd-lint {__version__}\n"


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("syntax.py", b"loss.backward()\nopt.step()\ndef f(:\n", "syntax error at 3:"),
        ("binary.py", b"\x00\x01loss.backward()", "binary file (contains NUL bytes)"),
        ("latin.py", b"x = '\xe9\xff'\nloss.backward()\n", "cannot decode"),
        ("nested.py", b"loss.backward()\nopt.step()\nx = " + b"(" * 300 + b"1" + b")" * 300 + b"\n", "too many nested parentheses"),
        ("chain.py", b"loss.backward()\nopt.step()\nx = (" + b" +\n".join([b"a"] * 20000) + b")\n", "too deeply nested"),
    ],
)
def test_bad_input_gets_one_line_and_the_rest_is_checked(tree: Path, name: str, content: bytes, reason: str) -> None:
    (tree / name).write_bytes(content)
    result = run(name, "stale.py")
    assert result.exit_code == 2
    errors = [l for l in result.stderr.splitlines() if l.startswith("zerograd-lint: error:")]
    assert len(errors) == 1 and errors[0].startswith(f"zerograd-lint: error: {name}: ")
    assert reason in errors[0]
    assert "stale.py:4:1: ZG001" in result.stdout


def test_declared_encoding_is_honoured(tree: Path) -> None:
    (tree / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + STALE.encode() + b"s = '\xe9'\n")
    result = run("latin.py")
    assert result.exit_code == 1 and "latin.py:5:1: ZG001" in result.stdout


def test_missing_path(tree: Path) -> None:
    result = run("nope.py", "clean.py")
    assert result.exit_code == 2
    assert "zerograd-lint: error: nope.py: no such file or directory" in result.stderr


def test_unreadable_file(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zerograd_lint import files

    real = files.read_source

    def read(path: str) -> bytes:
        if path == "secret.py":
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    (tree / "secret.py").write_text(STALE)
    monkeypatch.setattr(files, "read_source", read)
    result = run("secret.py", "stale.py")
    assert result.exit_code == 2
    assert "zerograd-lint: error: secret.py: cannot read: Permission denied" in result.stderr
    assert "stale.py:4:1: ZG001" in result.stdout


def test_files_that_could_not_be_checked_are_not_counted_as_checked(tree: Path) -> None:
    for name in ("one.py", "two.py"):
        (tree / name).write_bytes(b"loss.backward()\nopt.step()\ndef f(:\n")
    for fix in ((), ("--fix",)):
        result = run(*fix, "one.py", "two.py")
        assert result.exit_code == 2
        assert result.stderr.splitlines()[-1] == "No findings (0 files checked, 2 could not be)."
    result = run("one.py", "nope.py", "stale.py", "clean.py")
    assert result.stderr.splitlines()[-2:] == [
        "Found 1 finding in 1 file (2 files checked, 2 could not be).", "[*] 1 fixable with the `--fix` option."]


def test_no_python_file_found_is_said_and_exits_0(tree: Path) -> None:
    """As ruff warns `No Python files found under the given path(s)`, and exits 0."""
    (tree / "docs").mkdir()
    (tree / "docs" / "index.md").write_text("# Training\n")
    for fix in ((), ("--fix",)):
        result = run(*fix, "docs")
        assert (result.exit_code, result.stdout) == (0, "")
        assert result.stderr == "No Python files found under the given paths: nothing was checked.\n"
    assert run("-q", "docs").stderr == ""


def test_exit_zero_never_hides_errors(tree: Path) -> None:
    result = run("--exit-zero", "nope.py")
    assert result.exit_code == 2


def test_discovery_skips_environments_and_caches(tree: Path) -> None:
    for folder in (".git", "__pycache__", "build", "node_modules", "my-env"):
        (tree / folder).mkdir()
        (tree / folder / "stale.py").write_text(STALE)
    (tree / "my-env" / "pyvenv.cfg").write_text("home = /usr\n")
    result = run(".")
    assert sorted({l.split(":")[0] for l in result.stdout.splitlines()}) == ["pkg/discarded.py", "stale.py"]


def test_explicit_file_is_checked_whatever_its_name(tree: Path) -> None:
    (tree / "train.txt").write_text(STALE)
    assert "train.txt:4:1: ZG001" in run("train.txt").stdout


def test_examples_report_exactly_the_documented_bugs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "zerograd_lint", "examples"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    found = {(line.split(":")[0], line.split()[1]) for line in result.stdout.splitlines()}
    assert found == {
        ("examples/stale_gradients.py", "ZG001"),
        ("examples/cleared_before_step.py", "ZG002"),
        ("examples/accumulation_discarded.py", "ZG003"),
    }
    assert result.stderr.strip() == "Found 3 findings in 3 files (6 files checked).\n[*] 3 fixable with the `--fix` option."


def test_console_script_on_a_clean_file() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "zerograd-lint"), "examples/train_mlp.py"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stdout) == (0, "")


def test_quiet_prints_findings_and_errors_only(tree: Path) -> None:
    result = run("-q", "stale.py", "nope.py")
    assert result.exit_code == 2
    assert result.stdout.startswith("nope.py:1:1: not-checked: no such file or directory\nstale.py:4:1: ZG001 ")
    assert result.stderr == "zerograd-lint: error: nope.py: no such file or directory\n"


@pytest.mark.parametrize("flag", ["--silent", "-s", "-qq"])
def test_silent_prints_nothing_and_keeps_the_exit_code(tree: Path, flag: str) -> None:
    found = run(flag, "stale.py")
    assert (found.exit_code, found.stdout, found.stderr) == (1, "", "")
    failed = run(flag, "stale.py", "nope.py")
    assert (failed.exit_code, failed.stdout, failed.stderr) == (2, "", "")
    assert run(flag, "--exit-zero", "stale.py").exit_code == 0


def test_verbose_cannot_be_quiet(tree: Path) -> None:
    result = run("-v", "-q")
    assert result.exit_code == 2
    assert "-v/--verbose cannot be used with -q/--quiet or -s/--silent" in result.stderr


def test_exit_zero_never_hides_a_configuration_error(tree: Path) -> None:
    (tree / "pyproject.toml").write_text("[tool.zerograd-lint]\nselct = []\n")
    result = run("--exit-zero")
    assert result.exit_code == 2
    assert result.stderr == (
        "zerograd-lint: error: pyproject.toml: [tool.zerograd-lint] selct: unknown key (known keys: select, "
        "extend-select, ignore, extend-ignore, per-file-ignores, extend-per-file-ignores, exclude, extend-exclude, respect-gitignore, force-exclude, "
        "output-format, unsafe-fixes, vocabulary)\n"
    )


def test_internal_error_exits_2_with_the_traceback(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zerograd_lint import cli

    def broken(files, settings, early=None, **options):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "check_files", broken)
    result = run("stale.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("zerograd-lint: internal error:\nTraceback")
    assert "RuntimeError: boom" in result.stderr


def test_per_file_ignores_flag(tree: Path) -> None:
    assert {l.split(":")[0] for l in run("--per-file-ignores", "pkg/*:ZG003").stdout.splitlines()} == {"stale.py"}
    result = run("--per-file-ignores", "pkg/*")
    assert result.exit_code == 2 and "expected PATTERN:CODES" in result.stderr


def test_start_up_does_not_import_libcst() -> None:
    importtime = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import zerograd_lint.cli"], cwd=ROOT, capture_output=True, text=True,
        check=True,
    )
    assert "zerograd_lint.cli" in importtime.stderr
    assert "libcst" not in importtime.stderr


def test_fixing_does_not_import_libcst_matchers() -> None:
    """The fixes test the shapes they look for node by node: `libcst.matchers` took 0.15 to
    0.25 s to import, in every run that fixes."""
    importtime = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import zerograd_lint.fix.pipeline"], cwd=ROOT,
        capture_output=True, text=True, check=True,
    )
    modules = {line.split("|")[-1].strip() for line in importtime.stderr.splitlines() if "|" in line}
    assert "zerograd_lint.fix.by_hand" in modules and "libcst" in modules
    assert "libcst.matchers" not in modules


def test_the_console_script_forks_before_it_imports_anything() -> None:
    """`schedule.forked`, which the console script imports first to fork the run's first helper,
    imports nothing but the package and itself: the helper begins importing LibCST at once."""
    importtime = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import zerograd_lint.schedule.forked"], cwd=ROOT,
        capture_output=True, text=True, check=True,
    )
    bare = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    modules = {line.split("|")[-1].strip() for line in importtime.stderr.splitlines() if "|" in line}
    started = {line.split("|")[-1].strip() for line in bare.stderr.splitlines() if "|" in line}
    # `__future__` is what `from __future__ import annotations` loads: a few constants
    assert modules - started - {"__future__"} == {"zerograd_lint", "zerograd_lint.schedule", "zerograd_lint.schedule.forked"}


@pytest.mark.parametrize(("source", "trains"), [
    ("import torch\n\nprint(torch.zeros(3))\n", False),  # nothing to parse
    ("def once(loss, opt):\n    loss.backward()\n    opt.step()\n", False),  # a backward and a step, no loop
    ("for x in data:\n    loss.backward()\n    opt.step()\n", True),  # a training loop
])
def test_libcst_is_never_imported_by_the_process_that_reports(source: str, trains: bool) -> None:
    """An on-save check costs little more than Python's start-up: LibCST is imported by the
    helper forked first of all, while this process reads and plans, and the analysis is the
    helper's."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "zerograd_lint", "--no-cache", "-", "--stdin-filename", "x.py"],
        cwd=ROOT, input=source, capture_output=True, text=True, check=False,
    )
    assert done.returncode == (1 if trains else 0), done.stderr[-500:]
    assert " libcst\n" not in done.stderr


def test_the_process_exits_at_once_with_everything_written() -> None:
    """`run` ends the process without the interpreter's shutdown, after flushing: a large report
    piped to another program arrives whole, with the exit code `main` chose."""
    done = subprocess.run(
        [sys.executable, "-m", "zerograd_lint", "--no-cache", "--output-format", "json", "tests/fixtures",
         "--extend-exclude", REFUSED],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert len(json.loads(done.stdout)) > 100
    assert done.stderr.startswith("Found ")
    bad = subprocess.run([sys.executable, "-m", "zerograd_lint", "--no-such-option"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "No such option" in bad.stderr


def test_the_console_script_leaves_the_cycle_collector_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run exits when done (`cli.run`): the collector's passes would free what the exit frees."""
    import gc

    from zerograd_lint import cli

    seen: list[object] = []
    monkeypatch.setattr(cli, "main", lambda obj: seen.append(gc.isenabled()))
    monkeypatch.setattr(cli.os, "_exit", lambda code: seen.append(("exit", code)))
    try:
        cli.run()
    finally:
        gc.enable()
    assert seen == [False, ("exit", 0)]


@pytest.mark.parametrize(("arguments", "environment", "said"), [
    (["--output-format", "JSON", "x.py"], {},
     "zerograd-lint: error: --output-format: 'JSON' is not one of 'concise', 'full', 'github', 'gitlab', 'json', 'json-lines', 'junit', 'pylint', 'sarif'."),
    (["x.py"], {"ZEROGRAD_LINT_OUTPUT_FORMAT": "JSON"},
     "zerograd-lint: error: ZEROGRAD_LINT_OUTPUT_FORMAT: 'JSON' is not one of 'concise', 'full', 'github', 'gitlab', 'json', 'json-lines', 'junit', 'pylint', 'sarif'."),
    (["--bogus"], {}, "zerograd-lint: error: No such option '--bogus'. Did you mean '--verbose'?"),
    (["--select", "E501", "x.py"], {}, "zerograd-lint: error: --select: unknown rule code or prefix: E501"),
])
def test_a_command_line_error_is_one_line_naming_what_was_typed(
    tmp_path: Path, arguments: list[str], environment: dict[str, str], said: str,
) -> None:
    """As the configuration's errors (issue 19, item 8): no usage block naming `check`, which was
    not typed, and the environment variable blamed only when the value came from it."""
    env = {k: v for k, v in os.environ.items() if k != "ZEROGRAD_LINT_OUTPUT_FORMAT"} | environment
    done = subprocess.run([sys.executable, "-m", "zerograd_lint", *arguments], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (2, said + "\n")


# Issue 19, item 17: what a check would look at, without checking.


def test_show_files_lists_what_would_be_read_and_checks_nothing(tree: Path) -> None:
    (tree / "build").mkdir()
    (tree / "build" / "generated.py").write_text(STALE)
    (tree / "notes.txt").write_text("loss.backward()")
    result = run("--show-files", ".")
    assert (result.exit_code, result.stdout) == (0, "clean.py\npkg/discarded.py\nstale.py\n")
    assert not (tree / ".zerograd_lint_cache").exists()


def test_show_settings_gives_configuration_and_command_line_together(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.zerograd-lint]\nextend-exclude = ["legacy/"]\n'
                                         '[tool.zerograd-lint.per-file-ignores]\n"tests/*" = ["ZG001"]\n[tool.zerograd-lint.vocabulary]\n'
                                         'optimizers = ["learner"]\n')
    result = run("--show-settings", "--ignore", "ZG100", "--output-format", "json", ".")
    assert result.exit_code == 0, result.stderr
    import tomllib

    settings = tomllib.loads(result.stdout.replace("vocabulary.", "vocabulary_"))
    assert settings["configuration"] == str(tree / "pyproject.toml")
    assert (settings["select"], settings["ignore"], settings["extend-exclude"]) == (["ZG"], ["ZG100"], ["legacy/"])
    assert settings["per-file-ignores"] == {"tests/*": ["ZG001"]}
    assert (settings["output-format"], settings["vocabulary_optimizers"]) == ("json", ["learner"])
    assert settings["cache"] == str(tree / ".zerograd_lint_cache")


def test_watch_checks_again_when_a_file_changes(tmp_path: Path) -> None:
    import selectors
    import signal
    import time

    (tmp_path / "train.py").write_text(CLEAN)
    process = subprocess.Popen([sys.executable, "-m", "zerograd_lint", "--watch", "--no-cache", "train.py"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ, "out")
    selector.register(process.stderr, selectors.EVENT_READ, "err")
    said = {"out": "", "err": ""}

    def wait_for(stream: str, text: str, count: int = 1) -> None:
        deadline = time.monotonic() + 60  # only a guard against a hang
        while said[stream].count(text) < count:
            assert time.monotonic() < deadline, said
            for key, _ in selector.select(timeout=1):  # raw reads: a buffered readline would hide lines
                said[key.data] += os.read(key.fileobj.fileno(), 65536).decode()

    try:
        wait_for("err", "Watching for file changes.")
        assert "ZG001" not in said["out"]
        (tmp_path / "train.py").write_text(STALE)
        wait_for("out", "train.py:4:1: ZG001 ")
        wait_for("err", "Watching for file changes.", count=2)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    assert said["err"].count("Checking...") == 2


def test_help_groups_the_options_in_sections_as_ruff_does() -> None:
    """Issue 19, item 19."""
    text = run("--help").stdout
    titles = [line[:-1] for line in text.splitlines() if line and not line.startswith(" ") and line.endswith(":")]
    assert titles == ["Options", "Rule selection", "File selection", "Configuration", "Miscellaneous", "Log levels",
                      "Commands"]
    sections = dict(re.findall(r"^(\w[\w ]*):\n(.*?)(?=^\w|\Z)", text, re.MULTILINE | re.DOTALL))
    assert "--extend-ignore CODES" in sections["Rule selection"] and "--exclude PATTERNS" in sections["File selection"]
    assert "-h, --help" in sections["Miscellaneous"] and "-q, --quiet" in sections["Log levels"]
    assert "--fix " in sections["Options"] and "[PATHS]" not in sections["Options"]
    every = re.findall(r"^  (-\w, )?(--[\w-]+)", text[text.index("\nOptions:"):], re.MULTILINE)
    assert len({name for _, name in every}) == len(every)  # each option once
