"""`[tool.zerograd-lint]` in pyproject.toml: where it is found, what it may say, what it means.

One configuration per run, as in black: the nearest pyproject.toml holding a
`[tool.zerograd-lint]` table, searched from the folder the checked paths have in common (or from
the current directory) up to the filesystem root. Its folder is the project root: `exclude` and
`per-file-ignores` patterns are relative to it.

Keys are the command line's long options (`select`, `extend-select`, `ignore`, `extend-ignore`,
`per-file-ignores`, `extend-per-file-ignores`, `exclude`, `extend-exclude`, `respect-gitignore`,
`force-exclude`, `output-format`, `unsafe-fixes`), plus a `vocabulary` table of the project's own names for the analysis
(`settings.Vocabulary`):

    [tool.zerograd-lint]
    extend-exclude = ["legacy/"]
    per-file-ignores = { "tests/*" = ["ZG001"] }

    [tool.zerograd-lint.vocabulary]
    clears = ["scrub"]              # scrub(model) clears model's gradients

An option given on the command line replaces the same key's value here. An unknown key or a
value of the wrong shape is an error that names the key. No printing, no exiting, no click.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from zerograd_lint.settings import Selection, Settings, Vocabulary, unknown_prefixes

FILE_NAME = "pyproject.toml"
TABLE = "zerograd-lint"


class ConfigError(Exception):
    """A configuration file that cannot be used; the message names the file and the key."""

    def __init__(self, path: Path, message: str, key: str | None = None) -> None:
        where = f"[tool.{TABLE}] {key}: " if key else ""
        super().__init__(f"{_shown(path)}: {where}{message}")


@dataclass(frozen=True)
class Config:
    path: Path | None = None  # None: no configuration file (none found, or --isolated)
    options: dict[str, Any] = field(default_factory=dict)  # click parameter name -> value
    vocabulary: Vocabulary = Vocabulary()

    @property
    def root(self) -> str:
        """The project root: exclude patterns are relative to it."""
        return str(self.path.parent) if self.path else "."

    def settings(self) -> Settings:
        """What this configuration asks for where no command line adds to it (the language server)."""
        select = (*self.options.get("select", ("ZG",)), *self.options.get("extend_select", ()))
        ignore = (*self.options.get("ignore", ()), *self.options.get("extend_ignore", ()))
        listed = (*self.options.get("per_file_ignores", ()), *self.options.get("extend_per_file_ignores", ()))
        per_file_ignores = tuple(
            (pattern, tuple(codes.split(","))) for pattern, _, codes in (item.rpartition(":") for item in listed)
        )
        return Settings(Selection(select, ignore), per_file_ignores, self.vocabulary, project_root=self.root,
                        unsafe_fixes=self.options.get("unsafe_fixes", False))


def find_config(paths: Sequence[str]) -> Config:
    """The configuration that applies to `paths` (empty when there is none)."""
    for folder in _upwards(_common_folder(paths)):
        candidate = folder / FILE_NAME
        if os.path.isfile(candidate):  # not `Path.is_file`: a folder that cannot be searched holds none
            table = _table(candidate)
            if table is not None:
                return _interpret(candidate, table)
    return Config()


def load_config(path: Path) -> Config:
    """The configuration in the file given with `--config`."""
    table = _table(path)
    if table is None:
        raise ConfigError(path, f"has no [tool.{TABLE}] table")
    return _interpret(path, table)


def _table(path: Path) -> Any:
    """What `[tool.zerograd-lint]` holds in this file, or None when it has no such key."""
    tool = _read(path).get("tool")
    return tool.get(TABLE) if isinstance(tool, dict) else None


def _common_folder(paths: Sequence[str]) -> Path:
    if not paths:
        return Path.cwd()
    common = Path(os.path.commonpath([os.path.abspath(p) for p in paths]))
    return common if os.path.isdir(common) else common.parent


def _upwards(folder: Path) -> Iterable[Path]:
    yield folder
    yield from folder.parents


def toml_module() -> Any:
    """The standard library's `tomllib`, or its backport on Python 3.10: imported only when a
    pyproject.toml is read, not by every run."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the backport, for Python 3.10
        import tomli as tomllib
    return tomllib


def _read(path: Path) -> dict[str, Any]:
    tomllib = toml_module()
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, f"not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read: {exc}") from None


# Checks a key's value and converts it to what the command line would give the click parameter.
Converter = Callable[[Path, str, Any], Any]


def _strings(path: Path, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(path, f"expected a list of strings, got {_describe(value)}", key)
    return value


def _codes(path: Path, key: str, value: Any) -> list[str]:
    codes = [code.strip().upper() for code in _strings(path, key, value)]
    if not all(codes):  # as ruff: an error, not a prefix of every code
        raise ConfigError(path, f"empty rule code in {value!r}", key)
    unknown = unknown_prefixes(codes)
    if unknown:
        raise ConfigError(path, f"unknown rule code or prefix: {', '.join(unknown)}", key)
    return codes


def _flag(path: Path, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(path, f"expected true or false, got {_describe(value)}", key)
    return value


def _output_format(path: Path, key: str, value: Any) -> str:
    from zerograd_lint.report import FORMATS  # the renderers (and click): only when the key is set

    if not isinstance(value, str):
        raise ConfigError(path, f"expected a string, got {_describe(value)}", key)
    if value not in FORMATS:
        raise ConfigError(path, f"unknown output format {value!r} (formats: {', '.join(sorted(FORMATS))})", key)
    return value


def _per_file_ignores(path: Path, key: str, value: Any) -> list[str]:
    """`{pattern = [codes]}` as the command line spells it: `pattern:CODE,CODE`."""
    if not isinstance(value, dict):
        raise ConfigError(path, f"expected a table of pattern = [codes], got {_describe(value)}", key)
    return [
        f"{pattern}:{','.join(_codes(path, _subkey(key, pattern), codes))}"
        for pattern, codes in value.items()
        if codes != []  # ignores nothing: `pattern:` would be an empty code
    ]


def _subkey(key: str, name: str) -> str:
    return f'{key}."{name}"'


# key -> (click parameter name, converter)
OPTIONS: dict[str, tuple[str, Converter]] = {
    "select": ("select", _codes),
    "extend-select": ("extend_select", _codes),
    "ignore": ("ignore", _codes),
    "extend-ignore": ("extend_ignore", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "extend-per-file-ignores": ("extend_per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _strings),
    "extend-exclude": ("extend_exclude", _strings),
    "respect-gitignore": ("respect_gitignore", _flag),
    "force-exclude": ("force_exclude", _flag),
    "output-format": ("output_format", _output_format),
    "unsafe-fixes": ("unsafe_fixes", _flag),
}
VOCABULARY_KEYS = tuple(f.name for f in fields(Vocabulary))  # optimizers, clears, steps, backwards


def _interpret(path: Path, table: Any) -> Config:
    if not isinstance(table, dict):
        raise ConfigError(path, f"[tool.{TABLE}] must be a table, got {_describe(table)}")
    unknown = sorted(set(table) - set(OPTIONS) - {"vocabulary"})
    if unknown:
        known = ", ".join([*OPTIONS, "vocabulary"])
        raise ConfigError(path, f"unknown key (known keys: {known})", unknown[0])
    options = {}
    for key, value in table.items():
        if key != "vocabulary":
            name, convert = OPTIONS[key]
            options[name] = convert(path, key, value)
    return Config(path, options, _vocabulary(path, table.get("vocabulary", {})))


def _vocabulary(path: Path, table: Any) -> Vocabulary:
    if not isinstance(table, dict):
        raise ConfigError(path, f"expected a table, got {_describe(table)}", "vocabulary")
    unknown = sorted(set(table) - set(VOCABULARY_KEYS))
    if unknown:
        raise ConfigError(path, f"unknown key (known keys: {', '.join(VOCABULARY_KEYS)})", f"vocabulary.{unknown[0]}")
    words: dict[str, tuple[str, ...]] = {}
    for key, value in table.items():
        names = _strings(path, f"vocabulary.{key}", value)
        for name in names:
            if not name.isidentifier():
                raise ConfigError(path, _not_a_name(name), f"vocabulary.{key}")
        words[key] = tuple(names)
    return Vocabulary(**words)


def _not_a_name(name: str) -> str:
    if "." in name and all(part.isidentifier() for part in name.split(".")):
        return (f"{name!r} is not a bare name: the analysis matches the last part of a call or receiver, "
                f"so write {name.rpartition('.')[2]!r}")
    return f"{name!r} is not a Python name"


def _describe(value: Any) -> str:
    kinds: Mapping[type, str] = {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
                                 list: "a list", dict: "a table"}
    return f"{kinds.get(type(value), type(value).__name__)} ({value!r})"


def _shown(path: Path) -> str:
    """The path relative to the current directory when it lies below it, as users typed it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
