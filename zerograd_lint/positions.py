"""Where each node of a LibCST module is: `PositionProvider`'s ranges, computed for less.

LibCST computes positions by generating the module's code again with a state that records where
each node starts and ends. Its state keeps every token, splits every token with a pattern to
count lines, builds two `CodePosition`s and a `CodeRange` per node and a generator-based context
manager per statement; on a large module that costs as much as the parse. This state is driven by
the same code generation (so the ranges are LibCST's own, which `tests/test_positions.py`
checks node for node), but keeps no token, counts lines only in tokens that hold a line break,
and records plain tuples keyed by the node's id; a `CodeRange` is made only for a node asked for.
The ids stay valid because the positions keep the tree, which owns every node, alive.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from zerograd_lint.lines import lines_of

_LINE_BREAK = re.compile(r"\r\n?|\n")


class Positions:
    """node -> `CodeRange`, as `PositionProvider` gives it (a KeyError for a node not in the tree)."""

    __slots__ = ("_ranges", "_lines", "_module")

    def __init__(self, module: cst.Module, lines: list[int] | None = None) -> None:
        """`lines`: the line each line of the module's code stands for (it was cut out of a
        longer text); the ranges are given in those lines."""
        self._lines = lines
        self._module = module  # owns every node: their ids are not reused while these ranges live
        state = _Recorder(module.default_indent, module.default_newline)
        if module.header or module.body or module.footer:
            state.tokens.append("")  # something will be written (`Module._codegen_impl` asks)
        module._codegen(state)
        self._ranges = state.ranges

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        line, column, end_line, end_column = self._ranges[id(node)]
        if self._lines is not None:
            line, end_line = _mapped(self._lines, line), _mapped(self._lines, end_line)
        return CodeRange(CodePosition(line, column), CodePosition(end_line, end_column))

    def __len__(self) -> int:
        return len(self._ranges)

    def ordered(self, nodes: Iterable[cst.CSTNode]) -> list[cst.CSTNode]:
        """`nodes` (of this tree) in the order `PositionProvider` lists them: each after its
        children, in the order they are written."""
        by_id = {id(node): node for node in nodes}
        return [by_id[key] for key in self._ranges if key in by_id]


class _State:
    """What of LibCST's code generation state (`libcst._nodes.internal.CodegenState`) both the
    writer of code (`_Writer`) and the recorder of positions (`_Recorder`) keep alike."""

    __slots__ = ("default_indent", "default_newline", "indent_tokens", "tokens")

    def __init__(self, default_indent: str, default_newline: str) -> None:
        self.default_indent = default_indent
        self.default_newline = default_newline
        self.indent_tokens: list[str] = []
        self.tokens: list[str] = []

    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)

    def decrease_indent(self) -> None:
        self.indent_tokens.pop()


class _Recorder(_State):
    """The code generation state LibCST's nodes write to, recording where each node starts and
    ends; its `tokens` are never filled, only read to tell an empty module."""

    __slots__ = ("stop_at", "line", "column", "_starts", "ranges")

    def __init__(self, default_indent: str, default_newline: str, stop_at: cst.CSTNode | None = None) -> None:
        super().__init__(default_indent, default_newline)
        self.stop_at = stop_at  # generating stops once this node's range is recorded
        self.line = 1  # 1-based
        self.column = 0  # 0-based, in characters
        self._starts: list[tuple[int, int]] = []
        self.ranges: dict[int, tuple[int, int, int, int]] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = _LINE_BREAK.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def pop_trailing_newline(self) -> None:
        pass  # the last token, already counted: nothing comes after it

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        key = id(node)
        if key not in self.ranges:  # a syntactic position recorded inside wins, as in LibCST
            self.ranges[key] = (*start, self.line, self.column)
        if node is self.stop_at:
            raise _Found

    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None,
    ) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """`with state.record_syntactic_position(node, start_node=..., end_node=...)`: the node's range
    without the whitespace it owns, or hoisted from a child's."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _Recorder, node: cst.CSTNode, start_node: cst.CSTNode | None,
                 end_node: cst.CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:  # unwinding (too deep): the positions are lost anyway, the error goes on
            return
        state = self.state
        ranges = state.ranges
        start = ranges[id(self.start_node)][:2] if self.start_node is not None else self.start
        end = ranges[id(self.end_node)][2:] if self.end_node is not None else (state.line, state.column)
        ranges[id(self.node)] = (*start, *end)
        if self.node is state.stop_at:
            raise _Found


class Starts:
    """Where nodes start, (line, column) as `Positions` gives them, computed for less: the
    statements' from `ast` (its parse of the same text is a tenth of LibCST's, and its statements
    are LibCST's, in the same order), a node inside a statement by generating the code of that
    statement alone, up to the node. Whatever cannot be told so (a tree `ast` pairs differently,
    a node asked for without its statement) is read from the whole module's `Positions`, made then.
    The analysis asks for the loops, the functions and the calls that are events: a few hundred
    nodes of a module of tens of thousands."""

    __slots__ = ("_module", "_lines", "_starts", "_elifs", "_whole")

    def __init__(self, module: cst.Module, text: str, lines: list[int] | None = None) -> None:
        """`text`: the module's code, which `ast` parses again; `lines`: as `Positions` takes them."""
        self._module, self._lines = module, lines
        self._starts: dict[int, tuple[int, int]] = {}
        self._elifs: set[int] = set()  # the `if` nodes of `elif`s, which LibCST writes as `elif` only in their `if`
        self._whole: Positions | None = None
        try:
            _pair(module.body, ast.parse(text).body, self._starts, lines_of(text), self._elifs)
        except (_Unpaired, SyntaxError, ValueError, IndexError):
            self._whole = Positions(module, lines)

    def start(self, node: cst.CSTNode, statement: cst.CSTNode | None = None) -> tuple[int, int]:
        """Where `node` starts; `statement`: the statement it is part of, if it is not one."""
        if self._whole is None:
            found = self._starts.get(id(node))
            if found is None and statement is not None:
                found = self._within(statement, node)
            if found is not None:
                line, column = found
                return (line if self._lines is None else _mapped(self._lines, line)), column
            self._whole = Positions(self._module, self._lines)
        where = self._whole[node].start
        return where.line, where.column

    def _within(self, statement: cst.CSTNode, node: cst.CSTNode) -> tuple[int, int] | None:
        """The code of `statement` generated from where it starts until `node` is."""
        start = self._starts.get(id(statement))
        leading = getattr(statement, "leading_lines", None)
        if start is None or leading is None or isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return None
        state = _Recorder(self._module.default_indent, self._module.default_newline, stop_at=node)
        state.line = start[0] - len(leading)
        state.indent_tokens.append(" " * start[1])
        try:
            statement._codegen(state, **({"is_elif": True} if id(statement) in self._elifs else {}))
        except _Found:
            pass
        found = state.ranges.get(id(node))
        return None if found is None else found[:2]


class _Found(Exception):
    """The node looked for is generated: the rest of the statement is not."""


class _Unpaired(Exception):
    """LibCST's statements and `ast`'s do not pair up."""


def _mapped(lines: list[int], line: int) -> int:
    return lines[line - 1] if line <= len(lines) else (lines[-1] if lines else 0) + line - len(lines)


_COMPOUND = {
    cst.If: (ast.If,), cst.For: (ast.For, ast.AsyncFor), cst.While: (ast.While,), cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,), cst.TryStar: (ast.TryStar,), cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,), cst.Match: (ast.Match,),
}


def _pair(body: Sequence[cst.CSTNode], statements: list[ast.stmt], starts: dict[int, tuple[int, int]],
          text: list[str], elifs: set[int]) -> None:
    """Record where each statement of `body` starts, from the `ast` statements of the same code."""
    at = 0
    for statement in body:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            first = statements[at]
            for small in statement.body:
                starts[id(small)] = _column(statements[at], text)
                at += 1
            if isinstance(statement, cst.SimpleStatementLine):
                starts[id(statement)] = _column(first, text)
            continue
        counterpart = statements[at]
        at += 1
        if not isinstance(counterpart, _COMPOUND.get(type(statement), ())):
            raise _Unpaired
        starts[id(statement)] = _column(counterpart, text)
        for block, inner in _blocks(statement, counterpart):
            _pair(block, inner, starts, text, elifs)
        if isinstance(statement, cst.If) and isinstance(statement.orelse, cst.If):
            elifs.add(id(statement.orelse))
    if at != len(statements):
        raise _Unpaired


def _blocks(statement: cst.CSTNode, counterpart: ast.stmt) -> list[tuple[Sequence[cst.CSTNode], list[ast.stmt]]]:
    """The blocks of a compound statement, each with its counterpart's."""
    pairs = [(_statements(statement.body), counterpart.body)] if not isinstance(statement, (cst.Try, cst.TryStar, cst.Match)) else []
    if isinstance(statement, cst.If):
        orelse = statement.orelse
        if isinstance(orelse, cst.If):  # `elif`: an `if` alone in the `else` of ast's
            pairs.append(([orelse], counterpart.orelse))
        elif orelse is not None:
            pairs.append((_statements(orelse.body), counterpart.orelse))
    elif isinstance(statement, (cst.For, cst.While)) and statement.orelse is not None:
        pairs.append((_statements(statement.orelse.body), counterpart.orelse))
    elif isinstance(statement, (cst.Try, cst.TryStar)):
        if len(statement.handlers) != len(counterpart.handlers):
            raise _Unpaired
        pairs.append((_statements(statement.body), counterpart.body))
        pairs += [(_statements(h.body), a.body) for h, a in zip(statement.handlers, counterpart.handlers)]
        if statement.orelse is not None:
            pairs.append((_statements(statement.orelse.body), counterpart.orelse))
        if statement.finalbody is not None:
            pairs.append((_statements(statement.finalbody.body), counterpart.finalbody))
    elif isinstance(statement, cst.Match):
        if len(statement.cases) != len(counterpart.cases):
            raise _Unpaired
        pairs += [(_statements(c.body), a.body) for c, a in zip(statement.cases, counterpart.cases)]
    return pairs


def _statements(block: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """An indented block's statements; a one-line suite (`if x: a; b`) stands for itself."""
    return block.body if isinstance(block, cst.IndentedBlock) else [block]


def _column(statement: ast.stmt, text: list[str]) -> tuple[int, int]:
    """(line, column in characters) of an `ast` statement (its columns count UTF-8 bytes). A form
    feed or a vertical tab before it on its line is counted by `ast` and not by LibCST: such a
    line is not paired (the whole module's positions are read then)."""
    column = statement.col_offset
    line = text[statement.lineno - 1] if statement.lineno <= len(text) else ""
    if column and not line.isascii():
        column = len(line.encode("utf-8")[:column].decode("utf-8", "replace"))
    if "\x0c" in line[:column] or "\x0b" in line[:column]:
        raise _Unpaired
    return statement.lineno, column


def code_for(module: cst.Module, node: cst.CSTNode) -> str:
    """`module.code_for_node(node)`, without the generator-based context manager LibCST's state
    makes per statement and per parenthesized expression (a third of its time)."""
    state = _Writer(module.default_indent, module.default_newline)
    node._codegen(state)
    return "".join(state.tokens)


class _Writer(_State):
    """`libcst._nodes.internal.CodegenState`, as `Module.code_for_node` uses it."""

    __slots__ = ()

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        pass

    def after_codegen(self, node: cst.CSTNode) -> None:
        pass

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.tokens.pop()

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> _Nothing:
        return _NOTHING


class _Nothing:
    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


_NOTHING = _Nothing()
