"""Which statements of a long function the analysis reads: the others are blanked for LibCST.

A training script's `main()` is a thousand lines, of which the loop and the statements that bind
its optimizer, models, scaler and accelerator matter; the argument checks, logging, checkpointing
and model cards around them need not be parsed, positioned, graphed or flowed. What is kept is a
backward slice, decided with `ast` and generous. A statement stays if

- it is not a plain expression or assignment (`return`, `raise`, `break`, `continue`, `del`,
  `global`, an import), or holds a `yield`, an `await` or a `:=`;
- it says training (`Words.says_training`: a call the analysis knows, `grad`, an optimizer, a
  closure, a framework's `prepare`), or calls a function of the project the analysis follows
  (by name), a method of `self` or of what a call returns, or a parameter (`step_fn(x, y)`);
- it calls something given, or a method of, what training touches or holds it (`_holders`: what
  a call named for training is made on, is given or makes, then what is made from one or given
  one: `accelerator` once `accelerator.prepare(optimizer)`, and what one is taken from: `trainer`
  of `opt = trainer.opt`), unless the call's name says it is harmless (`log_metrics`,
  `save_checkpoint`), as an unseen call given the optimizer is read. A name the module imports is
  a module, made on nothing, unless the function binds it or assigns into it (`_bound_in`);
- it binds what a statement kept reads: a local name, an attribute of one (`args.steps = n`, which
  also makes `args` hold what it is given), a container changed in place (`params.append(p)`); an
  attribute of `self`, of anything but a local name, or a global, always stays (code elsewhere may
  read it);
- it defines a function or a class that is read, decorated, says training or is analysed;
- it comes right before a kept bare call in a `try` body (the graph takes a clear to complete,
  and a statement before it may fail).

A compound statement's header is judged as such a statement (`_Header`: `for o in opts:` binds `o`
from `opts`, an `if` test may clear or be given the optimizer). A compound statement stays, header
and all, when its header or anything in it does; else it goes whole, but a `while` always stays
(an endless loop ends what follows). A block left empty gets a `pass` (`sparse.sparse_text`
blanks the lines). The exhaustive run slices nothing, so `tests/test_prefilter.py` holds every
fixture to the same findings with and without, and `benchmarks/same_findings.py` every real tree.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from zerograd_lint.settings import Vocabulary
from zerograd_lint.vocabulary import CALLS, OPTIMIZER_CLASSES, says_harmless

_FRAGMENTS = ("grad", "optim", "backward", "closure", "inference", "sync", "prepare")  # lower case
_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Pass)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar)
_ALWAYS = frozenset({ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr})
_SELVES = frozenset({"self", "cls", "super"})
# Methods that change the container they are called on (`optimizers.append(opt)`)
_MUTATING = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "add_param_group", "pop",
                       "remove", "discard", "clear"})


Block = list[tuple[int, int, int, int, bool]]  # per statement: first and last lines, columns, blanked


def blocks(function: ast.FunctionDef | ast.AsyncFunctionDef, words: Words, kept_defs: frozenset[int],
           imported: frozenset[str], offset: int = 0) -> list[Block]:
    """The blocks of `function` that hold a statement that cannot matter: each statement of such
    a block, with its place and whether it can be blanked. `kept_defs`: the `def` lines of the
    functions the analysis reads (a nested one stays whatever the slice says); `imported`: the
    names the module's imports bind (a module's name holds no optimizer); `offset`: what to add to
    the lines of `function` (parsed alone) for those of its file."""
    statements = list(_statements(function.body, ()))
    escaping = {name for s, _ in statements if isinstance(s, (ast.Global, ast.Nonlocal)) for name in s.names}
    kept_defs = frozenset(line - offset for line in kept_defs)
    imported = imported - _bound_in(function)
    words = replace(words, followed=words.followed | {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)})
    facts = [_Facts(statement, words, escaping, kept_defs, imported) for statement, _ in statements]
    held = _holders(facts)
    binding: dict[str, list[int]] = {}  # the statements that bind each name
    headers: dict[int, list[int]] = {}  # the headers of each compound statement, by its id
    for index, ((statement, compounds), fact) in enumerate(zip(statements, facts)):
        for name in fact.binds:
            binding.setdefault(name, []).append(index)
        if isinstance(statement, _Header):
            headers.setdefault(id(compounds[-1]), []).append(index)
    kept: set[int] = set()
    read: set[str] = set()
    wanted: set[str] = set()  # read by what is kept, its bindings not yet kept
    todo: list[int] = []

    def around(compounds: tuple[ast.stmt, ...]) -> None:
        """Keep the compound statements around what is kept, and read their headers."""
        for compound in compounds:
            if id(compound) not in kept:
                kept.add(id(compound))
                todo.extend(headers.get(id(compound), ()))

    for statement, compounds in statements:  # a `while` always stays: an endless one ends what follows it
        if isinstance(statement, _Header) and isinstance(compounds[-1], ast.While):
            around(compounds)
    todo += [i for i, fact in enumerate(facts) if fact.always or not fact.called_on.isdisjoint(held)]
    while True:
        while todo:
            index = todo.pop()
            statement, compounds = statements[index]
            if id(statement) not in kept:
                kept.add(id(statement))
                wanted.update(facts[index].reads)
                around(compounds)
        new = wanted - read
        if not new:
            if not (todo := _before_bare_calls(function.body, kept, statements, headers)):
                return _blocks_blanked(function.body, kept, offset)
            continue
        read |= new
        wanted.clear()
        todo = [index for name in new for index in binding.get(name, ())]


@dataclass(frozen=True)
class Words:
    """What the slice knows by name: the words that say training whole (beside those holding a
    fragment of one), the names of the project's functions the analysis reads (a call of one is
    followed), and those a call given what training touches leaves it alone under."""

    training: frozenset[str]
    followed: frozenset[str]
    harmless: frozenset[str] = frozenset()
    _said: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)  # `says_training`, by word

    def says_training(self, word: str) -> bool:
        said = self._said.get(word)
        if said is None:
            lower = word.lower()
            said = self._said[word] = word in self.training or any(fragment in lower for fragment in _FRAGMENTS)
        return said

    def harmless_call(self, name: str) -> bool:
        return name not in self.followed and (name in self.harmless or says_harmless(name))


def words_of(vocabulary: Vocabulary, followed: frozenset[str]) -> Words:
    own = (*vocabulary.optimizers, *vocabulary.clears, *vocabulary.steps, *vocabulary.backwards)
    return Words(frozenset(CALLS) | OPTIMIZER_CLASSES | frozenset(own), followed, frozenset(vocabulary.harmless))


class _Facts:
    """What one statement that is not a compound one does, as the slice reads it."""

    def __init__(self, statement: ast.stmt, words: Words, escaping: set[str], kept_defs: frozenset[int],
                 imported: frozenset[str]) -> None:
        names: list[ast.Name] = []
        calls: list[ast.Call] = []
        walrus: list[str] = []
        self.reads: set[str] = set()
        self.always = False
        for node in _walk(statement):
            kind = type(node)
            if kind is ast.Name:
                names.append(node)
                self.reads.add(node.id)
            elif kind is ast.Attribute:
                self.reads.add(node.attr)
            elif kind is ast.Call:
                calls.append(node)
            elif kind in _ALWAYS:
                self.always = True
                if kind is ast.NamedExpr:
                    walrus.append(node.target.id)
        self.made_from = {n.id for n in names if type(n.ctx) is ast.Load} - imported
        self.binds: set[str] = set(walrus)  # the statement stays (a `:=`), and what it makes may hold the optimizer
        self.stores: set[str] = set()  # the names of what an attribute or an item is assigned in
        # what an assignment's value is an attribute or an item of (`trainer` of `opt = trainer.opt`)
        value = getattr(statement, "value", None)
        self.taken_from = {b.id for b in _containers(value) if b.id not in imported} if value is not None else set()
        self.gives: list[tuple[str, set[str]]] = []  # (the name a call is made on, the names in its arguments)
        self.touched: set[str] = set()  # what a call named for training is made on or given, and what it makes
        self.called_on: set[str] = set()  # the names a call that may do something is made on or given
        self.always = self.always or any(words.says_training(w) for w in self.reads)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # a nested definition binds its name and runs nothing: read, decorated, or read by the analysis, it stays
            self.binds.add(statement.name)
            self.always = self.always or bool(statement.decorator_list) or statement.lineno in kept_defs
            return
        if not isinstance(statement, _SIMPLE):
            self.always = True
        for target in _targets(statement):
            base = _base(target)
            if not isinstance(base, ast.Name) or base.id in _SELVES or base.id in escaping:
                self.always = True  # code elsewhere may read it
            elif isinstance(target, ast.Attribute):
                self.binds.add(target.attr)  # `args.steps = n` changes what `.steps` reads
                self.stores.add(base.id)  # and what `args` holds
            else:
                self.binds.add(base.id)
                if target is not base:
                    self.stores.add(base.id)  # `groups[0] = opt`
        for call in calls:
            self._call(call, statement, words, imported, names)

    def _call(self, call: ast.Call, statement: ast.stmt, words: Words, imported: frozenset[str], names: list[ast.Name]) -> None:
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        arguments = [*call.args, *(k.value for k in call.keywords)]
        spans = [((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)) for a in arguments]
        inside = {n.id for n in names if any(start <= (n.lineno, n.col_offset) < end for start, end in spans)}
        self.always = self.always or name in words.followed
        training = words.says_training(name)
        if training:  # what it is given (`step(ns.optimizer)` gives `ns`), and what it makes
            given = (_base(a) for a in arguments)
            self.touched |= {b.id for b in given if isinstance(b, ast.Name) and b.id not in imported}
            self.touched |= self.binds | self.stores
        base = _base(func)
        if not isinstance(base, (ast.Name, ast.Constant)) or (base is not func and getattr(base, "id", None) in _SELVES):
            self.always = True  # a method of `self`, or of what a call returns
            return
        # a module's function (`torch.save(model)`) or a literal's (`", ".join(names)`) is made on
        # nothing: only what it is given counts
        receiver = base.id if isinstance(base, ast.Name) and base is not func and base.id not in imported else None
        if receiver is not None:
            if training:
                self.touched.add(receiver)
            self.gives.append((receiver, inside))
            if isinstance(statement, ast.Expr) and name in _MUTATING:
                self.binds.add(receiver)  # `params.append(p)` changes `params`
        if not words.harmless_call(name):
            self.called_on |= inside | ({receiver} if receiver is not None else set())


def _bound_in(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names `function` binds (its parameters, what it assigns, however nested), and those it
    assigns an attribute or an item of: there, a name the module imports is not the module's."""
    bound: set[str] = set()
    for node in _walk(function):
        kind = type(node)
        if kind is ast.arg:
            bound.add(node.arg)
        elif kind is ast.Name and type(node.ctx) is not ast.Load:
            bound.add(node.id)
        elif kind in (ast.Attribute, ast.Subscript) and type(node.ctx) is not ast.Load:
            base = _base(node)
            if isinstance(base, ast.Name):
                bound.add(base.id)
    return bound


def _holders(facts: list[_Facts]) -> set[str]:
    """The names of what training touches, and of what holds it: what a call named for training
    is made on, is given or makes; then what is made from one, or given one."""
    using: dict[str, list[int]] = {}  # the statements that make something from each name, or give it
    taking: dict[str, list[int]] = {}  # the statements that bind each name from what holds it
    for index, fact in enumerate(facts):
        for name in fact.made_from | {n for _, inside in fact.gives for n in inside}:
            using.setdefault(name, []).append(index)
        for name in fact.binds if fact.taken_from else ():
            taking.setdefault(name, []).append(index)
    held = {name for fact in facts for name in fact.touched}
    todo = list(held)
    while todo:
        name = todo.pop()
        found: set[str] = set()
        for index in using.get(name, ()):
            fact = facts[index]
            found |= fact.binds | fact.stores if name in fact.made_from else set()
            found |= {receiver for receiver, inside in fact.gives if name in inside}
        for index in taking.get(name, ()):  # `opt = trainer.opt`: `trainer` holds what `opt` is
            found |= facts[index].taken_from
        for new in found - held:
            held.add(new)
            todo.append(new)
    return held


def blocks_of(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a compound statement that is not a definition (none of another)."""
    if isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [statement.body, statement.orelse]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [statement.body]
    if isinstance(statement, (ast.Try, ast.TryStar)):
        return [statement.body, *(h.body for h in statement.handlers), statement.orelse, statement.finalbody]
    if isinstance(statement, ast.Match):
        return [case.body for case in statement.cases]
    return []


def _statements(body: list[ast.stmt], compounds: tuple[ast.stmt, ...]) -> Iterator[tuple[ast.stmt, tuple[ast.stmt, ...]]]:
    """The statements that are not compound ones (nested definitions among them), and the headers
    of the compound ones, however nested, each with the compound statements around it (a header's
    own last)."""
    for statement in body:
        if not isinstance(statement, _COMPOUND):
            yield statement, compounds
            continue
        inside = (*compounds, statement)
        for targets, value in _evaluated(statement):
            yield _Header(targets=targets, value=value, lineno=statement.lineno, col_offset=statement.col_offset), inside
        for block in blocks_of(statement):
            yield from _statements(block, inside)


class _Header(ast.Assign):
    """What the header of a compound statement evaluates and binds, as an assignment of its own
    (`for o in opts:` as `o = opts`; an `if` test as an assignment of nothing): it may call, clear
    or step, and bind what a statement kept reads."""


def _evaluated(statement: ast.stmt) -> list[tuple[list[ast.expr], ast.expr]]:
    """(what it binds, what it evaluates) of each part of a compound statement's header."""
    if isinstance(statement, (ast.If, ast.While)):
        return [([], statement.test)]
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return [([statement.target], statement.iter)]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [([item.optional_vars] if item.optional_vars else [], item.context_expr) for item in statement.items]
    return [([ast.Name(h.name, ast.Store())] if h.name else [], h.type) for h in statement.handlers if h.type is not None]


def _before_bare_calls(body: list[ast.stmt], kept: set[int], statements: list, headers: dict[int, list[int]]) -> list[int]:
    """In a `try` body, the statement before a kept bare call (`opt.zero_grad()`, which the graph
    takes to complete), where failing is possible: kept (a `try` with no header, its blocks a
    `pass`), or the indexes in `statements` of it or its headers, to keep with what they read."""
    todo: list[int] = []
    for before, call in _in_try_bodies(body):
        if id(call) in kept and id(before) not in kept and isinstance(call, ast.Expr) and isinstance(call.value, ast.Call) \
                and sum(isinstance(node, ast.Call) for node in ast.walk(call.value)) == 1:  # rare: looked up here
            own = headers.get(id(before)) or [i for i, (statement, _) in enumerate(statements) if statement is before]
            if not own:
                kept.add(id(before))
            todo += own
    return todo


def _in_try_bodies(body: list[ast.stmt]) -> Iterator[tuple[ast.stmt, ast.stmt]]:
    for statement in body:  # each statement of a `try` body, however nested, and the next one
        if isinstance(statement, (ast.Try, ast.TryStar)):
            yield from zip(statement.body, statement.body[1:])
        for block in blocks_of(statement):
            yield from _in_try_bodies(block)


def _blocks_blanked(body: list[ast.stmt], kept: set[int], offset: int) -> list[Block]:
    """`body` and the blocks of the compound statements kept in it that hold something blanked."""
    block = [(s.lineno + offset, (s.end_lineno or s.lineno) + offset, s.col_offset, s.end_col_offset or 0, id(s) not in kept)
             for s in body]
    out = [block] if any(blank for *_, blank in block) else []
    for statement in body:
        if id(statement) in kept and isinstance(statement, _COMPOUND):
            for inner in blocks_of(statement):
                out += _blocks_blanked(inner, kept, offset)
    return out


def _targets(statement: ast.stmt) -> list[ast.expr]:
    if isinstance(statement, ast.Assign):
        return [t for target in statement.targets for t in _unpacked(target)]
    if isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        return _unpacked(statement.target)
    return []


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for element in target.elts for t in _unpacked(element)]
    return _unpacked(target.value) if isinstance(target, ast.Starred) else [target]


def _walk(node: ast.AST) -> list[ast.AST]:
    """`ast.walk`, as a list and without the `Load` and `Store` of each name (twice as fast)."""
    found = [node]
    for current in found:  # grows as it is read
        for name in _FIELDS.get(type(current)) or _fields(type(current)):
            value = getattr(current, name, None)
            if type(value) is list:
                found.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                found.append(value)
    return found


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    _FIELDS[kind] = tuple(name for name in kind._fields if name not in ("ctx", "type_comment", "type_ignores"))
    return _FIELDS[kind]


def _containers(value: ast.expr) -> list[ast.Name]:
    """The names whose attribute or item `value` is, as it is or among the values it packs
    (`trainer.opt`, `opts[0]`, `(state.opt, other.opt)`); not through a call."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return [name for element in value.elts for name in _containers(element)]
    node = value
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return [node] if isinstance(node, ast.Name) and node is not value else []


def _base(node: ast.expr) -> ast.expr:
    """`a` of `a.b[c].d`."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _word(node: ast.Name | ast.Attribute) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr
