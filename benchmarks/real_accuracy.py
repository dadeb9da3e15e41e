"""Score the linter on the labelled real-world loops: precision and recall per code.

    python benchmarks/real/materialize.py --mirrors MIRRORS --out SNAPSHOTS
    python benchmarks/real_accuracy.py SNAPSHOTS [--tsv FILE ...] [--linter CMD] [--json OUT]

The rows (default: every benchmarks/real/*.tsv; columns repo, commit, path, line, expected,
reason) say what a careful reader found at a loop: `quiet`, or the codes it must get. In a
notebook the line is `cell N:L`, as the linter places a finding there (the N-th cell, counting
every cell from 1, and the line in it). Each
snapshot, SNAPSHOTS/<owner>+<name>@<first 12 hex of the commit>/, is checked WHOLE, as its users
would check it: `<linter> . --output-format json --no-cache --exit-zero` with the snapshot as the
working directory. `--linter` is a command line (default: this Python's `-m zerograd_lint`), so an
older installed version can be scored for a "before" table.

At each row's (path, line): a code expected and reported is a true positive, expected and not
reported a false negative, reported and not expected a false positive (a `quiet` row counts one for
each code reported there). Printed: the table per code and for all codes together, every
disagreement on one line (`FN ZG001 owner/name@abc123def456 path:line  reason`), and the findings in
labelled files at lines no row labels, to be read. Snapshots run in sequence, progress on stderr,
exit 0. Standard library only (plus the linter it runs).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

TABLES = Path(__file__).parent / "real"
CODES = ("ZG001", "ZG002", "ZG003")
HEADER = ("repo", "commit", "path", "line", "expected", "reason")
PLACE = re.compile(r"[0-9]+|cell [0-9]+:[0-9]+")  # a line, or a line in a notebook's cell


@dataclass(frozen=True)
class Row:
    repo: str
    commit: str
    path: str
    line: str  # `14`, or `cell 3:14` in a notebook
    expected: tuple[str, ...]  # empty: quiet
    reason: str
    source: str  # table:line, for messages about the row itself

    @property
    def snapshot(self) -> str:
        return f"{self.repo.replace('/', '+')}@{self.commit[:12]}"

    @property
    def where(self) -> str:
        return f"{self.repo}@{self.commit[:12]} {self.path}:{self.line}"


@dataclass(frozen=True)
class Finding:
    code: str
    path: str
    line: str  # as a row writes it
    message: str


@dataclass(frozen=True)
class Disagreement:
    kind: str  # FN or FP
    code: str
    where: str
    reason: str
    message: str  # the linter's, for a false positive

    def __str__(self) -> str:
        text = f"{self.kind} {self.code} {self.where}  {self.reason}"
        return f"{text}  [linter: {self.message}]" if self.message else text


def parse_expected(text: str) -> tuple[str, ...] | None:
    if text == "quiet":
        return ()
    codes = tuple(code.strip() for code in text.split(","))
    return codes if all(code in CODES for code in codes) else None


def read_rows(tables: list[Path]) -> list[Row]:
    """The rows of the tables; a malformed or repeated row is named on stderr and left out."""
    rows: dict[tuple[str, str, str, str], Row] = {}
    for table in tables:
        lines = table.read_text(encoding="utf-8").splitlines()
        if not lines or tuple(lines[0].split("\t")) != HEADER:
            print(f"{table}:1: the header must be {' '.join(HEADER)} (tab-separated); table skipped", file=sys.stderr)
            continue
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip() or line.startswith("#"):
                continue
            source = f"{table.name}:{number}"
            fields = line.split("\t")
            expected = parse_expected(fields[4].strip()) if len(fields) == len(HEADER) else None
            if expected is None or not PLACE.fullmatch(fields[3].strip()) or len(fields[1].strip()) != 40:
                print(f"{source}: malformed row (6 fields, a full commit, a line, quiet or codes); skipped",
                      file=sys.stderr)
                continue
            repo, commit, path, place, _, reason = (field.strip() for field in fields)
            row = Row(repo, commit, str(PurePosixPath(path)), place, expected, reason, source)
            key = (repo, commit, row.path, row.line)
            if key in rows:
                print(f"{source}: {row.where} is labelled already at {rows[key].source}; skipped", file=sys.stderr)
                continue
            rows[key] = row
    return list(rows.values())


def relative(path: str, snapshot: Path) -> str:
    if Path(path).is_absolute():
        path = Path(path).resolve().relative_to(snapshot.resolve()).as_posix()
    return str(PurePosixPath(path))


def run_linter(linter: list[str], snapshot: Path) -> list[Finding]:
    """The linter's findings on the whole snapshot; its errors (exit 2, unparsable files) on stderr."""
    done = subprocess.run(
        [*linter, ".", "--output-format", "json", "--no-cache", "--exit-zero"],
        cwd=snapshot, capture_output=True, text=True,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        print(f"  the linter exited {done.returncode}: {' | '.join(tail)}", file=sys.stderr)
    try:
        reported = json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        print(f"  the linter's output is not JSON: {done.stdout[:200]!r}", file=sys.stderr)
        return []
    return [
        Finding(item["code"], relative(item["path"], snapshot),
                f"cell {item['cell']}:{item['line']}" if item.get("cell") else str(item["line"]),
                item.get("message", ""))
        for item in reported
    ]


@dataclass
class Score:
    counts: dict[str, Counter]  # code -> Counter(TP=, FP=, FN=)
    disagreements: list[Disagreement]
    unlabelled: list[str]
    unscored: list[str]


def score(rows: list[Row], findings_by_snapshot: dict[str, list[Finding]]) -> Score:
    counts = {code: Counter(TP=0, FP=0, FN=0) for code in CODES}
    disagreements: list[Disagreement] = []
    unlabelled: list[str] = []
    unscored: list[str] = []
    rows_by_snapshot: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        rows_by_snapshot[row.snapshot].append(row)
    for snapshot, its_rows in rows_by_snapshot.items():
        if snapshot not in findings_by_snapshot:
            unscored += [f"{row.where}  ({row.source}: no snapshot)" for row in its_rows]
            continue
        reported: dict[tuple[str, str], dict[str, Finding]] = defaultdict(dict)
        for finding in findings_by_snapshot[snapshot]:
            reported[finding.path, finding.line].setdefault(finding.code, finding)
        for row in its_rows:
            here = reported.get((row.path, row.line), {})
            for code in row.expected:
                if code in here:
                    counts[code]["TP"] += 1
                else:
                    counts[code]["FN"] += 1
                    disagreements.append(Disagreement("FN", code, row.where, row.reason, ""))
            for code, finding in sorted(here.items()):
                if code not in row.expected:
                    counts.setdefault(code, Counter(TP=0, FP=0, FN=0))["FP"] += 1
                    disagreements.append(Disagreement("FP", code, row.where, row.reason, finding.message))
        labelled_lines = {(row.path, row.line) for row in its_rows}
        labelled_files = {row.path for row in its_rows}
        repo_at = its_rows[0].where.split(" ")[0]
        for finding in sorted(findings_by_snapshot[snapshot], key=lambda f: (f.path, _order(f.line), f.code)):
            if finding.path in labelled_files and (finding.path, finding.line) not in labelled_lines:
                unlabelled.append(f"{finding.code} {repo_at} {finding.path}:{finding.line}  {finding.message}")
    return Score(counts, disagreements, unlabelled, unscored)


def _order(place: str) -> tuple[int, ...]:
    return tuple(int(number) for number in re.findall(r"[0-9]+", place))


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "-"


def table(counts: dict[str, Counter]) -> list[str]:
    total = sum(counts.values(), Counter())
    lines = [f"{'code':<6} {'precision':>9} {'recall':>7} {'TP':>5} {'FP':>5} {'FN':>5}"]
    for name, count in [*sorted(counts.items()), ("all", total)]:
        tp, fp, fn = count["TP"], count["FP"], count["FN"]
        lines.append(f"{name:<6} {ratio(tp, tp + fp):>9} {ratio(tp, tp + fn):>7} {tp:>5} {fp:>5} {fn:>5}")
    return lines


def report(rows: list[Row], result: Score) -> str:
    expected = Counter(",".join(row.expected) or "quiet" for row in rows)
    lines = [f"{len(rows)} rows ({', '.join(f'{n} {label}' for label, n in sorted(expected.items()))})", ""]
    lines += table(result.counts)
    lines += ["", f"disagreements ({len(result.disagreements)}):"]
    lines += [f"  {item}" for item in sorted(result.disagreements, key=lambda d: (d.kind, d.code, d.where))]
    lines += ["", f"findings in labelled files at lines no row labels ({len(result.unlabelled)}):"]
    lines += [f"  {item}" for item in result.unlabelled]
    if result.unscored:
        lines += ["", f"rows not scored ({len(result.unscored)}):"]
        lines += [f"  {item}" for item in result.unscored]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshots", type=Path, help="folder of <owner>+<name>@<12 hex> snapshots")
    parser.add_argument("--tsv", type=Path, action="append", default=[],
                        help="a labelled table (repeatable; default: every benchmarks/real/*.tsv)")
    parser.add_argument("--linter", default=shlex.join([sys.executable, "-m", "zerograd_lint"]),
                        help="the command that runs the linter (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="also write the counts and disagreements to this file")
    args = parser.parse_args(argv)

    rows = read_rows(args.tsv or sorted(TABLES.glob("*.tsv")))
    linter = shlex.split(args.linter)
    snapshots = list(dict.fromkeys(row.snapshot for row in rows))
    findings_by_snapshot: dict[str, list[Finding]] = {}
    for number, snapshot in enumerate(snapshots, start=1):
        folder = args.snapshots / snapshot
        if not folder.is_dir():
            print(f"[{number}/{len(snapshots)}] {snapshot}: not in {args.snapshots} "
                  "(run benchmarks/real/materialize.py)", file=sys.stderr)
            continue
        started = time.perf_counter()
        findings_by_snapshot[snapshot] = run_linter(linter, folder)
        print(f"[{number}/{len(snapshots)}] {snapshot}: {len(findings_by_snapshot[snapshot])} findings, "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)

    result = score(rows, findings_by_snapshot)
    print(report(rows, result))
    if args.json:
        args.json.write_text(json.dumps({
            "linter": args.linter,
            "counts": {code: dict(count) for code, count in result.counts.items()},
            "disagreements": [asdict(item) for item in result.disagreements],
            "unlabelled": result.unlabelled,
            "unscored": result.unscored,
        }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
