"""`--show-files` and `--show-settings`: what a check would look at, and with which settings, without
checking anything (ruff's options of the same names)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import fields

from zerograd_lint.config import Config
from zerograd_lint.files import FileSelection
from zerograd_lint.settings import Settings


def shown_files(paths: Iterable[str]) -> str:
    """The files a check would read, one per line, sorted, as they would be reported."""
    return "".join(f"{path}\n" for path in sorted(set(paths)))


def shown_settings(config: Config, settings: Settings, files: FileSelection, output_format: str,
                   isolated: bool) -> str:
    """The resolved settings, `name = value` in TOML's forms, from the configuration file and the
    command line together."""
    if config.path is not None:
        source = str(config.path)
    else:
        source = "none (--isolated)" if isolated else "none found, defaults used"
    items: list[tuple[str, object]] = [  # extend-* already merged into the key they extend
        ("configuration", source),
        ("project-root", os.path.abspath(config.root)),
        ("select", list(settings.selection.select)),
        ("ignore", list(settings.selection.ignore)),
        ("per-file-ignores", {pattern: list(codes) for pattern, codes in settings.per_file_ignores}),
        ("exclude", list(files.exclude)),
        ("extend-exclude", list(files.extend_exclude)),
        ("respect-gitignore", files.respect_gitignore),
        ("force-exclude", files.force_exclude),
        ("output-format", output_format),
        ("cache", os.path.abspath(settings.cache) if settings.cache is not None else False),
    ]
    items += [(f"vocabulary.{f.name}", list(getattr(settings.vocabulary, f.name))) for f in fields(settings.vocabulary)]
    return "".join(f"{name} = {_toml(value)}\n" for name, value in items)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)
