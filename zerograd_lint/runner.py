"""Check many files: discovery, reading, notebooks, per-file errors, selection. No printing, no exiting.

Every source of a run goes to the core in one `check_project` call, so a loop in one file that
calls a training step in another is followed. A notebook goes in as the Python of its code cells
(`zerograd_lint.notebook`) and its findings come back placed in their cells.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from zerograd_lint.files import Missing, discover, read_source
from zerograd_lint.findings import Finding, SourceError
from zerograd_lint.notebook import Index, NotANotebook, is_notebook, read_notebook
from zerograd_lint.settings import Settings


@dataclass(frozen=True)
class Buffer:
    """Text to check as if it were the file at `path`, which is never read: standard input (bytes,
    decoded as a file's would be), or an editor's buffer (text, already decoded)."""

    path: str
    content: str | bytes


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    files: int = 0


def check_paths(paths: Iterable[str], settings: Settings = Settings()) -> Report:
    """Check every Python file and notebook under `paths`; unreadable or unparsable files become errors."""
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


def check_files(files: Iterable[str | Buffer], settings: Settings = Settings()) -> Report:
    """Check these files (already discovered; a `Buffer` stands for a file whose text is given)
    as one project. Unreadable or unparsable files become errors."""
    from zerograd_lint.checker import check_project

    report = Report()
    sources: dict[str, str | bytes] = {}
    notebooks: dict[str, Index] = {}
    for item in files:
        report.files += 1
        path = item.path if isinstance(item, Buffer) else item
        try:
            content = item.content if isinstance(item, Buffer) else read_source(path)
        except OSError as exc:
            report.errors.append(SourceError(path, f"cannot read: {exc.strerror or exc}"))
            continue
        if not is_notebook(path):
            sources[path] = content
            continue
        try:
            notebook = read_notebook(content)
        except NotANotebook as exc:
            report.errors.append(SourceError(path, str(exc)))
            continue
        sources[path], notebooks[path] = notebook.source, notebook.index
    try:
        results = [check_project(sources, settings.vocabulary)]
    except Exception:  # an internal error: check file by file so it costs one file, not the run
        results = [_check_alone(path, source, settings) for path, source in sources.items()]
    for result in results:
        for path, error in result.errors.items():
            report.errors.append(notebooks[path].place_error(error) if path in notebooks else error)
        for path, found in result.findings.items():
            placed = [notebooks[path].place(f) for f in found] if path in notebooks else found
            report.findings.extend(f for f in placed if settings.reports(path, f.code))
    return report


def _check_alone(path: str, source: str | bytes, settings: Settings):
    from zerograd_lint.checker import Result, check_project

    try:
        return check_project({path: source}, settings.vocabulary)
    except (RecursionError, MemoryError) as exc:
        error = SourceError(path, f"too large or deeply nested to analyse ({type(exc).__name__})")
    except Exception as exc:
        error = SourceError(path, f"internal error: {type(exc).__name__}: {exc}")
    return Result(errors={path: error})
