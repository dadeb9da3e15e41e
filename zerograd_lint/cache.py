"""Results of earlier runs, kept in `.zerograd_lint_cache/` like ruff's `.ruff_cache/`.

A whole-project result depends on every file that can take part, so an entry is keyed by what it
depends on: the linter itself (its version and a hash of its own files, so two builds of one
version never share entries), the project vocabulary, and the content of the files. Two keys
are tried: every file of the run (a rerun with nothing changed costs reading and hashing), then
only the files the text test chose (an edit elsewhere costs that test, not the analysis).
Selection and per-file ignores apply after the cache, so changing them needs no new entry.

Entries are written to a temporary file and renamed, so concurrent runs never see half an entry.
Nothing read back is trusted: an entry is read only from a regular file of bounded size (a FIFO,
a device or a symlink in its place is never opened for reading), and used only if its digest
matches and every finding in it is one this run could have (a known code, a path among the run's
files, positions within them). Anything else (truncated, nested too deep, edited by hand, another
format) is a miss, and the run writes the entry again. The folder ignores itself (`.gitignore`)
and is marked a cache (`CACHEDIR.TAG`); old entries, and the temporary files of killed runs, are pruned.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, fields
from pathlib import Path

from zerograd_lint import __version__
from zerograd_lint.codes import RULES
from zerograd_lint.files.reading import read_source
from zerograd_lint.findings import Finding, Related, SourceError
from zerograd_lint.settings import Vocabulary
from zerograd_lint.texts import Source

FOLDER = ".zerograd_lint_cache"
_LARGEST = 16 * 1024 * 1024  # bytes of one entry (some 40,000 findings); a larger file is no entry
_FORMAT = 2
_KEEP = 64  # entries; the oldest go first
_STALE = 10 * 60  # seconds: a temporary file older than this is a killed run's, not a concurrent one's
_SIGNED = '{"digest": "'  # an entry's first characters; its digest follows
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file marks a cache folder of zerograd-lint.\n"
_FINDING = frozenset(f.name for f in fields(Finding))
_RELATED = frozenset(f.name for f in fields(Related))
_ROLES = frozenset({"step", "earlier step", "clear", "backward"})
# The fields an entry's reader does not check one by one must hold their defaults (fixes and cells
# are made after the cache), so a field added later makes entries misses until it is checked.
_FINDING_DEFAULTS = tuple(
    (f.name, f.default) for f in fields(Finding)
    if f.name not in {"path", "line", "column", "code", "message", "name", "end_line", "end_column", "related"}
)
_RELATED_DEFAULTS = tuple(
    (f.name, f.default) for f in fields(Related) if f.name not in {"role", "path", "line", "column", "text", "subject"}
)

Entry = tuple[dict[str, list[Finding]], dict[str, SourceError]]


def key(kind: str, texts: Mapping[str, Source], vocabulary: Vocabulary) -> str:
    import hashlib  # here: a run without the cache never needs it (nor `tempfile`, below)

    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{_FORMAT}\0{__version__}\0{_linter()}\0{kind}\0{vocabulary!r}\0".encode())
    for path in sorted(texts):
        content = texts[path]
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content)
        digest.update(b"\0")
    return digest.hexdigest()


@functools.cache
def _linter() -> str:
    """The fingerprint of the running linter's files, made once per process."""
    try:
        return fingerprint(Path(__file__).parent)
    except Exception:  # noqa: BLE001 - its files cannot be read: a key no other process makes, so nothing is shared
        return os.urandom(20).hex()


def fingerprint(package: Path) -> str:
    """A hash of the content of a build of the linter: the modules of the `package` folder and
    the rule pages (`zerograd_lint/rule_pages/` in a wheel, `docs/rules/` beside it in a checkout,
    as `zerograd_lint.explain` reads them). Content, not size and mtime: installers and
    reproducible builds set mtimes, so two builds could agree on both. About 2 ms for the
    package's 0.65 MB, once per process."""
    import hashlib

    pages = package / "rule_pages"
    if not pages.is_dir():
        pages = package.parent / "docs" / "rules"
    files = [(package, path) for path in _files(package, ".py")]
    files += [(pages, path) for path in _files(pages, ".md")] if pages.is_dir() else []
    digest = hashlib.blake2b(digest_size=20)
    for top, path in files:
        content = path.read_bytes()
        digest.update(f"{path.relative_to(top).as_posix()}\0{len(content)}\0".encode("utf-8", "surrogateescape"))
        digest.update(content)
    return digest.hexdigest()


def _files(top: Path, suffix: str) -> list[Path]:
    found = []
    for folder, subfolders, names in os.walk(top):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        found += [Path(folder, name) for name in sorted(names) if name.endswith(suffix)]
    return found


def entry_text(name: str, findings: object, errors: object) -> str:
    """The text of the entry `name` that holds these (in their JSON form): a JSON object whose
    first member is the digest of the text after it (and of the name), checked before parsing."""
    rest = json.dumps({"findings": findings, "errors": errors})[1:]  # ASCII: as many bytes as characters
    return f'{_SIGNED}{_digest(name, rest.encode())}", {rest}'


def _digest(name: str, rest: bytes) -> str:
    import hashlib

    return hashlib.blake2b(name.encode() + b"\0" + rest, digest_size=20).hexdigest()


class Cache:
    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def get(self, name: str, files: Mapping[str, Source]) -> Entry | None:
        """The result kept as entry `name`, if it is one that a run of `files` could have found;
        else None (a miss), whatever is wrong with the entry or with reading it."""
        try:
            # a regular file of at most `_LARGEST` bytes, opened without blocking (a FIFO); `NotRead` otherwise
            return _entry(name, read_source(str(self.folder / f"{name}.json"), _LARGEST), files)
        except Exception:  # noqa: BLE001 - any failure (even RecursionError, MemoryError) is a miss, never another result
            return None

    def put(self, name: str, findings: Mapping[str, list[Finding]], errors: Mapping[str, SourceError]) -> None:
        import tempfile
        from contextlib import suppress

        try:
            text = entry_text(
                name,
                {path: [asdict(f) for f in found] for path, found in findings.items()},
                {path: error.reason for path, error in errors.items()},
            )
            if len(text) > _LARGEST:
                return
            self._prepare()
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".entry-", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temporary, self.folder / f"{name}.json")
            except BaseException:
                with suppress(OSError):
                    os.unlink(temporary)
                raise
            self._prune()
        except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache, not an error
            return

    def _prepare(self) -> None:
        if not self.folder.is_dir():
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / ".gitignore").write_text("# Automatically created by zerograd-lint.\n*\n")
            (self.folder / "CACHEDIR.TAG").write_text(_TAG)

    def _prune(self) -> None:
        """Keep the newest `_KEEP` entries; remove temporary files that no run is writing any more."""
        entries, now = [], time.time()
        with os.scandir(self.folder) as listing:
            for item in listing:
                try:
                    status = item.stat(follow_symlinks=False)
                    if item.name.endswith(".json"):
                        entries.append((status.st_mtime, item.path))
                    elif item.name.startswith(".entry-") and item.name.endswith(".tmp") and now - status.st_mtime > _STALE:
                        os.unlink(item.path)
                except OSError:  # gone meanwhile (another run pruned it)
                    continue
        for _, old in sorted(entries, reverse=True)[_KEEP:]:
            Path(old).unlink(missing_ok=True)


class _Odd(ValueError):
    """An entry that holds something no run writes."""


def _require(condition: bool) -> None:
    if not condition:
        raise _Odd


def _entry(name: str, data: bytes, files: Mapping[str, Source]) -> Entry:
    start = len(_SIGNED) + 40 + len('", ')
    _require(data.startswith(_SIGNED.encode()) and data[start - 3:start] == b'", ')
    _require(data[len(_SIGNED):start - 3] == _digest(name, data[start:]).encode())
    entry = _dict(json.loads(data.decode("utf-8")), frozenset({"findings", "errors", "digest"}))
    found, failed = _dict(entry["findings"]), _dict(entry["errors"])
    _require(all(path in files for path in (*found, *failed)))
    lines = _Lines(files)
    findings = {path: [_finding(item, path, lines) for item in _list(found[path])] for path in found}
    return findings, {path: SourceError(path, _line(failed[path])) for path in failed}


def _finding(data: object, path: str, lines: _Lines) -> Finding:
    data = _dict(data, _FINDING)
    rule = RULES.get(data["code"]) if isinstance(data["code"], str) else None
    _require(rule is not None and data["name"] == rule.name and data["path"] == path)
    _line(data["message"])
    _require(_defaults(data, _FINDING_DEFAULTS))
    _require(_at(data["line"], lines[path]) and _at(data["end_line"], lines[path]))
    _require(_at(data["column"]) and _at(data["end_column"]))
    _require((data["line"], data["column"]) <= (data["end_line"], data["end_column"]))
    return Finding(**{**data, "related": tuple(_related(r, lines) for r in _list(data["related"]))})


def _related(data: object, lines: _Lines) -> Related:
    data = _dict(data, _RELATED)
    _require(data["role"] in _ROLES and isinstance(data["text"], str) and isinstance(data["subject"], str))
    _require(data["path"] in lines.files and _at(data["line"], lines[data["path"]]) and _at(data["column"]))
    _require(_defaults(data, _RELATED_DEFAULTS))
    return Related(**data)


def _defaults(data: dict, defaults: tuple[tuple[str, object], ...]) -> bool:
    return all(type(data[name]) is type(default) and data[name] == default for name, default in defaults)


def _dict(value: object, keys: frozenset[str] | None = None) -> dict:
    if not isinstance(value, dict) or (keys is not None and value.keys() != keys):
        raise _Odd
    return value


def _list(value: object) -> list:
    if not isinstance(value, list):
        raise _Odd
    return value


def _line(value: object) -> str:
    """Text of one line, not empty (a message, a reason)."""
    if not isinstance(value, str) or not value or "\n" in value or "\r" in value:
        raise _Odd
    return value


def _at(value: object, most: int | None = None) -> bool:
    """A 1-based line or column (an int, not a bool nor a float), within `most` if given."""
    return type(value) is int and 1 <= value and (most is None or value <= most)


class _Lines(dict):
    """The most lines each of the run's files can have (every CR and every LF a line break),
    counted when first asked; KeyError for a path not among them."""

    def __init__(self, files: Mapping[str, Source]) -> None:
        super().__init__()
        self.files = files

    def __missing__(self, path: str) -> int:
        text = self.files[path]
        if isinstance(text, memoryview):
            text = text.tobytes()
        count = text.count("\n") + text.count("\r") if isinstance(text, str) else text.count(b"\n") + text.count(b"\r")
        self[path] = count + 1
        return count + 1
