"""Shared test options: `pytest --update-golden` rewrites the golden outputs in tests/golden/;
`pytest --hypothesis-long` runs the generated-code tests of tests/test_robustness.py with many
more examples (minutes instead of seconds)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="rewrite tests/golden/* from the current output instead of comparing with it",
    )
    parser.addoption(
        "--hypothesis-long", action="store_true", default=False,
        help="run the generated-code tests with 25 times more examples, from a random seed",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """`golden(name, text)`: text must equal tests/golden/<name> (or replaces it with --update-golden)."""
    update = request.config.getoption("--update-golden")

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if update:
            path.write_bytes(text.encode("utf-8"))
            return
        assert path.is_file(), f"{path.name} is missing: run `pytest --update-golden` and review the new file"
        assert text == path.read_bytes().decode("utf-8"), f"{path.name} differs: rerun with --update-golden if deliberate"

    return check
