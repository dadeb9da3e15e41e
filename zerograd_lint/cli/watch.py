"""`--watch`: check, then check again each time a file the check would read changes, appears or
goes away, as ruff's `--watch` does, until Ctrl-C (exit 130).

Each check is a process of its own (this command line without `--watch`), so nothing carries over
from one check to the next and a crash costs one check. Files are polled twice a second (their
size and modification time, and the list of files, found again as a check finds them): no
dependency, and it works on any filesystem, network and container mounts included.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence

import click

POLL = 0.5  # seconds between two looks at the files


def watch(arguments: Sequence[str], files: Callable[[], Iterable[str]], poll: float = POLL) -> None:
    """Run `zerograd-lint arguments` now and after every change among `files()`; never returns."""
    command = [sys.executable, "-m", "zerograd_lint", *arguments]
    while True:
        seen = _state(files())  # before the check: a change while it runs brings the next one
        click.echo(click.style(f"[{time.strftime('%H:%M:%S')}] Checking...", dim=True), err=True)
        subprocess.run(command, check=False)
        click.echo(click.style("Watching for file changes.", dim=True), err=True)
        while _state(files()) == seen:
            time.sleep(poll)


def without_watch(argv: Sequence[str]) -> list[str]:
    return [argument for argument in argv if argument != "--watch"]


def _state(paths: Iterable[str]) -> dict[str, tuple[int, int] | None]:
    state: dict[str, tuple[int, int] | None] = {}
    for path in paths:
        try:
            status = os.stat(path)
            state[path] = (status.st_size, status.st_mtime_ns)
        except OSError:
            state[path] = None
    return state
