"""Extract the snapshots the labelled real-world loops are about, from local git mirrors.

    python benchmarks/real/materialize.py --mirrors MIRRORS --out SNAPSHOTS [TSV ...]

For each distinct (repo, commit) in the TSVs (default: every benchmarks/real/*.tsv), the tree of
that commit is extracted from the git directory MIRRORS/<owner>+<name>/repo into
SNAPSHOTS/<owner>+<name>@<first 12 hex of the commit>/. A snapshot already there is skipped; one
whose repository or commit is not in MIRRORS is named in one line on stderr, and the others go on.
A tree is extracted into a temporary folder beside it and renamed when whole, so an interrupted
run leaves no half snapshot that a later run would skip. Files the mirror lists without holding
them (the `fetch` tool leaves out a repository's largest files) are left out and counted. Exit 0
when every snapshot is there, 1 otherwise. Standard library and the git command only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

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


def blobs(git_dir: Path, commit: str) -> list[tuple[str, str, str]]:
    """(mode, object id, path) of every file in the tree of `commit`; submodules are left out."""
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--full-tree", commit],
        capture_output=True, check=True,
    ).stdout
    found = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, object_id = meta.decode().split()
        if kind == "blob":
            found.append((mode, object_id, path.decode("utf-8", "surrogateescape")))
    return found


def write_blobs(git_dir: Path, files: list[tuple[str, str, str]], into: Path) -> int:
    """Write the files under `into` through one `git cat-file --batch`; the number absent from the mirror.

    A mirror may list its largest files without holding them (`git archive` then fails for the whole
    tree): those are left out. A symbolic link is made only when it points inside the snapshot.
    """
    reader = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    asking = threading.Thread(target=ask_for, args=(reader.stdin, [object_id for _, object_id, _ in files]))
    asking.start()
    absent = 0
    for mode, _, path in files:
        header = reader.stdout.readline().split()
        if header[1:] == [b"missing"]:
            absent += 1
            continue
        content = reader.stdout.read(int(header[2]))
        reader.stdout.read(1)
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            link = os.fsdecode(content)
            if (target.parent / link).resolve().is_relative_to(into.resolve()):
                target.symlink_to(link)
            continue
        target.write_bytes(content)
    asking.join()
    reader.stdout.close()
    reader.wait()
    return absent


def ask_for(stdin: IO[bytes], object_ids: list[str]) -> None:
    for object_id in object_ids:
        stdin.write(object_id.encode() + b"\n")
    stdin.close()


def extract(git_dir: Path, commit: str, into: Path) -> int:
    """Write the tree of `commit` into the folder `into`, which must not exist yet; the files left out."""
    into.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{into.name}.", dir=into.parent))
    try:
        absent = write_blobs(git_dir, blobs(git_dir, commit), partial)
        partial.rename(into)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return absent


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
            absent = extract(git_dir, commit, into)
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"{repo}@{commit[:12]}: could not extract: {error}", file=sys.stderr)
            missing += 1
            continue
        left_out = f" ({absent} files absent from the mirror left out)" if absent else ""
        print(f"{into.name}: extracted{left_out}", file=sys.stderr)
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
