"""Is the fix hint true? For each tree, what a check says `--fix` has fixes for (`[*] N fixable`,
and the hidden fixes) against what `--diff` of the same tree says it would fix, with the
declines `--diff` gives for findings the hint counted; and the wall time the hint costs.

    python benchmarks/fix_hint.py TREE...            # e.g. the snapshots of benchmarks/real/
    python benchmarks/fix_hint.py --each FOLDER      # every folder in FOLDER, one tree each

The hint counts a fix once it is planned and its file, fixed, parses and differs from the
original by the intended statements only; `--diff` then checks the fixed project again. A tree
where the two differ is listed with the reasons `--diff` gave. Each command runs as
`zerograd-lint --isolated --no-cache`, from the tree's parent.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HINT = re.compile(r"^(?:\[\*\] (\d+) fixable with the `--fix` option|No fixes available)"
                  r"(?: \((?:(\d+) hidden fix(?:es)? can be enabled[^;)]*)?.*\))?\.$")
WOULD_FIX = re.compile(r"^Would fix (\d+) findings?.*?(?:; (\d+) hidden fix(?:es)? can be enabled.*)?$")
DECLINED = re.compile(r": (ZG\d{3}) not fixed: (.*)$")


def run(lint: list[str], *args: str, cwd: Path) -> tuple[str, float]:
    start = time.perf_counter()
    done = subprocess.run([*lint, "--isolated", "--no-cache", *args], cwd=cwd, capture_output=True, text=True,
                          check=False)
    return done.stderr, time.perf_counter() - start


def hinted(stderr: str) -> tuple[int, int]:
    for line in stderr.splitlines():
        if match := HINT.match(line):
            return int(match[1] or 0), int(match[2] or 0)
    return 0, 0


def would_fix(stderr: str) -> tuple[int, int]:
    match = WOULD_FIX.match(stderr.splitlines()[-1]) if stderr else None
    return (int(match[1]), int(match[2] or 0)) if match else (0, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--each", type=Path, action="append", default=[], help="every folder in it, one tree each")
    parser.add_argument("--linter", default=str(Path(sys.executable).with_name("zerograd-lint")))
    args = parser.parse_args()
    trees = [*args.trees, *(p for folder in args.each for p in sorted(folder.iterdir()) if p.is_dir())]
    lint = args.linter.split()
    agree = hinted_total = fixed_total = 0
    costs: list[float] = []
    for tree in trees:
        tree = tree.resolve()
        checked, with_hint = run(lint, tree.name, cwd=tree.parent)
        _, quiet = run(lint, "-q", "--exit-zero", tree.name, cwd=tree.parent)
        hint = hinted(checked)
        if hint == (0, 0) and "Found" not in checked:
            continue  # no findings: no hint, nothing to fix
        diffed, _ = run(lint, "--diff", tree.name, cwd=tree.parent)
        fixed = would_fix(diffed)
        costs.append(with_hint - quiet)
        hinted_total += hint[0]
        fixed_total += fixed[0]
        if hint == fixed:
            agree += 1
            print(f"same      {tree.name}: {hint[0]} fixable, {hint[1]} hidden")
            continue
        print(f"DIFFERENT {tree.name}: hint {hint[0]} fixable, {hint[1]} hidden; --diff fixes {fixed[0]}, "
              f"{fixed[1]} hidden")
        for line in diffed.splitlines():
            if match := DECLINED.search(line):
                print(f"    {match[1]} {match[2]}")
    print(f"\n{agree} of {len(costs)} trees with findings agree; the hints say {hinted_total} fixable, "
          f"--diff fixes {fixed_total}")
    if costs:
        costs.sort()
        print(f"what the hint costs (a check with it, less one with -q), median {costs[len(costs) // 2]:+.2f} s, "
              f"largest {costs[-1]:+.2f} s")


if __name__ == "__main__":
    main()
