from zerograd_lint.console import run

if __name__ == "__main__":
    run()
