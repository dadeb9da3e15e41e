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
    """Check these files (already discovered); unreadable or unparsable files become errors."""
    from zerograd_lint.checker import check_source

    report = Report()
    for item in files:
        report.files += 1
        try:
            source = read_source(item)
            found = check_source(source, item, settings.vocabulary)
        except SourceError as exc:
            report.errors.append(exc)
            continue
        except OSError as exc:
            report.errors.append(SourceError(item, f"cannot read: {exc.strerror or exc}"))
            continue
        except (RecursionError, MemoryError) as exc:
            report.errors.append(SourceError(item, f"too large or deeply nested to analyse ({type(exc).__name__})"))
            continue
        except Exception as exc:  # an internal error must not stop the other files
            report.errors.append(SourceError(item, f"internal error: {type(exc).__name__}: {exc}"))
            continue
        report.findings.extend(f for f in found if settings.reports(item, f.code))
    return report
