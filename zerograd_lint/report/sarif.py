"""SARIF 2.1.0, for GitHub code scanning and other viewers: one run, every rule, one result per finding.

Positions are 1-based and columns count Unicode code points (`columnKind`); `endColumn` is one
past the last character, as SARIF defines it. Artifact URIs are relative to the repository root
(`uriBaseId` `%SRCROOT%`), which is how code scanning matches them to the checkout.

A region of a notebook would have to be a region of its JSON text, which no viewer maps back to a
cell; so a finding in a notebook gets ruff's fallback region (line 1, column 1), its message
starts with the cell, line and column, and the result's `properties` carry them as numbers
(`cell`, `cellLine`, `cellColumn`).

Every call the finding is about (the step, an earlier step, the clear, the backward) is one of its
`relatedLocations`, numbered from 1, its message saying its role and its text; a code scanning
alert lists them under the result. One in a notebook gets the same fallback region, and its
message says its cell and line.

A file that could not be checked is a result too (`invalid-syntax` at the error, else
`not-checked`), as ruff reports invalid syntax; those are not rules, so they have no `ruleIndex`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from zerograd_lint import __version__
from zerograd_lint.codes import RULES
from zerograd_lint.findings import Finding, Related
from zerograd_lint.report.context import Context, in_cell, level

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
REPOSITORY = "https://github.com/zerograd-lint/zerograd-lint"  # as [project.urls] in pyproject.toml
RULE_INDEX = {code: index for index, code in enumerate(RULES)}


def help_uri(code: str) -> str:
    return f"{REPOSITORY}/blob/main/docs/rules/{code}.md"


def rule(code: str) -> dict[str, Any]:
    described = RULES[code]
    return {
        "id": code,
        "name": described.name,
        "shortDescription": {"text": described.summary},
        "fullDescription": {
            "text": f"{described.name} ({code}): {described.summary}. "
            f"The rule page explains why, the known exceptions and the fix: {help_uri(code)}"
        },
        "helpUri": help_uri(code),
        "defaultConfiguration": {"level": level(code)},
    }


def result(finding: Finding, context: Context) -> dict[str, Any]:
    found: dict[str, Any] = {
        "ruleId": finding.code,
        **({"ruleIndex": RULE_INDEX[finding.code]} if finding.code in RULE_INDEX else {}),
        "level": level(finding.code),
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": _physical(finding.path, _region(finding), context)}],
    }
    if finding.cell is not None:
        where = in_cell(finding.cell, finding.line, finding.column)
        found["message"] = {"text": f"{where}: {finding.message}"}
        found["properties"] = {"cell": finding.cell, "cellLine": finding.line, "cellColumn": finding.column}
    if finding.related:
        found["relatedLocations"] = [_related(index, site, context) for index, site in enumerate(finding.related, 1)]
    return found


def _related(index: int, site: Related, context: Context) -> dict[str, Any]:
    text = f"{site.role}: {site.text}"
    if site.cell is not None:
        region = {"startLine": 1, "startColumn": 1}
        text = f"{site.role} ({in_cell(site.cell, site.line, site.column)}): {site.text}"
    else:
        region = {"startLine": site.line, "startColumn": site.column}
    return {"id": index, "physicalLocation": _physical(site.path, region, context), "message": {"text": text}}


def _physical(path: str, region: dict[str, int], context: Context) -> dict[str, Any]:
    uri, relative = context.uri(path)
    artifact = {"uri": uri, "uriBaseId": "%SRCROOT%"} if relative else {"uri": uri}
    return {"artifactLocation": artifact, "region": region}


def _region(finding: Finding) -> dict[str, int]:
    if finding.cell is not None:
        return {"startLine": 1, "startColumn": 1}
    return {
        "startLine": finding.line,
        "startColumn": finding.column,
        "endLine": finding.end_line,
        "endColumn": finding.end_column,
    }


def render(findings: Sequence[Finding], context: Context = Context()) -> str:
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "zerograd-lint",
                        "version": __version__,
                        "informationUri": REPOSITORY,
                        "rules": [rule(code) for code in RULES],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [result(f, context) for f in findings],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
