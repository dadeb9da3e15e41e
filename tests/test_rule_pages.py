"""Rule pages (docs/rules/<CODE>.md): one per rule, in ruff's shape, with examples that are true;
`zerograd-lint --explain CODE` prints them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from zerograd_lint import check_source
from zerograd_lint.cli import main
from zerograd_lint.codes import RULES
from zerograd_lint.report.concise import line

PAGES = Path(__file__).parent.parent / "docs" / "rules"
SECTIONS = ["What it does", "Why is this bad?", "Known problems", "Example", "Use instead", "Fix safety", "Options",
            "References"]


def sections(page: str) -> dict[str, str]:
    return dict(re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", page, re.MULTILINE | re.DOTALL))


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def page(code: str) -> str:
    return (PAGES / f"{code}.md").read_text(encoding="utf-8")


def test_every_rule_has_a_page_and_every_page_a_rule() -> None:
    assert sorted(p.stem for p in PAGES.glob("*.md")) == sorted(RULES)


@pytest.mark.parametrize("code", RULES)
def test_page_has_ruffs_shape(code: str) -> None:
    text = page(code)
    assert text.startswith(f"# {RULES[code].name} ({code})\n")
    assert re.findall(r"^## (.+)$", text, re.MULTILINE) == SECTIONS


@pytest.mark.parametrize("code", RULES)
def test_example_produces_the_finding_and_use_instead_none(code: str) -> None:
    parts = sections(page(code))
    [example] = blocks(parts["Example"], "python")
    [use_instead] = blocks(parts["Use instead"], "python")
    assert {f.code for f in check_source(example, "train.py")} == {code}
    assert check_source(use_instead, "train.py") == []


@pytest.mark.parametrize("code", RULES)
def test_the_output_a_page_shows_is_what_its_example_prints(code: str) -> None:
    parts = sections(page(code))
    [shown] = blocks(parts["What it does"], "text")
    [example] = blocks(parts["Example"], "python")
    assert shown == "".join(line(f) + "\n" for f in check_source(example, "train.py"))


@pytest.mark.parametrize("code", RULES)
def test_page_says_what_users_ask(code: str) -> None:
    parts = sections(page(code))
    assert "# zerograd: accumulate" in parts["Known problems"] and "accumulation" in parts["Known problems"]
    assert "unsafe" in parts["Fix safety"]
    assert "`--fix`" in parts["Fix safety"] and "`--diff`" in parts["Fix safety"]
    for key in ("select", "ignore", "per-file-ignores", "vocabulary"):
        assert f"`{key}`" in parts["Options"]
    assert re.search(r"\]\(https://", parts["References"])


@pytest.mark.parametrize("code", RULES)
def test_explain_prints_the_page(code: str) -> None:
    result = CliRunner().invoke(main, ["--explain", code.lower()], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, page(code))


def test_explain_reads_no_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.zerograd-lint]\nselct = []\n")
    result = CliRunner().invoke(main, ["--explain", "ZG003"], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, page("ZG003"))


@pytest.mark.parametrize("code", ["ZG999", "E501", ""])
def test_explain_of_an_unknown_code_is_a_usage_error(code: str) -> None:
    result = CliRunner().invoke(main, ["--explain", code], catch_exceptions=False)
    assert result.exit_code == 2
    assert f"{code!r} is not a rule code (rules: ZG001, ZG002, ZG003, ZG100)" in result.stderr


# Issue 19, item 17: `zerograd-lint rule`, as `ruff rule`.


@pytest.mark.parametrize("code", list(RULES))
def test_rule_prints_the_page(code: str) -> None:
    result = CliRunner().invoke(main, ["rule", code.lower()], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, page(code))


def test_rule_all_as_json_gives_every_rules_facts() -> None:
    import json

    result = CliRunner().invoke(main, ["rule", "--all", "--output-format", "json"], catch_exceptions=False)
    facts = json.loads(result.stdout)
    assert [f["code"] for f in facts] == list(RULES)
    assert all(f["name"] == RULES[f["code"]].name and f["explanation"] == page(f["code"]) for f in facts)
    assert {f["code"]: f["fix_availability"] for f in facts} == {"ZG001": "Sometimes", "ZG002": "Sometimes",
                                                                   "ZG003": "Sometimes", "ZG100": "Always"}
    one = json.loads(CliRunner().invoke(main, ["rule", "ZG002", "--output-format", "json"]).stdout)
    assert one == facts[1]


@pytest.mark.parametrize(("arguments", "said"), [
    (["rule"], "give a rule code, or --all"),
    (["rule", "ZG001", "--all"], "give a rule code, or --all"),
    (["rule", "E501"], "'E501' is not a rule code (rules: ZG001, ZG002, ZG003, ZG100)"),
])
def test_rule_usage_errors_are_one_line(arguments: list[str], said: str) -> None:
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 2 and said in result.stderr and len(result.stderr.splitlines()) == 1
