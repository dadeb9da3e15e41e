"""The statements of a long function the analysis reads, and those left out before LibCST parses it
(`zerograd_lint.slicing`). That the findings stay the same is `tests/test_prefilter.py`'s: the
exhaustive run slices nothing. Here: the slice does leave things out, keeps what the findings rest
on, and leaves code LibCST can parse."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from zerograd_lint import survey
from zerograd_lint.checker import check_project
from zerograd_lint.planning import planned
from zerograd_lint.settings import Vocabulary
from zerograd_lint.slicing import blocks, words_of
from zerograd_lint.sparse import sparse_text

FIXTURES = Path(__file__).parent / "fixtures"
LONG = {  # fixture: (lines that must stay, lines that must go)
    "ZG001/long_main_among_setup_and_logging.py": (
        ["optimizer = torch.optim.SGD(model.parameters(), lr=config[\"lr\"])", "for x, y in batches:", "optimizer.step()"],
        ["logger.info(\"writing to %s\", logging_dir)", "run_name = f\"run-{config['seed']}\"", "f.write(str(summary))"],
    ),
    "quiet/long_main_clears_through_an_alias.py": (
        ["opt = optimizer", "stepped.append(optimizer)", "stepped = []", "for each in stepped:"],
        ["logger.info(\"optimizer ready\")", "tags = [\"alias\", \"list\", run_name]",
         "notes = {\"purpose\": \"a fixture\", \"owner\": \"tests\"}"],
    ),
    "quiet/long_main_until_told_to_stop.py": (
        ["while True:", "break", "step += 1", "if step >= settings[\"steps\"]:"],
        ["logger.info(\"model: %s\", model)", "rounds = len(labels) * 2", "labels = [\"first\", \"second\", \"third\"]"],
    ),
}


def sliced_and_whole(text: str) -> tuple[str, str]:
    found = survey.survey_module(text)
    plan = planned({"m.py": text}, {"m.py": found})
    assert plan is not None
    sliced = plan.sparse("m.py")[0]
    plan.exhaustive = True  # what the exhaustive run gives LibCST of the same functions: nothing sliced
    plan.cut_already.clear()
    return sliced, plan.sparse("m.py")[0]


@pytest.mark.parametrize("name", sorted(LONG))
def test_a_long_function_keeps_what_the_findings_rest_on_and_loses_the_rest(name: str) -> None:
    text = (FIXTURES / name).read_text()
    sliced, whole = sliced_and_whole(text)
    kept = {line.split("  #")[0].strip() for line in sliced.splitlines()}
    stay, go = LONG[name]
    assert [line for line in stay if line not in kept] == []
    assert [line for line in go if line in kept] == []
    assert len(sliced) < len(whole)
    ast.parse(sliced)


@pytest.mark.parametrize("name", sorted(LONG))
def test_the_findings_are_those_of_the_function_whole(name: str) -> None:
    source = (FIXTURES / name).read_bytes()
    fast, thorough = check_project({name: source}), check_project({name: source}, exhaustive=True)
    assert fast.findings == thorough.findings


def slice_of(code: str, followed: frozenset[str] = frozenset()) -> str:
    text = textwrap.dedent(code)
    function = ast.parse(text).body[0]
    found = blocks(function, words_of(Vocabulary(), followed), frozenset(), frozenset({"logging", "torch"}))
    return sparse_text(text, survey.survey_module(text).outline, frozenset({1}), True, found)[0]


def test_a_block_left_empty_gets_a_pass() -> None:
    sliced = slice_of("""\
        def f(model, optimizer, data):
            for x in data:
                if x is None:
                    print("empty")
                optimizer.zero_grad()
                model(x).backward()
                optimizer.step()
        """)
    assert "print" not in sliced
    assert "if x is None:" not in sliced  # nothing in it is kept: the `if` goes whole
    ast.parse(sliced)


def test_what_shares_a_line_with_something_kept_stays() -> None:
    sliced = slice_of("""\
        def f(model, optimizer, data):
            for x in data:
                note = 1; optimizer.zero_grad()
                if x is None: label = "empty"
                model(x).backward()
                optimizer.step()
        """)
    assert "note = 1; optimizer.zero_grad()" in sliced
    ast.parse(sliced)


def test_a_call_given_what_holds_the_optimizer_stays_unless_its_name_says_it_is_harmless() -> None:
    sliced = slice_of("""\
        def f(model, optimizer, data):
            state = Holder(optimizer)
            for x in data:
                sync_state(state)
                log_metrics(state)
                model(x).backward()
                optimizer.step()
        """)
    assert "sync_state(state)" in sliced and "log_metrics(state)" not in sliced


def test_a_call_of_a_function_the_analysis_follows_stays() -> None:
    code = """\
        def f(model, optimizer, data):
            for x in data:
                train_step(x)
                model(x).backward()
                optimizer.step()
        """
    assert "train_step(x)" not in slice_of(code)
    assert "train_step(x)" in slice_of(code, followed=frozenset({"train_step"}))


# Every fixture, its loops moved into a function and each function padded with statements that
# cannot matter (so that it is long enough to be sliced): the same findings with slicing and without.
NOISE = [
    '_pad_config = {"lr": 0.1, "steps": 3, "name": "pad"}',
    "_pad_name = f\"run-{_pad_config['steps']}\"",
    'print("padding", _pad_name)',
    "_pad_paths = [str(i) for i in range(3)]",
    "_pad_total = sum(len(p) for p in _pad_paths)",
    "if _pad_total > 100:",
    '    print("long", _pad_total)',
    '_pad_notes = {"purpose": "padding"}',
    'print("notes", _pad_notes)',
] * 3
SINGLE = sorted(p for p in FIXTURES.rglob("*.py") if "projects" not in p.parts and not p.name.endswith(".fixed.py"))


def in_a_function(text: str) -> str:
    """The module's statements that are not imports, definitions or its docstring, moved into a function."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    kept, moved = [], []
    for statement in tree.body:
        first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))])
        code = lines[first - 1 : statement.end_lineno]
        stays = isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if stays or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)):
            kept += code
        else:
            moved += ["    " + line if line.strip() else line for line in code]
    return "".join(kept) + ("\n\ndef _main():\n" + "".join(moved) + "\n\n_main()\n" if moved else "")


def padded(text: str) -> str:
    """Each function with the statements of `NOISE` first (after its docstring), and a look at its parameters."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    inserts = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body[1:] if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) else node.body
        if not body or body[0].lineno == node.lineno:
            continue
        line = lines[body[0].lineno - 1]
        indent = line[: len(line) - len(line.lstrip())]
        if len(indent) != body[0].col_offset:  # a statement after a `;`
            continue
        looks = [f"print(type({a.arg}).__name__)" for a in (*node.args.posonlyargs, *node.args.args)][:2]
        inserts.append((body[0].lineno - 1, "".join(indent + statement + "\n" for statement in (*NOISE, *looks))))
    for at, block in sorted(inserts, reverse=True):
        lines.insert(at, block)
    return "".join(lines)


def unsliced(sources: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    """The run as it is, but for the slicing (the exhaustive run also analyses every loop, so
    only its findings compare: `--show-loops` lists more there)."""
    from zerograd_lint import planning

    with monkeypatch.context() as patched:
        patched.setattr(planning, "SLICED_SHARE", float("inf"))
        return check_project(sources, loops=True)


def rewritten(text: str) -> str:
    """`text` moved into a function and padded; where its layout defeats the moving (form feeds,
    odd indentation), only padded; the text itself where neither parses."""
    for rewrite in (lambda t: padded(in_a_function(t)), padded):
        try:
            candidate = rewrite(text)
            ast.parse(candidate)
        except (SyntaxError, IndexError):
            continue
        return candidate
    return text


@pytest.mark.parametrize("path", SINGLE, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_fixture_in_a_long_function_gives_the_same_findings_sliced(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = {path.name: rewritten(path.read_text(encoding="utf-8"))}
    fast, whole = check_project(sources, loops=True), unsliced(sources, monkeypatch)
    assert fast.findings == check_project(sources, exhaustive=True).findings == whole.findings
    assert fast.errors.keys() == whole.errors.keys()
    assert fast.loops == whole.loops


def test_the_rewriting_makes_most_fixtures_sliced(monkeypatch: pytest.MonkeyPatch) -> None:
    """So that the test above compares something: in most fixtures rewritten, statements are left out."""
    from zerograd_lint import planning

    blanked: list[int] = []
    original = planning._sliced

    def counting(*args, **kwargs):
        found = original(*args, **kwargs)
        blanked.append(sum(blank for block in found for *_, blank in block))
        return found

    monkeypatch.setattr(planning, "_sliced", counting)
    sliced = 0
    for path in SINGLE:
        blanked.clear()
        check_project({path.name: rewritten(path.read_text(encoding="utf-8"))})
        sliced += any(blanked)
    assert sliced >= 0.7 * len(SINGLE), f"{sliced} of {len(SINGLE)}"


# Shapes a review found the slice dropping (each gave another finding, or another loop listed,
# sliced): what an attribute of a local holds, what a compound statement's header evaluates or binds.
REVIEWED = {
    "an optimizer kept in an attribute of a local": """
        box = Box()
        box.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        o = box.opt
        for x in data:
            box.tick()
            model(x).sum().backward()
            o.step()
    """,
    "an optimizer stepped through the namespace holding it": """
        ns = Namespace()
        ns.optimizer = torch.optim.AdamW(model.parameters())
        for x in data:
            scaler.scale(model(x).sum()).backward()
            scaler.step(ns.optimizer)
            after_step(ns)
    """,
    "a header given the optimizer": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        if advance(optimizer):
            print("advanced")
        for x in data:
            model(x).sum().backward()
            optimizer.step()
    """,
    "a header that clears": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            if optimizer.zero_grad() is None:
                print("cleared")
            model(x).sum().backward()
            optimizer.step()
    """,
    "a header that runs the backward": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            if model(x).sum().backward() is None:
                print("went back")
            optimizer.step()
    """,
    "a header that steps with a closure": """
        optimizer = torch.optim.LBFGS(model.parameters())
        for x in data:
            def closure():
                optimizer.zero_grad()
                loss = model(x).sum()
                loss.backward()
                return loss
            if (ret := optimizer.step(closure)) is not None:
                print("stepped", ret)
    """,
    "a for target read later": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for o in [optimizer]:
            print("one optimizer")
        for x in data:
            model(x).sum().backward()
            o.step()
    """,
    "a walrus in a header read later": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        if (o := optimizer) is not None:
            print("have an optimizer")
        for x in data:
            model(x).sum().backward()
            optimizer.step()
            tick(o)
    """,
    "a with target read later": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        with holder(optimizer) as o:
            print("held")
        for x in data:
            model(x).sum().backward()
            optimizer.step()
            o.zero_grad()
    """,
}


# A second review: a local or a parameter named like something the module imports, and the
# object an optimizer was taken from (`opt = trainer.opt`), which holds it.
REVIEWED_AGAIN = {
    "a local named like an import": ("import state\nfrom argparse import Namespace\n", "main(model, data)", """
        state = Namespace()
        state.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            state.optimizer.step()
            state.tick()
    """),
    "a parameter named like an import": ("import trainer\n", "train(trainer, model, data)", """
        trainer.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            trainer.optimizer.step()
            trainer.tick()
    """),
    "a name imported in another function": ("from argparse import Namespace\n\n\ndef other():\n    from somewhere import state\n",
                                            "main(model, data)", """
        state = Namespace()
        state.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        box = state
        for x in data:
            model(x).sum().backward()
            state.optimizer.step()
            box.tick()
    """),
    "an optimizer taken from a parameter": ("", "main(model, data, trainer)", """
        optimizer = trainer.optimizer
        for x in data:
            model(x).sum().backward()
            optimizer.step()
            trainer.on_batch_end()
    """),
    "an optimizer taken from a local, its holder given": ("", "main(model, data)", """
        trainer = Trainer()
        opt = trainer.opt
        for x in data:
            model(x).sum().backward()
            opt.step()
            after_batch(trainer)
    """),
}
REVIEWED.update({name: (imports, header, body) for name, (imports, header, body) in REVIEWED_AGAIN.items()})


@pytest.mark.parametrize("body", REVIEWED.values(), ids=list(REVIEWED))
def test_reviewed_shapes_give_the_same_findings_and_loops_sliced(body: str | tuple[str, str, str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    imports, header, code = body if isinstance(body, tuple) else ("", "main(model, data)", body)
    text = padded(f"import torch\n{imports}\n\ndef {header}:\n" + textwrap.indent(textwrap.dedent(code).strip("\n"), "    ") + "\n")
    sources = {"m.py": text}
    fast, whole = check_project(sources, loops=True), unsliced(sources, monkeypatch)
    assert fast.findings == check_project(sources, exhaustive=True).findings == whole.findings
    assert fast.loops == whole.loops
    assert len(sliced_and_whole(text)[0]) < len(text)  # something was left out
