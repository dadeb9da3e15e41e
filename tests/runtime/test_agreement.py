"""The runtime guard and the linter agree on every fixture that is a training script.

Each runnable fixture (one without a ``# fixture: static-only`` line) runs under
``runtime.guard_all`` on CPU, and the codes the guard observes must be the codes the linter
reports for the file with suppression off: with its comments cut, since every marker
(``# zerograd: accumulate``, ``# noqa``, ``# zerograd-lint: noqa``) is a comment. ZG100 is about
comments, not training, and is left out.
"""

import functools
import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from zerograd_lint import check_source
from zerograd_lint.lines import lines_of

FIXTURES = Path(__file__).parents[1] / "fixtures"
RUNNER = Path(__file__).with_name("run_guarded.py")
STATIC_ONLY = re.compile(r"^# fixture: static-only$", re.MULTILINE)
RUNNABLE = sorted(
    p
    for p in FIXTURES.rglob("*.py")
    if "projects" not in p.relative_to(FIXTURES).parts  # multi-file packages, checked together
    and not STATIC_ONLY.search(p.read_text(encoding="utf-8"))
)


def without_comments(source: str) -> str:
    lines = lines_of(source)  # as Python numbers them: not at form feeds
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, column = token.start
            lines[row - 1] = lines[row - 1][:column].rstrip() + "\n"
    return "".join(lines)


@functools.cache
def linted(path: Path) -> frozenset[str]:
    """The codes the linter reports for ``path`` with suppression off, ZG100 aside."""
    source = without_comments(path.read_text(encoding="utf-8"))
    return frozenset(f.code for f in check_source(source, str(path)) if f.code != "ZG100")


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """What the guard found in each runnable fixture, all run in one subprocess."""
    out = tmp_path_factory.mktemp("agreement") / "observed.json"
    run = subprocess.run(
        [sys.executable, RUNNER, out, *RUNNABLE], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text())


# Where the two must differ: gradients really thrown away at run time, on purpose, for a reason
# the code states and a run cannot see (docs/contract.md, "Deliberate discards are not ZG003").
# The guard observes the discard; the linter, reading why the step was skipped, stays quiet.
INTENDED = {
    "quiet/step_skipped_by_a_flag_of_the_caller.py": {"ZG003"},  # a flag skips the step, not a window
}


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_guard_observes_what_the_linter_reports(path: Path, observed: dict[str, dict]) -> None:
    result = observed[str(path)]
    assert "error" not in result, f"the fixture fails (static-only, if it cannot run): {result}"
    guard, linter = set(result["codes"]), linted(path)
    expected = linter | INTENDED.get(path.relative_to(FIXTURES).as_posix(), set())
    assert guard == expected, f"guard {sorted(guard)} != linter {sorted(linter)} (no suppression)"


def test_enough_fixtures_are_compared() -> None:
    per_code = {
        code: sum(code in linted(path) for path in RUNNABLE) for code in ("ZG001", "ZG002", "ZG003")
    }
    assert len(RUNNABLE) >= 40
    assert min(per_code.values()) >= 8, per_code


@pytest.mark.parametrize(
    "name", ["noqa_code.py", "file_level_noqa.py", "accumulate_marker_on_header.py"]
)
def test_suppression_is_off_without_comments(name: str) -> None:
    source = (FIXTURES / "suppression" / name).read_text(encoding="utf-8")
    assert check_source(source) == []
    assert [f.code for f in check_source(without_comments(source))] == ["ZG001"]
