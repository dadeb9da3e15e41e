"""Results of earlier runs, kept in `.zerograd_lint_cache/` like ruff's `.ruff_cache/`.

A whole-project result depends on every file that can take part, so an entry is keyed by what it
depends on: the tool's version, the project vocabulary, and the content of the files. Two keys
are tried: every file of the run (a rerun with nothing changed costs reading and hashing), then
only the files the text test chose (an edit elsewhere costs that test, not the analysis).
Selection and per-file ignores apply after the cache, so changing them needs no new entry.

Entries are written to a temporary file and renamed, so concurrent runs never see half an entry;
an entry that does not read back (truncated, another version's format) is a miss. The folder
ignores itself (`.gitignore`) and is marked a cache (`CACHEDIR.TAG`); old entries are pruned.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from zerograd_lint import __version__
from zerograd_lint.findings import Finding, Related, SourceError
from zerograd_lint.settings import Vocabulary

FOLDER = ".zerograd_lint_cache"
_FORMAT = 1
_KEEP = 64  # entries; the oldest go first
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file marks a cache folder of zerograd-lint.\n"


def key(kind: str, texts: Mapping[str, str | bytes], vocabulary: Vocabulary) -> str:
    import hashlib  # here: a run without the cache never needs it (nor `tempfile`, below)

    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{_FORMAT}\0{__version__}\0{kind}\0{vocabulary!r}\0".encode())
    for path in sorted(texts):
        content = texts[path]
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content)
        digest.update(b"\0")
    return digest.hexdigest()


class Cache:
    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def get(self, name: str) -> tuple[dict[str, list[Finding]], dict[str, SourceError]] | None:
        try:
            entry = json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))
            findings = {path: [_finding(f) for f in found] for path, found in entry["findings"].items()}
            errors = {path: SourceError(path, reason) for path, reason in entry["errors"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return findings, errors

    def put(self, name: str, findings: Mapping[str, list[Finding]], errors: Mapping[str, SourceError]) -> None:
        entry = {
            "findings": {path: [asdict(f) for f in found] for path, found in findings.items()},
            "errors": {path: error.reason for path, error in errors.items()},
        }
        import tempfile

        try:
            self._prepare()
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".entry-", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(entry, out)
            os.replace(temporary, self.folder / f"{name}.json")
            self._prune()
        except OSError:
            return  # a cache that cannot be written is no cache, not an error

    def _prepare(self) -> None:
        if not self.folder.is_dir():
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / ".gitignore").write_text("# Automatically created by zerograd-lint.\n*\n")
            (self.folder / "CACHEDIR.TAG").write_text(_TAG)

    def _prune(self) -> None:
        entries = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[_KEEP:]:
            old.unlink(missing_ok=True)


def _finding(data: dict) -> Finding:
    data = dict(data)
    data["related"] = tuple(Related(**r) for r in data.get("related", ()))
    if data.get("fix") is not None:
        raise ValueError("cached findings carry no fixes")
    return Finding(**data)
