import sys

from zerograd_lint.cli import main

if __name__ == "__main__":
    sys.exit(main())
