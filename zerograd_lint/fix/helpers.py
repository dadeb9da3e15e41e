"""The project's functions a fix edits: a helper that steps or clears, where it is called, and
whether anything else calls it.

A fix that edits a helper changes every caller's behaviour; it is safe only when the loop of the
finding is the helper's one caller. Callers are found by name, in the text of every file of the
project: a word that is the helper's name anywhere else (a call, a reference, a comment) counts
as another caller. Counting too many makes a safe fix unsafe, never the other way.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst

from zerograd_lint.fix.located import Located, Loop
from zerograd_lint.fix.shapes import descendants, enclosing_function, is_docstring


@dataclass(frozen=True)
class Span:
    """Lines `first` to `last` of the file `path`."""

    path: str
    first: int
    last: int

    def holds(self, path: str, line: int) -> bool:
        return path == self.path and self.first <= line <= self.last


class Project:
    """The texts of the files a run fixes, searched by name."""

    def __init__(self, sources: Mapping[str, str | bytes]) -> None:
        self._sources = sources
        self._uses: dict[str, list[tuple[str, int]]] = {}  # each name's, found once: every file is searched

    def uses(self, name: str) -> list[tuple[str, int]]:
        """Where `name` is written as code: not in a string or a comment, not as the name a `def`
        or a `class` defines, not in an import (which binds it, the use is where it is called)."""
        if name not in self._uses:
            word = re.compile(rf"\b{re.escape(name)}\b")
            found = []
            for path, source in self._sources.items():
                text = _text(source)
                if word.search(text):
                    found.extend((path, line) for line in _used_on(text, name))
            self._uses[name] = found
        return self._uses[name]


def _used_on(text: str, name: str) -> list[int]:
    """The lines of `text` where `name` is used; on text that does not tokenize, every line it is on."""
    lines = []
    try:
        previous, first, imported = "", "", 0
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
                if token.type == tokenize.NEWLINE:
                    first = ""
                continue
            first = first or token.string
            if imported and token.string == "as":  # imported under another name: its uses go unseen, so count it
                lines.append(imported)
            imported = 0
            if token.type == tokenize.NAME and token.string == name and previous not in ("def", "class"):
                if first not in ("import", "from"):
                    lines.append(token.start[0])
                else:
                    imported = token.start[0]
            previous = token.string
    except (tokenize.TokenError, SyntaxError):
        return [number for number, line in enumerate(text.splitlines(), start=1) if re.search(rf"\b{name}\b", line)]
    return lines


def _text(source: str | bytes) -> str:
    return source if isinstance(source, str) else source.decode("utf-8", errors="replace")


def enclosing_def(here: Located, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The innermost `def` around `node` (None at module or class level, or in a lambda)."""
    function = enclosing_function(here, node)
    return function if isinstance(function, cst.FunctionDef) else None


def span(here: Located, path: str, node: cst.CSTNode) -> Span:
    return Span(path, here.first_line(node), here.last_line(node))


def call_statements(here: Located, loop: Loop, names: frozenset[str]) -> list[cst.SimpleStatementLine]:
    """The statements of the loop's body, at any depth, that are a call of one of `names` and
    nothing else: `train_step(x, y)`, `self.reset()`, `loss = engine.step(batch)`."""
    found = []
    for node in descendants(loop.body):
        if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
            call = _call_in(node.body[0])
            if call is not None and _called_name(call) in names:
                found.append(node)
    return found


def imported_as(here: Located, name: str) -> frozenset[str]:
    """`name` and the names it is imported under in this module (`from steps import update as do`)."""
    names = {name}
    for node in descendants(here.module):
        if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if isinstance(alias.name, cst.Name) and alias.name.value == name and alias.asname is not None:
                    target = alias.asname.name
                    if isinstance(target, cst.Name):
                        names.add(target.value)
    return frozenset(names)


def only_does(function: cst.FunctionDef, statement: cst.BaseStatement, here: Located) -> bool:
    """The function's body, apart from a docstring, is the one statement that holds `statement`."""
    body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    if body and is_docstring(body[0]):
        body = body[1:]
    if len(body) != 1:
        return False
    node: cst.CSTNode | None = statement
    while node is not None and node is not body[0]:
        node = here.parent(node)
    return node is body[0]


def assigned_in(function: cst.FunctionDef) -> frozenset[str]:
    """The names the function's body binds (its parameters left out unless rebound)."""
    return frozenset(locals_of(function, parameters=False))


def locals_of(function: cst.FunctionDef, parameters: bool = True) -> frozenset[str]:
    """The function's parameters and the names it assigns: what a name means only inside it."""
    names = {p.name.value for p in _parameters(function.params)} if parameters else set()
    for node in descendants(function.body):
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
            names.add(node.target.value)
        elif isinstance(node, (cst.For, cst.AugAssign, cst.AnnAssign)) and isinstance(node.target, cst.Name):
            names.add(node.target.value)
        elif isinstance(node, cst.Global):
            names.difference_update(n.name.value for n in node.names)
    return frozenset(names)


def _parameters(params: cst.Parameters) -> list[cst.Param]:
    listed = [*params.posonly_params, *params.params, *params.kwonly_params]
    listed += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return listed


def _call_in(statement: cst.BaseSmallStatement) -> cst.Call | None:
    value = statement.value if isinstance(statement, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    return value if isinstance(value, cst.Call) else None


def _called_name(call: cst.Call) -> str:
    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return ""


def call_of_statement(statement: cst.SimpleStatementLine) -> cst.Call | None:
    """The call a statement `call_statements` found is (`train_step(x)`, `loss = step(x)`)."""
    return _call_in(statement.body[0])


def bound_argument(function: cst.FunctionDef, call: cst.Call, name: str) -> cst.BaseExpression | None:
    """What the call gives the function's parameter `name`: its argument (by keyword or place), or
    the object a method is called on for its first parameter; None when it is not a parameter, is
    given by `*args` or `**kwargs`, or is left to its default."""
    params = [*function.params.posonly_params, *function.params.params]
    method = isinstance(call.func, cst.Attribute) and bool(params) and params[0].name.value in ("self", "cls")
    if method and params[0].name.value == name:
        assert isinstance(call.func, cst.Attribute)
        return call.func.value
    if any(arg.star for arg in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [arg.value for arg in call.args if arg.keyword is None]
    names = [p.name.value for p in params[1:]] if method else [p.name.value for p in params]
    if name in names and names.index(name) < len(positional):
        return positional[names.index(name)]
    return None


_GRADIENT_WORDS = re.compile(r"\bbackward\b|\bstep\s*\(|\bzero_grad\b")
# What may read gradients: a `.grad` (or a name `grad`), the string "grad" (`getattr(p, "grad")`),
# and a call whose name is about gradients (`grad_norm(model)`, `log_gradients(...)`) unless it
# switches or clears them (`zero_grad`, `requires_grad_`, `set_grad_enabled`, `toggle_grad`).
# Comments, and names that only hold something (`grad_norms`, `gradient_accumulation_steps`), are not.
_GRADIENT_PARTS = frozenset({"grad", "grads", "gradient", "gradients"})
_SWITCH_PARTS = frozenset({"zero", "no", "requires", "set", "enable", "enabled", "disable", "toggle", "freeze",
                           "unfreeze", "is"})


def reads_gradients(code: str) -> bool:
    """The code may read gradients (by its words: more, never fewer)."""
    return first_read(code) is not None


_IN_AN_F_STRING = re.compile(r"\.grad\b|\bgrad\w*\s*\(|\w+_grad\w*\s*\(")
_RENEWED = re.compile(r"\bbackward\s*\(|\bzero_grad\s*\(")


def first_read(code: str) -> tuple[int, int] | None:
    """Where (line, column) the code first may read gradients, or None."""
    if "grad" not in code:
        return None
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                  if t.type in (tokenize.NAME, tokenize.OP, tokenize.STRING)]
    except (tokenize.TokenError, SyntaxError):
        return (1, 0)
    for token, following in zip(tokens, [*tokens[1:], None]):
        if token.type == tokenize.STRING:
            prefix = token.string[: len(token.string) - len(token.string.lstrip("rbufRBUF"))]
            if token.string[len(prefix):].strip("'\"") == "grad" or "f" in prefix.lower() and (
                    _IN_AN_F_STRING.search(token.string)):
                return token.start
            continue
        if token.type != tokenize.NAME:
            continue
        if token.string == "grad":
            return token.start
        parts = set(token.string.lower().strip("_").split("_"))
        called = following is not None and following.string == "("
        if called and parts & _GRADIENT_PARTS and not parts & _SWITCH_PARTS:
            return token.start
    return None


def _renewed_first(code: str, read: tuple[int, int]) -> bool:
    """A backward or a clear comes before the read in `code`: what is read is not what the step
    applied (the next iteration's gradients, another phase's)."""
    lines = code.splitlines(keepends=True)
    offset = sum(len(line) for line in lines[: read[0] - 1]) + read[1]
    match = _RENEWED.search(code)
    return match is not None and match.start() < offset


def touches_gradients(code: str) -> bool:
    """The code may read, add to, apply or clear gradients (by its words: more, never fewer)."""
    return bool(_GRADIENT_WORDS.search(code)) or reads_gradients(code)


def grad_read_after(here: Located, statement: cst.BaseStatement) -> int | None:
    """The line of the first statement after `statement` that may read gradients, in its block and
    in each block around it, to the end of the function (or module) it is in: a read a clear right
    after `statement` would leave `None` (after a loop too: the last iteration's gradients)."""
    node: cst.CSTNode = statement
    while True:
        block = here.parent(node)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        body = list(block.body)
        for later in body[body.index(node) + 1:]:
            code = here.code(later)
            read = first_read(code)
            if read is not None and not _renewed_first(code, read):
                return here.first_line(later)
            if _RENEWED.search(code):  # gradients computed or cleared again: later reads are of those
                return None
        owner = here.parent(block)
        while owner is not None and not isinstance(here.parent(owner), (cst.IndentedBlock, cst.Module)):
            owner = here.parent(owner)  # from an `else:` to its `if`, from a handler to its `try`
        if owner is None or isinstance(owner, (cst.FunctionDef, cst.ClassDef)):
            return None
        node = owner


def last_grad_read(here: Located, statement: cst.BaseStatement) -> cst.BaseStatement | None:
    """The last statement after `statement` in its block that may read gradients (a log of the
    gradients just applied), when none between adds to, applies or clears them; None when there
    is none."""
    block = here.parent(statement)
    if not isinstance(block, cst.IndentedBlock):
        return None
    body = list(block.body)
    after = body[body.index(statement) + 1:]
    reads = [later for later in after if reads_gradients(here.code(later))]
    if not reads:
        return None
    last = reads[-1]
    if any(_GRADIENT_WORDS.search(here.code(s)) for s in after[: after.index(last) + 1]):
        return None
    return last
