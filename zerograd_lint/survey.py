"""A cheap first look with `ast`, before LibCST sees anything.

`ast.parse` is about twelve times faster than LibCST's parser and, unlike it, fails cleanly on
pathological nesting. This pass refuses what cannot be parsed, and finds which functions can
matter: a function (or a module body) can hold a finding only if it holds a loop (or is a
per-batch callback) and it, or a function of the project it calls, both accumulates (`backward`)
and steps (an optimizer's step, or a hand-written update from `.grad`). Only those are analysed,
and only functions that touch gradients at all are followed into at call sites: `reach.connect`
puts the first looks together.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from zerograd_lint.findings import TOO_LARGE
from zerograd_lint.lines import split_lines
from zerograd_lint.settings import Vocabulary
from zerograd_lint.frameworks.accelerate import PREPARES_WHAT_IT_RETURNS
from zerograd_lint.frameworks.ignite import CALLBACK_TAKERS, takes_an_engine
from zerograd_lint.sparse import Outline, outline, within
from zerograd_lint.vocabulary import ACCUMULATES, CLEARS, GRADIENTS, OPTIMIZER_CLASSES, STEPS, UPDATES, calls_that

# LibCST's native parser overflows the C stack (a crash, not an exception) on expressions
# nested several thousand levels deep; CPython's parser reports them. Deeper than this is refused.
MAX_DEPTH = 1000
# What Python refuses in a text before parsing it: a NUL, a lone surrogate (not a character)
_REFUSED = re.compile("[\x00\ud800-\udfff]")

# Attribute names (`loss.backward()`, `opt.step()`, `p.grad`) that accumulate, or touch gradients.
_ACCUMULATING = calls_that(ACCUMULATES, UPDATES)
_TOUCHING = calls_that(STEPS, CLEARS, UPDATES) | GRADIENTS
MODULE = 0  # the line number that stands for a module's body
_BUILTINS = frozenset(dir(builtins))


class Unparsable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Function:
    """What one function (or a module body) does by itself, before following its calls."""

    accumulates: bool = False
    touches: bool = False  # steps, clears, or reads `.grad`
    steps: bool = False  # an optimizer step or a hand-written update: what every finding needs
    names: set[str] = field(default_factory=set)  # called, or handed to a call, by plain name
    attributes: set[str] = field(default_factory=set)  # called as `x.name(...)`
    # handed to a call, by name or as an attribute (`run(step_fn=self.train_step)`): what a callee
    # that calls one of its parameters may run
    handed: set[str] = field(default_factory=set)
    parameters: frozenset[str] = frozenset()
    calls_parameter: bool = False  # calls one of its parameters (`step_fn(x, y)`)
    objects_called: bool = False  # calls a name that is not a builtin (maybe an object)
    # calls `x.prepare(...)`: not followed, but its body is kept, so that what it returns is known
    # to be Accelerate's (`model, opt = training_setup(accelerator)`)
    prepares: bool = False
    # what happens inside its own `for` and `while` loops (findings are reported at loops)
    in_loops: Function | None = None


@dataclass
class ModuleSurvey:
    functions: dict[int, Function]  # by `def` line; MODULE for the module body
    functions_named: dict[str, list[int]]  # module-level and nested functions
    methods_named: dict[str, list[int]]  # functions defined in a class body
    top: dict[str, list[int]]  # module-level def or class name -> the `def` lines inside it
    imports: set[str]  # import origins as written (`pkg.engine`, `.engine`, `engine.train`)
    # functions a framework runs once per batch: `Engine(update)` names `update`;
    # `Engine(make_update(...))` names `make_update`, whose nested functions are such callbacks
    callbacks: set[str] = field(default_factory=set)
    callback_factories: set[str] = field(default_factory=set)
    # `def update(engine, batch)`: Ignite's process function, by its signature (an Engine subclass
    # hands it to `super().__init__(func)`, where no call shows it)
    engine_callbacks: set[int] = field(default_factory=set)
    nested: dict[int, int] = field(default_factory=dict)  # `def` line -> the enclosing function's
    bases: set[str] = field(default_factory=set)  # names of the classes its classes derive from
    renamed: set[str] = field(default_factory=set)  # names imported under another (`import X as Y`)
    imported: set[str] = field(default_factory=set)  # the names its imports bind (`import a.b` binds `a`)
    outline: Outline | None = None  # for `sparse.sparse_text`


def survey_module(text: str, vocabulary: Vocabulary = Vocabulary()) -> ModuleSurvey:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        if exc.lineno is None:  # a NUL (Python 3.11 and later say where no more than that)
            raise Unparsable(_refused_character(text) or f"syntax error: {exc.msg}") from None
        raise Unparsable(f"syntax error at {exc.lineno}:{exc.offset}: {exc.msg}") from None
    except MemoryError:
        raise Unparsable(TOO_LARGE) from None
    except (RecursionError, ValueError) as exc:  # a lone surrogate is a UnicodeEncodeError
        raise Unparsable(_refused_character(text) or f"too deeply nested to analyse ({type(exc).__name__})") from None
    words = _Words(vocabulary)
    survey = ModuleSurvey({MODULE: Function()}, {}, {}, {}, set())
    words.survey = survey
    # a leaf name says something only when the vocabulary has plain words of its own
    leaves = () if words.plain_touching else (ast.Name,)
    # node, owner, in a class body, in a loop of the owner, depth
    stack: list[tuple[ast.AST, int, bool, bool, int]] = [(tree, MODULE, False, False, 0)]
    returned: list[tuple[int, str]] = []  # (function, name it returns)
    while stack:
        node, owner, in_class, in_loop, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Unparsable(f"too deeply nested to analyse (more than {MAX_DEPTH} levels)")
        kind = type(node)
        if kind in _DEFS:
            arguments = node.args
            survey.functions[node.lineno] = Function(parameters=frozenset(
                a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
            ))
            if takes_an_engine([a.arg for a in node.args.posonlyargs + node.args.args]):
                survey.engine_callbacks.add(node.lineno)
            if owner != MODULE:
                survey.nested[node.lineno] = owner
            named = survey.methods_named if in_class else survey.functions_named
            named.setdefault(node.name, []).append(node.lineno)
            owner, in_loop = node.lineno, False
        elif kind in _IMPORTS:
            survey.imports.update(_origins(node))
            survey.renamed.update(alias.name for alias in node.names if alias.asname and alias.asname != alias.name)
            survey.imported.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif kind is ast.ClassDef:
            survey.bases.update(b for b in map(_last, node.bases) if b)
        elif kind in _LOOPS:
            function = survey.functions[owner]
            in_loop = True
            if function.in_loops is None:
                function.in_loops = Function(parameters=function.parameters)
        elif kind in _NOTED:
            function = survey.functions[owner]
            words.note(node, function)
            if in_loop:
                words.note(node, function.in_loops)
        elif kind is ast.Return and type(node.value) is ast.Name:
            returned.append((owner, node.value.id))
        # `a and b and c` is one node here, but LibCST nests one per operator: count them all
        deeper = depth + (len(node.values) - 1 if kind is ast.BoolOp else 1)
        body_of_class = kind is ast.ClassDef
        for name in _CHILDREN[kind]:
            value = getattr(node, name)
            for child in value if type(value) is list else (value,):
                if type(child) in _SILENT:
                    continue
                if type(child) in leaves:  # nothing to note, nothing below: only its depth counts
                    if deeper > MAX_DEPTH:
                        raise Unparsable(f"too deeply nested to analyse (more than {MAX_DEPTH} levels)")
                else:
                    stack.append((child, owner, body_of_class, in_loop, deeper))
    for owner, name in returned:
        # a factory returning a closure it defines (`return closure`): what calls the factory may
        # run the closure (`optimizer.step(make_closure(...))`); any other name returned is data
        if any(survey.nested.get(line) == owner for line in survey.functions_named.get(name, ())):
            survey.functions[owner].names.add(name)
    def_lines = sorted(line for line in survey.functions if line != MODULE)
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            survey.top[statement.name] = within(def_lines, statement)
    survey.outline = outline(tree, def_lines)
    return survey


def _refused_character(text: str) -> str | None:
    """Why Python refuses a text before parsing it, and where: a NUL, or a lone surrogate (a text
    given as such may hold one: a notebook's JSON escape, an editor's buffer)."""
    found = _REFUSED.search(text)
    if found is None:
        return None
    rows = split_lines(text[: found.start()])
    at = f"{len(rows)}:{len(rows[-1]) + 1}"
    if found.group() == "\x00":
        return f"a NUL character at {at}: source code cannot contain null bytes"
    return f"a lone surrogate U+{ord(found.group()):04X} at {at}: surrogates are not allowed in source code"


def _concrete(*bases: type) -> frozenset[type]:
    found, todo = set(), list(bases)
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return frozenset(found)


# Values of fields that say nothing to the survey: `Load`, `Store`, operators, constants, and what
# is not a node (names as strings, levels, None)
_SILENT = _concrete(ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.Constant) | {
    str, int, bool, type(None),
}
# Fields that never hold a node worth visiting: names and other strings, operators, contexts,
# and the aliases of an import (read by `_origins`)
_NOT_CHILDREN = frozenset({
    "ctx", "op", "ops", "id", "attr", "arg", "asname", "name", "names", "module", "level",
    "type_comment", "kind", "conversion", "is_async", "simple",
})
# by node type: the fields `survey_module` visits
_CHILDREN = {kind: tuple(f for f in kind._fields if f not in _NOT_CHILDREN) for kind in _concrete(ast.AST)}


_DEFS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef})
_IMPORTS = frozenset({ast.Import, ast.ImportFrom})
_LOOPS = frozenset({ast.For, ast.AsyncFor, ast.While})
_NOTED = frozenset({ast.Call, ast.Attribute, ast.Name, ast.AugAssign, ast.Assign})  # what `_Words.note` reads


def surveys(texts: Mapping[str, str], vocabulary: Vocabulary, paths: list[str]) -> dict[str, ModuleSurvey | Unparsable]:
    """The first look at each of `paths` (one share), or why there is none."""
    out: dict[str, ModuleSurvey | Unparsable] = {}
    for path in paths:
        try:
            out[path] = survey_module(texts[path], vocabulary)
        except Unparsable as exc:
            out[path] = exc
    return out


def _origins(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    module = "." * node.level + (node.module or "")
    return {module} | {f"{module}.{alias.name}" if node.module else f"{module}{alias.name}" for alias in node.names}


class _Words:
    """Gradient words are attributes (`loss.backward()`, `p.grad`) or imported functions
    (`backward(t)`, a project's own `reset_grads(m)`)."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        own = set(vocabulary.backwards) | set(vocabulary.clears) | set(vocabulary.steps)
        self.accumulating = _ACCUMULATING | set(vocabulary.backwards)
        self.touching = _TOUCHING | set(vocabulary.clears) | set(vocabulary.steps)
        self.plain_accumulating = {"backward"} | set(vocabulary.backwards)
        self.plain_touching = own & self.touching
        self.stepping = _STEPPING | set(vocabulary.steps)

    def note(self, node: ast.AST, function: Function) -> None:
        kind = type(node)
        if kind is ast.Call:
            self._call(node, function)
        elif kind is ast.Attribute:
            if node.attr in self.touching:
                function.touches = True
        elif kind is ast.Name:
            if node.id in self.plain_touching:
                function.touches = True
        elif _is_step(node, self.stepping):  # an assignment: a hand-written update
            function.steps = function.touches = True

    def _call(self, node: ast.Call, function: Function) -> None:
        func = node.func
        plain = type(func) is ast.Name
        callee = func.id if plain else func.attr if type(func) is ast.Attribute else None
        if callee in self.stepping or callee in _UPDATING and any(_reads_grad(a) for a in node.args):
            function.steps = function.touches = True
        # only a call accumulates: `Function.backward` named, not called, is autograd's business
        if callee in (self.plain_accumulating if plain else self.accumulating):
            function.accumulates = True
        if callee in OPTIMIZER_CLASSES or callee in CALLBACK_TAKERS:
            function.touches = True  # builds an optimizer: its module is worth parsing
        if callee in PREPARES_WHAT_IT_RETURNS and not plain:
            function.prepares = True
        if callee in CALLBACK_TAKERS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Name):
                self.survey.callbacks.add(first.id)
            elif isinstance(first, ast.Call) and _last(first.func):
                self.survey.callback_factories.add(_last(first.func))
        if plain:
            function.names.add(callee)
            if callee not in _BUILTINS:
                function.objects_called = True  # perhaps an object of a class with `__call__`
            if callee in function.parameters:
                function.calls_parameter = True
        elif callee is not None:
            function.attributes.add(callee)
        for argument in node.args:
            kind = type(argument)
            if kind is ast.Name:
                function.names.add(argument.id)
                function.handed.add(argument.id)
            elif kind is ast.Attribute:
                function.handed.add(argument.attr)
        for keyword in node.keywords:
            kind = type(keyword.value)
            if kind is ast.Name:
                function.names.add(keyword.value.id)
                function.handed.add(keyword.value.id)
            elif kind is ast.Attribute:
                function.handed.add(keyword.value.attr)


_STEPPING = calls_that(STEPS, UPDATES)
_UPDATING = frozenset({"add_", "sub_", "addcdiv_", "addcmul_", "copy_", "lerp_"})


def _is_step(node: ast.AST, stepping) -> bool:
    """`opt.step()`, `scaler.step(opt)`, or a hand-written update reading `.grad` into a tensor."""
    if isinstance(node, ast.Call):
        callee = _last(node.func)
        if callee in stepping:
            return True
        return callee in _UPDATING and any(_reads_grad(a) for a in node.args)
    if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Sub, ast.Add)):
        return _reads_grad(node.value)
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "data" for t in node.targets):
        return _reads_grad(node.value)
    return False


def _reads_grad(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in GRADIENTS for n in ast.walk(node))


def _last(func: ast.AST) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
