"""Check many files: discovery, reading, per-file errors, selection. No printing, no exiting."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from zerograd_lint.files import Missing, discover, read_source
from zerograd_lint.findings import Finding, SourceError
from zerograd_lint.settings import Settings


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    files: int = 0


def check_paths(paths: Iterable[str], settings: Settings = Settings()) -> Report:
    """Check every Python file under `paths`; unreadable or unparsable files become errors."""
    files: list[str] = []
    missing: list[SourceError] = []
    for item in discover(paths):
        if isinstance(item, Missing):
            missing.append(SourceError(item.path, "no such file or directory"))
        else:
            files.append(item)
    report = check_files(files, settings)
    report.errors[:0] = missing
    return report


def check_files(files: Iterable[str], settings: Settings = Settings()) -> Report:
    """Check these files (already discovered) as one project: a loop in one file that calls a
    training step in another is followed. Unreadable or unparsable files become errors."""
    from zerograd_lint.checker import check_project

    report = Report()
    sources: dict[str, bytes] = {}
    for path in files:
        report.files += 1
        try:
            sources[path] = read_source(path)
        except OSError as exc:
            report.errors.append(SourceError(path, f"cannot read: {exc.strerror or exc}"))
    try:
        results = [check_project(sources, settings.vocabulary)]
    except Exception:  # an internal error: check file by file so it costs one file, not the run
        results = [_check_alone(path, source, settings) for path, source in sources.items()]
    for result in results:
        report.errors.extend(result.errors.values())
        for path, found in result.findings.items():
            report.findings.extend(f for f in found if settings.reports(path, f.code))
    return report


def _check_alone(path: str, source: bytes, settings: Settings):
    from zerograd_lint.checker import Result, check_project

    try:
        return check_project({path: source}, settings.vocabulary)
    except (RecursionError, MemoryError) as exc:
        error = SourceError(path, f"too large or deeply nested to analyse ({type(exc).__name__})")
    except Exception as exc:
        error = SourceError(path, f"internal error: {type(exc).__name__}: {exc}")
    return Result(errors={path: error})
