"""The gradient sets a graph's events reach, before the dataflow follows them (`flow.py`).

- *Resolution* (`resolve_events`): once every stepped set is known, which sets each clear,
  overwrite or rebind reaches, which sets share parameters with a stepped one, and which sets a
  backward's loss can reach (what the loss was computed from, where the code shows it).
- *Attribution* (`attribute_backwards`, path-insensitive reachability): a backward counts toward
  gradient set S when a step of S can follow it either before the next backward or before the
  next clear of S. This is what keeps the DCGAN loop quiet: the generator's backward also deposits
  into the discriminator's `.grad`, but `netD.zero_grad()` and another backward always come first.
"""

from __future__ import annotations

from dataclasses import dataclass

from zerograd_lint import events as ev
from zerograd_lint.bindings import Key, Resolver, covers, is_prefix, related
from zerograd_lint.graphs.nodes import EVENT, Graph


@dataclass(frozen=True)
class Resolved:
    """A graph node's event with its gradient sets resolved against the sets that exist."""

    op: str
    steps: tuple[Key, ...] = ()
    strong: tuple[Key, ...] = ()  # cleared for certain
    weak: tuple[Key, ...] = ()  # may be cleared: cures staleness, never reported as a bad clear
    shared: tuple[Key, ...] = ()  # other sets over the same parameters: their fresh gradients were used
    within: tuple[Key, ...] = ()  # those of `shared` the code shows hold every parameter the step applied
    into: tuple[Key, ...] | None = None  # a backward: the sets its loss can reach (None: any)


def _set_links(key: Key, resolver: Resolver) -> tuple[frozenset[Key], bool]:
    if key[0] == ev.PARAMS:
        return frozenset({key[1:]}), True
    info = resolver.info(key)
    return info.links, info.links_known


def _holds(outer: tuple[frozenset[Key], bool], inner: tuple[frozenset[Key], bool]) -> bool:
    """Does a set linked to `outer` hold every parameter of one linked to `inner`, as far as the
    code shows (InfoGAN's optimizer over the generator and the discriminator holds the generator's
    optimizer's)? Links made by filtering a model's parameters name the model: such a set may hold
    less than its links say, and is not taken to hold another."""
    (outer_links, outer_known), (inner_links, inner_known) = outer, inner
    return outer_known and inner_known and bool(inner_links) and all(
        any(is_prefix(o, i) for o in outer_links) for i in inner_links
    )


def resolve_events(graph: Graph, resolver: Resolver) -> dict[int, Resolved]:
    """Decide which gradient sets each clear reaches, now that every stepped set is known."""
    events = {n: graph.args[n].event for n, op in enumerate(graph.ops) if op == EVENT}
    sets: list[Key] = []
    for event in events.values():
        if event.op in (ev.STEP, ev.STEP_CLEAR, ev.UPDATE):
            sets.extend(k for k in event.keys if k not in sets)
    links = {s: _set_links(s, resolver) for s in sets}
    unknown = [s for s in sets if not links[s][1]]
    made_from: dict[Key, set[Key]] = {}  # `resolver.sources`, asked again and again for the same keys

    def sources(target: Key) -> set[Key]:
        if target not in made_from:
            made_from[target] = resolver.sources(target)
        return made_from[target]

    def linked(targets: tuple[Key, ...], collections: bool = True) -> list[Key]:
        """Sets whose parameters the targets hold; with `collections`, also through what a target
        collection of parameters was made from (`params = list(model.parameters())`)."""
        found = set(targets)
        if collections:
            found = found.union(*(sources(t) for t in targets))
        expanded = resolver.expand(found)
        return [s for s in sets if links[s][1] and any(related(t, l) for t in expanded for l in links[s][0])]

    def sharing(keys) -> tuple[Key, ...]:
        """The sets and every set holding the same parameters: one `.grad` serves them all (an
        optimizer over `model` and a hand-written update over `model.parameters()`)."""
        out = list(keys)
        for key in keys:
            if links[key][1]:
                out.extend(s for s in linked(tuple(links[key][0])) if s not in out)
        return tuple(out)

    resolved: dict[int, Resolved] = {}
    for node, event in events.items():
        if event.op in (ev.STEP, ev.STEP_CLEAR, ev.UPDATE):
            keys = tuple(k for k in event.keys if k in sets)
            others = tuple(k for k in sharing(keys) if k not in keys)
            strong = keys + others if event.op != ev.STEP else ()
            within = tuple(o for o in others if all(_holds(links[o], links[k]) for k in keys))
            resolved[node] = Resolved(event.op, steps=keys, strong=strong, shared=others, within=within)
        elif event.op == ev.ACC:  # into the sets of what the loss was computed from, where shown
            computed_from = event.made_from(resolver) if len(sets) > 1 else ()  # one set: it gets all
            reached = linked(computed_from, collections=False) if computed_from else []
            into = tuple(dict.fromkeys(reached + unknown)) if reached else None
            resolved[node] = Resolved(ev.ACC, into=into)
        elif event.op == ev.CLEAR:
            strong = sharing(tuple(s for s in sets if any(covers(k, s) for k in event.keys)))
            resolved[node] = Resolved(ev.CLEAR, strong=strong)
        elif event.op == ev.OVERWRITE:  # the old gradients go, fresh ones take their place
            resolved[node] = Resolved(ev.ACC, strong=tuple(linked(event.keys) or unknown))
        elif event.op == ev.CLEAR_MODELS:
            strong = linked(event.keys)
            if strong:
                resolved[node] = Resolved(ev.CLEAR, strong=tuple(strong))
            elif len(unknown) == 1 and len(sets) == 1:
                resolved[node] = Resolved(ev.CLEAR, strong=tuple(unknown))
            else:
                resolved[node] = Resolved(ev.CLEAR, weak=tuple(unknown))
        elif event.op == ev.REBIND:  # what the code shows the set is made of, made anew
            gone = linked(event.keys, collections=False)
            # a new optimizer over parameters the code shows are the old ones keeps their .grad;
            # one made from what the code does not show (a factory of another package) starts anew
            gone += [s for s in unknown if s in event.keys]
            if gone:
                resolved[node] = Resolved(ev.REBIND, strong=tuple(gone))
        elif event.op == ev.MAY_CLEAR:  # the optimizer itself, a part of it, or what holds it
            reached = [s for s in sets if any(related(k, s) for k in event.keys)]
            if reached:
                resolved[node] = Resolved(ev.CLEAR, weak=tuple(reached))
    return resolved


def attribute_backwards(graph: Graph, resolved: dict[int, Resolved]) -> dict[int, frozenset[Key]]:
    acc_nodes = [n for n, r in resolved.items() if r.op in (ev.ACC,)]
    result: dict[int, frozenset[Key]] = {}
    all_sets = {k for r in resolved.values() for k in r.steps}
    for start in acc_nodes:
        found: set[Key] = set()
        into = resolved[start].into
        # (a) a step before the next backward
        found |= _steps_reachable(graph, resolved, start, stop=lambda n: n in resolved and resolved[n].op == ev.ACC)
        # (b) a step of S before the next clear of S
        for key in all_sets - found:
            stop = lambda n, key=key: n in resolved and key in resolved[n].strong
            if key in _steps_reachable(graph, resolved, start, stop):
                found.add(key)
        result[start] = frozenset(found if into is None else found.intersection(into))
    return result


def _steps_reachable(graph: Graph, resolved, start: int, stop) -> set[Key]:
    found: set[Key] = set()
    seen = {start}
    todo = list(graph.succ[start])
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        r = resolved.get(node)
        if r is not None and r.steps:
            found.update(r.steps)
        if stop(node):
            continue
        todo.extend(graph.succ[node])
    return found
