"""The command line: flags -> run -> report -> exit code. Nothing else lives here.

Exit codes: 0 no findings, 1 findings, 2 usage error or a file that could not be checked.
"""

from __future__ import annotations

import sys

import click

from zerograd_lint import __version__
from zerograd_lint.report import FORMATS
from zerograd_lint.runner import check_paths
from zerograd_lint.settings import Selection, Settings, unknown_prefixes

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    codes = tuple(c.strip().upper() for item in value for c in item.split(",") if c.strip())
    unknown = unknown_prefixes(codes)
    if unknown:
        raise click.BadParameter(f"unknown rule code or prefix: {', '.join(unknown)}")
    return codes


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--select", multiple=True, callback=_codes, metavar="CODES",
              help="Report only these codes or prefixes (comma separated). Default: all.")
@click.option("--ignore", multiple=True, callback=_codes, metavar="CODES",
              help="Do not report these codes or prefixes (comma separated).")
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default="concise", show_default=True,
              help="How to print findings.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.version_option(__version__, "--version", prog_name="zerograd-lint", message="%(prog)s %(version)s")
def main(paths: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...], output_format: str,
         exit_zero: bool) -> None:
    """Find PyTorch training loops that clear gradients wrongly.

    PATHS are files or directories (default: the current directory).
    """
    settings = Settings(Selection(select or ("ZG",), ignore))
    report = check_paths(paths or (".",), settings)
    findings = sorted(report.findings)
    sys.stdout.write(FORMATS[output_format](findings))
    for error in report.errors:
        click.echo(f"zerograd-lint: error: {error.path}: {error.reason}", err=True)
    click.echo(_summary(report.files, findings, len(report.errors)), err=True)
    if report.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if findings and not exit_zero else EXIT_CLEAN)


def _summary(files: int, findings: list, errors: int) -> str:
    checked = f"{files} file{'s' if files != 1 else ''} checked"
    if errors:
        checked += f", {errors} could not be"
    if not findings:
        return f"All checks passed ({checked})."
    places = len({f.path for f in findings})
    return (f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} "
            f"in {places} file{'s' if places != 1 else ''} ({checked}).")
