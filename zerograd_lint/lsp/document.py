"""One document, checked as the command line would check it: no pygls here, no I/O but the
configuration.

The configuration is the one `zerograd-lint` would use for the document's file: the nearest
pyproject.toml with a `[tool.zerograd-lint]` table above it (its selection, per-file ignores,
vocabulary and excludes). A document its `exclude`/`extend-exclude` patterns exclude is not
checked, as with `--force-exclude`. The document is checked as part of its project, as a file
named on the command line is (`zerograd_lint.files.beside`): the files beside it that its analysis
needs are read from disk, the document's own file never (its text is the buffer's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zerograd_lint.config import Config, ConfigError, find_config
from zerograd_lint.files import DEFAULT_EXCLUDE, FileSelection
from zerograd_lint.findings import Finding
from zerograd_lint.report.errors import diagnostics
from zerograd_lint.runner import Buffer, NotChecked, check_files, fix_files


@dataclass(frozen=True)
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    problem: str | None = None  # why the document could not be checked (a syntax error mid-edit, ...)
    bad_configuration: bool = False  # the problem is the configuration, not the document


def check_document(path: str, source: str) -> Outcome:
    """The findings of `source`, checked as the file at `path` (which is not read). A document that
    cannot be checked (a syntax error mid-edit) gets that as a diagnostic, `invalid-syntax` at the
    error, as ruff's server shows it, and the reason as its `problem`."""
    try:
        config, selection = _setup(path)
    except (ConfigError, OSError) as exc:
        return Outcome(problem=str(exc), bad_configuration=True)
    if selection.is_excluded(path):
        return Outcome()
    try:
        report = check_files([Buffer(path, source)], config.settings(), named=[path], selection=selection)
    except NotChecked as exc:  # the project's analysis failed: said, and no diagnostics rather than other ones
        return Outcome(problem=str(exc))
    if report.errors:
        problem = f"{report.errors[0].path}: {report.errors[0].reason}"
        return Outcome(sorted([*report.findings, *diagnostics(report.errors)]), problem=problem)
    return Outcome(sorted(report.findings))


def fixed_findings(path: str, source: str) -> list[Finding]:
    """The findings of `source` that `zerograd-lint --fix` would fix, each with its edits (the
    document's quick fixes); none for a document excluded or not checked."""
    try:
        config, selection = _setup(path)
    except (ConfigError, OSError):
        return []
    if selection.is_excluded(path):
        return []
    try:
        report = fix_files([Buffer(path, source)], config.settings(), named=[path], selection=selection)
    except NotChecked:
        return []
    return report.fixes.fixed if report.fixes is not None else []


def _setup(path: str) -> tuple[Config, FileSelection]:
    config = find_config([path])
    options = config.options
    selection = FileSelection(config.root, tuple(options.get("exclude", DEFAULT_EXCLUDE)),
                              tuple(options.get("extend_exclude", ())), options.get("respect_gitignore", True),
                              force_exclude=True)
    return config, selection
