"""The rules: codes, names, messages, where findings are reported, and how they are suppressed.

`flow.py` observes; this module judges. A stale step is ZG001, a step whose gradients a clear
threw away is ZG002, and a clear that throws away contributions meant for a later step is
ZG003 when that clear, on another path, meets nothing pending (so it is the loop's regular
clear, not a deliberate discard such as skipping a batch whose gradients are not finite).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # suppression runs on files never parsed: no LibCST for it
    from zerograd_lint.bindings import Key
    from zerograd_lint.flow import Analysis
    from zerograd_lint.graphs.nodes import Graph
    from zerograd_lint.sites import Loop, Site


@dataclass(frozen=True)
class Raw:
    """A finding before suppression: position (1-based line, 0-based column) and what it is about."""

    path: str
    code: str
    line: int
    column: int
    length: int
    message: str
    loop: Loop | None
    related: tuple[tuple[str, Site], ...] = ()  # (role, call)


# ------------------------------------------------------------------------- judging


class Anchor(NamedTuple):
    path: str
    line: int
    column: int
    length: int
    loop: Loop | None

    def raw(self, code: str, message: str, related: tuple[tuple[str, Site], ...] = ()) -> Raw:
        return Raw(self.path, code, self.line, self.column, self.length, message, self.loop, related)


def _anchor(graph: Graph, node: int, crossed: frozenset[int]) -> Anchor:
    """The innermost loop around `node` that the contributions went around, else the innermost
    loop around `node`, else `node` itself."""
    loops = graph.loops_of[node]
    chosen = next((l for l in reversed(loops) if l in crossed), loops[-1] if loops else None)
    if chosen is None:
        site = graph.sites[node]
        return Anchor(site.path, site.line, site.column, len(site.text), None)
    loop = graph.loops[chosen]
    return Anchor(loop.path, loop.line, loop.column, loop.length, loop)


def _call(graph: Graph, node: int, here: str) -> str:
    """`opt.step() (line 14)`, or `(engine.py line 14)` when the call is in another file."""
    site = graph.sites[node]
    where = "" if site.path == here else f"{PurePath(site.path).name} "
    return f"{site.text} ({where}line {site.line})"


def judge(analysis: Analysis) -> list[Raw]:
    """Findings of one graph. Code outside any loop runs once: "once per step" is a property of
    loops, so only findings anchored at a loop (or a per-batch callback) are kept."""
    return [raw for raw in _judge(analysis) if raw.loop is not None]


def _judge(analysis: Analysis) -> list[Raw]:
    graph = analysis.graph
    obs = analysis.observations
    out: list[Raw] = []

    for (step, key), tags in sorted(obs.stale_steps.items()):
        anchors = [_anchor(graph, step, tag.crossed) for tag in tags]
        anchor = max(anchors, key=lambda a: (a.loop is not None and _depth(graph, a.loop), a.line))
        why = _why_stale(analysis, key, anchor)
        related = (("step", graph.sites[step]), ("earlier step", graph.sites[min(tags).node]))
        related += tuple(("clear", graph.sites[c]) for c in analysis.nodes("clear", key))
        message = f"{_call(graph, step, anchor.path)} applies gradients an earlier step already applied: {why}"
        out.append(anchor.raw("ZG001", message, related))

    emptied: set[tuple[int, Key]] = set()
    for (step, key), discards in sorted(obs.empty_steps.items()):
        for discard in sorted(discards):
            emptied.add((discard.clear, key))
            anchor = _anchor(graph, step, discard.crossed)
            here = anchor.path
            related = (("clear", graph.sites[discard.clear]), ("backward", graph.sites[discard.backward]),
                       ("step", graph.sites[step]))
            out.append(anchor.raw("ZG002", (
                f"{_call(graph, discard.clear, here)} clears the gradients of {_call(graph, discard.backward, here)} "
                f"before {_call(graph, step, here)} can apply them: clear before the backward or after the step"
            ), related))

    for (clear, key), tags in sorted(obs.fresh_clears.items()):
        if (clear, key) in emptied or (clear, key) not in obs.plain_clears or graph.args[clear].recovery:
            continue
        tag = min(tags)
        anchor = _anchor(graph, clear, tag.crossed)
        here = anchor.path
        steps = analysis.nodes("step", key)
        target = f" for {_call(graph, steps[0], here)}" if steps else ""
        related = (("clear", graph.sites[clear]), ("backward", graph.sites[tag.node]))
        related += tuple(("step", graph.sites[s]) for s in steps)
        out.append(anchor.raw("ZG003", (
            f"{_call(graph, clear, here)} discards gradients that {_call(graph, tag.node, here)} accumulated{target} "
            "before the step applies them: clear right after the step instead"
        ), related))
    return out


def _depth(graph: Graph, loop: Loop) -> int:
    depth = 0
    while loop.parent is not None:
        depth += 1
        loop = graph.loops[loop.parent]
    return depth


def _why_stale(analysis: Analysis, key: Key, anchor: Anchor) -> str:
    graph = analysis.graph
    loop = anchor.loop
    clears = analysis.nodes("clear", key)
    if not clears:
        return "nothing clears them" + (" in this loop" if loop is not None else "")
    if loop is not None and loop.keyword == "step":
        return "the closure it evaluates calls backward without clearing them first"
    inside = [c for c in clears if loop is not None and loop.id in graph.loops_of[c]]
    if loop is not None and not inside:
        return f"{_call(graph, clears[0], anchor.path)} runs outside this loop"
    return f"{_call(graph, (inside or clears)[0], anchor.path)} does not run on every path between two steps"


# ------------------------------------------------------------------------- suppression

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_ACCUMULATE = re.compile(r"#\s*zerograd:\s*accumulate\b", re.IGNORECASE)
_FILE_NOQA = re.compile(r"#\s*zerograd-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE)
_CODES = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


# What a marker needs to say anything in a file with no finding: a ZG code, or our own name.
_NOQA_ZG = re.compile(r"noqa\s*:[^\n]*zg[0-9]")  # searched in lower case: a literal start is fast
_ZG_CODE = re.compile(rb"zg[0-9]")  # what `_NOQA_ZG` needs, in ASCII-lowered bytes


@dataclass(frozen=True)
class Marker:
    kind: str  # "noqa" | "accumulate" | "file"
    line: int
    column: int  # 0-based
    text: str
    codes: frozenset[str] | None  # None: every code
    own_line: bool


def scan_markers(source: str) -> list[Marker]:
    """Suppression comments, found with `tokenize` so a `#` inside a string never counts."""
    if "noqa" not in source.lower() and "zerograd" not in source.lower():
        return []
    markers: list[Marker] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        line, column = token.start
        text = token.string
        own_line = not token.line[:column].strip()
        if own_line and (match := _FILE_NOQA.match(text)):
            markers.append(Marker("file", line, column, text, _codes(match), True))
            continue
        if match := _ACCUMULATE.search(text):
            markers.append(Marker("accumulate", line, column + match.start(), match.group(0), None, own_line))
        if match := _NOQA.search(text):
            markers.append(Marker("noqa", line, column + match.start(), match.group(0), _codes(match), own_line))
    return markers


def may_concern_us(data: bytes) -> bool:
    """Can a file (its bytes, or its text encoded) hold a marker of ours: `zerograd` or a `noqa`
    and a ZG code, in any case? Lowered as bytes: three times faster than as text, and only
    ASCII letters matter."""
    lowered = data.lower()
    return b"zerograd" in lowered or (b"noqa" in lowered and _ZG_CODE.search(lowered) is not None)


def unused_markers(path: str, source: str) -> list[Raw]:
    """The ZG100s of a file with no finding to suppress, without tokenizing a file whose
    markers cannot concern us (a blanket `# noqa`, another tool's codes)."""
    if not may_concern_us(source.encode("utf-8", "surrogatepass")):
        return []
    lowered = source.lower()
    if "zerograd" not in lowered and not _NOQA_ZG.search(lowered):
        return []
    kept, _ = suppress(path, [], scan_markers(source))
    return kept


def _codes(match: re.Match) -> frozenset[str] | None:
    codes = match.group("codes")
    return frozenset(c.upper() for c in _CODES.findall(codes)) if codes else None


def suppress(path: str, raw: list[Raw], markers: list[Marker]) -> tuple[list[Raw], list[Raw]]:
    """Split findings into (kept, suppressed) and add a ZG100 for each marker that did nothing."""
    used: set[tuple[Marker, str]] = set()
    kept: list[Raw] = []
    suppressed: list[Raw] = []
    for finding in raw:
        marker = suppressor(finding, markers)
        if marker is None:
            kept.append(finding)
        else:
            used.add((marker, finding.code))
            suppressed.append(finding)
    for marker in markers:
        if marker.kind == "accumulate" and not any(m is marker for m, _ in used):
            kept.append(Raw(path, "ZG100", marker.line, marker.column, len(marker.text),
                            f"`{marker.text}` suppresses nothing: no ZG001 is reported for a loop on this line or the next", None))
        elif marker.kind == "noqa" and marker.codes is not None:
            unused = sorted(c for c in marker.codes if c.startswith("ZG") and (marker, c) not in used)
            if unused:
                kept.append(Raw(path, "ZG100", marker.line, marker.column, len(marker.text),
                                f"`{marker.text}` suppresses nothing for {', '.join(unused)} on this line", None))
    files = [m for m in markers if m.kind == "file"]
    if files:
        kept = [f for f in kept if not any(m.codes is None or f.code in m.codes for m in files)]
    return kept, suppressed


def suppressor(finding: Raw, markers: list[Marker]) -> Marker | None:
    """The marker that suppresses the finding, if any (`--show-loops` names it)."""
    for marker in markers:
        if marker.kind == "file" and (marker.codes is None or finding.code in marker.codes):
            return marker
        if marker.kind == "noqa" and marker.line == finding.line and (marker.codes is None or finding.code in marker.codes):
            return marker
        if (
            marker.kind == "accumulate" and finding.code == "ZG001" and finding.loop is not None
            and (marker.line == finding.line or marker.own_line and marker.line == finding.line - 1)
        ):
            return marker
    return None
