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

import re
from typing import TYPE_CHECKING

from libcst.metadata import CodePosition, CodeRange

if TYPE_CHECKING:
    import libcst as cst

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
            line, end_line = self._line(line), self._line(end_line)
        return CodeRange(CodePosition(line, column), CodePosition(end_line, end_column))

    def _line(self, line: int) -> int:
        lines = self._lines
        return lines[line - 1] if line <= len(lines) else (lines[-1] if lines else 0) + line - len(lines)

    def __len__(self) -> int:
        return len(self._ranges)


class _Recorder:
    """The code generation state LibCST's nodes write to (`libcst._nodes.internal.CodegenState`)."""

    __slots__ = ("default_indent", "default_newline", "indent_tokens", "tokens", "line", "column", "_starts", "ranges")

    def __init__(self, default_indent: str, default_newline: str) -> None:
        self.default_indent = default_indent
        self.default_newline = default_newline
        self.indent_tokens: list[str] = []
        self.tokens: list[str] = []  # never filled with tokens: only read to tell an empty module
        self.line = 1  # 1-based
        self.column = 0  # 0-based, in characters
        self._starts: list[tuple[int, int]] = []
        self.ranges: dict[int, tuple[int, int, int, int]] = {}

    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)

    def decrease_indent(self) -> None:
        self.indent_tokens.pop()

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
