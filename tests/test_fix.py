"""The autofix through its API: each fixture and its fixed snapshot beside it (`case.py`, `case.fixed.py`),
what it declines and why, idempotence, and the checks that stop an edit which does not hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_fixtures import SNAPSHOTS, expectations, is_fixed, unfixed
from test_projects import CASES as PROJECTS

from zerograd_lint import check_source
from zerograd_lint.checker import Result, check_project
from zerograd_lint.findings import Edit, Finding
from zerograd_lint.fix import fix_project, fix_source, pipeline
from zerograd_lint.fix.operations import Operation
from zerograd_lint.fix.rewrite import Shift, lines_of
from zerograd_lint.settings import Vocabulary

FIXTURES = Path(__file__).parent / "fixtures"
PAIRS = [(unfixed(snapshot), snapshot) for snapshot in SNAPSHOTS]  # (before, after)
SINGLE_FILES = sorted(
    p for p in FIXTURES.rglob("*.py") if "projects" not in p.relative_to(FIXTURES).parts and not is_fixed(p)
)


def crlf(data: bytes) -> bytes:
    return re.sub(rb"\r?\n", b"\r\n", data)


def tabs(data: bytes) -> bytes:
    return re.sub(rb"(?m)^((?:    )+)", lambda m: b"\t" * (len(m.group(1)) // 4), data)


def bom(data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data


def latin1(data: bytes) -> bytes:
    """The file in Latin-1, with characters that UTF-8 would write otherwise."""
    newline = b"\r\n" if b"\r\n" in data else b"\n"
    return "# -*- coding: latin-1 -*-".encode() + newline + "# « déjà vu »".encode("latin-1") + newline + data


VARIANTS = {"as-is": lambda data: data, "crlf": crlf, "tabs": tabs, "bom": bom, "latin-1": latin1}
PAIR_VARIANTS = [(pair, name) for pair in PAIRS for name in VARIANTS]


def case(pair: tuple[Path, Path]) -> str:
    return pair[0].relative_to(FIXTURES).with_suffix("").as_posix()


UNSAFE = b"# fixture: unsafe-fix"  # its snapshot is what --unsafe-fixes makes of it


def fixed(source: bytes, path: str = "train.py", vocabulary: Vocabulary = Vocabulary()) -> bytes:
    out, _ = fix_source(source, path, vocabulary, unsafe=UNSAFE in source)
    assert isinstance(out, bytes)
    return out


def apply(text: str, edits: tuple[Edit, ...]) -> str:
    """Apply edits (1-based positions of `text`, sorted and apart) from the last to the first."""
    lines = lines_of(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: tuple[int, int]) -> int:
        row, column = position
        return starts[row - 1] + column - 1 if row <= len(lines) else len(text)

    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: offset(edit.start)] + edit.content + text[offset(edit.end):]
    return text


@pytest.mark.parametrize("pair", PAIRS, ids=case)
def test_before_has_the_findings_it_expects_and_after_none(pair: tuple[Path, Path]) -> None:
    before, after = (path.read_bytes() for path in pair)
    expected, _ = expectations(before.decode())
    assert expected and {(f.line, f.code) for f in check_source(before, "before.py")} == expected
    assert check_source(after, "after.py") == []


@pytest.mark.parametrize(("pair", "variant"), PAIR_VARIANTS, ids=[f"{case(p)}-{v}" for p, v in PAIR_VARIANTS])
def test_fix_turns_before_into_after(pair: tuple[Path, Path], variant: str) -> None:
    change = VARIANTS[variant]
    before, after = (change(path.read_bytes()) for path in pair)
    assert fixed(before) == after


def test_the_pairs_cover_every_shape() -> None:
    names = {case(p) for p in PAIRS}
    assert {"fixes/crlf", "fixes/tabs", "fixes/two_loops", "fixes/move_with_comments"} <= names
    assert {"fixes/insert_nested_blocks", "ZG003/manual_update_clears_every_iteration"} <= names
    assert "frameworks/amp/ZG001/gradscaler" in names
    assert b"\r\n" in (FIXTURES / "fixes" / "crlf.fixed.py").read_bytes()
    assert b"\n\t\t" in (FIXTURES / "fixes" / "tabs.fixed.py").read_bytes()


@pytest.mark.parametrize("pair", PAIRS, ids=case)
def test_each_fix_carries_edits_that_make_it(pair: tuple[Path, Path]) -> None:
    before = pair[0].read_bytes()
    applicability = "unsafe" if UNSAFE in before else "safe"
    _, fixes = fix_source(before, "before.py", unsafe=applicability == "unsafe")
    assert fixes.fixed and not fixes.declined
    text = before.decode()
    for finding in fixes.fixed:
        assert finding.fix is not None and finding.fix.applicability == applicability
        assert finding.fix.message.startswith(("Insert `", "Move `", "Replace `", "Remove "))
        assert finding.as_dict()["fix"]["applicability"] == applicability
    if len(fixes.fixed) == 1:
        [finding] = fixes.fixed
        after = pair[1].read_bytes().decode()
        assert apply(text, finding.fix.edits) == after


@pytest.mark.parametrize("path", SINGLE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
@pytest.mark.parametrize("unsafe", [False, True], ids=["fix", "unsafe-fixes"])
def test_a_second_fix_changes_nothing(path: Path, unsafe: bool) -> None:
    once, _ = fix_source(path.read_bytes(), str(path), unsafe=unsafe)
    again, fixes = fix_source(once, str(path), unsafe=unsafe)
    assert again == once and fixes.fixed == [] and fixes.changed == {}


QUIET = [p for p in SINGLE_FILES if p.parent.name == "quiet"]


@pytest.mark.parametrize("path", QUIET, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_correct_code_is_never_touched(path: Path) -> None:
    source = path.read_bytes()
    out, fixes = fix_source(source, str(path), unsafe=True)
    assert out == source and fixes.fixed == [] and fixes.declined == []


def test_there_are_quiet_fixtures_to_leave_alone() -> None:
    assert len(QUIET) >= 80


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
@pytest.mark.parametrize("unsafe", [False, True], ids=["fix", "unsafe-fixes"])
def test_a_second_fix_of_a_project_changes_nothing(project: Path, unsafe: bool) -> None:
    sources: dict[str, str | bytes] = {str(f): f.read_bytes() for f in sorted(project.rglob("*.py"))}
    first = fix_project(sources, check_project(sources), check_project, unsafe=unsafe)
    once = {**sources, **{path: new for path, (_, new) in first.changed.items()}}
    second = fix_project(once, check_project(once), check_project, unsafe=unsafe)
    assert second.changed == {} and second.fixed == []
    if project.name.startswith("quiet_"):  # correct code is never touched
        assert first.changed == {} and first.fixed == [] and first.declined == []


def test_a_project_fix_edits_the_step_in_another_file() -> None:
    project = FIXTURES / "projects" / "zg002_relative_import"
    sources: dict[str, str | bytes] = {str(f): f.read_bytes() for f in sorted(project.rglob("*.py"))}
    fixes = fix_project(sources, check_project(sources), check_project)
    steps = str(project / "trainpkg" / "steps.py")
    assert set(fixes.changed) == {steps} and not fixes.declined
    [finding] = fixes.fixed
    assert finding.path == str(project / "trainpkg" / "loop.py") and finding.fix is not None
    assert finding.fix.path == steps and finding.fix.applicability == "safe"
    assert finding.fix.message == ("Move `optimizer.zero_grad()` (steps.py line 3) to right after `optimizer.step()` "
                                   "(steps.py line 4)")
    original, new = fixes.changed[steps]
    assert apply(original.decode(), finding.fix.edits) == new.decode()


def test_a_helper_that_steps_gets_its_clear_after_the_loops_call_of_it() -> None:
    project = FIXTURES / "projects" / "zg001_step_in_engine"
    sources: dict[str, str | bytes] = {str(f): f.read_bytes() for f in sorted(project.glob("*.py"))}
    fixes = fix_project(sources, check_project(sources), check_project)
    assert set(fixes.changed) == {str(project / "train.py")}  # engine.py, which others may call, is left alone
    [finding] = fixes.fixed
    assert finding.fix is not None and finding.fix.path is None and finding.fix.applicability == "safe"
    assert finding.fix.message == ("Insert `optimizer.zero_grad()` after `engine.train_step(model, optimizer, "
                                   "criterion, batch)` (line 9), the call of `train_step()` that steps")


def test_a_step_that_applies_another_loops_gradients_gets_a_clear_after_both() -> None:
    before = (FIXTURES / "suppression" / "file_level_noqa_one_code.py").read_text()
    out, fixes = fix_source(before, "train.py", unsafe=True)
    [finding] = fixes.fixed
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert finding.fix.message == ("Insert `optimizer.zero_grad()` after `optimizer.step()` (line 21) and after "
                                   "`optimizer.step()` (line 16)")
    lines = before.splitlines(keepends=True)
    lines.insert(21, "    optimizer.zero_grad()\n")
    lines.insert(16, "        optimizer.zero_grad()\n")
    assert out == "".join(lines) and check_source(out, "train.py") == []


def test_an_unsafe_fix_is_held_back_and_said_to_be_available() -> None:
    before = (FIXTURES / "fixes" / "helper_called_from_two_loops.py").read_bytes()
    out, fixes = fix_source(before, "train.py")
    assert out == before and not fixes.fixed and len(fixes.declined) == 2
    for declined in fixes.declined:
        assert declined.reason.startswith("unsafe fix held back: `train_step()` is also named at line ")
        assert declined.reason.endswith("; --unsafe-fixes makes it")
        assert declined.fix is not None and declined.fix.applicability == "unsafe"


HEADER = "import torch\nmodel = torch.nn.Linear(3, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
DECLINED = {
    "clear in a helper, naming its own parameter": (
        HEADER + "def forward(opt, x):\n    opt.zero_grad()\n    model(x).sum().backward()\n"
                 "for i, x in enumerate([]):\n    forward(optimizer, x)\n    if i % 2:\n        optimizer.step()\n",
        "the clear is in `forward()` (line 5), where `opt` may not be the `optimizer` of the step"),
    "step outside the loop": (
        HEADER + "for epoch in range(2):\n    for x in []:\n        optimizer.zero_grad()\n"
                 "        model(x).sum().backward()\n    optimizer.step()\n",
        "the step is `optimizer.step()` (line 8), outside the loop at line 5"),
    "update by hand whose gradient is read again": (
        "import torch\nw = torch.zeros(3, requires_grad=True)\nfor x in []:\n    (w * x).sum().backward()\n"
        "    with torch.no_grad():\n        w -= 0.1 * w.grad\n    print(w.grad)\n",
        "`w.grad` is read again at line 7: cleared right after the update, it would be None there"),
    "closure that cannot name the optimizer": (
        "import torch\nmodel = torch.nn.Linear(3, 1)\n"
        "def closure():\n    loss = model(torch.ones(3)).sum()\n    loss.backward()\n    return loss\n"
        "def main():\n    optimizer = torch.optim.LBFGS(model.parameters())\n    for _ in range(3):\n"
        "        optimizer.step(closure)\n",
        "`optimizer` is not the same variable in `closure()` as at the step"),
    "gradient read after the step, outside its block": (
        HEADER + "for i, x in enumerate([]):\n    model(x).sum().backward()\n    if i % 2 == 0:\n"
                 "        optimizer.step()\n    print(model.weight.grad)\n",
        "a gradient may be read after `optimizer.step()` (line 7), at line 8: cleared right after the step, it would "
        "be None there"),
    "optimizer reached through a call": (
        HEADER + "optimizers = [optimizer]\nfor x in []:\n    model(x).sum().backward()\n"
                 "    optimizers[len(optimizers) - 1].step()\n",
        "the optimizer is reached through a call"),
    "two different steps": (
        HEADER + "for x in []:\n    optimizer.zero_grad()\n    model(x).sum().backward()\n    optimizer.step()\n"
                 "    optimizer.step()\n",
        "applies what another step of this loop applied"),
    "statements sharing a line": (
        HEADER + "for x in []:\n    model(x).sum().backward(); optimizer.step()\n",
        "shares its line with other statements"),
    "step on the line of its block's header": (
        HEADER + "for x in []:\n    model(x).sum().backward()\n    if x is not None: optimizer.step()\n",
        "is on the line of its block's header"),
    "step in a compound statement's header": (
        HEADER + "for x in []:\n    model(x).sum().backward()\n    if optimizer.step() is None:\n        pass\n",
        "is in the header of a compound statement"),
    "clear in a loop over the parameters that does more": (
        HEADER + "for x in []:\n    model(x).sum().backward()\n    for p in model.parameters():\n"
                 "        p.grad = None\n        p.requires_grad_(True)\n    optimizer.step()\n",
        "the clear is inside the loop at line 6 and the step is not"),
    "clear alone in its block": (
        HEADER + "for i, x in enumerate([]):\n    optimizer.zero_grad()\n    model(x).sum().backward()\n"
                 "    if i % 2:\n        optimizer.zero_grad()\n    optimizer.step()\n",
        "is the only statement of its block"),
    "clear part of a larger statement": (
        HEADER + "for x in []:\n    model(x).sum().backward()\n    done = optimizer.zero_grad() or True\n"
                 "    optimizer.step()\n",
        "is part of a larger statement"),
    "one clear for two steps": (
        "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 1))\n"
        "opt_a = torch.optim.SGD(model[0].parameters(), lr=0.1)\n"
        "opt_b = torch.optim.SGD(model[1].parameters(), lr=0.1)\n"
        "for x in []:\n    model(x).sum().backward()\n    model.zero_grad()\n    opt_a.step()\n    opt_b.step()\n",
        "would have to follow two steps (lines 8 and 9)"),
    "clear outside a gating `with` block": (
        HEADER + "for x in []:\n    optimizer.zero_grad()\n    with accelerator.accumulate(model):\n"
                 "        model(x).sum().backward()\n        optimizer.step()\n",
        "the step is inside the `with` block at line 6 and the clear is not"),
    "a helper's clear that moved would still clear every batch": (
        "from accelerate import Accelerator\ndef reset(module):\n    module.zero_grad(set_to_none=True)\n"
        "accelerator = Accelerator(gradient_accumulation_steps=4)\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for batch in loader:\n    with accelerator.accumulate(model):\n        reset(model)\n"
        "        accelerator.backward(model(**batch).loss)\n        optimizer.step()\n",
        "inside `accumulate()` only the prepared optimizer's `zero_grad()` waits for the real step, and "
        "`reset(model)` (line 8) clears otherwise: moved, it would still clear every batch"),
}


@pytest.mark.parametrize("case", DECLINED)
def test_what_needs_a_judgement_is_declined_with_the_reason(case: str) -> None:
    source, reason = DECLINED[case]
    out, fixes = fix_source(source, "train.py")
    assert out == source and fixes.fixed == [] and fixes.changed == {}
    assert fixes.declined and all(reason in d.reason for d in fixes.declined), [d.reason for d in fixes.declined]


@pytest.mark.parametrize("code", ["ZG001", "ZG002", "ZG003"])
def test_the_fix_of_each_rule_pages_example_is_quiet(code: str) -> None:
    from test_rule_pages import blocks, page, sections

    [example] = blocks(sections(page(code))["Example"], "python")
    out, fixes = fix_source(example, "train.py")
    assert len(fixes.fixed) == 1 and check_source(out, "train.py") == []


def test_an_optimizer_known_by_vocabulary_only_is_not_cleared() -> None:
    source = ("model = make_model()\nlearner = make_learner(model)\nfor x in []:\n    model(x).sum().backward()\n"
              "    learner.step()\n")
    out, fixes = fix_source(source, "train.py", Vocabulary(optimizers=("learner",)))
    assert out == source
    assert [d.reason for d in fixes.declined] == [
        "`learner` is an optimizer by the project's vocabulary, which does not say it has `zero_grad()`"]


def test_a_file_without_a_final_line_break_gets_one_where_the_clear_goes() -> None:
    source = HEADER + "for x in []:\n    model(x).sum().backward()\n    optimizer.step()"
    out, fixes = fix_source(source, "train.py")
    assert out == source + "\n    optimizer.zero_grad()"
    [finding] = fixes.fixed
    assert apply(source, finding.fix.edits) == out


def test_a_moved_statement_takes_a_clear_with_its_continuation_lines() -> None:
    source = (HEADER + "for x in []:\n    model(x).sum().backward()\n    optimizer.zero_grad(\n"
              "        set_to_none=True)\n    optimizer.step()\n")
    out, _ = fix_source(source, "train.py")
    assert out == HEADER + ("for x in []:\n    model(x).sum().backward()\n    optimizer.step()\n"
                            "    optimizer.zero_grad(\n        set_to_none=True)\n")


class TestTheChecksBeforeWriting:
    """Each check stops a fix that does not hold, whatever produced it."""

    SOURCE = (FIXTURES / "ZG001" / "no_clear.py").read_bytes()

    def run(self, check=check_project) -> pipeline.Fixes:
        sources: dict[str, str | bytes] = {"train.py": self.SOURCE}
        return fix_project(sources, check_project(sources), check)

    def test_an_edit_that_changes_more_is_not_made(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = pipeline.rendered
        monkeypatch.setattr(pipeline, "rendered", lambda module, like: real(module, like).replace(b"lr=0.1", b"lr=1.0"))
        fixes = self.run()
        assert fixes.changed == {}
        assert [d.reason for d in fixes.declined] == [
            "the fixed source differs from the original by more than the intended statements"]

    def test_an_edit_that_does_not_parse_is_not_made(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = pipeline.rendered
        monkeypatch.setattr(pipeline, "rendered", lambda module, like: real(module, like) + b"def (:\n")
        fixes = self.run()
        assert fixes.changed == {} and fixes.declined[0].reason.startswith("the fixed source does not parse")

    def test_an_edit_that_brings_a_finding_is_not_made(self) -> None:
        def check(sources):
            result = check_project(sources)
            if sources["train.py"] != self.SOURCE:
                brought = Finding("train.py", 2, 1, "ZG002", "new", name="cleared-before-step", end_line=2,
                                  end_column=2)
                result.findings["train.py"] = [*result.findings["train.py"], brought]
            return result

        fixes = self.run(check)
        assert fixes.changed == {}
        assert fixes.declined[0].reason == "the edit would bring a new finding, ZG002 at line 2 of train.py once fixed"

    def test_an_edit_a_second_run_would_extend_is_not_made(self, monkeypatch: pytest.MonkeyPatch) -> None:
        declined = "for x, y in data:\n    model(x).sum().backward(); optimizer.step()\n"  # shares its line
        source = (FIXTURES / "ZG001" / "no_clear.py").read_text() + declined
        real, calls = pipeline.placements, []

        def placements(findings, *args):  # the second run would fix what the first one declined
            calls.append(findings)
            planned = real(findings, *args)
            return planned if len(calls) == 1 else [Operation(f, None, "again") for f in findings]

        monkeypatch.setattr(pipeline, "placements", placements)
        sources: dict[str, str | bytes] = {"train.py": source}
        fixes = fix_project(sources, check_project(sources), check_project)
        assert fixes.changed == {} and len(calls) == 2
        assert "a second --fix would change the file again" in {d.reason for d in fixes.declined}

    def test_an_internal_error_while_checking_again_writes_nothing(self) -> None:
        def check(sources):
            if sources["train.py"] != self.SOURCE:
                raise RuntimeError("boom")
            return check_project(sources)

        fixes = self.run(check)
        assert fixes.changed == {} and fixes.declined[0].reason.endswith("(RuntimeError: boom)")

    def test_an_unchecked_fixed_source_is_not_kept(self) -> None:
        from zerograd_lint.findings import SourceError

        def check(sources):
            result = check_project(sources)
            if sources["train.py"] != self.SOURCE:
                result = Result(errors={"train.py": SourceError("train.py", "too deeply nested")})
            return result

        assert self.run(check).declined[0].reason == "the fixed source cannot be checked: too deeply nested"


def test_lines_are_followed_through_insertions_and_moves() -> None:
    # line 3 moves after line 6; one line is inserted after line 8
    shift = Shift(insertions=((6, 1), (8, 1)), moves=((3, 3, 0),))
    assert [shift.line(n) for n in range(1, 11)] == [1, 2, 6, 3, 4, 5, 7, 8, 10, 11]
    assert shift.start(1) == 9


def test_a_project_that_cannot_be_analysed_as_a_whole_is_not_fixed(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from zerograd_lint import checker
    from zerograd_lint.runner import NotChecked, fix_files

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_bytes((FIXTURES / "ZG001" / "no_clear.py").read_bytes())
    real = checker.check_project

    def check_project(sources, vocabulary=Vocabulary(), **options):  # an internal error, for the whole project only
        if len(sources) > 1:
            raise RuntimeError("boom")
        return real(sources, vocabulary, **options)

    monkeypatch.setattr(checker, "check_project", check_project)
    with pytest.raises(NotChecked, match="^the project could not be checked: internal error: RuntimeError: boom$"):
        fix_files([str(tmp_path / "a.py"), str(tmp_path / "b.py")])  # nor checked file by file instead
