"""`zerograd_lint.positions` gives, for every node, the range LibCST's own `PositionProvider` gives."""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

import libcst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider
from test_projects import refused

from zerograd_lint.fix.located import Located
from zerograd_lint.positions import Positions, Starts, code_for

FIXTURES = Path(__file__).parent / "fixtures"
# every fixture, and standard library modules with decorators, async code, f-strings, line
# continuations, semicolons, comments in odd places and CRLF-free but varied layouts
STDLIB = Path(sysconfig.get_paths()["stdlib"])
SAMPLES = [*sorted(p for p in FIXTURES.rglob("*.py") if not refused(p)), *(STDLIB / name for name in (
    "dataclasses.py", "asyncio/tasks.py", "functools.py", "string.py", "textwrap.py", "contextlib.py",
))]


def assert_same_positions(source: str) -> None:
    module = libcst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    mine = Positions(module)
    assert len(mine) == len(expected)
    for node, where in expected.items():
        assert mine[node] == where, (type(node).__name__, where)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_node_is_where_libcst_puts_it(path: Path) -> None:
    assert_same_positions(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("source", [
    "",
    "\n",
    "x = 1",  # no trailing newline
    "# only a comment",
    "if a:\r\n    b = 1\r\n\r\n    # c\r\nelse:  # d\r\n\tpass\r\n",  # CRLF, a tab
    "x = '''\rone\r\ntwo\n'''\n",  # every line break inside a string
    "x = (1 +\\\n     2); y = 3\n",  # a continuation, a semicolon
    "@d(\n  1)\n# between\n@e\nasync def f(a, /, b=2, *c, d: int = 3, **e) -> 'x':\n    async with g as h:\n        await h\n",
    "s = f'{a!r:>{w}} {b}' \"é\" '\U0001d11e'\n",  # characters outside the BMP count one column
    "match p:\n    case [1, *r] | {'k': v} if v:\n        pass\n    case C(x=1):\n        pass\n",
])
def test_odd_layouts(source: str) -> None:
    ast.parse(source)
    assert_same_positions(source)


def test_a_node_of_another_tree_is_a_key_error() -> None:
    positions = Positions(libcst.parse_module("x = 1\n"))
    with pytest.raises(KeyError):
        positions[libcst.parse_module("x = 1\n").body[0]]


def test_lines_of_a_text_cut_out_of_a_longer_one_are_given_in_the_longer_one() -> None:
    """The analysis parses a module without its blank lines (`sparse.sparse_text`); each line
    left keeps its number in the file."""
    module = libcst.parse_module("def f():\n    return g(1)\n")
    positions = Positions(module, lines=[3, 7])
    returned = module.body[0].body.body[0]
    assert positions[module.body[0]].start == libcst.metadata.CodePosition(3, 0)
    assert positions[returned].start == libcst.metadata.CodePosition(7, 4)
    assert positions[module].end.line == 8  # past the last line: counted on from it


def statements_and_calls(module: libcst.Module):
    """Every statement of `module`, and every call with the statement it is part of."""
    stack: list[tuple[libcst.CSTNode, libcst.CSTNode | None]] = [(module, None)]
    while stack:
        node, statement = stack.pop()
        if isinstance(node, (libcst.SimpleStatementLine, libcst.BaseCompoundStatement, libcst.BaseSmallStatement)):
            yield node, None
            if not isinstance(node, libcst.BaseSmallStatement):
                statement = node
        elif isinstance(node, libcst.Call) and statement is not None:
            yield node, statement
        stack.extend((child, statement) for child in node.children)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_starts_are_where_libcst_puts_statements_and_calls(path: Path) -> None:
    """`Starts` tells statements from `ast` and a call by generating its statement alone: each is
    where `Positions` (LibCST's own) puts it."""
    source = path.read_text(encoding="utf-8")
    module = libcst.parse_module(source)
    expected = Positions(module)
    starts = Starts(module, source)
    for node, statement in statements_and_calls(module):
        where = expected[node].start
        assert starts.start(node, statement) == (where.line, where.column), (type(node).__name__, where)
    # only a call in a definition's header (a decorator, a default) needs the whole module generated
    assert not [
        node for node, statement in statements_and_calls(module)
        if statement is not None and not isinstance(statement, (libcst.FunctionDef, libcst.ClassDef))
        and starts._within(statement, node) is None
    ]


def test_starts_read_what_cannot_be_paired_from_the_whole_module() -> None:
    module = libcst.parse_module("if a:\n    b = f(1)\n")
    starts = Starts(module, "if a:\n    pass\n    b = f(1)\n")  # not the same code: the statements do not pair up
    call = module.body[0].body.body[0].body[0].value
    assert starts.start(call, module.body[0]) == (2, 8)


@pytest.mark.parametrize("path", SAMPLES[:40], ids=lambda p: str(p.relative_to(p.parents[1])))
def test_code_for_a_node_is_libcsts(path: Path) -> None:
    module = libcst.parse_module(path.read_text(encoding="utf-8"))
    stack: list[libcst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        try:
            expected = module.code_for_node(node)
        except Exception as exc:  # noqa: BLE001 - a node LibCST cannot write alone (a parameter's default)
            with pytest.raises(type(exc)):
                code_for(module, node)
        else:
            assert code_for(module, node) == expected
        stack.extend(node.children)


def test_the_analysis_of_a_loop_generates_no_whole_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its loops, functions and the calls that are events (one in a one-line suite among them) are
    placed from `ast` and from their statements alone."""
    from zerograd_lint import positions
    from zerograd_lint.checker import check_project

    made: list[object] = []
    monkeypatch.setattr(positions.Positions, "__init__", lambda self, *args: made.append(args))
    source = (
        "import torch\n\n\ndef train(model, opt, data):\n    for x in data:\n        model(x).sum().backward()\n"
        "        if x is not None: opt.step()\n"
    )
    found = check_project({"m.py": source}).findings["m.py"]
    assert [(f.line, f.column, f.code) for f in found] == [(5, 5, "ZG001")]
    assert [(r.line, r.column) for r in found[0].related][0] == (7, 27)
    assert made == []


@pytest.mark.parametrize("source", [
    "# training\x0c section\nx = 'é'; y = f(1)\nfor x in data:\n    g(x)\n",  # a form feed in a comment: no line break for Python
    "s = '\u2028é'; y = f(1)\n",  # a line separator in a string
    "\x0cfor x in data:\n    g(x)\n",  # a form feed before a statement: ast counts it, LibCST does not
    "if a:\n\x0c    b = f(1)\n",
])
def test_starts_where_only_python_breaks_lines(source: str) -> None:
    """`Starts` reads the lines as Python breaks them, and leaves a line with a form feed before a
    statement to the whole module's positions (found by a review: a column one off)."""
    module = libcst.parse_module(source)
    expected, starts = Positions(module), Starts(module, source)
    for node, statement in statements_and_calls(module):
        where = expected[node].start
        assert starts.start(node, statement) == (where.line, where.column), (type(node).__name__, where)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_a_module_located_for_fixing_has_libcsts_positions_and_parents(path: Path) -> None:
    """`fix.located.Located` reads positions and parents without LibCST's providers: the same
    ranges and parents, for every node, and its nodes in the providers' order."""
    source = path.read_text(encoding="utf-8")
    here = Located(source)
    wrapper = MetadataWrapper(here.module, unsafe_skip_copy=True)
    resolved = wrapper.resolve_many([PositionProvider, ParentNodeProvider])
    expected = resolved[PositionProvider]
    assert here._nodes == list(expected)
    assert all(here.position(node) == where for node, where in expected.items())
    assert here._parents == dict(resolved[ParentNodeProvider])
