"""Do two versions of zerograd-lint say the same of the same trees? For a change meant to keep
behaviour (a refactoring, a speed-up), every finding and every error must stay byte for byte.

    python benchmarks/same_findings.py --before "OLD-VENV/bin/zerograd-lint" TREE...
    python benchmarks/same_findings.py --before CMD --after CMD --each FOLDER   # each subfolder a tree

Each tree is checked whole, with `--no-cache --output-format json`, by both commands; the findings
(every field, related sites included) and the lines on standard error (the files that could not
be checked) are compared as sets. The script prints one line per tree and every difference, and
exits 1 if there is any. `--after` defaults to the `zerograd-lint` beside this Python (the version
installed here). Install the version before into a venv of its own: `pip install .` from a
checkout of the commit to compare against.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path


# Fields a version before may lack: its findings are compared without them. `related` came with
# issue 19 (the calls a finding is about were until then named only in its message).
NEWER_FIELDS = ("related",)


def said(command: list[str], tree: Path) -> tuple[list[dict], set[str]]:
    """The findings and the error lines of one run on `tree`."""
    with tempfile.TemporaryDirectory() as empty:  # no cache, no config but the tree's own
        done = subprocess.run(
            [*command, "--no-cache", "--output-format", "json", str(tree.resolve())],
            capture_output=True, text=True, cwd=empty,
        )
    errors = {line for line in done.stderr.splitlines() if line.strip()}
    try:  # exit 2 (a file that could not be checked) still prints the others' findings
        found = json.loads(done.stdout or "[]")
    except ValueError:
        return [], {f"exit {done.returncode}: {done.stderr.strip()}"}
    # a file not checked is a diagnostic too since issue 19 (`invalid-syntax`, `not-checked`): it is
    # compared through its error line, which every version prints
    return [f for f in found if f["code"].startswith("ZG")], {f"exit {done.returncode}", *errors}


def canonical(findings: list[dict], lacking: set[str]) -> set[str]:
    """Each finding as canonical JSON, without the fields the other version lacks."""
    return {json.dumps({k: v for k, v in f.items() if k not in lacking}, sort_keys=True) for f in findings}


def compare(before: list[str], after: list[str], tree: Path) -> list[str]:
    (old, old_errors), (new, new_errors) = said(before, tree), said(after, tree)
    lacking = {k for k in NEWER_FIELDS if any(k not in f for f in old + new)}
    old_findings, new_findings = canonical(old, lacking), canonical(new, lacking)
    differences = []
    for kind, was, now in (("finding", old_findings, new_findings), ("error", old_errors, new_errors)):
        differences += [f"  - {kind} {item}" for item in sorted(was - now)]
        differences += [f"  + {kind} {item}" for item in sorted(now - was)]
    return differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--before", required=True, help="the command of the version before")
    parser.add_argument("--after", default=str(Path(sys.executable).with_name("zerograd-lint")),
                        help="the command of the version after (default: the one installed here)")
    parser.add_argument("--each", type=Path, action="append", default=[],
                        help="a folder whose every subfolder is a tree (repeatable)")
    args = parser.parse_args()
    trees = list(args.trees) + [sub for folder in args.each for sub in sorted(folder.iterdir()) if sub.is_dir()]
    if not trees:
        parser.error("no tree given")
    before, after = shlex.split(args.before), shlex.split(args.after)
    changed = 0
    for tree in trees:
        differences = compare(before, after, tree)
        print(f"{'DIFFERS' if differences else 'same':8} {tree}")
        for line in differences:
            print(line)
        changed += bool(differences)
    print(f"{len(trees) - changed} of {len(trees)} trees the same")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
