"""Which functions reach which: the first looks of all the chosen modules put together.

A function (or a module body) can hold a finding only if it holds a loop (or is a per-batch
callback) and it, or a function of the project it calls, both accumulates (`backward`) and steps
(an optimizer's step, or a hand-written update from `.grad`): those are the roots, analysed.
The functions that touch gradients at all, directly or not, are followed into at call sites.

Calls are matched by name, generously but not blindly: `f(...)` reaches the functions named `f`
of its own module and of the modules it imports; `x.m(...)` reaches the methods named `m` of
its own module, of the modules it imports and of those that import it (a subclass overriding a
base class's step lives there), and the functions named `m` of the modules it imports. A
function that calls one of its parameters (`step_fn(x, y)`) reaches what its callers hand to the
calls they make, by name or as an attribute (`run_epoch(loader, step_fn=self.train_step)`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from zerograd_lint.survey import MODULE, Function, ModuleSurvey


@dataclass(frozen=True)
class Reach:
    """What the analysis makes of one module."""

    roots: frozenset[int]  # `def` lines (MODULE for the module body) worth analysing
    followed: frozenset[int]  # `def` lines of functions that touch gradients, directly or not
    worth: frozenset[str] = frozenset()  # module-level names whose definition holds such a function
    needed: frozenset[int] = frozenset()  # roots and the followed functions they can reach


def connect(modules: Mapping[str, ModuleSurvey], imports: Mapping[str, set[str]], everything: bool = False,
            reported: Collection[str] | None = None) -> dict[str, Reach]:
    """Follow calls to decide what each function can reach. `imports` maps a module's path to the
    paths of the project modules it imports. With `everything`, every function is followed and
    every loop analysed (what the prefilter's test compares against). `reported`: the only files
    whose findings are wanted (a file checked with its project); a root that can reach none of
    them is not analysed."""
    if everything:
        out = {}
        for path, module in modules.items():
            lines = frozenset(module.functions)
            looping = frozenset(l for l, f in module.functions.items() if f.in_loops is not None or l != MODULE)
            out[path] = Reach(looping, lines, frozenset(module.top), lines)
        return out
    importers: dict[str, set[str]] = {path: set() for path in modules}
    for path, targets in imports.items():
        for target in targets:
            importers.setdefault(target, set()).add(path)
    calls: dict[tuple[str, int], set[tuple[str, int]]] = {}
    loop_calls: dict[tuple[str, int], set[tuple[str, int]]] = {}
    handed: dict[tuple[str, int], set[tuple[str, int]]] = {}  # what each function hands to the calls it makes
    own_functions = {path: _named_in(path, module.functions_named) for path, module in modules.items()}
    own_methods = {path: _named_in(path, module.methods_named) for path, module in modules.items()}
    for path, module in modules.items():
        near = {path} | imports.get(path, set())
        functions = _named(own_functions, near)  # what `f(...)` and `x.f(...)` can reach
        methods = _named(own_methods, near | importers.get(path, set()))  # `x.f(...)` too
        for line, function in module.functions.items():
            calls[(path, line)] = _callees(function, functions, methods)
            handed[(path, line)] = {c for name in function.handed for c in (*functions.get(name, ()), *methods.get(name, ()))}
            if function.in_loops is not None:
                loop_calls[(path, line)] = _callees(function.in_loops, functions, methods)
    _run_what_is_handed(modules, calls, loop_calls, handed)
    callers: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for where, callees in calls.items():
        for callee in callees:
            callers.setdefault(callee, []).append(where)
    accumulates = _reaching({(p, l) for p, m in modules.items() for l, f in m.functions.items() if f.accumulates}, callers)
    touches = _reaching({(p, l) for p, m in modules.items() for l, f in m.functions.items() if f.touches}, callers)
    steps = _reaching({(p, l) for p, m in modules.items() for l, f in m.functions.items() if f.steps}, callers)
    followed_in = _by_module(accumulates | touches)
    training_in = _by_module(accumulates & steps)
    callbacks = {n for m in modules.values() for n in m.callbacks} | {"training_step"}
    factories = {n for m in modules.values() for n in m.callback_factories}
    rooted: dict[str, set[int]] = {}
    out = {}
    for path, module in modules.items():
        followed = frozenset(followed_in.get(path, ()))
        worth = frozenset(name for name, lines in module.top.items() if followed.intersection(lines))
        per_batch = {l for name in callbacks for l in module.functions_named.get(name, []) + module.methods_named.get(name, [])}
        per_batch |= {l for name in factories for l in _nested_in(module, name)} | module.engine_callbacks
        roots = {l for l in training_in.get(path, ()) if l in per_batch}
        for line, function in module.functions.items():
            loop = function.in_loops
            if loop is not None:
                reached = loop_calls[(path, line)]
                if (loop.accumulates or reached & accumulates) and (loop.steps or reached & steps):
                    roots.add(line)
        out[path] = Reach(frozenset(roots), followed, worth)
        rooted[path] = roots
    useful = accumulates | touches
    needed = {(p, l) for p, lines in rooted.items() for l in lines}
    if reported is not None:
        needed &= _reaching_into(reported, useful | needed, callers)
    analysed = set(needed)  # the roots analysed: those that reach a file reported
    todo = list(needed)
    while todo:
        for callee in calls.get(todo.pop(), ()):
            if callee not in needed and callee in useful:
                needed.add(callee)
                todo.append(callee)
    needed_in = _by_module(needed)
    for path, survey in out.items():
        roots = frozenset(l for l in survey.roots if (path, l) in analysed)
        out[path] = dataclasses.replace(survey, roots=roots, needed=frozenset(needed_in.get(path, ())))
    return out


def _run_what_is_handed(modules: Mapping[str, ModuleSurvey], calls: dict[tuple[str, int], set[tuple[str, int]]],
                        loop_calls: dict[tuple[str, int], set[tuple[str, int]]],
                        handed: dict[tuple[str, int], set[tuple[str, int]]]) -> None:
    """A function that calls one of its parameters (`step_fn(x, y)`) may run what its callers hand
    to the calls they make (`run_epoch(loader, step_fn=self.train_step)`): skorch's epoch runs the
    training step its caller passes in."""
    takers = {(path, line) for path, module in modules.items() for line, f in module.functions.items() if f.calls_parameter}
    if not takers:
        return
    passing: dict[tuple[str, int], set[tuple[str, int]]] = {taker: set() for taker in takers}
    for caller, callees in calls.items():
        if handed[caller]:
            for callee in callees & takers:
                passing[callee] |= handed[caller]
    for where, passed in passing.items():
        path, line = where
        function = modules[path].functions[line]
        calls[where] |= passed
        if function.in_loops is not None and function.in_loops.calls_parameter:
            loop_calls[where] |= passed


def _reaching(flagged: set[tuple[str, int]], callers: dict[tuple[str, int], list[tuple[str, int]]],
              within: set[tuple[str, int]] | None = None) -> set[tuple[str, int]]:
    """The functions flagged, and those that call one, directly or not (through functions of
    `within` only, if given)."""
    todo = list(flagged)
    while todo:
        for caller in callers.get(todo.pop(), ()):
            if caller not in flagged and (within is None or caller in within):
                flagged.add(caller)
                todo.append(caller)
    return flagged


def _reaching_into(paths: Collection[str], useful: set[tuple[str, int]],
                   callers: dict[tuple[str, int], list[tuple[str, int]]]) -> set[tuple[str, int]]:
    """The functions of `useful` that lie in one of `paths` or reach one there through calls of
    `useful` functions only, as the analysis follows them (a finding is placed in the code of its
    root or of a function the root reaches)."""
    paths = set(paths)
    return _reaching({where for where in useful if where[0] in paths}, callers, useful)


def _by_module(functions: set[tuple[str, int]]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for path, line in functions:
        out.setdefault(path, set()).add(line)
    return out


def _named_in(path: str, named: dict[str, list[int]]) -> dict[str, list[tuple[str, int]]]:
    """The functions (or methods) of one module by name, each as (path, `def` line)."""
    return {name: [(path, line) for line in lines] for name, lines in named.items()}


def _named(own: Mapping[str, dict[str, list[tuple[str, int]]]], paths: set[str]) -> dict[str, list[tuple[str, int]]]:
    """The functions (or methods) of these modules by name (`own`: each module's, `_named_in`)."""
    if len(paths) == 1:
        return own[next(iter(paths))]
    out: dict[str, list[tuple[str, int]]] = {}
    for path in paths:
        for name, found in own[path].items():
            if name in out:
                out[name] = out[name] + found
            else:
                out[name] = found
    return out


def _callees(function: Function, functions: dict[str, list[tuple[str, int]]],
             methods: dict[str, list[tuple[str, int]]]) -> set[tuple[str, int]]:
    callees: set[tuple[str, int]] = set()
    for name in function.names | function.attributes:
        callees.update(functions.get(name, ()))
    for name in function.attributes | ({"__call__"} if function.objects_called else set()):
        callees.update(methods.get(name, ()))
    return callees


def _nested_in(module: ModuleSurvey, name: str) -> list[int]:
    """`def` lines of the functions nested in the functions called `name` (a callback factory)."""
    outer = module.functions_named.get(name, []) + module.methods_named.get(name, [])
    return [line for line in module.nested if module.nested[line] in outer]
