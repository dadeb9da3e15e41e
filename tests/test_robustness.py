"""Unbreakable on any input: whatever it is given, the linter reports findings, or one line for a
file it cannot check, and goes on with the others. It never crashes, never executes or imports
the code it checks, and never writes it.

- Generated code (hypothesmith): `check_source` raises nothing but `SourceError`, and that only
  for code a parser refuses (LibCST rejects a few valid files, LibCST#1011) or code nested too
  deeply; the same input gives the same findings; positions move with the text.
- Real trees: the standard library of the running interpreter and the installed libcst and click
  packages are checked end to end; every error must be one CPython agrees with.
- Deep nesting, a huge file, an internal error injected into the analysis: one line for that
  file, exit 2, the other files still checked.

`pytest --hypothesis-long` runs the generated-code tests with many more examples.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
import tokenize
from collections.abc import Callable
from pathlib import Path

import hypothesmith
import libcst
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from snippets import STALE

from zerograd_lint import check_source
from zerograd_lint.schedule import processes
from zerograd_lint.cli import main
from zerograd_lint.codes import RULES
from zerograd_lint.files import discover
from zerograd_lint.findings import Finding, SourceError
from zerograd_lint.fix import fix_source
from zerograd_lint.runner import Report, check_files
from zerograd_lint.settings import Settings, Vocabulary

ROOT = Path(__file__).parent.parent
PATH = "generated.py"
NESTED = re.compile(r"nested|too large")  # how a refusal for depth or size reads

STALE_FINDING = "stale.py:4:1: ZG001"


# --- generated code ----------------------------------------------------------------------------


def _refused_by_a_parser(code: str) -> bool:
    """CPython's parser or LibCST's refuses the code (or overflows on it)."""
    try:
        ast.parse(code)
        libcst.parse_module(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError, libcst.ParserSyntaxError):
        return True
    return False


def _outcome(code: str) -> tuple[str, object]:
    """("findings", [(finding, related), ...]) or ("refused", reason). Any exception other than
    `SourceError` propagates and fails the test."""
    try:
        found = check_source(code, PATH)
    except SourceError as exc:
        return "refused", exc.reason
    return "findings", [(f, f.related) for f in found]


def _well_formed(code: str, findings: list[Finding]) -> None:
    lines = code.count("\n") + 1
    for f in findings:
        assert f.path == PATH and f.code in RULES and f.name == RULES[f.code].name, f
        assert 0 < f.line <= f.end_line <= lines and f.column > 0 and f.end_column > f.column, f
        for related in f.related:
            assert related.path == PATH and 1 <= related.line <= lines and related.column >= 1, f


def _shifted(findings: list[tuple[Finding, tuple]], by: int) -> list[tuple]:
    return [
        (f.code, f.line + by, f.column, f.end_line + by, f.end_column,
         tuple((r.role, r.line + by, r.column, r.text) for r in related))
        for f, related in findings
    ]


def check_properly(code: str) -> None:
    """What must hold for any text: see the module's docstring."""
    kind, value = _outcome(code)
    if kind == "refused":
        assert _refused_by_a_parser(code) or NESTED.search(value), f"valid code refused: {value}\n{code}"
    else:
        _well_formed(code, [f for f, _ in value])
    assert _outcome(code) == (kind, value), "a second check of the same text gave another result"
    moved_kind, moved = _outcome("\n\n\n" + code)
    assert moved_kind == kind, f"three blank lines on top turned {kind} into {moved_kind}: {moved}"
    if kind == "findings":  # findings at one place are in the order of their messages, which name lines
        assert sorted(_shifted(moved, 0)) == sorted(_shifted(value, 3)), "positions did not move with the text"


def _indented(code: str, prefix: str) -> str:
    """Each line of `code` (as Python splits lines: at \\n, \\r\\n or \\r) behind `prefix`."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", code)
    return "".join(prefix + line if line.strip() else line for line in lines)


# Where generated code goes so that the analysis runs on it: every skeleton holds a loop that
# runs a backward and steps, and `{code}` is placed in it (indented to its place).
SKELETONS = {
    "module above the loop": "{code}\nfor x in data:\n    loss.backward()\n    opt.step()\n",
    "loop body": "for x in data:\n    loss.backward()\n{code:4}\n    opt.step()\n",
    "function loop body": (
        "def train(model, data, opt):\n    for x in data:\n{code:8}\n        opt.zero_grad()\n"
        "        model(x).sum().backward()\n        opt.step()\n"
    ),
    "helper called from the loop": (
        "def update(opt, loss):\n    loss.backward()\n{code:4}\n    opt.step()\n\n\n"
        "def train(model, data, opt):\n    for x in data:\n        update(opt, model(x).sum())\n"
    ),
    "method of a trainer": (
        "class Trainer:\n    def __init__(self, model):\n        self.optimizer = torch.optim.SGD(model.parameters())\n\n"
        "    def fit(self, data):\n        for x in data:\n            self.step(x)\n\n"
        "    def step(self, x):\n        self.optimizer.zero_grad()\n{code:8}\n"
        "        self.model(x).sum().backward()\n        self.optimizer.step()\n"
    ),
}


def _place(skeleton: str, code: str) -> str:
    code = code if code.endswith(("\n", "\r")) else code + "\n"

    def fill(match: re.Match[str]) -> str:
        return _indented(code, " " * int(match.group(1) or 0)).rstrip("\r\n")

    return re.sub(r"\{code(?::(\d+))?\}", fill, skeleton)


# Leaves of generated control flow: what training code calls, and how it leaves a block.
EVENTS = (
    "loss.backward()", "opt.step()", "opt.zero_grad()", "model.zero_grad(set_to_none=True)",
    "scaler.scale(loss).backward()", "scaler.step(opt)", "scaler.update()", "sched.step()",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", "loss = model(x).sum() / k",
    "self.optimizer.step()", "self.optimizer.zero_grad()", "self.manual_backward(loss)",
    "accelerator.backward(loss)", "p.grad = None", "opt = torch.optim.Adam(model.parameters())",
    "helper(opt)", "[q.grad.zero_() for q in model.parameters()]", "zero = lambda: opt.zero_grad()", "zero()",
    "total += loss.item()", "x, (y, z) = batch", "del loss", "assert loss is not None",
)
JUMPS = ("break", "continue", "return", "return loss", "raise StopIteration", "yield loss", "pass")
SIMPLE_TESTS = ("i % k == 0", "done", "not skip", "(i + 1) % k", "x is None", "True", "1", "loss.item() > 0")
PATTERNS = ("0", "[a, *rest]", "{'k': v}", "Batch(x=0)", "str() | bytes()", "(a, b) if a > b", "_")


def _expressions() -> st.SearchStrategy[str]:
    """A hypothesmith expression (parenthesised, so that it fits any place), or a plain test."""
    generated = hypothesmith.from_grammar("eval_input").map(lambda e: "(" + e.strip() + "\n)")
    return st.one_of(st.sampled_from(SIMPLE_TESTS), generated)


def _blocks() -> st.SearchStrategy[list[str]]:
    """Blocks of statements as lists of lines (without their indentation)."""
    expr = _expressions()
    leaf = st.one_of(st.sampled_from(EVENTS), st.sampled_from(JUMPS), expr).map(lambda s: [s])

    def indent(lines: list[str]) -> list[str]:
        return ["    " + line for line in lines]

    def compound(block: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
        def flat(blocks: list[list[str]]) -> list[str]:
            return [line for b in blocks for line in b]

        body = st.lists(block, min_size=1, max_size=3).map(flat)
        optional = st.one_of(st.none(), body)

        def branches(test, then, elifs, otherwise):
            out = [f"if {test}:", *indent(then)]
            for t, b in elifs:
                out += [f"elif {t}:", *indent(b)]
            return out + (["else:", *indent(otherwise)] if otherwise else [])

        def loop(keyword, header, body_, otherwise, marker):
            out = [f"{keyword} {header}:{marker}", *indent(body_)]
            return out + (["else:", *indent(otherwise)] if otherwise else [])

        def trying(body_, handlers, otherwise, final):
            out = ["try:", *indent(body_)]
            for name, handler in handlers:
                out += [f"except {name}:", *indent(handler)]
            if otherwise and handlers:
                out += ["else:", *indent(otherwise)]
            if final or not handlers:
                out += ["finally:", *indent(final or ["pass"])]
            return out

        def matching(subject, cases):
            out = [f"match {subject}:"]
            for pattern, case in cases:
                out += [f"    case {pattern}:", *indent(indent(case))]
            return out

        marker = st.sampled_from(("", "", "  # zerograd: accumulate", "  # noqa: ZG001"))
        return st.one_of(
            st.builds(branches, expr, body, st.lists(st.tuples(expr, body), max_size=2), optional),
            st.builds(loop, st.just("while"), expr, body, optional, marker),
            st.builds(loop, st.just("for"), expr.map(lambda e: f"i, x in enumerate({e})"), body, optional, marker),
            st.builds(trying, body, st.lists(st.tuples(st.sampled_from(("Exception", "ValueError as e", "(KeyError, OSError)")), body), max_size=2), optional, optional),
            st.builds(lambda item, b: [f"with {item}:", *indent(b)],
                      st.one_of(expr.map(lambda e: f"{e} as ctx"), st.just("accelerator.accumulate(model)"),
                                st.just("torch.no_grad(), autocast()")), body),
            st.builds(matching, expr, st.lists(st.tuples(st.sampled_from(PATTERNS), body), min_size=1, max_size=3)),
            st.builds(lambda b: ["def helper(opt):", *indent(b)], body),
            st.builds(lambda b: ["async def helper(opt):", *indent(b)], body),
        )

    return st.recursive(leaf, compound, max_leaves=12)


def _trainer(blocks: list[list[str]], where: int) -> str:
    """A training function around generated blocks: a loop that runs a backward and steps, with
    the generated code before, inside and after it."""
    before, inside, after = (blocks + [[], [], []])[:3]
    lines = ["import torch", "", "", "def train(model, data, opt, scaler, k):", *["    " + l for l in before],
             "    for i, (x, y) in enumerate(data):"]
    body = ["loss = model(x).sum()", "loss.backward()", "opt.step()"]
    body[where:where] = inside
    lines += ["        " + l for l in body] + ["    " + l for l in after]
    return "\n".join(lines) + "\n"


def _examples(request: pytest.FixtureRequest, normal: int) -> settings:
    long = request.config.getoption("--hypothesis-long")
    return settings(
        max_examples=normal * 25 if long else normal, deadline=None, derandomize=not long, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# hypothesmith compiles what it generates, and CPython warns about `1()` and the like
GENERATED = pytest.mark.filterwarnings("ignore::SyntaxWarning")


@GENERATED
def test_any_valid_module_is_checked_or_refused_cleanly(request: pytest.FixtureRequest) -> None:
    @_examples(request, 40)
    @given(hypothesmith.from_grammar())
    def run(code: str) -> None:
        check_properly(code)

    run()


@GENERATED
def test_generated_code_inside_a_training_loop(request: pytest.FixtureRequest) -> None:
    @_examples(request, 40)
    @given(hypothesmith.from_grammar(), st.sampled_from(sorted(SKELETONS)))
    def run(code: str, skeleton: str) -> None:
        check_properly(_place(SKELETONS[skeleton], code))

    run()


@GENERATED
def test_generated_control_flow_around_gradient_calls(request: pytest.FixtureRequest) -> None:
    @_examples(request, 40)
    @given(st.lists(_blocks(), min_size=1, max_size=3), st.integers(0, 3))
    @example([["loss.backward()"], ["opt.step()"]], 0)  # two findings at one loop: their order follows line text
    def run(blocks: list[list[str]], where: int) -> None:
        code = _trainer(blocks, where)
        check_properly(code)
        try:
            fixed, _ = fix_source(code, PATH)
        except SourceError:
            return  # refused: check_properly has judged the refusal
        assert fix_source(fixed, PATH)[0] == fixed, "a second fix changed the fixed text"

    run()


# --- real trees --------------------------------------------------------------------------------


def _cpython_refuses(path: str) -> str | None:
    """Why CPython itself cannot read or parse the file, or None."""
    data = Path(path).read_bytes()
    try:
        ast.parse(data, path)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _cpython_cannot_decode(path: str) -> bool:
    data = Path(path).read_bytes()
    if b"\0" in data:
        return True
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return True
    return False


def _check_tree(root: str, vocabulary: Vocabulary | None = None) -> tuple[list[str], Report]:
    files = [p for p in discover([root]) if isinstance(p, str)]
    return files, check_files(files, Settings(vocabulary=vocabulary or Vocabulary()))


def _assert_genuine(errors: list[SourceError], root: str) -> None:
    """Every error is one CPython agrees with, in a file that is broken on purpose."""
    for error in errors:
        relative = os.path.relpath(error.path, root)
        assert not error.reason.startswith("internal error"), f"{relative}: {error.reason}"
        assert _cpython_refuses(error.path), f"{relative}: CPython reads and parses it, we said: {error.reason}"
        in_tests = any(re.fullmatch(r"(\w+_)?tests?(_\w+)?", part) for part in Path(relative).parts)
        assert in_tests, f"{relative}: not test data, yet broken: {error.reason}"


def test_the_standard_library() -> None:
    """The whole standard library of this interpreter, as a user's run would see it (the default
    excludes leave out site-packages and the `venv` package). No finding: there is no training
    loop in it. Errors: every file CPython cannot decode (test data broken on purpose, such as
    test/tokenizedata/bad_coding.py), and otherwise only files that CPython refuses too."""
    root = sysconfig.get_paths()["stdlib"]
    files, report = _check_tree(root)
    assert len(files) > 500, f"{root}: only {len(files)} files, is this the standard library?"
    assert not any("site-packages" in Path(f).parts for f in files)
    assert report.files == len(files)
    assert report.findings == []
    _assert_genuine(report.errors, root)
    undecodable = {f for f in files if _cpython_cannot_decode(f)}
    assert undecodable <= {e.path for e in report.errors}, "undecodable files not reported"


class _ParseSpy:
    """Counts the modules LibCST parses, so that a smoke test knows the analysis ran (all of it in
    this process, where it is counted: no forked share)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parsed = 0
        monkeypatch.setattr(processes, "can_fork", lambda: False)
        real = libcst.parse_module

        def parse_module(*args, **kwargs):
            self.parsed += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(libcst, "parse_module", parse_module)


# Everyday words taken for gradient words: real code then runs through the whole analysis (the
# survey, LibCST, the graphs, the dataflow), where a plain run would look no further than the text.
EVERYDAY = Vocabulary(backwards=("append",), steps=("pop",), clears=("clear",))


@pytest.mark.parametrize("package", ["libcst", "click"])
def test_an_installed_package(package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin, f"{package} is not installed"
    root = os.path.dirname(spec.origin)
    files, report = _check_tree(root)
    assert len(files) > 10
    assert not report.errors, [(e.path, e.reason) for e in report.errors]
    assert report.findings == []

    spy = _ParseSpy(monkeypatch)
    files, report = _check_tree(root, EVERYDAY)
    assert spy.parsed >= 5, f"the analysis parsed {spy.parsed} modules of {package}: it did not run"
    assert not report.errors, [(e.path, e.reason) for e in report.errors]
    for finding in report.findings:
        assert os.path.isfile(finding.path) and finding.code in RULES and finding.line >= 1


# --- deep, huge, broken ------------------------------------------------------------------------


def _lint(folder: Path, files: dict[str, str | bytes], *args: str,
          driver: str = "from zerograd_lint.cli import main; main()") -> subprocess.CompletedProcess:
    """The command line in a process of its own (a crash must not take pytest with it)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ZEROGRAD_LINT_OUTPUT_FORMAT", None)
    return subprocess.run(
        [sys.executable, "-c", driver, *args, *files], cwd=folder, env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def _in_loop(line: str) -> str:
    return f"import torch\n\nfor x in data:\n    loss.backward()\n    {line}\n    opt.step()\n"


def _above_a_loop(line: str) -> str:
    return f"import torch\n\n{line}\n\n\ndef train(data, opt):\n    for x in data:\n        loss.backward()\n        opt.step()\n"


# Code too deep for a recursive parser or tree walk, where the analysis reads it (the code of an
# event's call, or of a condition, is generated again). Python compiles all of it.
DEEP = {
    "attribute chain in a step's call": _in_loop("opt.step(a" + ".b" * 900 + ")").replace("    opt.step()\n", ""),
    "attribute chain in a condition": _in_loop("if a" + ".b" * 900 + ":\n        opt.zero_grad()"),
    "1,000 elif branches in a loop": _in_loop("if a:\n        pass\n" + "    elif a:\n        opt.zero_grad()\n" * 1000),
    # flat in `ast`; LibCST's native parser would overflow the C stack on it
    "10,000 operands of and": _in_loop("y = " + " and ".join(["a"] * 10_000)),
    "2,000-level attribute chain": _in_loop("y = a" + ".b" * 2000),
}
# LibCST's parser refuses this one outright (Python compiles it): said as such, not as a syntax error.
LIBCST_REFUSES = {"10,000 implicitly concatenated strings": _in_loop("y = " + '"a" ' * 10_000)}


@pytest.mark.parametrize(
    ("text", "reason"),
    [*((text, NESTED) for text in DEEP.values()),
     *((text, re.compile(r"LibCST cannot parse it \(Python can\): .* at \d+:\d+$")) for text in LIBCST_REFUSES.values())],
    ids=[*DEEP, *LIBCST_REFUSES],
)
def test_deep_code_is_one_line_for_its_file(tmp_path: Path, text: str, reason: re.Pattern[str]) -> None:
    done = _lint(tmp_path, {"deep.py": text, "stale.py": STALE})
    assert "Traceback" not in done.stderr, f"the run stopped: {_tail(done.stderr)}"
    assert done.returncode == 2, f"exit {done.returncode}: {_tail(done.stderr)}"
    errors = [line for line in done.stderr.splitlines() if line.startswith("zerograd-lint: error:")]
    assert len(errors) == 1 and errors[0].startswith("zerograd-lint: error: deep.py: "), errors
    assert reason.search(errors[0]), errors[0]
    assert STALE_FINDING in done.stdout, "the other file was not checked"


# As deep, where the analysis never generates its code again: checked like any other.
DEEP_UNREAD = {
    "attribute chain in a loop": _in_loop("y = a" + ".b" * 900),
    # the shape of pydoc_data/topics.py: one long implicit concatenation, 3,000 levels in LibCST
    "implicit string concatenation in a loop": _in_loop("y = (\n" + '        "a"\n' * 3000 + "    )"),
    "attribute chain above a loop": _above_a_loop("y = a" + ".b" * 900),
}


@pytest.mark.parametrize("text", DEEP_UNREAD.values(), ids=list(DEEP_UNREAD))
def test_deep_code_the_analysis_does_not_read_is_checked(tmp_path: Path, text: str) -> None:
    done = _lint(tmp_path, {"deep.py": text, "stale.py": STALE})
    assert done.returncode == 1 and "error" not in done.stderr, _tail(done.stderr)
    assert "deep.py:" in done.stdout and " ZG001 " in done.stdout and STALE_FINDING in done.stdout


@pytest.mark.parametrize("text", [
    _in_loop("opt.step(a" + ".b" * 900 + ")"),
    _in_loop("if a" + ".b" * 900 + ":\n        opt.zero_grad()"),
    _in_loop("y = a" + ".b" * 2000),
], ids=["attribute chain in a call", "attribute chain in a condition", "2,000-level attribute chain"])
def test_check_source_refuses_deep_code_with_source_error(text: str) -> None:
    try:
        check_source(text, "deep.py")
    except SourceError as exc:
        assert NESTED.search(exc.reason), exc.reason
    except Exception as exc:  # noqa: BLE001 - its str() may itself overflow: name the type only
        pytest.fail(f"check_source raised {type(exc).__name__}, not SourceError")
    else:
        pytest.fail("check_source checked it: expected a SourceError")


def test_the_deepest_indentation_python_allows_is_analysed(tmp_path: Path) -> None:
    """98 nested `if` blocks in a loop (CPython stops at 100 levels of indentation)."""
    ifs = "".join("    " * depth + "if a:\n" for depth in range(1, 99)) + "    " * 99 + "opt.zero_grad()\n"
    text = "import torch\n\nfor x in data:\n    loss.backward()\n" + ifs + "    opt.step()\n"
    done = _lint(tmp_path, {"deep.py": text, "stale.py": STALE})
    assert done.returncode == 1, done.stderr[-1500:]
    assert "deep.py:3:1: ZG001" in done.stdout and STALE_FINDING in done.stdout


def test_400_elif_branches_are_analysed(tmp_path: Path) -> None:
    """A long elif chain is a deep tree in LibCST, yet the analysis builds it without recursion."""
    text = _in_loop("if a:\n        pass\n" + "    elif a:\n        opt.zero_grad()\n" * 400)
    done = _lint(tmp_path, {"deep.py": text, "stale.py": STALE})
    assert done.returncode == 1, done.stderr[-1500:]
    assert "deep.py:3:1: ZG001 opt.step() (line 808)" in done.stdout and STALE_FINDING in done.stdout


HUGE_MEGABYTES = 2  # 20 MB takes about 95 s and 3.2 GB here: time and memory grow linearly
HELPER = '''
def helper_{i}(a, b, c={i}):
    """Generated helper number {i}."""
    total = 0
    for k in range(a):
        if k % 3 == {m}:
            total += k * b - c
        elif k % 5:
            total -= [j for j in range(k) if j % 2][:{m}].count(k)
        else:
            total ^= {i}
    return {{"value": total, "name": "helper_{i}", "items": (a, b, c)}}
'''
TRAIN = '''

def train(model, data, optimizer):
    for x, y in data:
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
'''
PEAK_RSS = """\
import resource, sys
from zerograd_lint.cli import main
try:
    main()
finally:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak-rss-mb {peak / (2 ** 20 if sys.platform == 'darwin' else 2 ** 10):.0f}", file=sys.stderr)
"""


def test_a_huge_file(tmp_path: Path) -> None:
    """A generated module of HUGE_MEGABYTES (thousands of functions, the way generated test suites
    look) whose last function is a training loop: it is checked, in bounded memory."""
    parts, size, i = ["import torch\n"], 0, 0
    while size < HUGE_MEGABYTES * 1_000_000:
        parts.append(HELPER.format(i=i, m=i % 7))
        size += len(parts[-1])
        i += 1
    huge = "".join(parts) + TRAIN
    loop_line = huge.count("\n", 0, huge.index("    for x, y in data:")) + 1
    done = _lint(tmp_path, {"huge.py": huge, "stale.py": STALE}, driver=PEAK_RSS)
    assert done.returncode == 1, _tail(done.stderr)
    assert done.stdout.splitlines()[0].startswith(f"huge.py:{loop_line}:5: ZG001 optimizer.step()")
    assert STALE_FINDING in done.stdout
    assert "[*] 1 fixable with the `--fix` option (fixes not looked for in 1 file over 1 MB: `--diff` shows them)." \
        in done.stderr  # parsed whole for the hint, it would take gigabytes
    peak = int(re.search(r"peak-rss-mb (\d+)", done.stderr).group(1))
    print(f"{len(huge) / 1e6:.1f} MB, {i} functions: peak RSS {peak} MB")
    assert peak < 150 + 250 * HUGE_MEGABYTES, f"peak RSS {peak} MB for {HUGE_MEGABYTES} MB of source"


class _Unprintable:
    """An exception argument whose repr fails, as a deep LibCST node's does."""

    def __repr__(self) -> str:
        raise RecursionError("maximum recursion depth exceeded")


BROKEN = _in_loop("y = model(x)")
INJECTED = {
    "RuntimeError": (lambda: RuntimeError("injected"), r"internal error: RuntimeError: injected"),
    "an error that cannot be printed": (lambda: KeyError(_Unprintable()), r"internal error: KeyError\b.*"),
    "MemoryError": (MemoryError, r"too large .*"),
    "RecursionError": (RecursionError, r"too (large or )?deeply nested .*"),
}


@pytest.mark.parametrize(("make", "reason"), [
    *INJECTED.values()], ids=INJECTED.keys())
def test_an_internal_error_costs_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         make: Callable[[], BaseException], reason: str) -> None:
    """The dataflow raises for the loop of broken.py only. The whole-project check fails, the
    runner checks file by file: broken.py gets one line, the others are still checked."""
    import zerograd_lint.roots  # noqa: F401 - imported lazily; it holds flow.analyse too
    from zerograd_lint import flow

    real = flow.analyse
    raised = []

    def analyse(graph, *args, **kwargs):
        if any(Path(loop.path).name == "broken.py" for loop in graph.loops):
            raised.append(graph)
            raise make()
        return real(graph, *args, **kwargs)

    patched = [name for name, module in list(sys.modules.items())
               if name.startswith("zerograd_lint") and getattr(module, "analyse", None) is real]
    for name in patched:  # flow itself, and the modules that imported the function
        monkeypatch.setattr(sys.modules[name], "analyse", analyse)
    for name, text in {"broken.py": BROKEN, "stale.py": STALE, "clean.py": "print('hello')\n"}.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZEROGRAD_LINT_OUTPUT_FORMAT", raising=False)

    result = CliRunner().invoke(main, ["broken.py", "stale.py", "clean.py"], catch_exceptions=False)
    assert raised, "the injected error was never raised: is the dataflow still flow.analyse?"
    assert "Traceback" not in result.stderr, f"the run stopped: {_tail(result.stderr)}"
    assert result.exit_code == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("zerograd-lint: error:")]
    assert len(errors) == 1 and re.fullmatch(f"zerograd-lint: error: broken.py: {reason}", errors[0]), errors
    assert STALE_FINDING in result.stdout and "broken.py:1:1: not-checked: " in result.stdout
    assert "(2 files checked, 1 could not be)" in result.stderr


# --- never executed, imported or written -------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder under `folder` (but the results cache), with its bytes and mtime."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else (b"", 0)
        for p in sorted(folder.rglob("*"))
        if ".zerograd_lint_cache" not in p.parts
    }


def _side_effects(marker: Path) -> dict[str, str]:
    """A project whose every file, if run or imported, appends its name to `marker` and ends the
    process; its training loop spans two files, so checking it means reading both."""
    act = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\nimport os\nos._exit(17)\n"
    engine = act + textwrap.dedent("""\
        def train_one_epoch(model, optimizer, loader):
            for x, y in loader:
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
        """)
    train = act + textwrap.dedent("""\
        import torch
        from sidefx_pkg.engine import train_one_epoch

        raise SystemExit(3)
        model = torch.nn.Linear(3, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(10):
            train_one_epoch(model, optimizer, data)
        """)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": act + "for x in data:\n    loss.backward()\n    opt.step()\n"}
    notebook = {"cells": [cell], "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    return {
        "sidefx_pkg/__init__.py": act, "sidefx_pkg/engine.py": engine, "train.py": train,
        "conftest.py": act, "setup.py": act, "sitecustomize.py": act, "sidefx_notebook.ipynb": json.dumps(notebook),
    }


@pytest.mark.parametrize("args", [[], ["--diff"], ["--output-format", "sarif", "--no-cache"]])
def test_the_code_checked_is_never_run_imported_or_written(tmp_path: Path, args: list[str]) -> None:
    project, elsewhere, marker = tmp_path / "project", tmp_path / "elsewhere", tmp_path / "marker"
    for name, text in _side_effects(marker).items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    elsewhere.mkdir()
    before = _snapshot(project)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an import would leave __pycache__ behind
    env.pop("ZEROGRAD_LINT_OUTPUT_FORMAT", None)
    done = subprocess.run(
        [sys.executable, "-c", "from zerograd_lint.cli import main; main()", *args, str(project)],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1, _tail(done.stderr)
    assert not marker.exists(), f"executed: {marker.read_text()!r}"
    assert _snapshot(project) == before, "the checked tree changed"
    if not args:
        assert done.stdout.splitlines() == [
            (f"{project / 'sidefx_notebook.ipynb'}:cell 1:4:1: ZG001 opt.step() (cell 1, line 6) applies gradients"
             " an earlier step already applied: nothing clears them in this loop"),
            (f"{project / 'sidefx_pkg' / 'engine.py'}:5:5: ZG001 optimizer.step() (line 8) applies gradients an"
             " earlier step already applied: nothing clears them in this loop"),
        ]
