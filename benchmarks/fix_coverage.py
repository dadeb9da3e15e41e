"""How much of what the linter reports `--fix` repairs: over every ZG001-ZG003 finding of the
fixtures, the share fixed safely (`--fix`), fixed with `--unsafe-fixes`, and declined, with the
reasons of the declines, counted.

    python benchmarks/fix_coverage.py [tests/fixtures] [--reasons]

Each single-file fixture is fixed alone, each project folder (`projects/<name>/`) as one
project, as `--fix` would on that folder. Fixed snapshots (`case.fixed.py`) are left out: they
have no finding. The counts are of findings, not files.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import re
from pathlib import Path

from zerograd_lint.checker import check_project
from zerograd_lint.fix import fix_project

CODES = ("ZG001", "ZG002", "ZG003")


def units(root: Path) -> list[dict[str, bytes]]:
    """Each fixture file alone, and each project folder whole."""
    out: list[dict[str, bytes]] = []
    projects = sorted({p.parents[len(p.relative_to(root).parts) - 3] for p in root.rglob("*.py")
                       if "projects" in p.relative_to(root).parts[:-2]})
    for path in sorted(root.rglob("*.py")):
        if path.name.endswith(".fixed.py") or any(path.is_relative_to(p) for p in projects):
            continue
        out.append({str(path): path.read_bytes()})
    for project in projects:
        out.append({str(p): p.read_bytes() for p in sorted(project.rglob("*.py"))})
    return out


def _fix(sources: dict[str, bytes], unsafe: bool):
    result = check_project(sources)
    options = {"unsafe": unsafe} if "unsafe" in inspect.signature(fix_project).parameters else {}
    return fix_project(sources, result, check_project, **options)


def _general(reason: str) -> str:
    """A reason without the names and lines of its case, so that alike reasons count together."""
    reason = re.sub(r"`[^`]*`", "`…`", reason)
    return re.sub(r"\b(line|lines|column) \d+( and \d+)?", r"\1 N", reason)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="tests/fixtures", type=Path)
    parser.add_argument("--reasons", action="store_true", help="list each declined finding with its reason")
    args = parser.parse_args()
    tally: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    listed: list[str] = []
    for sources in units(args.root):
        safe = _fix(sources, unsafe=False)
        unsafe = _fix(sources, unsafe=True)
        safely = {(f.path, f.line, f.column, f.code) for f in safe.fixed if f.code in CODES}
        for finding in unsafe.fixed:
            if finding.code in CODES:
                key = (finding.path, finding.line, finding.column, finding.code)
                tally["safe" if key in safely else "unsafe"] += 1
        for declined in unsafe.declined:
            if declined.finding.code in CODES:
                tally["declined"] += 1
                reasons[_general(declined.reason)] += 1
                listed.append(f"{declined.finding.path}:{declined.finding.line}: {declined.finding.code} "
                              f"{declined.reason}")
    total = sum(tally.values())
    print(f"{total} ZG001-ZG003 findings in {args.root}")
    for kind, label in (("safe", "fixed safely (--fix)"), ("unsafe", "fixed only with --unsafe-fixes"),
                        ("declined", "declined")):
        print(f"  {label:32} {tally[kind]:4}  {tally[kind] / total:6.1%}")
    print(f"  {'fixed with --unsafe-fixes':32} {tally['safe'] + tally['unsafe']:4}  "
          f"{(tally['safe'] + tally['unsafe']) / total:6.1%}")
    if reasons:
        print("declined, by reason:")
        for reason, count in reasons.most_common():
            print(f"  {count:3}  {reason}")
    if args.reasons:
        print("\n".join(listed))


if __name__ == "__main__":
    main()
