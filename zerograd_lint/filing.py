"""The last stage: raw findings filed per file, suppressed by the file's markers and made into
`Finding`s; and the unused markers (ZG100) of files the analysis never looked at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zerograd_lint import checked_loops, rules
from zerograd_lint.codes import RULES
from zerograd_lint.findings import Finding, Related, SourceError
from zerograd_lint.texts import Texts


@dataclass
class Result:
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    errors: dict[str, SourceError] = field(default_factory=dict)
    loops: list[checked_loops.CheckedLoop] = field(default_factory=list)  # asked for: the loops checked


def filed(texts: Mapping[str, str], raws: list[rules.Raw], errors: Mapping[str, SourceError]) -> dict[str, list[Finding]]:
    """The findings of each file of `texts` that is not in `errors`: its raw findings less those
    its markers suppress, and its unused markers."""
    findings = {}
    for path, text in texts.items():
        if path in errors:
            continue
        mine = [raw for raw in raws if raw.path == path]
        kept = rules.suppress(path, mine, rules.scan_markers(text))[0] if mine else rules.unused_markers(path, text)
        findings[path] = sorted(finding(path, raw) for raw in kept)
    return findings


def unused_markers(texts: Texts, paths: Iterable[str]) -> dict[str, list[rules.Raw]]:
    """The ZG100s of the files among `paths` that have some (most have none). A file's bytes tell
    whether it can have any: most are never decoded in a helper."""
    found = {}
    for path in paths:
        data = texts.ascii_bytes(path)
        if (data is None or rules.may_concern_us(data)) and (markers := rules.unused_markers(path, texts[path])):
            found[path] = markers
    return found


def finding(path: str, raw: rules.Raw) -> Finding:
    rule = RULES[raw.code]
    return Finding(
        path=path,
        line=raw.line,
        column=raw.column + 1,
        code=raw.code,
        message=raw.message,
        name=rule.name,
        end_line=raw.line,
        end_column=raw.column + 1 + raw.length,
        related=tuple(
            Related(role, site.path, site.line, site.column + 1, site.text, site.subject) for role, site in raw.related
        ),
    )
