"""The command line: flags -> configuration -> files -> run -> report -> exit code. Nothing else.

Exit codes: 0 no findings, 1 findings, 2 a usage or configuration error, a file that could not be
checked, an output file that could not be written, or an internal error. `--exit-zero` turns 1
into 0 and never hides a 2. Ctrl-C exits 130, silently (`options.DefaultGroup`).

Configuration is read by an eager callback of `--config` (as black's `read_pyproject_toml`):
click handles eager parameters before the others, those given on the command line first, so by
the time the callback runs it has PATHS and `--isolated`; it puts `[tool.zerograd-lint]` into
`ctx.default_map`, which click consults after the command line and the environment. Hence the
precedence: command line, then `ZEROGRAD_LINT_OUTPUT_FORMAT`, then pyproject.toml, then defaults.

Commands: `main` is a `click.Group` whose default command is `check`: anything that does not
start with a command's name (`rule`, `server`: `cli/rule.py`, `cli/server.py`) or a help flag is read as `check`'s arguments, so
`zerograd-lint PATHS`, `zerograd-lint - --stdin-filename X` and `zerograd-lint check PATHS` are
the same run, and `zerograd-lint --help` shows `check`'s options and lists the commands. A folder
named `server` is checked as `zerograd-lint ./server` or `zerograd-lint check server`.

Standard input: `-` among PATHS reads one source from stdin, reported under `--stdin-filename`
(or `-`); `--stdin-filename` without PATHS reads stdin as if `-` were given, as ruff does. That
name also takes the place of `-` in the search for pyproject.toml, and with `--force-exclude` an
excluded name means nothing is checked (what editors and pre-commit want).
A file named by itself, and stdin's named file, are checked as part of their projects
(`zerograd_lint.files.beside`); a folder named is the project.

Fixing (`zerograd_lint.fix`), only when asked: `--fix` rewrites the files it checked from disk
(a notebook's cells in place), atomically, then reports what remains (exit 1 if anything does); for
stdin it prints the fixed source on stdout, and the findings go to stderr, as ruff does. `--diff`
prints the fixes as a unified diff and writes nothing (exit 1 if there is a diff). Unsafe fixes
are made only with `--unsafe-fixes` (or `unsafe-fixes = true`); `--fix` itself is not
configurable in pyproject.toml: it changes what a model trains on, so each run asks for it.
Nothing else is ever written but the `--output-file`.

`--explain CODE` (eager, before any configuration is read) prints the rule's page and exits 0.
`server` imports the language server, and pygls with it, only when it runs.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import click

from zerograd_lint import __version__
from zerograd_lint.cache import FOLDER as CACHE_FOLDER
from zerograd_lint.cli.fixes import (
    add_noqa_comments,
    close,
    diffs,
    print_errors,
    print_stdin_fixed,
    read_stdin,
    write_fixes,
)
from zerograd_lint.cli.inspect import shown_files, shown_settings
from zerograd_lint.cli.options import (
    CONTEXT_SETTINGS,
    EXIT_CLEAN,
    EXIT_ERROR,
    OUT_OF_MEMORY,
    EXIT_FINDINGS,
    HELP_SECTIONS,
    NORMAL,
    OUTPUT_FORMAT_VARIABLE,
    QUIET,
    SILENT,
    STDIN,
    VERBOSE,
    Command,
    DefaultGroup,
    Failure,
    codes,
    explain,
    given_paths,
    load_configuration,
    patterns,
    per_file_ignores,
)
from zerograd_lint.cli.rule import rule
from zerograd_lint.cli.server import server
from zerograd_lint.config import Config
from zerograd_lint.files import DEFAULT_EXCLUDE, FileSelection, Missing, discover, named_files
from zerograd_lint.findings import SourceError
from zerograd_lint.report import FORMATS
from zerograd_lint.report.context import Context
from zerograd_lint.report.errors import diagnostics
from zerograd_lint.report.escaping import quote_path
from zerograd_lint.report.loops import RENDERERS as LOOPS
from zerograd_lint.report.statistics import RENDERERS as STATISTICS
from zerograd_lint.report.summary import HINTED
from zerograd_lint.runner import Buffer, NotChecked, check_files, fix_files
from zerograd_lint.schedule.early import Early
from zerograd_lint.settings import Selection, Settings


@click.group(cls=DefaultGroup, context_settings=CONTEXT_SETTINGS)
def main() -> None:
    """Find PyTorch training loops that clear gradients wrongly."""


def run(early: Early | None = None) -> None:
    """The console script and `python -m zerograd_lint` (through `zerograd_lint.console`, which
    may have forked a first helper, `early`): `main`, then an immediate exit once the
    output is flushed. Freeing a large run's objects one by one at interpreter shutdown costs
    tens of milliseconds and helps no one (mypy exits the same way). For the same reason the
    cycle collector stays off: its first pass once the analysis is done walked torch's whole run
    again (0.02 s), to free memory the exit frees anyway. The language server, which lives on,
    turns it back on."""
    gc.disable()
    try:
        main(obj=early)
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    except MemoryError:  # even while saying so (`Command`): one line, made without memory
        os.write(2, OUT_OF_MEMORY)
        code = EXIT_ERROR
    finally:
        if early is not None:  # its helper, if the command did not use it
            early.close()
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # what the interpreter does with `sys.exit("message")`
        code = 1
    try:
        if not sys.stdout.closed:  # pygls closes it when the language server's client says exit
            sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe (`| head`): nothing more can be written anyway
        pass
    os._exit(code or 0)


@main.command("check", cls=Command, sections=HELP_SECTIONS, context_settings=CONTEXT_SETTINGS,
              short_help="Check PATHS (the default command: `zerograd-lint PATHS` is `zerograd-lint check PATHS`).")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str, readable=False), is_eager=True)  # see discover
# Rule selection
@click.option("--select", multiple=True, callback=codes, metavar="CODES", default=("ZG",),
              help="Report only these codes or prefixes (comma separated). Default: all (ZG).")
@click.option("--extend-select", multiple=True, callback=codes, metavar="CODES",
              help="Report these codes too, on top of --select.")
@click.option("--ignore", multiple=True, callback=codes, metavar="CODES",
              help="Do not report these codes or prefixes. The longest matching prefix wins over --select.")
@click.option("--extend-ignore", multiple=True, callback=codes, metavar="CODES",
              help="Do not report these codes either, on top of --ignore.")
@click.option("--per-file-ignores", multiple=True, callback=per_file_ignores, metavar="PATTERN:CODES",
              help="Do not report these codes in files matching the glob (relative to the project root), as in "
                   "'tests/*:ZG001'. Repeatable.")
@click.option("--extend-per-file-ignores", multiple=True, callback=per_file_ignores, metavar="PATTERN:CODES",
              help="Like --per-file-ignores, on top of it.")
# File selection
@click.option("--exclude", multiple=True, callback=patterns, metavar="PATTERNS", default=DEFAULT_EXCLUDE,
              help="Gitignore-style patterns (comma separated), relative to the project root, of files and "
                   "folders not to search; "
                   "replaces the default list (build/, dist/, .venv/, __pycache__/, ...).")
@click.option("--extend-exclude", multiple=True, callback=patterns, metavar="PATTERNS",
              help="Like --exclude, on top of it.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=True, show_default=True,
              help="Skip what .gitignore (and git's other exclude files) ignore.")
@click.option("--force-exclude/--no-force-exclude", default=False,
              help="Apply the excludes to paths named on the command line too (what pre-commit needs).")
@click.option("--stdin-filename", is_eager=True, metavar="PATH",
              help="Report the text read from stdin (- among PATHS, or no PATHS) as this file, and find its "
                   "configuration and excludes as this file's.")
# Configuration
@click.option("--isolated", is_flag=True, is_eager=True, help="Read no configuration file.")
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path), is_eager=True,
              callback=load_configuration, metavar="FILE",
              help="Read [tool.zerograd-lint] from FILE instead of the nearest pyproject.toml that has one.")
# Output
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default="concise", show_default=True,
              envvar=OUTPUT_FORMAT_VARIABLE, show_envvar=True, help="How to print findings.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write the findings (or statistics, or loops) to FILE instead of stdout.")
@click.option("--statistics", is_flag=True, help="Print how many findings of each code instead of the findings.")
@click.option("--show-loops", is_flag=True,
              help="Print every training loop (and per-batch callback) checked instead of the findings, one per "
                   "line, with each optimizer's verdict: its finding, or what makes it quiet (the clear and its "
                   "line, or the call assumed to clear); as text, json or json-lines. The exit code is unchanged. "
                   "The analysis runs afresh: the cache is neither read nor written.")
@click.option("--add-noqa", is_flag=True,
              help="Add a `# noqa: ZGxxx` comment at each finding (merged into a noqa already there), and report "
                   "how many were added.")
@click.option("--watch", is_flag=True, help="Check again each time a file changes, until Ctrl-C.")
@click.option("--show-files", is_flag=True, help="Print the files a check would read, one per line, and exit.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings a check would use (configuration file and command line together), and exit.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.option("--no-cache", is_flag=True,
              help=f"Do not reuse or keep results in {CACHE_FOLDER}/ (in the project root, else the current folder; "
                   "never used when reading stdin or with --diff, which write nothing).")
# Fixes
@click.option("--fix", is_flag=True,
              help="Fix what can be fixed in the files checked (each clear put right after its step), then report "
                   "what remains. With -, print the fixed source.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=False,
              help="With --fix or --diff: also make the unsafe fixes, which may change more than the bug (a helper "
                   "that other code calls too). Without it, each is listed as available.")
@click.option("--diff", is_flag=True,
              help="Print the fixes as a unified diff instead of writing them; exit 1 if there is a diff.")
@click.option("--fix-only", is_flag=True, help="Fix what can be fixed, and report only that (not what remains).")
@click.option("--show-fixes", is_flag=True, help="With --fix: list what was fixed, by file and code.")
@click.option("--exit-non-zero-on-fix", is_flag=True,
              help="With --fix: exit 1 when anything was fixed, even if no finding remains.")
@click.option("--color/--no-color", default=None,
              help="Colour the findings. Default: on a terminal only, unless NO_COLOR or FORCE_COLOR is set.")
@click.option("-q", "--quiet", count=True, help="Print the findings and errors only; -qq is --silent.")
@click.option("-s", "--silent", is_flag=True, help="Print nothing; the exit code still tells.")
@click.option("-v", "--verbose", is_flag=True,
              help="Also say which configuration file is used and how many files are checked.")
@click.option("--explain", is_eager=True, expose_value=False, callback=explain, metavar="CODE",
              help="Print the page of rule CODE (what it finds, why, the exceptions, the fix) and exit.")
@click.version_option(__version__, "--version", prog_name="zerograd-lint", message="%(prog)s %(version)s")
@click.pass_context
def check(ctx: click.Context, paths: tuple[str, ...], select: tuple[str, ...], extend_select: tuple[str, ...],
          ignore: tuple[str, ...], extend_ignore: tuple[str, ...],
          per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...],
          extend_per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...],
          exclude: tuple[str, ...], extend_exclude: tuple[str, ...], respect_gitignore: bool, force_exclude: bool,
          stdin_filename: str | None, isolated: bool, config: Config, output_format: str, output_file: Path | None,
          statistics: bool, show_loops: bool, add_noqa: bool, watch: bool, show_files: bool, show_settings: bool, exit_zero: bool, no_cache: bool, fix: bool, unsafe_fixes: bool, diff: bool, fix_only: bool, show_fixes: bool, exit_non_zero_on_fix: bool,
          color: bool | None, quiet: int, silent: bool, verbose: bool) -> None:
    """Find PyTorch training loops that clear gradients wrongly.

    PATHS are files or folders (default: the current directory, or stdin with --stdin-filename);
    - reads one file from stdin.
    Folders are searched for *.py, *.pyi and Jupyter notebooks (*.ipynb); files named here are
    checked whatever their name. Options not given here are read from [tool.zerograd-lint] in the
    nearest pyproject.toml above the PATHS.

    `--fix` rewrites the files to put each clear right after its step, where that needs no judgement;
    `--diff` shows those edits without making them.

    `zerograd-lint server` starts the language server instead (pip install 'zerograd-lint[lsp]').
    """
    level = _verbosity(quiet, silent, verbose)
    paths = given_paths(paths, stdin_filename)
    fix = fix or fix_only
    if isolated and config.path is not None:
        raise click.UsageError("--config and --isolated cannot be used together")
    if statistics and output_format not in STATISTICS:
        raise click.UsageError(f"--statistics prints counts as {', '.join(STATISTICS)}, not {output_format}")
    if stdin_filename is not None and STDIN not in paths:
        raise click.UsageError("--stdin-filename names what - reads: put - among PATHS")
    if diff and statistics:
        raise click.UsageError("--diff prints the fixes, not statistics")
    if show_loops and (statistics or fix or diff):
        raise click.UsageError("--show-loops lists the loops a check looked at: not with --statistics, --fix or --diff")
    if add_noqa and (fix or diff or statistics or show_loops or STDIN in paths):
        raise click.UsageError("--add-noqa edits the files checked: not with --fix, --diff, --statistics, "
                               "--show-loops or stdin")
    if show_loops and output_format not in LOOPS:
        raise click.UsageError(f"--show-loops prints loops as {', '.join(LOOPS)}, not {output_format}")
    if watch and STDIN in paths:
        raise click.UsageError("--watch checks files as they change: not stdin")

    files = FileSelection(config.root, exclude, extend_exclude, respect_gitignore, force_exclude)
    # an on-save check through stdin, and --diff, write nothing: not even the cache
    writes_nothing = no_cache or diff or STDIN in paths
    cache = None if writes_nothing or show_loops else os.path.join(config.root or os.getcwd(), CACHE_FOLDER)
    settings = Settings(Selection((*select, *extend_select), (*ignore, *extend_ignore)),
                        (*per_file_ignores, *extend_per_file_ignores),
                        config.vocabulary, project_root=config.root, cache=cache, show_loops=show_loops,
                        unsafe_fixes=unsafe_fixes)
    if show_settings:  # the settings a check would use, and no check
        click.echo(shown_settings(config, settings, files, output_format, isolated), nl=False)
        ctx.exit(EXIT_CLEAN)
    on_disk = tuple(path for path in paths if path != STDIN) if paths else (".",)
    if watch:  # each check a process of its own, this command line without --watch
        from zerograd_lint.cli.watch import watch as keep_checking, without_watch

        keep_checking(without_watch(sys.argv[1:]), lambda: (p for p in discover(on_disk, files) if isinstance(p, str)))
    buffer = _stdin(stdin_filename, files) if STDIN in paths else None
    found = list(discover(on_disk, files))
    to_check: list[str | Buffer] = [item for item in found if isinstance(item, str)]
    if buffer is not None:  # the text in stdin replaces the file on disk it stands for
        to_check = [path for path in to_check if not _same_path(path, buffer.path)] + [buffer]
    if show_files:  # the files a check would read, and no check
        click.echo(shown_files(item if isinstance(item, str) else item.path for item in to_check), nl=False)
        ctx.exit(EXIT_CLEAN)
    if level >= VERBOSE:
        _log_setup(config, isolated, len(to_check))
    named = [*named_files(on_disk), *([buffer.path] if buffer is not None else [])]  # checked with their projects
    # ruff's "[*] N fixable" hint, after the text formats' summary and in the statistics: the fixes planned
    hint = not (show_loops or add_noqa) and (statistics or level >= NORMAL and output_format in HINTED)
    try:
        if fix or diff:
            report = fix_files(to_check, settings, ctx.find_object(Early), named=named, selection=files)
        else:
            report = check_files(to_check, settings, ctx.find_object(Early), named=named, selection=files, hint=hint)
    except NotChecked as exc:  # nothing is reported, nothing fixed: one line
        raise Failure(str(exc)) from None
    missing = [SourceError(item.path, item.reason) for item in _missing(found)]
    report.errors[:0] = missing
    report.files += len(missing)  # asked for, and could not be checked
    fixed_stdin = fix and not diff and STDIN in paths  # stdout is for the fixed source
    unwritten = write_fixes(report, {item for item in to_check if isinstance(item, str)}) if fix and not diff else 0

    findings = sorted(report.findings)
    if add_noqa:
        added = add_noqa_comments(findings, report)
        if level > SILENT:
            print_errors(report)
        if level >= NORMAL:
            click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
        ctx.exit(EXIT_ERROR if report.errors else EXIT_CLEAN)
    if diff:
        text = diffs(report)
    elif statistics:
        text = STATISTICS[output_format](findings, {f.code for f in report.fixable.fixed} if report.fixable else ())
    elif show_loops:
        text = LOOPS[output_format](report.loops, output_file is None)
    elif fix_only:
        text = ""  # what remains is not reported
    else:
        texts = {path: fixed for path, (_, fixed) in report.fixes.changed.items()} if report.fixes else {}
        if buffer is not None:  # `full` shows the lines checked: these are not (or no longer) on disk
            texts.setdefault(buffer.path, buffer.content)
        shown = sorted([*findings, *diagnostics(report.errors)])  # a file not checked is a diagnostic too, as in ruff
        text = FORMATS[output_format](shown, Context(Path(config.root), styled=output_file is None, below_root=True,
                                                     texts=texts))
    if output_file is not None:
        _write(output_file, text)
    elif level > SILENT:
        click.echo(text, nl=False, color=_colour(color, os.environ), err=fixed_stdin)
    if fixed_stdin:
        print_stdin_fixed(report, buffer)
    if level > SILENT:
        print_errors(report)
    if level >= NORMAL:
        close(report, [] if fix_only else findings, diff, unwritten, searched=STDIN not in paths,
              show_fixes=show_fixes)
    if report.errors:
        ctx.exit(EXIT_ERROR)
    fixed_any = bool(report.fixes and report.fixes.fixed)
    failing = bool(report.fixes and report.fixes.changed) if diff else bool(findings) and not fix_only
    failing = failing or (exit_non_zero_on_fix and fixed_any and not diff)
    ctx.exit(EXIT_FINDINGS if failing and not exit_zero else EXIT_CLEAN)


main.add_command(rule)
main.add_command(server)


def _stdin(stdin_filename: str | None, files: FileSelection) -> Buffer | None:
    """What stdin holds, unless --force-exclude excludes the file it stands for."""
    if stdin_filename is not None and files.force_exclude and files.is_excluded(stdin_filename):
        return None
    return Buffer(stdin_filename or STDIN, read_stdin())


def _same_path(one: str, other: str) -> bool:
    return os.path.normpath(os.path.abspath(one)) == os.path.normpath(os.path.abspath(other))


def _missing(found: list[str | Missing]) -> list[Missing]:
    return [item for item in found if isinstance(item, Missing)]


def _verbosity(quiet: int, silent: bool, verbose: bool) -> int:
    if verbose and (quiet or silent):
        raise click.UsageError("-v/--verbose cannot be used with -q/--quiet or -s/--silent")
    if silent or quiet >= 2:
        return SILENT
    return QUIET if quiet else VERBOSE if verbose else NORMAL


def _colour(flag: bool | None, environ: Mapping[str, str]) -> bool | None:
    """--color/--no-color, else NO_COLOR, else FORCE_COLOR (set and not empty, as no-color.org and
    force-color.org define them), else None: click colours a terminal and nothing else."""
    if flag is not None:
        return flag
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return None


def _log_setup(config: Config, isolated: bool, files: int) -> None:
    if config.path is not None:
        used = f"configuration: {quote_path(str(config.path))}"
    else:
        used = "configuration: none (--isolated)" if isolated else "configuration: none found, defaults used"
    click.echo(f"zerograd-lint: {used}", err=True)
    click.echo(f"zerograd-lint: project root: {quote_path(os.path.abspath(config.root))}", err=True)
    click.echo(f"zerograd-lint: {files} file{'s' if files != 1 else ''} to check", err=True)


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise Failure(f"{quote_path(str(path))}: cannot write: {exc.strerror or exc}") from None
