"""`zerograd-lint rule CODE` (or `--all`): a rule's page, or its facts as JSON, as `ruff rule` prints them."""

from __future__ import annotations

import json

import click

from zerograd_lint.cli.options import rule_code
from zerograd_lint.codes import RULES

_FIX = {"Always": "Fix is always available.", "Sometimes": "Fix is sometimes available.", "None": "Fix is not available."}


@click.command("rule", context_settings={"help_option_names": ["-h", "--help"]}, short_help="Explain a rule (or every rule, with --all).")
@click.argument("code", required=False)
@click.option("--all", "every", is_flag=True, help="Explain every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="The rule page as Markdown, or its facts as JSON (name, code, summary, fix, explanation).")
def rule(code: str | None, every: bool, output_format: str) -> None:
    """Explain the rule CODE (ZG001...): what it finds, why it matters, its exceptions and its fix."""
    from zerograd_lint.explain import rule_page  # the package's data: read only here

    if every == (code is not None):
        raise click.UsageError("give a rule code, or --all")
    codes = list(RULES) if every else [rule_code(code, param_hint="CODE")]
    facts = [_facts(c, rule_page(c)) for c in codes]
    if output_format == "json":
        click.echo(json.dumps(facts if every else facts[0], indent=2))
    else:
        click.echo("\n".join(f["explanation"] for f in facts), nl=False)


def _facts(code: str, page: str) -> dict[str, object]:
    described = RULES[code]
    return {"name": described.name, "code": code, "summary": described.summary, "fix": _FIX[described.fix],
            "fix_availability": described.fix, "explanation": page}
