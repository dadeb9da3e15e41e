"""`--fix` on real trees: it changes only what it reports, and a second `--fix` changes nothing.

    python benchmarks/fix_idempotence.py TREE [TREE ...] [--safe-only] [--zerograd-lint PATH]

Each tree is copied to a temporary folder (the original is never touched) and fixed there twice
through the command line (`--fix --unsafe-fixes --no-cache`, or `--fix` alone with
`--safe-only`). Printed per tree: the files, the findings before, the findings declined, the
files the first run changed, those of them that had no finding and are no helper a fix edits
for a finding elsewhere (must be none: correct code untouched), and the files the second run
changed (must be none: idempotence).
Exits 1 if either must-be-0 count is not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCES = ("*.py", "*.pyi", "*.ipynb")


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for pattern in SOURCES for p in root.rglob(pattern) if p.is_file()}


def run(command: list[str], root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=1800)


def fix_tree(tree: Path, lint: str, fix: list[str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / tree.name
        shutil.copytree(tree, root, symlinks=False, ignore=shutil.ignore_patterns(".git", ".zerograd_cache"),
                        ignore_dangling_symlinks=True)
        before = run([lint, "--no-cache", "--output-format", "json", "--exit-zero", "."], root)
        findings = json.loads(before.stdout or "[]")
        reported = {Path(f["path"]) for f in findings}
        original = digests(root)
        first = run([lint, *fix, "--no-cache", "--exit-zero", "."], root)
        once = digests(root)
        run([lint, *fix, "--no-cache", "--exit-zero", "."], root)  # a second fix, of what the first left
        twice = digests(root)
        changed = sorted(path for path in once if once[path] != original.get(path))
        declined = [line for line in first.stderr.splitlines() if " not fixed: " in line]
        return {
            "tree": tree.name,
            "files": len(original),
            "findings": len(findings),
            "declined": len(declined),
            "changed": len(changed),
            "changed without a finding": [p for p in changed if Path(p) not in reported | _helpers_edited(tree)],
            "changed again": sorted(path for path in twice if twice[path] != once.get(path)),
            "summary": first.stderr.strip().splitlines()[-1] if first.stderr.strip() else "",
        }


def _helpers_edited(tree: Path) -> set[Path]:
    """The files fixes edit for a finding in another file (the helper a loop calls), relative to
    the tree: worked out through the API, over the tree's Python files as one project."""
    from zerograd_lint.checker import check_project
    from zerograd_lint.fix import fix_project

    sources: dict[str, str | bytes] = {str(p): p.read_bytes() for p in tree.rglob("*.py") if p.is_file()}
    fixes = fix_project(sources, check_project(sources), check_project, unsafe=True)
    return {Path(f.fix.path).relative_to(tree) for f in fixes.fixed if f.fix is not None and f.fix.path}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--safe-only", action="store_true")
    parser.add_argument("--zerograd-lint", default=shutil.which("zerograd-lint") or "zerograd-lint")
    args = parser.parse_args()
    fix = ["--fix"] if args.safe_only else ["--fix", "--unsafe-fixes"]
    failed = False
    for tree in args.trees:
        outcome = fix_tree(tree.resolve(), args.zerograd_lint, fix)
        failed |= bool(outcome["changed without a finding"] or outcome["changed again"])
        print(json.dumps(outcome))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
