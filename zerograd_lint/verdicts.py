"""The loops of one analysed graph and each gradient set's verdict there, for `--show-loops`
(`zerograd_lint.checked_loops` says what is shown; this module reads `flow.Analysis` and the graph).

A loop is shown when a step or a backward lies directly in it (not only in a loop nested in it), or
a finding is reported at it: a per-batch callback at its `def`, the loop of a callee inlined where
its own findings would be. A `step(closure)`'s re-evaluations are the loop around that call.
Each set stepped directly in the loop, or with a finding there, gets one verdict:

- a finding reported at the loop (settled against the markers later);
- stepped and cleared, when each of its steps in the loop is one call that also clears;
- may be cleared, when without the weak clears (calls the analysis cannot see into, which may
  clear: `flow.Resolved.weak`) the loop would be a ZG001: the assumption decided it;
- cleared, by the clears of the set that run in the loop (for a model whose link to the set is
  unknown but which is the only set, that assumption is said), the `.grad` assignments that
  replace its gradients, the rebinding of a model to a new one;
- no backward reaches its step, when nothing fresh ever reaches the set;
- else its step never meets gradients it applied already (a loop left right after its step).
A loop with a backward and no step of any set says which step its backward feeds, if any.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from zerograd_lint import checked_loops as shown
from zerograd_lint import events as ev
from zerograd_lint import rules
from zerograd_lint.bindings import Key, Resolver, last_name
from zerograd_lint.checked_loops import CheckedLoop, Verdict
from zerograd_lint.flow import Analysis, GaveUp, observe
from zerograd_lint.sites import Site

_STEPS = (ev.STEP, ev.STEP_CLEAR, ev.UPDATE)

Place = tuple[str, int, int]  # a loop's path, line and 0-based column: its copies and its closure loops share it


def checked(analysis: Analysis, raws: list[rules.Raw], resolver: Resolver | None = None) -> list[CheckedLoop]:
    """The loops of the analysis, each with its verdicts. `raws`: its findings, as `rules.judge` gave
    them (anchored at their loops)."""
    return _Loops(analysis, raws, resolver).checked()


class _Loops:
    def __init__(self, analysis: Analysis, raws: list[rules.Raw], resolver: Resolver | None) -> None:
        self.analysis = analysis
        self.graph = graph = analysis.graph
        self.resolved = analysis.resolved
        self.raws = raws
        self.resolver = resolver
        self.places: dict[int, Place] = {loop.id: (loop.path, loop.line, loop.column) for loop in graph.loops}
        self._without_weak: set[tuple[Place, Key]] | None = None

    # ------------------------------------------------------------------ where things are

    def home(self, node: int) -> Place | None:
        """The place of the innermost loop around `node`."""
        loops = self.graph.loops_of[node]
        return self.places[loops[-1]] if loops else None

    def within(self, node: int, place: Place) -> bool:
        return any(self.places[l] == place for l in self.graph.loops_of[node])

    def steps(self, key: Key) -> list[int]:
        return [n for n, r in sorted(self.resolved.items()) if key in r.steps]

    def site(self, node: int) -> Site:
        return self.graph.sites[node].made()

    def name(self, key: Key, place: Place | None = None) -> str:
        """How the code names the set: the subject of its first step (in the loop, if it has one there)."""
        steps = self.steps(key)
        mine = [n for n in steps if place is not None and self.home(n) == place] or steps
        for node in mine:
            subject = self.graph.sites[node].subject
            if subject:
                return subject
        if key and key[0] == ev.PARAMS:
            return f"parameters of {last_name(key[1:])}"
        return last_name(key)

    # ------------------------------------------------------------------ the loops

    def checked(self) -> list[CheckedLoop]:
        sets: dict[Place, list[Key]] = {}
        backwards: dict[Place, list[int]] = {}
        for node, r in sorted(self.resolved.items()):
            place = self.home(node)
            if place is None:
                continue
            if r.op in _STEPS and r.steps:
                known = sets.setdefault(place, [])
                known.extend(k for k in r.steps if k not in known)
            elif r.op == ev.ACC and self.graph.args[node].event.op == ev.ACC:
                backwards.setdefault(place, []).append(node)
        found: dict[Place, list[tuple[Key | None, rules.Raw]]] = {}
        for raw in self.raws:
            if raw.loop is None:
                continue
            place = (raw.loop.path, raw.loop.line, raw.loop.column)
            keys = self.keys_of(raw) or [None]
            found.setdefault(place, []).extend((key, raw) for key in keys)
        out = []
        for place in sorted(set(sets) | set(backwards) | set(found)):
            verdicts: list[Verdict] = []
            keys = list(sets.get(place, []))
            keys += [k for k, _ in found.get(place, []) if k is not None and k not in keys]
            for key in keys:
                mine = [raw for k, raw in found.get(place, []) if k == key]
                verdicts.extend(self.finding(raw, self.name(key, place)) for raw in mine)
                if not mine:
                    verdicts.append(self.quiet(key, place))
            verdicts.extend(self.finding(raw, self.subject_of(raw)) for k, raw in found.get(place, []) if k is None)
            if not verdicts and place in backwards:
                verdicts.append(self.no_step(backwards[place]))
            if verdicts:
                out.append(self.loop(place, verdicts))
        return out

    def loop(self, place: Place, verdicts: list[Verdict]) -> CheckedLoop:
        same = [loop for loop in self.graph.loops if self.places[loop.id] == place]
        loop = next((l for l in same if l.keyword != "step"), same[0])
        function = ""
        if loop.keyword == "def" and loop.node is not None:
            function = loop.node.name.value
        path, line, column = place
        return CheckedLoop(path, line, column + 1, loop.keyword, function, tuple(verdicts))

    # ------------------------------------------------------------------ findings

    def keys_of(self, raw: rules.Raw) -> list[Key]:
        """The sets a finding is about: those observed at the call it names (a step, for ZG003 a clear)."""
        obs = self.analysis.observations
        role, table = {
            "ZG001": ("step", obs.stale_steps), "ZG002": ("step", obs.empty_steps), "ZG003": ("clear", obs.fresh_clears),
        }.get(raw.code, ("", {}))
        site = next((s for r, s in raw.related if r == role), None)
        if site is None:
            return []
        at = (site.path, site.line, site.column)
        sites = self.graph.sites
        return list(dict.fromkeys(
            key for node, key in table if (sites[node].path, sites[node].line, sites[node].column) == at
        ))

    def subject_of(self, raw: rules.Raw) -> str:
        return next((s.subject for r, s in raw.related if s.subject), "")

    def finding(self, raw: rules.Raw, subject: str) -> Verdict:
        calls = tuple((role, site.made()) for role, site in raw.related)
        return Verdict(shown.FINDING, subject, calls, code=raw.code, message=raw.message)

    # ------------------------------------------------------------------ quiet sets

    def quiet(self, key: Key, place: Place) -> Verdict:
        subject = self.name(key, place)
        steps = [n for n in self.steps(key) if self.within(n, place)]
        if steps and all(self.resolved[n].op != ev.STEP for n in steps):
            return Verdict(shown.STEPPED_AND_CLEARED, subject, self.calls(shown.STEP_AND_CLEAR, steps))
        if (place, key) in self.without_weak():
            weak = [n for n, r in sorted(self.resolved.items()) if key in r.weak]
            inside = [n for n in weak if self.within(n, place)] or weak
            return Verdict(shown.MAY_BE_CLEARED, subject, self.calls(shown.MAY_CLEAR, inside))
        calls = tuple(
            (self.role(n, key), self.site(n)) for n, r in sorted(self.resolved.items())
            if key in r.strong and self.within(n, place) and (key not in r.steps or r.op != ev.STEP)
        )
        if calls:
            return Verdict(shown.CLEARED, subject, calls)
        if not any(key in found for found in self.analysis.attribution.values()):
            return Verdict(shown.NO_BACKWARD, subject, self.calls(shown.STEP, steps))
        return Verdict(shown.NEVER_STALE, subject, self.calls(shown.STEP, steps))

    def role(self, node: int, key: Key) -> str:
        r = self.resolved[node]
        if r.op == ev.ACC:
            return shown.REPLACE
        if r.op == ev.REBIND:
            return shown.RENEW
        if r.op in (ev.STEP_CLEAR, ev.UPDATE):
            return shown.STEP_AND_CLEAR
        event = self.graph.args[node].event
        if event.op == ev.CLEAR_MODELS and self.resolver is not None and key[0] != ev.PARAMS:
            if not self.resolver.info(key).links_known:
                return shown.ASSUMED_CLEAR
        return shown.CLEAR

    def calls(self, role: str, nodes: Iterable[int]) -> tuple[tuple[str, Site], ...]:
        return tuple((role, self.site(n)) for n in nodes)

    def without_weak(self) -> set[tuple[Place, Key]]:
        """The (loop, set) pairs that would be a ZG001 if no weak clear cleared: those whose quiet
        an assumption decided. Computed once, and only when some call may clear weakly."""
        if self._without_weak is None:
            self._without_weak = set()
            if any(r.weak for r in self.resolved.values()) and any(self.analysis.attribution.values()):
                resolved = {n: dataclasses.replace(r, weak=()) for n, r in self.resolved.items()}
                try:
                    observations = observe(self.graph, resolved, self.analysis.attribution)
                except GaveUp:  # as many states as ever: then a weak clear in the loop is taken to decide
                    return {(self.home(n), k) for n, r in self.resolved.items() for k in r.weak}
                again = Analysis(self.graph, resolved, self.analysis.attribution, observations)
                for raw in rules.judge(again):
                    if raw.code == "ZG001" and raw.loop is not None:
                        place = (raw.loop.path, raw.loop.line, raw.loop.column)
                        self._without_weak.update((place, key) for key in _Loops(again, [], None).keys_of(raw))
        return self._without_weak

    # ------------------------------------------------------------------ no step

    def no_step(self, backwards: list[int]) -> Verdict:
        fed = {k for n in backwards for k in self.analysis.attribution.get(n, ())}
        feeds = [n for n, r in sorted(self.resolved.items()) if fed & set(r.steps)]
        calls = self.calls(shown.BACKWARD, backwards) + self.calls(shown.FEEDS, feeds)
        return Verdict(shown.NO_STEP, "", calls)
