"""Fast, iterative walks over LibCST trees.

LibCST's visitor protocol rebuilds every node it passes and dispatches by name; on the hot path
of the analysis (every expression of every analysed function) that costs several times the walk
itself. These helpers read the child fields directly, skip whitespace, and use an explicit
stack, so deeply nested code cannot exhaust Python's recursion limit either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import libcst as cst

# Fields that never hold code: whitespace, comments, punctuation, operators.
_SKIPPED = frozenset(
    {
        "lpar", "rpar", "lbrace", "rbrace", "lbracket", "rbracket", "comma", "semicolon", "colon",
        "first_colon", "second_colon", "equal", "dot", "star", "operator", "comment", "leading_lines",
        "lines_after_decorators", "header", "footer", "newline", "trailing_whitespace", "asynchronous",
        "indent", "first_line", "last_line", "empty_lines", "keyword", "posonly_ind", "default_indent",
        "default_newline", "encoding", "has_trailing_newline", "trailing_comma", "conversion", "separator",
        "relative",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}

# LibCST's node classes are final: a node's type is one of these or none of them
_COMPREHENSION_TYPES = frozenset({cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp})
_NOT_EVALUATED = frozenset({cst.Lambda, cst.FunctionDef, cst.ClassDef})  # here: bodies run later, if ever


def children(node: cst.CSTNode, every: bool = False) -> Iterator[cst.CSTNode]:
    """The child nodes that can hold code, in source order; `every`: all of them, whitespace and
    punctuation included."""
    kind = type(node)
    table = _ALL_FIELDS if every else _FIELDS
    names = table.get(kind)
    if names is None:
        names = table[kind] = tuple(
            f.name for f in dataclasses.fields(kind)
            if every or f.name not in _SKIPPED and not f.name.startswith("whitespace")
        )
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                if _is_node(type(item)):
                    yield item
        elif _is_node(kind):
            yield value


_ALL_FIELDS: dict[type, tuple[str, ...]] = {}


def parents(module: cst.CSTNode) -> dict[cst.CSTNode, cst.CSTNode]:
    """Every node's parent, whitespace and punctuation included: what LibCST's
    `ParentNodeProvider` gives, without its visitor (which rebuilds every node it passes)."""
    found: dict[cst.CSTNode, cst.CSTNode] = {}
    stack = [module]
    while stack:
        node = stack.pop()
        for child in children(node, every=True):
            found[child] = node
            stack.append(child)
    return found


def _is_node(kind: type) -> bool:
    """`issubclass(kind, cst.CSTNode)`, remembered: LibCST's nodes are ABCs, and `isinstance`
    against one goes through `ABCMeta` each time (a third of a walk)."""
    found = _NODE_TYPES.get(kind)
    if found is None:
        found = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return found


_NODE_TYPES: dict[type, bool] = {}


def calls(node: cst.CSTNode, context: object, enter: Callable[[cst.CSTNode, object], object]) -> list[tuple[cst.Call, object]]:
    """Calls in `node` in evaluation order (arguments before the call), each with its context.

    Lambda bodies and nested definitions are not evaluated here and are skipped; entering a
    comprehension calls `enter(node, context)` for the context of its parts (its targets)."""
    found: list[tuple[cst.Call, object]] = []
    stack: list[tuple[cst.CSTNode, object, bool]] = [(node, context, False)]
    while stack:
        current, ctx, done = stack.pop()
        if done:
            found.append((current, ctx))  # type: ignore[arg-type]
            continue
        kind = type(current)
        if kind in _NOT_EVALUATED:
            continue
        if kind in _COMPREHENSION_TYPES:
            ctx = enter(current, ctx)
        if kind is cst.Call:
            stack.append((current, ctx, True))
        stack.extend((child, ctx, False) for child in reversed(list(children(current))))
    return found


def nodes(node: cst.CSTNode, skip: tuple[type, ...] = (cst.Lambda,)) -> Iterator[cst.CSTNode]:
    """Every node under `node` (pre-order), not descending into `skip` types."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, skip):
            stack.extend(reversed(list(children(current))))
