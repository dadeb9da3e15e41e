"""What the command line prints and writes when it fixes: the fixed files, written atomically;
the diff; stdin's text fixed; and, on stderr, why each finding not fixed was not, then the summary.
"""

from __future__ import annotations

import sys
from typing import BinaryIO, TextIO

import click

from zerograd_lint.cli.options import Failure
from zerograd_lint.files.reading import Head, read_stream
from zerograd_lint.findings import Finding, SourceError
from zerograd_lint.report.concise import position
from zerograd_lint.report.escaping import escape_text, quote_path
from zerograd_lint.report.summary import fix_hint, fix_summary, summary
from zerograd_lint.runner import HINT_LARGEST, Buffer, Report


def close(report: Report, findings: list[Finding], diff: bool, unwritten: int, searched: bool,
          show_fixes: bool = False) -> None:
    """On stderr: why each finding not fixed was not (when fixing), what was fixed (`show_fixes`),
    then the summary, and after a check's findings what `--fix` has fixes for (the report's
    `fixable`, when it was counted). `searched`: the files were looked for in the paths given, so
    the summary says when none was found (not when stdin's name is excluded: ruff says nothing
    then either)."""
    if report.fixes is None:
        click.echo(summary(report.files, findings, len(report.errors), searched), err=True)
        fixable = report.fixable
        if findings and fixable is not None and (
                hint := fix_hint(len(fixable.fixed), fixable.hidden, fixable.too_large, HINT_LARGEST)):
            click.echo(hint, err=True)
        return
    for declined in report.fixes.declined:
        where = f"{quote_path(declined.finding.path)}:{position(declined.finding)}"
        click.echo(f"{where}: {declined.finding.code} not fixed: {escape_text(declined.reason)}", err=True)
    if show_fixes and report.fixes.fixed:
        click.echo(fixes_listed(report.fixes.fixed, diff), err=True, nl=False)
    checked = len(report.errors) - unwritten
    hidden = sum(d.fix is not None for d in report.fixes.declined)
    click.echo(fix_summary(report.files, report.fixes.fixed, findings, checked, diff, unwritten, searched, hidden),
               err=True)


def print_errors(report: Report) -> None:
    """Each file that could not be checked (or written), one line on stderr."""
    for error in report.errors:
        click.echo(f"zerograd-lint: error: {quote_path(error.path)}: {escape_text(error.reason)}", err=True)


def write_fixes(report: Report, on_disk: set[str]) -> int:
    """Write each fixed file that was read from disk; one that cannot be is reported as it was, and
    counted."""
    from zerograd_lint.fix.output import NotWritten, write_atomically

    assert report.fixes is not None
    unwritten = 0
    for path, (original, fixed) in sorted(report.fixes.changed.items()):
        if path not in on_disk:
            continue  # the text of stdin, printed instead
        try:
            write_atomically(path, original, fixed)
        except NotWritten as exc:
            report.errors.append(SourceError(path, f"cannot write the fixes: {exc}"))
            report.undo_fixes(path)
            unwritten += 1
    return unwritten


def diffs(report: Report) -> str:
    """The fixes as a unified diff; a notebook's cell by cell (`zerograd_lint.notebook.writing`)."""
    from zerograd_lint.fix.output import unified_diff
    from zerograd_lint.notebook import is_notebook
    from zerograd_lint.notebook.writing import cell_diff

    assert report.fixes is not None
    changed = sorted(report.fixes.changed.items())
    return "".join((cell_diff if is_notebook(path) else unified_diff)(path, original, fixed)
                   for path, (original, fixed) in changed)


def print_stdin_fixed(report: Report, buffer: Buffer | None) -> None:
    """The text of stdin, fixed: what an editor puts in place of its buffer. Unchanged when the
    file it stands for is excluded, or cannot be fixed."""
    if buffer is None:  # excluded: stdin was not read
        content = read_stdin()
    else:
        assert report.fixes is not None
        content = report.fixes.changed.get(buffer.path, (buffer.content, buffer.content))[1]
    data = content.encode() if isinstance(content, str) else content
    sys.stdout.flush()
    sys.stdout.buffer.write(data)  # the bytes as they were read: the same encoding and line breaks
    if isinstance(content, Head):  # too large to check: the rest of it, as it comes
        stream = _stdin_stream()
        while chunk := stream.read(1 << 20):
            sys.stdout.buffer.write(chunk.encode() if isinstance(chunk, str) else chunk)
    sys.stdout.buffer.flush()


def read_stdin() -> bytes:
    """What stdin holds; a `Head` of it if it holds more than can be checked (the rest is not read)."""
    return read_stream(_stdin_stream())


def _stdin_stream() -> BinaryIO | TextIO:
    if sys.stdin is None:  # a process started without standard input
        raise Failure("- reads standard input, and this process has none")
    return getattr(sys.stdin, "buffer", sys.stdin)


def add_noqa_comments(findings: list[Finding], report: Report) -> int:
    """`--add-noqa`: the comments written, file by file (`zerograd_lint.fix.noqa`); the number of
    lines changed. A file that cannot take them, or be written, is an error of the report. In a
    notebook, the comments go into the cells' lines (`zerograd_lint.notebook.writing`)."""
    from zerograd_lint.files.reading import NOTEBOOK_LIMIT, read_source
    from zerograd_lint.fix.noqa import with_noqa
    from zerograd_lint.fix.output import NotWritten, write_atomically
    from zerograd_lint.notebook import is_notebook
    from zerograd_lint.rules.suppression import RULE as UNUSED_MARKER

    wanted: dict[str, dict[tuple[int | None, int], set[str]]] = {}  # (cell, line) -> codes
    for finding in findings:
        if finding.code != UNUSED_MARKER.code:  # a noqa for an unused marker: remove the marker instead
            wanted.setdefault(finding.path, {}).setdefault((finding.cell, finding.line), set()).add(finding.code)
    added = 0
    for path, codes in sorted(wanted.items()):
        try:
            if is_notebook(path):
                original = read_source(path, NOTEBOOK_LIMIT)
                edited = _noqa_in_notebook(original, codes)
            else:
                original = read_source(path)
                edited = with_noqa(original, {line: c for (_, line), c in codes.items()})
            if edited is None:
                raise NotWritten("a noqa comment cannot go at the end of each finding's line")
            if edited[1]:
                write_atomically(path, original, edited[0])
        except (OSError, NotWritten, SyntaxError, ValueError) as exc:  # ValueError: a notebook not rewritten
            reason = str(exc) if isinstance(exc, (NotWritten, ValueError)) else getattr(exc, "strerror", None) or str(exc)
            report.errors.append(SourceError(path, f"cannot add noqa comments: {reason}"))
            continue
        added += edited[1]
    return added


def _noqa_in_notebook(original: bytes, codes: dict[tuple[int | None, int], set[str]]) -> tuple[bytes, int] | None:
    """`with_noqa` on a notebook: the comments added to its code cells' Python, put back into them."""
    from zerograd_lint.fix.noqa import noqa_added
    from zerograd_lint.notebook import read_notebook
    from zerograd_lint.notebook.writing import written_back

    notebook = read_notebook(original)
    edited = noqa_added(notebook.source, {notebook.index.row(cell, line): c for (cell, line), c in codes.items()
                                          if cell is not None})
    if edited is None:
        return None
    text, changed = edited
    new = written_back(original, notebook.source, text)[0] if changed else original
    assert isinstance(new, bytes)
    return new, changed


def fixes_listed(fixed: list[Finding], diff: bool) -> str:
    """`--show-fixes`, as ruff lists them: each file, and how many of each code were fixed in it."""
    from collections import Counter

    out = [f"{'Would fix' if diff else 'Fixed'} {len(fixed)} finding{'s' if len(fixed) != 1 else ''}:"]
    for path in sorted({f.path for f in fixed}):
        out.append(f"- {quote_path(path)}:")
        counted = Counter((f.code, f.name) for f in fixed if f.path == path)
        out += [f"    {count} × {code} ({name})" for (code, name), count in sorted(counted.items())]
    return "\n".join(out) + "\n\n"
