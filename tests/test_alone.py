"""A file checked alone is checked as part of its project (docs/contract.md, "A file checked alone
is checked as part of its project"): pre-commit names the changed files, an editor sends one
buffer, and each must get the findings that checking the whole project gives it. The imports of
the named file are followed into the files beside it, and so are the files that import it
(`zerograd_lint.files.beside`); only the named files are reported."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_projects import CASES, refused

from zerograd_lint.cli import main
from zerograd_lint.files import FileSelection
from zerograd_lint.files import beside
from zerograd_lint.files.beside import files_beside, import_origins, project_root
from zerograd_lint.runner import Buffer, check_files

STEP = '''\
import torch


def train_step(model, optimizer, batch):
    model(batch).sum().backward()
    optimizer.step()
'''
LOOP = '''\
import torch

from steps import train_step

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in loader:
    train_step(model, optimizer, batch)
'''
LOOP_LINE = 7


def run(*args: str, stdin: str | bytes | None = None):
    return CliRunner().invoke(main, ["--no-cache", "--output-format", "json", *args], input=stdin,
                              catch_exceptions=False)


def findings(result) -> dict[str, list[dict]]:
    by_path: dict[str, list[dict]] = {}
    for finding in json.loads(result.stdout):
        by_path.setdefault(finding["path"], []).append(finding)
    return by_path


def errors(result) -> list[str]:
    return sorted(line for line in result.stderr.splitlines() if line.startswith("zerograd-lint: error: "))


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project (its root marked by pyproject.toml), the current folder."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("")
    monkeypatch.chdir(root)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)
    return root


@pytest.mark.parametrize("fixture", CASES, ids=lambda p: p.name)
def test_each_file_alone_gets_what_the_whole_project_gives_it(fixture: Path, project: Path) -> None:
    """Every fixture project, copied into a project of its own: each of its files checked by path
    (pre-commit), then through stdin (an editor), gives exactly the whole-project run's findings
    for it, with the same messages and related calls; a file the whole run refuses is refused
    alone, and no other file's error is reported."""
    shutil.copytree(fixture, project, dirs_exist_ok=True)
    whole = run(".")
    by_path = findings(whole)
    names = sorted(str(p.relative_to(project)) for p in project.rglob("*.py*"))
    for name in names:
        expected = by_path.get(name, [])
        expected_errors = [e for e in errors(whole) if e.startswith(f"zerograd-lint: error: {name}: ")]
        assert bool(expected_errors) == refused(project / name)
        for how, alone in (
            ("by path", run(name)),
            ("through stdin", run("-", "--stdin-filename", name, stdin=(project / name).read_bytes())),
        ):
            assert findings(alone).get(name, []) == expected, f"{name} {how}"
            assert set(findings(alone)) <= {name}, f"{name} {how}: another file reported"
            assert errors(alone) == expected_errors, f"{name} {how}"
            assert alone.exit_code == (2 if expected_errors else 1 if expected else 0), f"{name} {how}"
    whole_report = check_files(names)  # the calls each finding is about, in whichever file they are
    for name in names:
        alone_report = check_files([name], named=[name])
        assert [(f, f.related) for f in alone_report.findings] == [
            (f, f.related) for f in sorted(whole_report.findings) if f.path == name
        ], name


def test_a_loop_calling_a_sibling_step_is_judged_with_it(project: Path) -> None:
    write(project, {"steps.py": STEP, "train.py": LOOP})
    alone = findings(run("train.py"))
    [stale] = alone["train.py"]
    assert (stale["line"], stale["code"]) == (LOOP_LINE, "ZG001")
    assert "(steps.py line 6)" in stale["message"]
    [finding] = check_files(["train.py"], named=["train.py"]).findings
    assert {related.path for related in finding.related} == {"steps.py"}


def test_only_the_named_files_are_reported(project: Path) -> None:
    """The step's file has a loop of its own that never clears, and a marker that suppresses
    nothing: neither is reported when only the script is checked."""
    own_loop = "\n\ndef again(model, optimizer, loader):\n    for batch in loader:  # noqa: ZG003\n" \
               "        train_step(model, optimizer, batch)\n"
    write(project, {"steps.py": STEP + own_loop, "train.py": LOOP})
    assert set(findings(run("."))) == {"train.py", "steps.py"}
    alone = run("train.py")
    assert set(findings(alone)) == {"train.py"}
    assert alone.stderr.endswith("(1 file checked).\n")


def test_a_buffer_stands_for_its_file(project: Path) -> None:
    """The text on stdin is checked in place of the file on disk, which is never read, and is
    what the files beside it see when they import it."""
    clears = LOOP.replace("for batch in loader:\n", "for batch in loader:\n    optimizer.zero_grad()\n")
    write(project, {"steps.py": STEP, "train.py": clears})
    assert findings(run("train.py")) == {}
    assert set(findings(run("-", "--stdin-filename", "train.py", stdin=LOOP))) == {"train.py"}
    write(project, {"train.py": LOOP})
    assert findings(run("-", "--stdin-filename", "train.py", stdin=clears)) == {}
    write(project, {"trainer.py": BASE_TRAINER, "sub.py": SUBCLASS})  # a subclass beside it sees the buffer
    assert set(findings(run("trainer.py"))) == {"trainer.py"}
    loop = "for batch in loader:\n"
    clearing = BASE_TRAINER.replace(loop, loop + "            self.optimizer.zero_grad()\n")
    assert findings(run("-", "--stdin-filename", "trainer.py", stdin=clearing)) == {}


def test_the_named_file_is_never_read_from_disk_in_the_buffers_place(project: Path) -> None:
    write(project, {"steps.py": STEP, "train.py": "this is not what the editor holds ("})
    read = []

    def reading(path: str) -> bytes:
        read.append(os.path.realpath(path))
        return Path(path).read_bytes()

    beside = files_beside(["train.py"], {"train.py": LOOP}, FileSelection(str(project)), read=reading)
    assert list(beside) == ["steps.py"]
    assert str(project / "train.py") not in read


def test_files_beside_that_cannot_be_read_or_parsed_are_no_errors(project: Path) -> None:
    """A sibling that does not parse, one that is not UTF-8 and one that is binary: the run
    reports none of them (they were not asked for), and judges the loop without them."""
    loop = LOOP.replace("from steps import train_step", "from steps import train_step\nimport broken, latin, binary")
    write(project, {"train.py": loop, "steps.py": STEP, "broken.py": "def train_step(:\n    loss.backward()\n"})
    (project / "latin.py").write_bytes(b"x = '\xe9'\nloss.backward()\n")
    (project / "binary.py").write_bytes(b"\x00\x01 loss.backward()")
    assert len(errors(run("."))) >= 2
    alone = run("train.py")
    assert (errors(alone), alone.exit_code) == ([], 1)
    assert [f["code"] for f in findings(alone)["train.py"]] == ["ZG001"]


BASE_TRAINER = """\
class Trainer:
    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
"""
SUBCLASS = """\
import torch
from trainer import Trainer


class Sub(Trainer):
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(self, batch):
        self.model(batch).sum().backward()
        self.optimizer.step()
"""


def test_the_files_that_import_it_are_read_too(project: Path) -> None:
    """The loop is the base class's; the step that makes it stale is a subclass's, in a module
    that imports the base class (and that the base class never imports)."""
    write(project, {"trainer.py": BASE_TRAINER, "sub.py": SUBCLASS})
    assert [f["line"] for f in findings(run("trainer.py"))["trainer.py"]] == [3]


def test_the_project_ends_at_its_root(tmp_path: Path, project: Path) -> None:
    """A module above the project's root is not part of it, even when it would resolve."""
    write(tmp_path, {"steps.py": STEP})
    write(project, {"train.py": LOOP})
    assert findings(run("train.py")) == {}
    write(project, {"steps.py": STEP})
    assert set(findings(run("train.py"))) == {"train.py"}


def test_modules_of_the_same_name_elsewhere_in_the_project_stay_apart(project: Path) -> None:
    """Two examples, each with its own steps.py: each script is judged with the one beside it, as
    a run over the whole project judges it."""
    clears = STEP.replace("    optimizer.step()", "    optimizer.step()\n    optimizer.zero_grad()")
    write(project, {"a/steps.py": STEP, "a/train.py": LOOP, "b/steps.py": clears, "b/train.py": LOOP})
    whole = findings(run("."))
    assert set(whole) == {"a/train.py"}
    assert findings(run("a/train.py")) == {"a/train.py": whole["a/train.py"]}
    assert findings(run("b/train.py")) == {}


def test_imports_are_not_followed_into_excluded_files(project: Path) -> None:
    """As in a run over the project, an excluded file is not part of it: a file checked alone is
    judged as that run judges it (mypy follows such imports silently; here the two runs agree)."""
    write(project, {"vendored/steps.py": STEP, "train.py": LOOP.replace("from steps", "from vendored.steps")})
    assert set(findings(run("train.py"))) == {"train.py"}
    (project / "pyproject.toml").write_text('[tool.zerograd-lint]\nextend-exclude = ["vendored/"]\n')
    assert findings(run(".")) == {}
    assert findings(run("train.py")) == {}
    assert findings(run("-", "--stdin-filename", "train.py", stdin=(project / "train.py").read_text())) == {}


def test_a_folder_named_is_checked_as_it_always_was(project: Path) -> None:
    """Only files named by themselves are checked with their projects: a folder is the project."""
    write(project, {"steps.py": STEP, "scripts/train.py": LOOP})
    (project / "scripts" / "steps.py").write_text(STEP.replace("    optimizer.step()", "    pass"))
    assert findings(run("scripts")) == {}
    assert findings(run("scripts/train.py")) == {}  # the steps.py beside it, which never steps
    (project / "scripts" / "steps.py").unlink()
    assert findings(run("scripts")) == {}
    assert set(findings(run("scripts/train.py"))) == {"scripts/train.py"}  # the project's steps.py


def test_absolute_paths_name_the_files_beside_absolutely(project: Path) -> None:
    write(project, {"steps.py": STEP, "train.py": LOOP})
    [finding] = check_files([str(project / "train.py")], named=[str(project / "train.py")]).findings
    assert {related.path for related in finding.related} == {str(project / "steps.py")}


def test_without_a_project_root_the_folder_and_the_package_are_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "loose"
    write(root, {"steps.py": STEP, "train.py": LOOP,
                 "pkg/__init__.py": "", "pkg/inner/__init__.py": "", "pkg/inner/steps.py": STEP,
                 "pkg/inner/loop.py": LOOP.replace("from steps", "from pkg.inner.steps")})
    # whatever lies above the temporary folder (a checkout, a home with .git): no project root here
    monkeypatch.setattr(beside, "project_root", lambda path: None)
    for name in ("train.py", "pkg/inner/loop.py"):
        report = check_files([str(root / name)], named=[str(root / name)])
        assert [(f.path, f.code) for f in report.findings] == [(str(root / name), "ZG001")]


def test_a_named_file_and_a_buffer_in_one_run(project: Path) -> None:
    write(project, {"steps.py": STEP, "train.py": LOOP, "other.py": LOOP})
    report = check_files(["train.py", Buffer("other.py", LOOP)], named=["train.py", "other.py"])
    assert sorted((f.path, f.code) for f in report.findings) == [("other.py", "ZG001"), ("train.py", "ZG001")]


@pytest.mark.parametrize(
    ("root_marker", "is_folder"), [("pyproject.toml", False), ("setup.py", False), ("setup.cfg", False), (".git", True)]
)
def test_the_project_root_is_the_nearest_marked_folder(tmp_path: Path, root_marker: str, is_folder: bool) -> None:
    top = tmp_path / "repo"
    (top / "src" / "pkg").mkdir(parents=True)
    (top / root_marker).mkdir() if is_folder else (top / root_marker).write_text("")
    assert project_root(str(top / "src" / "pkg" / "train.py")) == str(top)


def test_import_origins_are_those_the_first_look_names() -> None:
    text = '''\
"""Docstring."""
from __future__ import annotations
import os, torch.nn as nn
from . import steps, losses as l
from .engine import (
    train_one_epoch,  # the loop
    evaluate,
)
from ..shared.optim import build_optimizer; import json
def f():
    import helpers
x = "import not_an_import"
'''
    assert import_origins(text) == {
        "__future__", "__future__.annotations", "os", "torch.nn", ".", ".steps", ".losses", ".engine",
        ".engine.train_one_epoch", ".engine.evaluate", "..shared.optim", "..shared.optim.build_optimizer", "helpers",
    }


def test_a_name_a_package_passes_on_is_followed_to_its_definition(project: Path) -> None:
    """`from trainers import train_step`, which `trainers/__init__.py` imports from its engine: both
    files are beside the script, and it gets what the run over the project gives it."""
    write(project, {"trainers/__init__.py": "from .engine import train_step\n", "trainers/engine.py": STEP,
                    "train.py": LOOP.replace("from steps", "from trainers")})
    beside = files_beside(["train.py"], {"train.py": (project / "train.py").read_bytes()})
    assert sorted(beside) == ["trainers/__init__.py", "trainers/engine.py"]
    assert findings(run("train.py")).get("train.py", []) == findings(run(".")).get("train.py", [])


def test_a_file_without_a_loop_is_checked_without_reading_what_uses_it(project: Path) -> None:
    """It can hold no finding: the scripts that use it are not read (they would be, were it not to
    parse: whether a run looks at it, and refuses it, depends on them)."""
    helpers = "def clear(optimizer):\n    optimizer.zero_grad()\n"
    uses = LOOP.replace("from steps import train_step", "import helpers").replace("train_step(", "helpers.clear(")
    write(project, {"helpers.py": helpers, "train.py": uses})
    read: list[str] = []

    def reading(path: str) -> bytes:
        read.append(path)
        return Path(path).read_bytes()

    assert files_beside(["helpers.py"], {"helpers.py": helpers}, read=reading) == {}
    assert read == []
    broken = helpers.replace("(optimizer)", "(optimizer")
    assert list(files_beside(["helpers.py"], {"helpers.py": broken}, read=reading)) == ["train.py"]


def test_a_package_init_passed_through_is_not_followed_into_all_it_imports(project: Path) -> None:
    """`trainers/__init__.py` passes `train_step` on and imports a trainer of its own as well: the
    script needs the engine it names, not every module the package's `__init__.py` gathers (a
    library's namespace: diffusers' imports all of its pipelines)."""
    other = STEP.replace("def train_step", "def other_step")
    write(project, {"trainers/__init__.py": "from .engine import train_step\nfrom .other import other_step\n",
                    "trainers/engine.py": STEP, "trainers/other.py": other,
                    "train.py": LOOP.replace("from steps", "from trainers")})
    beside = files_beside(["train.py"], {"train.py": (project / "train.py").read_bytes()})
    assert sorted(beside) == ["trainers/__init__.py", "trainers/engine.py"]
    assert findings(run("train.py")).get("train.py", []) == findings(run(".")).get("train.py", [])


def test_only_the_roots_that_reach_the_named_files_are_analysed(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file read beside the named one (it imports it) that trains by itself is not analysed for
    its own sake: its findings would not be reported. One whose loop calls into the named file is."""
    from zerograd_lint import roots

    analysed: list[str] = []
    original = roots.Analyser.analyse

    def recording(self, share, errors):
        analysed.extend(path for path, _ in share)
        return original(self, share, errors)

    monkeypatch.setattr(roots.Analyser, "analyse", recording)
    monkeypatch.setattr("zerograd_lint.schedule.processes.can_fork", lambda: False)
    engine = STEP.replace("def train_step(model, optimizer, batch):\n", "def train_one_epoch(model, optimizer, loader):\n"
                          "    for batch in loader:\n    ").replace("    optimizer.step()", "        optimizer.step()")
    engine += "\n\ndef evaluate(model, loader):\n    return sum(model(b).sum().item() for b in loader)\n"
    caller = "import torch\n\nfrom engine import train_one_epoch\n\nfor epoch in range(2):\n    train_one_epoch(model, optimizer, loader)\n"
    other = LOOP.replace("from steps import train_step", "from engine import evaluate").replace(
        "    train_step(model, optimizer, batch)", "    optimizer.zero_grad()\n    model(batch).sum().backward()\n"
        "    optimizer.step()\nprint(evaluate(model, loader))")
    write(project, {"engine.py": engine, "train.py": caller, "other.py": other})
    report = check_files(["engine.py"], named=["engine.py"])
    assert sorted(set(analysed)) == ["engine.py", "train.py"]
    assert [(f.path, f.code) for f in report.findings] == [("engine.py", "ZG001")]
    assert findings(run("engine.py")) == {p: f for p, f in findings(run(".")).items() if p == "engine.py"}


INNER = '''\
def train_epoch(model, opt_a, opt_b, data):
    for x in data:
        opt_a.zero_grad()
        model(x).sum().backward()
        opt_b.step()
'''
EPOCHS = '''\
import torch
from pkg import train_epoch


def main(model, data):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_epoch(model, optimizer, optimizer, data)
'''
UPDATE = '''\
import torch

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def update(e, b):  # not named as Ignite's process function is: only `Engine(update)` says what it is
    model(b).sum().backward()
    optimizer.step()
'''
ENGINE_RUN = '''\
from ignite.engine import Engine

from steps import optimizer, update


def main(data):
    Engine(update).run(data, max_epochs=2)
    print(optimizer.state_dict())
'''


@pytest.mark.parametrize(("files", "named"), [
    # the caller reaches the loop through a package `__init__.py` that never mentions an optimizer:
    # it passes the name on, and its users are read (the loop clears the very optimizer it steps)
    ({"pkg/__init__.py": "from .inner import train_epoch\n", "pkg/inner.py": INNER, "main.py": EPOCHS}, "pkg/inner.py"),
    # a function that trains, with no loop of its own, handed to Ignite as its per-batch callback elsewhere
    ({"steps.py": UPDATE, "main.py": ENGINE_RUN}, "steps.py"),
], ids=["through a package init", "a callback handed over elsewhere"])
def test_shapes_a_review_found_get_alone_what_they_get_whole(project: Path, files: dict[str, str], named: str) -> None:
    write(project, files)
    assert findings(run(named)).get(named, []) == findings(run(".")).get(named, [])


def test_a_cached_run_of_a_named_file_is_not_the_run_of_its_project(project: Path) -> None:
    """A named file and the files beside it may be all the project's files: the cache keeps the
    named run's result apart (it says nothing of the others: their roots were not analysed, their
    markers not looked for), and the run over the project still finds what is in them."""
    unused = "# noqa: ZG001\nx = 1\n"
    write(project, {"steps.py": STEP + unused, "train.py": LOOP})

    def cached(*args: str) -> dict[str, list[dict]]:
        done = CliRunner().invoke(main, ["--output-format", "json", *args], catch_exceptions=False)
        return findings(done)

    named = cached("train.py")
    assert list(named) == ["train.py"]
    whole = cached(".")
    assert [f["code"] for f in whole["steps.py"]] == ["ZG100"] and whole["train.py"] == named["train.py"]
    assert cached("train.py") == named
