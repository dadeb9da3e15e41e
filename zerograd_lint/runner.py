"""Check many files: discovery, reading, per-file errors, selection. No printing, no exiting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from zerograd_lint.files import Missing, discover, read_source
from zerograd_lint.findings import Finding, SourceError
from zerograd_lint.rules import RULES


@dataclass(frozen=True)
class Selection:
    """Which codes to report: prefixes, as ruff and flake8 take them (`ZG`, `ZG0`, `ZG001`)."""

    select: tuple[str, ...] = ("ZG",)
    ignore: tuple[str, ...] = ()

    def __contains__(self, code: str) -> bool:
        def best(prefixes: Sequence[str]) -> int:
            return max((len(p) for p in prefixes if code.startswith(p)), default=-1)

        chosen, dropped = best(self.select), best(self.ignore)
        return chosen >= 0 and chosen > dropped


def unknown_prefixes(prefixes: Iterable[str]) -> list[str]:
    return [p for p in prefixes if not any(code.startswith(p) for code in RULES)]


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    files: int = 0


def check_paths(paths: Iterable[str], selection: Selection = Selection()) -> Report:
    """Check every Python file under `paths`; unreadable or unparsable files become errors."""
    from zerograd_lint.checker import check_source

    report = Report()
    for item in discover(paths):
        if isinstance(item, Missing):
            report.errors.append(SourceError(item.path, "no such file or directory"))
            continue
        report.files += 1
        try:
            source = read_source(item)
            found = check_source(source, item)
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
        report.findings.extend(f for f in found if f.code in selection)
    return report
