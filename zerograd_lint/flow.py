"""The dataflow: what each gradient set holds along every path of one analysed function's graph.

Once `gradient_sets.py` has resolved which sets each event reaches and which sets each backward's
contributions count toward (*attribution*), the *states* are found (path-sensitive, forward, to a
fixpoint): per set, the contributions no step has applied yet (`fresh`), those a step applied and
nothing cleared (`stale`), those a step of another set over the same parameters applied (`applied`:
stale for this set too once a backward adds to them), and the clear that threw fresh contributions
away (`discarded`). Loop back edges carry states into the next iteration and record which loops a
contribution went around.

What the states show (a stale step, a step after a discarding clear, a clear that meets fresh
contributions) is handed to the judges in `rules/`, which decide what is a finding.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from zerograd_lint import events as ev
from zerograd_lint.bindings import Key, Resolver
from zerograd_lint.conditions import advance, contradicts
from zerograd_lint.gradient_sets import Resolved, attribute_backwards, resolve_events
from zerograd_lint.graphs.nodes import ASSUME, BACK, ENTER, EVENT, EXCUSE, KILL, NOP, SHIFT, Graph

MAX_STATES_PER_NODE = 256


class GaveUp(Exception):
    """Too many distinct states even once the conditions are forgotten: the analysis of this
    graph stops without findings (its callees are then analysed on their own)."""


class Tag(NamedTuple):
    node: int  # the backward (fresh) or step (stale) that put the contributions there
    crossed: frozenset[int]  # loops whose back edge they went around since
    excused: bool = False  # fresh contributions given up on purpose: a clear meeting them discards deliberately


class Discard(NamedTuple):
    clear: int
    backward: int
    crossed: frozenset[int]


class SetState(NamedTuple):
    fresh: Tag | None = None
    stale: Tag | None = None
    discarded: Discard | None = None
    applied: Tag | None = None  # the step of another set that applied this set's fresh contributions


CLEAN = SetState()


@dataclass
class Observations:
    """What the states showed, by graph node and gradient set: facts of the dataflow, which the
    judges in `rules/` read (a new rule over these facts adds nothing here)."""

    stale_steps: dict[tuple[int, Key], set[Tag]] = field(default_factory=lambda: defaultdict(set))
    empty_steps: dict[tuple[int, Key], set[Discard]] = field(default_factory=lambda: defaultdict(set))
    fresh_clears: dict[tuple[int, Key], set[Tag]] = field(default_factory=lambda: defaultdict(set))
    # clears that, on some path, met no fresh contributions (nothing pending, or only applied ones)
    plain_clears: set[tuple[int, Key]] = field(default_factory=set)


@dataclass
class Analysis:
    graph: Graph
    resolved: dict[int, Resolved]
    attribution: dict[int, frozenset[Key]]
    observations: Observations

    def nodes(self, op: str, key: Key) -> list[int]:
        """Graph nodes that step (op="step") or clear for certain (op="clear") the set `key`."""
        if op == "step":
            return sorted(n for n, r in self.resolved.items() if key in r.steps)
        return sorted(n for n, r in self.resolved.items() if r.op == ev.CLEAR and key in r.strong)


# ------------------------------------------------------------------------- states


def _with(sets: dict[Key, SetState], key: Key, value: SetState) -> None:
    if value == CLEAN:
        sets.pop(key, None)
    else:
        sets[key] = value


class _Machine:
    def __init__(self, graph: Graph, resolved, attribution) -> None:
        self.graph = graph
        self.resolved = resolved
        self.attribution = attribution
        self.obs = Observations()
        self.correlated = _correlated_facts(graph)
        self.lowest_offset: dict[tuple, int] = {}  # (counter, divisor): the lowest offset tested
        for n, op in enumerate(graph.ops):
            if op == ASSUME and graph.args[n][0].key[0] == "mod":
                window, offset = graph.args[n][0].key[1:3], graph.args[n][0].key[3]
                self.lowest_offset[window] = min(offset, self.lowest_offset.get(window, offset))
        self.units = {  # `k == 1` by `k`, where a window on `k` is tested too
            graph.args[n][0].key[1]: graph.args[n][0] for n, op in enumerate(graph.ops)
            if op == ASSUME and graph.args[n][0].key[0] == "unit" and graph.args[n][0].key in self.correlated
        }
        self.succ = self._past_idle_nodes()
        # the loops around an event that does something: a finding is placed at one of those the
        # gradients went around (`rules.raw.anchor`). Going around another loop (a sampler's loop
        # over its prompts, inlined in the training loop) is not recorded: it would only make
        # states differ, twice as many for each such loop
        self.around_events = frozenset(loop for node in resolved for loop in graph.loops_of[node])

    def _past_idle_nodes(self) -> list[list[int]]:
        """Each node's successors, with the nodes that leave every state as it is skipped: an
        event that does nothing to any set, a condition not tracked, the reassignment of a name no
        tracked condition reads. Most nodes of a large loop are such (the Trainer loop of
        transformers: 1,700 of 2,100), and the fixpoint visits the rest only."""
        graph = self.graph
        read = frozenset().union(*(
            graph.args[n][0].names for n, op in enumerate(graph.ops)
            if op == ASSUME and graph.args[n][0].key in self.correlated
        ))

        def idle(node: int) -> bool:
            op = graph.ops[node]
            if op == EVENT:
                return node not in self.resolved
            if op == ASSUME:
                return graph.args[node][0].key not in self.correlated
            if op == KILL:
                return read.isdisjoint(graph.args[node])
            return op in (NOP, ENTER)

        skipped = [idle(node) for node in range(len(graph.ops))]
        through: dict[int, list[int]] = {}  # an idle node: the first busy nodes after it

        def busy_after(start: int) -> list[int]:
            if start not in through:
                found, seen, todo = [], {start}, list(graph.succ[start])
                while todo:
                    node = todo.pop()
                    if node in seen:
                        continue
                    seen.add(node)
                    if skipped[node]:
                        todo.extend(graph.succ[node])
                    else:
                        found.append(node)
                through[start] = sorted(found)
            return through[start]

        # only the entry and busy nodes are ever expanded: idle ones need no list of their own
        return [
            sorted({t for s in graph.succ[node] for t in ([s] if not skipped[s] else busy_after(s))})
            if node == graph.entry or not skipped[node] else []
            for node in range(len(graph.ops))
        ]

    def transfer(self, node: int, state):
        """The states after `node` (an empty list: the path is infeasible)."""
        sets_t, facts = state
        op = self.graph.ops[node]
        if op == EVENT:
            gate = self.graph.args[node].gate
            if gate is not None and (gate, False) in facts:
                return [state]  # Accelerate skips it: not a sync step
            sets = dict(sets_t)
            self.event(node, sets)
            return [(tuple(sorted(sets.items())), facts)]
        if op == ASSUME:
            fact, value = self.graph.args[node]
            if fact.key not in self.correlated:
                return [state]
            if (fact, not value) in facts or contradicts(fact, value, facts):
                return []
            if fact.key[0] == "mod" and not value and fact.key[2] in self.units:  # then `k == 1` is false for good
                return [(sets_t, facts | {(fact, value), (self.units[fact.key[2]], False)})]
            return [(sets_t, facts | {(fact, value)})]
        if op == KILL:
            names = self.graph.args[node]
            return [(sets_t, frozenset(f for f in facts if not (f[0].names & names)))]
        if op == SHIFT:
            name = self.graph.args[node]
            return [(sets_t, advance(facts, frozenset({name}), lambda f: name in f.names))]
        if op == ENTER:
            return [state]
        if op == EXCUSE:
            excused = {
                key: value._replace(fresh=value.fresh._replace(excused=True))
                for key, value in sets_t if value.fresh is not None and not value.fresh.excused
            }
            if not excused:
                return [state]
            return [(tuple(sorted({**dict(sets_t), **excused}.items())), facts)]
        if op == BACK:
            loop = self.graph.loops[self.graph.args[node]]
            crossed = dict(sets_t)
            if loop.id in self.around_events:
                for key, value in sets_t:
                    crossed[key] = SetState(
                        _cross(value.fresh, loop.id), _cross(value.stale, loop.id),
                        value.discarded._replace(crossed=value.discarded.crossed | {loop.id}) if value.discarded else None,
                        _cross(value.applied, loop.id),
                    )
            # Accelerate's sync state holds until the next `accumulate()` block (which forgets it):
            # an inner loop's back edge (a check over parameters after the block) keeps it
            new_facts = advance(facts, loop.counters, lambda f: not f.stable and not _is_gate(f) or bool(f.names & loop.counters))
            # a window's fact shifted below every offset the code tests it at says nothing any
            # more: kept, each window would multiply the states by its offsets (a GAN's two
            # windows on two divisors made the analysis give up)
            new_facts = frozenset(
                f for f in new_facts
                if f[0].key[0] != "mod" or f[0].key[3] >= self.lowest_offset.get(f[0].key[1:3], f[0].key[3])
            )
            return [(tuple(sorted(crossed.items())), new_facts)]
        return [state]

    def event(self, node: int, sets: dict[Key, SetState]) -> None:
        r = self.resolved.get(node)
        if r is None:
            return
        obs = self.obs
        if r.op == ev.ACC:
            for key in r.strong:
                sets.pop(key, None)
            for key in list(sets):
                if sets[key].discarded:
                    sets[key] = sets[key]._replace(discarded=None)
            for key in self.attribution.get(node, ()):
                value = sets.get(key, CLEAN)
                if value.applied is not None:  # added to what another step applied: this step would apply both
                    value = value._replace(stale=value.stale or value.applied, applied=None)
                if value.fresh is None or value.fresh.excused:  # new contributions are pending again
                    value = value._replace(fresh=Tag(node, frozenset()))
                _with(sets, key, value._replace(discarded=None))
            return
        if r.op == ev.REBIND:
            for key in r.strong:
                sets.pop(key, None)
            return
        for key in r.steps:
            value = sets.get(key, CLEAN)
            if r.op == ev.UPDATE:
                _with(sets, key, CLEAN)
                continue
            if value.stale is not None:
                obs.stale_steps[(node, key)].add(value.stale)
            if value.discarded is not None and value.fresh is None:
                obs.empty_steps[(node, key)].add(value.discarded)
            if value.fresh is not None or value.stale is not None:
                value = SetState(stale=Tag(node, frozenset()))
            else:
                value = CLEAN
            _with(sets, key, value)
        for key in r.strong:
            value = sets.get(key, CLEAN)
            if key not in r.steps:
                if value.fresh is not None and value.fresh.excused:  # a deliberate discard
                    _with(sets, key, CLEAN)
                    continue
                if value.fresh is not None:
                    obs.fresh_clears[(node, key)].add(value.fresh)
                    _with(sets, key, SetState(discarded=Discard(node, value.fresh.node, frozenset())))
                    continue
                obs.plain_clears.add((node, key))
            _with(sets, key, SetState(discarded=value.discarded if key not in r.steps else None))
        for key in r.weak:
            value = sets.get(key, CLEAN)
            _with(sets, key, value._replace(stale=None, applied=None))
        if r.op == ev.STEP:
            for key in r.shared:  # another update applied these tensors' fresh gradients, once for each set
                value = sets.get(key, CLEAN)
                if value.fresh is not None:
                    applied = Tag(node, frozenset()) if key in r.within else value.applied
                    _with(sets, key, value._replace(fresh=None, applied=applied))

    def run(self) -> Observations:
        graph = self.graph
        seen: list[set] = [set() for _ in graph.ops]
        start = (tuple(), frozenset())
        todo = [(graph.entry, start)]
        seen[graph.entry].add(start)
        # Too many combinations of conditions at a node: states entering it first forget the plain
        # conditions (keeping counters and Accelerate's gate), then every condition, then give up.
        widened: dict[int, int] = {}
        while todo:
            node, state = todo.pop()
            for out in self.transfer(node, state):
                for succ in self.succ[node]:
                    bucket = seen[succ]
                    level = widened.get(succ, 0)
                    if level < 2 and len(bucket) >= MAX_STATES_PER_NODE * (level + 1):
                        level = widened[succ] = level + 1
                    if len(bucket) >= 4 * MAX_STATES_PER_NODE:
                        raise GaveUp
                    # this successor's widening, not the next one's
                    entering = out if level == 0 or not out[1] else _forget(out, level)
                    if entering not in bucket:
                        bucket.add(entering)
                        todo.append((succ, entering))
        return self.obs


_COUNTING = frozenset({"mod", "first", "last", "was_last", "unit", "window"})


def _forget(state, level: int):
    """A state with fewer facts. Level 1 forgets the conditions that call something (`hasattr(...)`,
    `torch.isfinite(norm)`), keeping counters, windows, gates and the loop's settings
    (`loss_scaler is not None`, `args.fp16`), which decide most of what runs together; level 2
    keeps counters, windows and gates only."""
    if level == 0 or not state[1]:
        return state
    if level == 1:
        return state[0], frozenset(f for f in state[1] if f[0].key[0] in _COUNTING or f[0].stable or _is_gate(f[0]))
    return state[0], frozenset(f for f in state[1] if f[0].key[0] in _COUNTING or _is_gate(f[0]))


def _is_gate(fact) -> bool:
    return not fact.stable and any("sync_gradients" in name for name in fact.names)


def _correlated_facts(graph: Graph) -> set[tuple]:
    """Facts worth tracking: a condition tested in more than one place (or reached through more
    than one copy of a function) on a branch that does something to gradients or jumps, a counter
    window tested at two offsets, an Accelerate gate. Keeping every condition would multiply the
    states by two per `if` for nothing."""
    tests: dict[tuple, int] = {}
    windows: dict[tuple, set[int]] = {}
    for node, op in enumerate(graph.ops):
        if op == ASSUME and node not in graph.idle:
            fact, _ = graph.args[node]
            tests[fact.key] = tests.get(fact.key, 0) + 1
            if fact.counter is not None:
                windows.setdefault(fact.counter[:2], set()).add(fact.counter[2])
        elif op == EVENT and graph.args[node].gate is not None:
            tests[graph.args[node].gate.key] = 3
    keep = {key for key, count in tests.items() if count >= 2}  # assumed where it matters, twice
    keep |= {key for key in tests if key[0] == "mod" and len(windows[key[1:3]]) > 1}
    keep |= {key for key in tests if key[0] == "first"}
    # a window of one iteration (`k == 1`) beside a window tested on the same `k`, even where the
    # window's test guards nothing (`if should_step:` whose other branch does nothing)
    assumed = {graph.args[n][0].key for n, op in enumerate(graph.ops) if op == ASSUME}
    units = {key[1] for key in assumed if key[0] == "unit"} & {key[2] for key in assumed if key[0] == "mod"}
    keep |= {key for key in assumed if key[0] == "unit" and key[1] in units or key[0] == "mod" and key[2] in units}
    # a last-iteration test (`i + 1 == len(loader)`) and what the loop's normal exit says of it
    lasts = {key for key in assumed if key[0] == "last"}
    keep |= lasts | {("was_last",) + key[1:] for key in lasts}
    return keep


def _cross(tag: Tag | None, loop: int) -> Tag | None:
    return tag._replace(crossed=tag.crossed | {loop}) if tag is not None else None


def observe(graph: Graph, resolved: dict[int, Resolved], attribution: dict[int, frozenset[Key]]) -> Observations:
    """The states along every path, for events resolved and attributed (`--show-loops` asks again
    with some clears left out)."""
    return _Machine(graph, resolved, attribution).run()


def analyse(graph: Graph, resolver: Resolver) -> Analysis:
    resolved = resolve_events(graph, resolver)
    attribution = attribute_backwards(graph, resolved)
    if not any(attribution.values()):  # no backward reaches a step: no set ever holds fresh gradients
        return Analysis(graph, resolved, attribution, Observations())
    observations = _Machine(graph, resolved, attribution).run()
    return Analysis(graph, resolved, attribution, observations)
