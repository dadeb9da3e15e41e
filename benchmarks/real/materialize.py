"""Extract the snapshots the labelled real-world loops are about, from local git mirrors.

    python benchmarks/real/materialize.py --mirrors MIRRORS --out SNAPSHOTS [TSV ...]

For each distinct (repo, commit) in the TSVs (default: every benchmarks/real/*.tsv), the tree of
that commit is extracted from the git directory MIRRORS/<owner>+<name>/repo into
SNAPSHOTS/<owner>+<name>@<first 12 hex of the commit>/. A snapshot already there is skipped; one
whose repository or commit is not in MIRRORS is named in one line on stderr, and the others go on.
A tree is extracted into a temporary folder beside it and renamed when whole, so an interrupted
run leaves no half snapshot that a later run would skip. Exit 0 when every snapshot is there,
1 otherwise. Standard library and the git command only.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

TABLES = Path(__file__).parent


def snapshot_name(repo: str, commit: str) -> str:
    return f"{repo.replace('/', '+')}@{commit[:12]}"


def snapshots_named(tables: list[Path]) -> list[tuple[str, str]]:
    """The distinct (repo, commit) pairs of the tables' rows, in the order they first appear."""
    pairs: dict[tuple[str, str], None] = {}
    for table in tables:
        lines = table.read_text(encoding="utf-8").splitlines()
        for line in lines[1:]:
            if not line.strip() or line.startswith("#"):
                continue
            repo, commit, *_ = line.split("\t")
            pairs[repo.strip(), commit.strip()] = None
    return list(pairs)


def has_commit(git_dir: Path, commit: str) -> bool:
    found = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
    )
    return found.returncode == 0


def extract(git_dir: Path, commit: str, into: Path) -> None:
    """Write the tree of `commit` into the folder `into`, which must not exist yet."""
    into.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{into.name}.", dir=into.parent))
    try:
        archive = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "archive", "--format=tar", commit],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(partial, filter="data")
            else:
                tar.extractall(partial)
        error = archive.stderr.read().decode(errors="replace").strip()
        if archive.wait() != 0:
            raise RuntimeError(error.splitlines()[-1] if error else f"git archive exited {archive.returncode}")
        partial.rename(into)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def materialize(mirrors: Path, out: Path, pairs: list[tuple[str, str]]) -> int:
    """Extract every snapshot missing from `out`; the number that could not be made."""
    missing = 0
    for repo, commit in pairs:
        into = out / snapshot_name(repo, commit)
        if into.is_dir():
            print(f"{into.name}: already there", file=sys.stderr)
            continue
        git_dir = mirrors / repo.replace("/", "+") / "repo"
        if not git_dir.is_dir():
            print(f"{repo}: no mirror at {git_dir} (fetch github:{repo} first)", file=sys.stderr)
            missing += 1
            continue
        if not has_commit(git_dir, commit):
            print(f"{repo}: commit {commit} is not in {git_dir}", file=sys.stderr)
            missing += 1
            continue
        try:
            extract(git_dir, commit, into)
        except (OSError, RuntimeError, tarfile.TarError) as error:
            print(f"{repo}@{commit[:12]}: could not extract: {error}", file=sys.stderr)
            missing += 1
            continue
        print(f"{into.name}: extracted", file=sys.stderr)
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True,
                        help="folder of git directories, as <owner>+<name>/repo")
    parser.add_argument("--out", type=Path, required=True, help="folder of the snapshots")
    parser.add_argument("tables", nargs="*", type=Path,
                        help="labelled TSV files (default: every benchmarks/real/*.tsv)")
    args = parser.parse_args(argv)
    tables = args.tables or sorted(TABLES.glob("*.tsv"))
    missing = materialize(args.mirrors, args.out, snapshots_named(tables))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
