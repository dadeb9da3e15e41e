"""`python -m zerograd_lint`: the console script (`zerograd_lint.console`)."""

from zerograd_lint.console import run

if __name__ == "__main__":
    run()
