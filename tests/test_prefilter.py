"""The prefilter (files chosen from their text, functions from a first look, bodies emptied for
LibCST) only saves time: every fixture gives the same findings with it and without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_projects import CASES as PROJECTS

from zerograd_lint.checker import check_project

FIXTURES = Path(__file__).parent / "fixtures"
SINGLE = sorted(p for p in FIXTURES.rglob("*.py") if "projects" not in p.parts and "fixes" not in p.parts)


def both(sources: dict[str, bytes]) -> tuple[dict, dict]:
    fast, thorough = check_project(sources), check_project(sources, exhaustive=True)
    return fast.findings, thorough.findings


@pytest.mark.parametrize("path", SINGLE, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_fixture_gives_the_same_findings_without_the_prefilter(path: Path) -> None:
    fast, thorough = both({str(path): path.read_bytes()})
    assert fast == thorough


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_a_project_gives_the_same_findings_without_the_prefilter(project: Path) -> None:
    fast, thorough = both({str(p): p.read_bytes() for p in sorted(project.rglob("*.py"))})
    assert fast == thorough


def test_all_fixtures_together_give_the_same_findings_without_the_prefilter() -> None:
    fast, thorough = both({str(p): p.read_bytes() for p in [*SINGLE, *(f for d in PROJECTS for f in d.rglob("*.py"))]})
    assert fast == thorough


STEPPING = FIXTURES / "projects" / "zg001_stepper_imported_renamed" / "stepping.py"
CALLER = """\
from stepping import Stepper


def train(model, data):
    stepper = Stepper(model)
    for x, y in data:
        stepper.update(((model(x) - y) ** 2).mean())
"""


SCRIPT = CALLER + """

if __name__ == "__main__":
    train(*load())
"""


@pytest.mark.parametrize("comment", ["", "  # builds its optimizer"], ids=["silent", "mentions one"])
def test_a_script_calling_an_imported_training_step_is_chosen_whether_or_not_it_mentions_an_optimizer(comment: str) -> None:
    """A script (it says `__main__`, or loops at module level) is read for its imports whether or
    not it says `optim`: one whose loop calls a step that builds and steps its own optimizer is
    chosen as surely as one that names it. The loop never clears: ZG001 with the prefilter and
    without it."""
    script = SCRIPT.replace("stepper = Stepper(model)", "stepper = Stepper(model)" + comment)
    fast, thorough = both({"stepping.py": STEPPING.read_bytes(), "train.py": script.encode()})
    assert [f.code for f in fast["train.py"]] == [f.code for f in thorough["train.py"]] == ["ZG001"]


def test_the_prefilter_is_strict_about_one_file_a_library_module_that_never_mentions_an_optimizer() -> None:
    """The documented exception (`prefilter`, `docs/analysis.md`): a module that is not a script
    and never says `optim` is not read for its imports (torch's library modules, most of its
    files), so a loop of its calling an imported training step is found only without the
    prefilter, or once the module mentions an optimizer."""
    fast, thorough = both({"stepping.py": STEPPING.read_bytes(), "train.py": CALLER.encode()})
    assert [f.code for f in thorough["train.py"]] == ["ZG001"] and fast["train.py"] == []
    caller = CALLER.replace("stepper = Stepper(model)", "stepper = Stepper(model)  # builds its optimizer")
    fast, thorough = both({"stepping.py": STEPPING.read_bytes(), "train.py": caller.encode()})
    assert [f.code for f in fast["train.py"]] == [f.code for f in thorough["train.py"]] == ["ZG001"]
