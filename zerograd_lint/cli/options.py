"""The command line's vocabulary: its exit codes, its error, its command classes, and the
callbacks that read its options (codes, patterns, per-file ignores, the configuration, --explain).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import click

from zerograd_lint.codes import RULES
from zerograd_lint.config import Config, ConfigError, find_config, load_config
from zerograd_lint.settings import unknown_prefixes

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command Ctrl-C stopped
OUT_OF_MEMORY = b"zerograd-lint: error: out of memory\n"
OUTPUT_FORMAT_VARIABLE = "ZEROGRAD_LINT_OUTPUT_FORMAT"
SILENT, QUIET, NORMAL, VERBOSE = -2, -1, 0, 1
STDIN = "-"
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Failure(click.ClickException):
    """A bad configuration or an output file that cannot be written: one line, exit 2."""

    exit_code = EXIT_ERROR

    def show(self, file: Any = None) -> None:
        click.echo(f"zerograd-lint: error: {self.format_message()}", err=True)


# The sections of `--help`, as ruff groups its options; the others come first.
HELP_SECTIONS = {
    "Rule selection": ("select", "extend_select", "ignore", "extend_ignore", "per_file_ignores",
                       "extend_per_file_ignores"),
    "File selection": ("exclude", "extend_exclude", "respect_gitignore", "force_exclude", "stdin_filename"),
    "Configuration": ("isolated", "config"),
    "Miscellaneous": ("no_cache", "exit_zero", "color", "explain", "version"),
    "Log levels": ("quiet", "silent", "verbose"),
}


class Command(click.Command):
    """A command whose options `--help` shows in sections, as ruff's are (`sections`: a title and
    the names of its parameters; the others come first, under "Options")."""

    def __init__(self, *args: Any, sections: dict[str, tuple[str, ...]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections = sections or {}

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        titles = {name: title for title, names in self.sections.items() for name in names}
        grouped: dict[str, list[tuple[str, str]]] = {"Options": [], **{title: [] for title in self.sections}}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is not None:  # the help option's name is click's own: it goes with --version
                title = "Miscellaneous" if "--help" in param.opts and "Miscellaneous" in grouped else "Options"
                grouped[titles.get(param.name or "", title)].append(record)
        for title, records in grouped.items():
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)

    def invoke(self, ctx: click.Context) -> Any:
        """An internal error exits 2 with its traceback (running out of memory, with one line), never 1."""
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except MemoryError:  # no traceback, which needs memory and helps no one
            raise Failure("out of memory") from None
        except Exception:
            import traceback  # only now: a clean run never needs it

            click.echo(f"zerograd-lint: internal error:\n{traceback.format_exc()}", err=True)
            ctx.exit(EXIT_ERROR)


class DefaultGroup(click.Group):
    """A group whose default command takes any arguments that do not name another command."""

    default_command = "check"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            args = [self.default_command, *args]
        try:
            return super().parse_args(ctx, args)
        except KeyboardInterrupt:
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None

    def invoke(self, ctx: click.Context) -> Any:
        """A usage error is one line naming what was typed, as a configuration error is. Ctrl-C
        exits 130 (not click's "Aborted!" and 1, which means findings), whatever --exit-zero says,
        and prints nothing: the shell shows that it was interrupted."""
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise Failure(one_line(exc)) from None
        except KeyboardInterrupt:
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The default command's help, under the program's own name, then the commands."""
        default = self.commands[self.default_command]
        with click.Context(default, info_name=ctx.info_name, max_content_width=ctx.max_content_width,
                           help_option_names=ctx.help_option_names) as shown:
            default.format_help(shown, formatter)
        self.format_commands(ctx, formatter)


def serve_until_interrupted(serve: Callable[[], None]) -> None:
    """Run a server that also returns, quietly, on Ctrl-C (pygls takes KeyboardInterrupt for a
    way to stop); exit 130 then, as a check does."""
    interrupted: list[int] = []

    def note(signal_number: int, frame: FrameType | None) -> None:
        interrupted.append(signal_number)
        signal.default_int_handler(signal_number, frame)

    previous = signal.signal(signal.SIGINT, note)
    try:
        serve()
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        raise click.exceptions.Exit(EXIT_INTERRUPTED)


def one_line(error: click.UsageError) -> str:
    """A usage error as one line: a bad value names the option it was given to, or the environment
    variable when it came from there (click's own message names both, whichever it came from)."""
    param, ctx = getattr(error, "param", None), error.ctx
    if isinstance(error, click.BadParameter) and param is not None and param.name is not None:
        source = ctx.get_parameter_source(param.name) if ctx is not None else None
        if source is click.core.ParameterSource.ENVIRONMENT and isinstance(param, click.Option) and param.envvar:
            given = param.envvar if isinstance(param.envvar, str) else param.envvar[0]
        else:
            given = max(param.opts, key=len) if param.opts else param.name
        return f"{given}: {' '.join(error.message.split())}"
    return " ".join(error.format_message().split())


def _split(value: Sequence[str]) -> tuple[str, ...]:
    return tuple(item.strip() for given in value for item in given.split(",") if item.strip())


def codes(ctx: click.Context, param: click.Parameter, value: Sequence[str]) -> tuple[str, ...]:
    for listed in value:
        _no_empty_code(param, listed, listed)
    given = tuple(code.upper() for code in _split(value))
    unknown = unknown_prefixes(given)
    if unknown:
        raise click.BadParameter(f"unknown rule code or prefix: {', '.join(unknown)}")
    return given


def patterns(ctx: click.Context, param: click.Parameter, value: Sequence[str]) -> tuple[str, ...]:
    return _split(value)


def per_file_ignores(ctx: click.Context, param: click.Parameter,
                      value: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    parsed = []
    for item in value:
        pattern, colon, listed = item.rpartition(":")
        if not colon or not pattern:
            raise click.BadParameter(f"{item!r}: expected PATTERN:CODES, as in 'tests/*:ZG001,ZG003'")
        _no_empty_code(param, listed, item)
        parsed.append((pattern, codes(ctx, param, [listed])))
    return tuple(parsed)


def _no_empty_code(param: click.Parameter, listed: str, given: str) -> None:
    """`--select ''` or `--select ZG001,` is refused, as ruff refuses it, rather than read as no code
    given (which selects every rule)."""
    if not all(code.strip() for code in listed.split(",")):
        raise Failure(f"{param.opts[-1]} {given!r}: empty rule code (give codes or prefixes, comma separated)")


def load_configuration(ctx: click.Context, param: click.Parameter, value: Path | None) -> Config:
    try:
        if value is not None:
            config = load_config(value)
        elif ctx.params.get("isolated"):
            config = Config()
        else:
            stdin_filename = ctx.params.get("stdin_filename")
            config = find_config(_config_start(given_paths(ctx.params.get("paths") or (), stdin_filename),
                                               stdin_filename))
    except ConfigError as exc:
        raise Failure(str(exc)) from None
    except OSError as exc:  # a folder on the way up that cannot be looked into
        raise Failure(f"cannot look for pyproject.toml: {exc}") from None
    ctx.default_map = {**(ctx.default_map or {}), **config.options}
    return config


def given_paths(paths: Sequence[str], stdin_filename: str | None) -> tuple[str, ...]:
    """PATHS, or `-` alone when there are none and --stdin-filename names what stdin holds (as in ruff)."""
    return tuple(paths) or ((STDIN,) if stdin_filename is not None else ())


def _config_start(paths: Sequence[str], stdin_filename: str | None) -> tuple[str, ...]:
    """Where to look for pyproject.toml from: stdin counts as the file it stands for."""
    return tuple(stdin_filename if path == STDIN else path for path in paths if path != STDIN or stdin_filename)


def rule_code(value: str, param_hint: str | None = None) -> str:
    """`value` as a rule's code (any case), or a usage error listing the rules."""
    code = value.strip().upper()
    if code not in RULES:
        raise click.BadParameter(f"{value!r} is not a rule code (rules: {', '.join(RULES)})", param_hint=param_hint)
    return code


def explain(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    code = rule_code(value)
    from zerograd_lint.explain import rule_page  # reads the package's data: only for --explain

    click.echo(rule_page(code), nl=False)
    ctx.exit(EXIT_CLEAN)
