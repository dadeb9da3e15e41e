"""Output formats: golden outputs of real runs, the SARIF schema, GitHub's escaping, colour."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import jsonschema
import pytest
from click.testing import CliRunner

from zerograd_lint import __version__
from zerograd_lint.cli import main
from zerograd_lint.codes import RULES
from zerograd_lint.report import FORMATS
from zerograd_lint.report.github import escape_data, escape_property

GOLDEN_PROJECT = Path(__file__).parent / "golden" / "project"
ESC = "\x1b["


SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"  # the official one, vendored


def schema_path() -> Path:
    """The official SARIF 2.1.0 schema: $ZEROGRAD_SARIF_SCHEMA, else the copy in tests/data/."""
    given = os.environ.get("ZEROGRAD_SARIF_SCHEMA")
    path = Path(given) if given else SARIF_SCHEMA
    if not path.is_file():
        pytest.fail(f"SARIF schema not found at {path}", pytrace=False)
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of tests/golden/project outside any git work tree, as the current directory."""
    copy = tmp_path / "project"
    shutil.copytree(GOLDEN_PROJECT, copy)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    monkeypatch.chdir(copy)
    return copy


def run(*args: str, env: dict[str, str] | None = None, color: bool = False):
    return CliRunner().invoke(main, ["--isolated", *args], env=env, color=color, catch_exceptions=False)


def versionless(text: str) -> str:
    return text.replace(f'"version": "{__version__}"', '"version": "{version}"')


@pytest.mark.parametrize(
    ("output_format", "golden_name"),
    [("concise", "concise.txt"), ("json", "json.json"), ("json-lines", "json-lines.jsonl"),
     ("github", "github.txt"), ("sarif", "sarif.json"), ("full", "full.txt"), ("gitlab", "gitlab.json"),
     ("junit", "junit.xml"), ("pylint", "pylint.txt")],
)
def test_golden_output(project: Path, golden: Callable[[str, str], None], output_format: str, golden_name: str) -> None:
    result = run("--output-format", output_format, ".")
    assert result.exit_code == 1, result.stderr
    hint = "[*] 5 fixable with the `--fix` option.\n" if output_format in ("concise", "full") else ""
    assert result.stderr == "Found 5 findings in 3 files (4 files checked).\n" + hint  # as ruff: the text formats
    golden(golden_name, versionless(result.stdout))


@pytest.mark.parametrize(
    ("output_format", "golden_name"),
    [("concise", "statistics.txt"), ("json", "statistics.json"), ("json-lines", "statistics.jsonl")],
)
def test_golden_statistics(project: Path, golden: Callable[[str, str], None], output_format: str, golden_name: str) -> None:
    result = run("--statistics", "--output-format", output_format, ".")
    assert result.exit_code == 1
    golden(golden_name, result.stdout)


def test_statistics_has_no_sarif_or_github_form(project: Path) -> None:
    for output_format in ("sarif", "github"):
        result = run("--statistics", "--output-format", output_format, ".")
        assert result.exit_code == 2
        assert f"--statistics prints counts as concise, json, json-lines, not {output_format}" in result.stderr


def test_sarif_of_findings_in_several_files_is_valid(project: Path) -> None:
    schema = json.loads(schema_path().read_text(encoding="utf-8"))
    result = run("--output-format", "sarif", ".")
    log = json.loads(result.stdout)
    jsonschema.validators.validator_for(schema)(schema).validate(log)

    [sarif_run] = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("zerograd-lint", __version__)
    assert [r["id"] for r in driver["rules"]] == list(RULES)
    assert all(r["helpUri"].endswith(f"/docs/rules/{r['id']}.md") and r["name"] == RULES[r["id"]].name
               for r in driver["rules"])
    located = {
        (r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         r["locations"][0]["physicalLocation"]["region"]["startLine"])
        for r in sarif_run["results"]
    }
    assert located == {
        ("ZG001", "error", "train.py", 8),
        ("ZG001", "error", "train.py", 15),
        ("ZG002", "error", "pkg/step%2Cclear.py", 8),
        ("ZG003", "error", "pkg/accumulate.py", 8),
        ("ZG100", "warning", "pkg/step%2Cclear.py", 14),
    }
    assert all(driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"] for r in sarif_run["results"])


def test_sarif_uris_are_relative_to_the_repository_root(project: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project.parent, check=True)
    result = run("--output-format", "sarif", "pkg/accumulate.py")
    [finding] = json.loads(result.stdout)["runs"][0]["results"]
    location = finding["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "project/pkg/accumulate.py", "uriBaseId": "%SRCROOT%"}


@pytest.mark.parametrize("output_format", ["concise", "json", "json-lines"])
def test_formats_without_repository_paths_do_not_ask_git_for_the_root(
    project: Path, monkeypatch: pytest.MonkeyPatch, output_format: str
) -> None:
    from zerograd_lint import files

    asked = []
    real = files.git
    monkeypatch.setattr(files, "git", lambda folder, *args: asked.append(args) or real(folder, *args))
    result = run("--output-format", output_format, "pkg/accumulate.py")
    assert "ZG003" in result.stdout
    assert ("rev-parse", "--show-toplevel") not in asked


def test_sarif_without_findings_is_valid(project: Path) -> None:
    schema = json.loads(schema_path().read_text(encoding="utf-8"))
    result = run("--output-format", "sarif", "clean.py")
    assert result.exit_code == 0
    log = json.loads(result.stdout)
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    assert log["runs"][0]["results"] == []


def test_github_escaping_is_that_of_actions_toolkit() -> None:
    # The cases of actions/toolkit packages/core/__tests__/command.test.ts
    assert escape_data("percent % percent % cr \r cr \r lf \n lf \n") == (
        "percent %25 percent %25 cr %0D cr %0D lf %0A lf %0A"
    )
    assert escape_property("percent % percent % cr \r cr \r lf \n lf \n colon : colon : comma , comma ,") == (
        "percent %25 percent %25 cr %0D cr %0D lf %0A lf %0A colon %3A colon %3A comma %2C comma %2C"
    )
    assert escape_data("a:b,c") == "a:b,c"
    assert escape_property("%0A") == "%250A"


def test_output_format_from_the_environment(project: Path) -> None:
    result = run("train.py", env={"ZEROGRAD_LINT_OUTPUT_FORMAT": "json-lines"})
    assert [json.loads(line)["code"] for line in result.stdout.splitlines()] == ["ZG001", "ZG001"]
    flag_wins = run("--output-format", "concise", "train.py", env={"ZEROGRAD_LINT_OUTPUT_FORMAT": "json"})
    assert flag_wins.stdout.startswith("train.py:8:1: ZG001 ")


def test_bad_output_format_in_the_environment_is_a_usage_error(project: Path) -> None:
    result = run("train.py", env={"ZEROGRAD_LINT_OUTPUT_FORMAT": "xml"})
    assert result.exit_code == 2
    assert "'xml' is not one of" in result.stderr


def test_output_file(project: Path) -> None:
    result = run("--output-format", "json", "-o", "reports/out.json", "--color", ".")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "Found 5 findings in 3 files (4 files checked).\n"
    written = (project / "reports" / "out.json").read_text(encoding="utf-8")
    assert [f["code"] for f in json.loads(written)] == ["ZG003", "ZG002", "ZG100", "ZG001", "ZG001"]


def test_concise_output_file_has_no_colour(project: Path) -> None:
    run("--color", "-o", "out.txt", "train.py")
    assert (project / "out.txt").read_text(encoding="utf-8").startswith("train.py:8:1: ZG001 ")


def test_unwritable_output_file_exits_2(project: Path) -> None:
    (project / "taken").write_text("a file, not a folder")
    result = run("-o", "taken/out.txt", "train.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("zerograd-lint: error: taken/out.txt: cannot write:")


@pytest.mark.parametrize(
    ("args", "env", "terminal", "coloured"),
    [
        ((), {}, False, False),
        ((), {}, True, True),
        (("--color",), {}, False, True),
        (("--no-color",), {}, True, False),
        ((), {"NO_COLOR": "1"}, True, False),
        ((), {"NO_COLOR": ""}, True, True),  # set but empty means not set (no-color.org)
        ((), {"FORCE_COLOR": "1"}, False, True),
        ((), {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False, False),
        (("--color",), {"NO_COLOR": "1"}, False, True),
    ],
)
def test_colour(project: Path, args: tuple[str, ...], env: dict[str, str], terminal: bool, coloured: bool) -> None:
    # CliRunner's `color` stands for "stdout is a terminal" (click strips ANSI when it is False).
    environment = {"NO_COLOR": None, "FORCE_COLOR": None, **env}
    result = run(*args, "train.py", env=environment, color=terminal)
    assert (ESC in result.stdout) is coloured
    assert click.unstyle(result.stdout).startswith("train.py:8:1: ZG001 ")


@pytest.mark.parametrize("on_terminal", [True, False])
def test_colour_only_on_a_real_terminal(project: Path, on_terminal: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    command = [sys.executable, "-m", "zerograd_lint", "--isolated", "train.py"]
    if on_terminal:
        parent, child = pty.openpty()
        subprocess.run(command, stdout=child, stderr=subprocess.DEVNULL, env=env, timeout=120, check=False)
        os.close(child)
        output = os.read(parent, 65536).decode()
        os.close(parent)
    else:
        output = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False).stdout
    assert "ZG001" in output
    assert (ESC in output) is on_terminal


def test_sarif_names_the_repository_that_pyproject_names() -> None:
    from zerograd_lint.config import toml_module
    from zerograd_lint.report import sarif

    urls = toml_module().loads((Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert urls["Homepage"] == urls["Repository"] == sarif.REPOSITORY


def test_the_context_keeps_its_keyword() -> None:
    from zerograd_lint.report.context import Context

    assert Context(repository_root=Path("/repo")).repository_path("/repo/pkg/a.py") == "pkg/a.py"


# Issue 19, item 12: every line a finding is about, in every format.


def test_sarif_and_json_carry_the_calls_a_finding_is_about(project: Path) -> None:
    log = json.loads(run("--output-format", "sarif", "pkg/accumulate.py").stdout)
    [result] = log["runs"][0]["results"]
    related = [(r["id"], r["physicalLocation"]["artifactLocation"]["uri"], r["physicalLocation"]["region"]["startLine"],
                r["message"]["text"]) for r in result["relatedLocations"]]
    assert [(i, uri, line) for i, uri, line, _ in related] == [
        (1, "pkg/accumulate.py", 9), (2, "pkg/accumulate.py", 10), (3, "pkg/accumulate.py", 12)]
    assert [text.split(":")[0] for *_, text in related] == ["clear", "backward", "step"]
    [found] = json.loads(run("--output-format", "json", "pkg/accumulate.py").stdout)
    assert [(r["role"], r["line"], r["column"], r["text"]) for r in found["related"]] == [
        ("clear", 9, 5, "optimizer.zero_grad()"),
        ("backward", 10, 5, "(torch.nn.functional.mse_loss(model(x), y) / 4).backward()"),
        ("step", 12, 9, "optimizer.step()"),
    ]
    [line] = run("--output-format", "json-lines", "pkg/accumulate.py").stdout.splitlines()
    assert json.loads(line)["related"] == found["related"]


def test_full_shows_the_lines_checked_from_stdin_not_the_file_on_disk(project: Path) -> None:
    text = Path("train.py").read_text(encoding="utf-8").replace("for x, y in data:", "for x, y in data:  # from stdin")
    result = CliRunner().invoke(main, ["--isolated", "--output-format", "full", "--stdin-filename", "train.py", "-"],
                                input=text, catch_exceptions=False)
    assert result.exit_code == 1, result.stderr
    assert " 8 | for x, y in data:  # from stdin\n   | ^^^\n" in result.stdout


def test_full_is_coloured_on_a_terminal_only(project: Path) -> None:
    plain = run("--output-format", "full", "train.py", color=False).stdout
    styled = run("--output-format", "full", "train.py", env={"NO_COLOR": None, "FORCE_COLOR": None}, color=True).stdout
    assert ESC not in plain and ESC in styled and click.unstyle(styled) == plain


def test_full_leaves_out_lines_it_cannot_read(tmp_path: Path) -> None:
    from zerograd_lint.findings import Finding, Related
    from zerograd_lint.report import full
    from zerograd_lint.report.context import Context

    gone = Finding("gone.py", 3, 1, "ZG001", "m", "stale-gradients", 3, 4,
                   related=(Related("step", "gone.py", 5, 5, "opt.step()"),))
    assert full.render([gone], Context(tmp_path)) == (
        "ZG001 stale-gradients: m\n --> gone.py:3:1\n\n"
    )


# Issue 19, item 4: a file that could not be checked is a diagnostic in every format, as in ruff.

BROKEN = "import torch\nfor x in data:\n    loss.backward()\n    opt.step(\n"


@pytest.mark.parametrize("output_format", sorted(FORMATS))
def test_a_syntax_error_is_a_diagnostic_in_every_format(project: Path, output_format: str) -> None:
    Path("broken.py").write_text(BROKEN)
    Path("binary.py").write_bytes(b"\x00\x01loss.backward()")
    result = run("--output-format", output_format, "broken.py", "binary.py", "train.py")
    assert result.exit_code == 2
    assert "zerograd-lint: error: broken.py: syntax error at 4:13: '(' was never closed\n" in result.stderr
    out = result.stdout
    if output_format in ("json", "json-lines"):
        found = json.loads(out) if output_format == "json" else [json.loads(line) for line in out.splitlines()]
        by_code = {f["code"]: f for f in found}
        assert {k: by_code["invalid-syntax"][k] for k in ("path", "line", "column", "message")} == {
            "path": "broken.py", "line": 4, "column": 13, "message": "'(' was never closed"}
        assert (by_code["not-checked"]["path"], by_code["not-checked"]["line"]) == ("binary.py", 1)
        assert "ZG001" in by_code
    elif output_format == "sarif":
        log = json.loads(out)
        schema = json.loads(schema_path().read_text(encoding="utf-8"))
        jsonschema.validators.validator_for(schema)(schema).validate(log)
        [syntax] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "invalid-syntax"]
        assert syntax["locations"][0]["physicalLocation"]["region"]["startLine"] == 4 and "ruleIndex" not in syntax
    elif output_format == "github":
        assert "::error title=zerograd-lint (invalid-syntax),file=broken.py,line=4,col=13,endLine=4,endColumn=14::" \
               "broken.py:4:13: invalid-syntax: '(' was never closed\n" in out
    elif output_format == "gitlab":
        assert {(i["check_name"], i["location"]["path"], i["location"]["lines"]["begin"]) for i in json.loads(out)} >= {
            ("invalid-syntax", "broken.py", 4), ("not-checked", "binary.py", 1)}
    elif output_format == "junit":
        assert """<error type="invalid-syntax" message="'(' was never closed">""" in out
    elif output_format == "pylint":
        assert "broken.py:4: [invalid-syntax] '(' was never closed\n" in out
    elif output_format == "concise":
        assert "broken.py:4:13: invalid-syntax: '(' was never closed\n" in out
        assert "binary.py:1:1: not-checked: binary file (contains NUL bytes)\n" in out
    else:
        assert "invalid-syntax: '(' was never closed\n --> broken.py:4:13\n" in out


def test_a_syntax_error_in_a_notebook_is_placed_in_its_cell(tmp_path: Path) -> None:
    from zerograd_lint.findings import SourceError
    from zerograd_lint.report.errors import diagnostic

    found = diagnostic(SourceError("nb.ipynb", "syntax error at cell 3:2:5: invalid syntax"))
    assert (found.code, found.cell, found.line, found.column, found.message) == ("invalid-syntax", 3, 2, 5, "invalid syntax")


# Issue 19, item 18: the formats of CI servers, validated against their published schemas.

DATA = Path(__file__).parent / "data"


def _junit_valid(text: str) -> None:
    import xmlschema

    xmlschema.XMLSchema(str(DATA / "junit-10.xsd")).validate(text)


def _gitlab_valid(text: str) -> list[dict]:
    schema = json.loads((DATA / "gitlab-codeclimate.json").read_text(encoding="utf-8"))
    report = json.loads(text)
    assert isinstance(report, list)
    for issue in report:
        jsonschema.validators.validator_for(schema)(schema).validate(issue)
        assert issue["check_name"] and issue["severity"] in ("info", "minor", "major", "critical", "blocker")
    return report


def test_junit_of_findings_errors_and_nothing_is_valid(project: Path) -> None:
    Path("broken.py").write_text(BROKEN)
    findings = run("--output-format", "junit", ".").stdout
    _junit_valid(findings)
    assert '<testsuites name="zerograd-lint" tests="6" failures="5" errors="1">' in findings
    assert """<error type="invalid-syntax" message="'(' was never closed">""" in findings
    clean = run("--output-format", "junit", "clean.py").stdout
    _junit_valid(clean)
    assert '<testcase name="No findings" classname="zerograd-lint"/>' in clean


def test_gitlab_is_valid_and_its_fingerprints_are_stable_and_distinct(project: Path) -> None:
    first = _gitlab_valid(run("--output-format", "gitlab", ".").stdout)
    fingerprints = [issue["fingerprint"] for issue in first]
    assert len(set(fingerprints)) == len(fingerprints) == 5
    text = Path("train.py").read_text(encoding="utf-8")
    Path("train.py").write_text("# a line above moves every finding down\n" + text, encoding="utf-8")
    moved = _gitlab_valid(run("--output-format", "gitlab", ".").stdout)
    assert [issue["fingerprint"] for issue in moved] == fingerprints
    assert {i["location"]["path"] for i in moved} == {"train.py", "pkg/step,clear.py", "pkg/accumulate.py"}
    assert {i["severity"] for i in moved} == {"major", "minor"}
