"""What a loss was computed from, where the code shows it: the objects called on the way.

`loss.backward()` deposits into the `.grad` of every parameter the loss depends on. The analysis
reads that from the code that computed the loss: `loss = criterion(model(x), y)` calls `model` (and
`criterion`), so the backward deposits into the gradient sets linked to `model` and no other. A
reference copy trained beside the model under test, or a helper run once for each of two models,
then deposits into its own set only (docs/contract.md, "Which set a backward counts toward":
where the code shows which models a loss was computed from, the backward fills only their sets).
GANs still deposit into both networks:
`criterion(netD(netG(z)), label)` calls both.

`made_from` gives the keys of the objects called (a forward `model(x)`, a method `model.encode(x)`,
a function given them `compute_loss(model, batch)`), or None where the code does not show it: a
function of the project (its result may come from any model), a name with no value the analysis
sees. `flow.py` then lets the backward deposit into every set, as before.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import libcst as cst

from zerograd_lint import vocabulary, walk
from zerograd_lint.scopes import dotted_name

if TYPE_CHECKING:
    from zerograd_lint.bindings import Frame, Key, Resolver

MAX_DEPTH = 30

# Methods whose result carries no gradient at all: nothing upstream of them gets one.
_CUT = frozenset({"detach", "item", "tolist", "numpy", "detach_"})


class _Unknown(Exception):
    """The code does not show what the value was computed from."""


def made_from(expr: cst.BaseExpression, frame: Frame, resolver: Resolver) -> tuple[Key, ...] | None:
    """The keys of the objects called to compute `expr`, or None where the code does not show it."""
    found: dict[Key, None] = {}
    try:
        _walk(expr, frame, resolver, found, 0, set())
    except _Unknown:
        return None
    return tuple(found)


def _walk(expr, frame: Frame, r: Resolver, found: dict, depth: int, seen: set) -> None:
    if depth > MAX_DEPTH:
        raise _Unknown
    if isinstance(expr, cst.Name):
        _name(expr.value, frame, r, found, depth, seen)
    elif isinstance(expr, cst.Attribute):
        _object(expr, frame, r, found)  # `self.model`, `model.head`: itself, and what holds it
        _walk(expr.value, frame, r, found, depth + 1, seen)  # `outputs.loss`: what outputs came from
    elif isinstance(expr, cst.Subscript):
        _walk(expr.value, frame, r, found, depth + 1, seen)
    elif isinstance(expr, cst.Call):
        _call(expr, frame, r, found, depth, seen)
    elif isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return
    elif isinstance(expr, (cst.Lambda, cst.GeneratorExp, cst.ListComp, cst.DictComp, cst.SetComp, cst.Await, cst.Yield)):
        raise _Unknown
    else:  # `a + b`, `-a`, `a if c else b`, tuples and lists: their parts
        for child in expr.children:
            if isinstance(child, (cst.Element, cst.DictElement, cst.StarredElement, cst.Arg)):
                child = child.value
            if isinstance(child, cst.BaseExpression):
                _walk(child, frame, r, found, depth + 1, seen)


def _name(name: str, frame: Frame, r: Resolver, found: dict, depth: int, seen: set) -> None:
    if name in ("True", "False", "None") or (frame, name) in seen:
        return
    seen.add((frame, name))
    _object(cst.Name(name), frame, r, found)  # itself: a model, or what a module was built from
    if name in frame.locals:
        return  # a comprehension's target: an element of what it iterates, data
    lookup = frame.scope.lookup(name)
    if lookup is None:
        return  # a global the analysis does not see, or an import: no computation of its own
    scope, bindings = lookup
    if name in _augmented(scope):
        raise _Unknown  # `loss += ...`: what is added is not among its bindings
    owner = r.frame_for(scope, frame)
    if any(b.is_param for b in bindings):
        if name in owner.arguments and owner.caller is not None:  # what the caller passed
            _walk(owner.arguments[name], owner.caller, r, found, depth + 1, seen)
            return
        if name == scope.self_name:
            return
        raise _Unknown  # a parameter no caller in sight binds
    for binding in bindings:
        if binding.value is not None and binding.path[:1] != ("*",):  # not a loop's element: data
            _walk(binding.value, owner, r, found, depth + 1, seen)


def _call(call: cst.Call, frame: Frame, r: Resolver, found: dict, depth: int, seen: set) -> None:
    """What a call's result came from: its arguments, and the object called (`model(x)`, a
    distribution `Categorical(logits=actor(obs))`, `G(z)`), or the receiver of a method
    (`projector(x).var(0)`, `model.encode(x)`); nothing past a cut (`.detach()`, `.item()`)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _CUT:
        return
    for arg in call.args:
        _walk(arg.value, frame, r, found, depth + 1, seen)
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        head = (dotted_name(func) or "").split(".")[0]
        named_as_module = (head == "torch" or head in vocabulary.HARMLESS_MODULES) and frame.scope.lookup(head) is None
        if named_as_module or r.is_module(func.value, frame):  # not a local named `dist`
            if r.module_function(func, frame) is not None:
                raise _Unknown  # a function of the project: its result may come from any model
            return  # `F.mse_loss(out, y)`, `torch.cat(...)`: what its arguments came from
        receiver = r.keys(func.value, frame)
        cls = r.instance_class(receiver[0]) if receiver else None
        if cls is not None and r.method(cls, method) is not None:
            raise _Unknown  # a method of a project class (`self.compute_loss(batch)`): not read here
        _object(func, frame, r, found)  # `model.encode(x)`, `self.model(x)`: that object is called
        _walk(func.value, frame, r, found, depth + 1, seen)  # and what the receiver came from
        return
    if isinstance(func, cst.Name):
        if r.function(func.value, frame) is not None or r.klass(func.value, frame.scope) is not None:
            raise _Unknown  # a function or class of the project: not read here
        if vocabulary.is_harmless_function(func.value):
            return  # `len(...)`, `float(...)`
        _walk(func, frame, r, found, depth + 1, seen)  # `model(x)`: the model, and what it was made of
        for arg in call.args:
            if isinstance(arg.value, (cst.Name, cst.Attribute)):
                _object(arg.value, frame, r, found)  # `compute_loss(model, batch)`
        return
    _walk(func, frame, r, found, depth + 1, seen)


_AUGMENTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # scope -> names it augments (`x += ...`)


def _augmented(scope) -> frozenset[str]:
    found = _AUGMENTED.get(scope)
    if found is None:
        body = scope.node.body if isinstance(scope.node, cst.FunctionDef) else scope.node
        found = _AUGMENTED[scope] = frozenset(  # its own statements: not those of the functions it defines
            n.target.value for n in walk.nodes(body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda))
            if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)
        )
    return found


def _object(expr: cst.BaseExpression, frame: Frame, r: Resolver, found: dict) -> None:
    for key in r.keys(expr, frame):
        found[key] = None
