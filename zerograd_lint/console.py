"""The console script (`zerograd-lint`, `python -m zerograd_lint`). Given code to check, it forks
the run's first helper before anything else is imported (`zerograd_lint.schedule.forked`), makes
it the run's (`zerograd_lint.schedule.early.Early`), then runs the command line
(`zerograd_lint.cli.run`)."""

import os
import sys


def run() -> None:
    try:
        from zerograd_lint.schedule.forked import fork_first

        first = fork_first(sys.argv[1:])
        from zerograd_lint.schedule.early import Early

        early = Early.start(sys.argv[1:], first) if first is not None else None
        from zerograd_lint.cli import run as run_command_line
    except MemoryError:  # before the command line can say so (it does once imported): one line, exit 2
        os.write(2, b"zerograd-lint: error: out of memory\n")
        os._exit(2)
    except KeyboardInterrupt:  # before the command line can take Ctrl-C (`cli.options.DefaultGroup`)
        os._exit(130)
    run_command_line(early)
