"""The console script (`zerograd-lint`, `python -m zerograd_lint`). Given a folder, it forks the
run's first helper before anything else is imported (`zerograd_lint.schedule.early.Early`), then runs
the command line (`zerograd_lint.cli.run`)."""

import sys


def run() -> None:
    from zerograd_lint.schedule.early import Early

    early = Early.start(sys.argv[1:])
    from zerograd_lint.cli import run as run_command_line

    run_command_line(early)
