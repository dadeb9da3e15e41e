"""Source text in, findings out: the pure core. No I/O, no printing, no exiting.

text -> the files that can matter (`select`, from their text; never a stub, whose `...` is not
what its functions do) -> the analysis of those
(`analysis`: a first look with `ast`, CSTs, graphs, states along paths) -> raw findings ->
suppression -> `Finding`s, filed under the file of the loop they are reported at. Results are
cached per run and per chosen set of files.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from zerograd_lint import checked_loops, parallel, rules, select, survey, vocabulary
from zerograd_lint.cache import Cache
from zerograd_lint.cache import key as cache_key
from zerograd_lint.codes import RULES
from zerograd_lint.dispatch import analyse_plan
from zerograd_lint.findings import TOO_DEEP, Finding, Related, SourceError
from zerograd_lint.plan import plan, prepare
from zerograd_lint.settings import Vocabulary
from zerograd_lint.texts import Source, Texts

# Forked helpers share a run (`parallel.Team`) when it has enough of some work to give them: from
# `survey.PARALLEL_FROM` characters of first looks (they look at the files that train by
# themselves while this process chooses the others), and from this much text, which the first
# helper scans a share of, and whose files not chosen the helpers look for markers in. A fork
# costs this process about 4 ms; the scan and the markers of 5 MB of text about 8 ms each.
# Measured on the installed torch package.
APART_FROM = 5_000_000  # characters
# The share of the text the first helper decodes and scans, this process the rest, so that both
# end together: forked here, before anything is decoded, it imports LibCST first (about 0.09 s);
# forked at the start of the run (`team` given: see `zerograd_lint.reading`), it has by the time
# the files are read. Measured on the installed torch package.
HELPER_SCANS = 0.2
EARLY_HELPER_SCANS = 0.5
# The parts the files not chosen are looked for markers in, given out to the helpers once their
# analysis is under way (about 0.075 s in all on torch: a part is a few milliseconds).
MARKER_PARTS = 8
_IMPORTS = re.compile(r"^[ \t]*(?:import|from)[ \t]+(\w+)", re.MULTILINE)


@dataclass
class Result:
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    errors: dict[str, SourceError] = field(default_factory=dict)
    loops: list[checked_loops.CheckedLoop] = field(default_factory=list)  # asked for: the loops checked


def check_source(source: str | bytes, path: str = "<stdin>", vocabulary: Vocabulary = Vocabulary()) -> list[Finding]:
    """Check one module's source; raise `SourceError` when it cannot be checked.

    `vocabulary` adds a project's own names of optimizers and of functions that clear, step or
    run backward (see `zerograd_lint.settings.Vocabulary`)."""
    result = check_project({path: source}, vocabulary)
    if path in result.errors:
        raise result.errors[path]
    return result.findings.get(path, [])


def check_project(
    sources: Mapping[str, Source], vocabulary: Vocabulary = Vocabulary(), cache: Cache | None = None,
    exhaustive: bool = False, team: parallel.Team | None = None, loops: bool = False,
) -> Result:
    """Check modules together: a loop in one file calling a training step in another is followed.
    Files that cannot be checked are in `errors`; the others are still checked. With a `cache`,
    a run whose inputs did not change reuses the last result (see `zerograd_lint.cache`).
    `exhaustive` turns the prefilter off (every file, function and loop analysed): only tests
    and investigations need it; the findings are the same, slower. `team`: helpers forked before
    the sources were read, whose context, the `Texts` of `sources` in every process, is this
    run's (see `zerograd_lint.reading`); closed by the time this returns, as a team made here.
    `loops`: also list the loops checked, with their verdicts (`Result.loops`); the cache is then
    neither read nor written, since it keeps findings only."""
    if loops:
        cache = None
    whole = cache_key("all", sources, vocabulary) if cache is not None else ""
    if cache is not None and (hit := cache.get(whole)) is not None:
        return Result(*hit)
    result = Result()
    texts = team.context if team is not None else Texts(sources)
    scan_share = EARLY_HELPER_SCANS if team is not None else HELPER_SCANS
    total = sum(map(len, sources.values()))
    # no helper is left behind, whatever happens; the cycle collector pauses for the whole run
    with team or parallel.Team(texts) as team, _cycle_collector_paused():
        helping = team if parallel.can_fork() else None  # forked only for work worth it
        apart = helping is not None and not exhaustive and total >= APART_FROM
        if apart:  # the first helper, forked before anything is decoded if not sooner, imports LibCST meanwhile
            team.helper(0)
            team.each(prepare)
        else:  # else each process decodes the share it scans, and this one what it reads later
            result.errors.update(texts.decode_all())
        begun: list[parallel.Job] = []  # first looks given to helpers
        eligible: dict[str, bool] = {}  # by path, each file tested once
        if exhaustive:
            picked = set(texts)
        else:  # the files that train by themselves get their first look while the others are chosen
            scanned = _scan(texts, vocabulary, helping if apart else None, scan_share, result.errors)
            early = {p: texts[p] for p in sorted(scanned.direct) if _eligible(p, texts[p], eligible)}  # they train by themselves
            if helping is not None and sum(map(len, early.values())) >= survey.PARALLEL_FROM:
                # A first helper forked before (see above) imports LibCST while this process
                # chooses the other files, and spawns the second, which inherits it. Forked only
                # now, both look first and import it later, each: on a mid-size tree that ends
                # sooner than importing before looking (accelerate 1.07 s, 1.10 s the other way).
                team.each(prepare)
                team.helper(1)
                begun = survey.share_out(early, vocabulary, team.helpers)
            picked = select.grow(texts, scanned, vocabulary)
        chosen = {p: texts[p] for p in sorted(picked) if _eligible(p, texts[p], eligible)}
        part = cache_key("chosen", chosen, vocabulary) if cache is not None else ""
        hit = cache.get(part) if cache is not None else None
        markers: list[parallel.Job] = []  # the files not chosen can only have markers that suppress nothing

        def look_for_markers(analysing: list[parallel.Job] = ()) -> None:
            """By the helpers, in parts, each given the next whenever it has nothing else to do:
            the one whose share of the analysis (`analysing`) ends first does more of them."""
            if apart and not markers:
                skip = set(chosen) | set(result.errors)
                parts = [(i, MARKER_PARTS, skip) for i in range(MARKER_PARTS)]
                markers.extend(parallel.deal(team.helpers or [team.helper(0)], _unused_markers_of_part, parts, analysing))

        if hit is not None:
            result.findings.update(hit[0])
            result.errors.update(hit[1])
        else:
            found = _check_chosen(chosen, vocabulary, exhaustive, helping, begun, look_for_markers, loops)
            result.findings.update(found.findings)
            result.loops = found.loops
            result.errors.update(found.errors)
            if cache is not None:
                cache.put(part, found.findings, found.errors)
        look_for_markers()  # unless given out already, beside the analysis
        others = [path for path in texts if path not in chosen and path not in result.errors]
        unused = {path: found for job in markers for path, found in job.result().items()} if markers else (
            _unused_markers(texts, others)
        )
        for path in others:
            result.findings[path] = sorted(_finding(path, raw) for raw in unused.get(path, ()))
    if cache is not None:
        cache.put(whole, result.findings, result.errors)
    return result


def _scan(texts: Texts, vocabulary: Vocabulary, team: parallel.Team | None, share: float,
          errors: dict[str, SourceError]) -> select.Scan:
    """`select.scan` of every file, decoded already. With a team, not yet: its first helper
    decodes and scans `share` of the text, once it has imported LibCST, and this process the
    rest; the files that cannot be decoded leave `texts`, for `errors`."""
    if team is None:
        return select.scan(texts, vocabulary, list(texts))
    sizes = {path: texts.size(path) for path in texts}
    mine, *theirs = parallel.shares(sizes, 2, weights=(1 - share, share))
    job = team.helper(0).submit(_scan_share, vocabulary, theirs[0]) if theirs else None
    scanned, failed = _scan_share(texts, vocabulary, mine)
    if job is not None:
        other, also = job.result()
        scanned, failed = scanned.merge(other), {**failed, **also}
    texts.drop(failed)
    errors.update((path, SourceError(path, failed[path])) for path in sizes if path in failed)
    return scanned


def _scan_share(texts: Texts, vocabulary: Vocabulary, paths: list[str]) -> tuple[select.Scan, dict[str, str]]:
    """Decode and scan these files: the scan of those decoded, and why the others could not be."""
    failed = {path: error.reason for path, error in texts.decode(paths).items()}
    return select.scan(texts, vocabulary, [path for path in paths if path not in failed]), failed


def _unused_markers(texts: Texts, paths: list[str]) -> dict[str, list[rules.Raw]]:
    """The ZG100s of the files among `paths` that have some (most have none). A file's bytes tell
    whether it can have any: most are never decoded in a helper."""
    found = {}
    for path in paths:
        data = texts.ascii_bytes(path)
        if (data is None or rules.may_concern_us(data)) and (markers := rules.unused_markers(path, texts[path])):
            found[path] = markers
    return found


def _unused_markers_of_part(texts: Texts, index: int, count: int, skip: set[str]) -> dict[str, list[rules.Raw]]:
    """A helper's job: `_unused_markers` of every `count`-th file from the `index`-th, in path
    order, of those not in `skip` (the chosen files, and those that cannot be decoded)."""
    return _unused_markers(texts, [path for path in sorted(texts) if path not in skip][index::count])


def _check_chosen(texts: dict[str, str], vocabulary: Vocabulary, exhaustive: bool = False,
                  team: parallel.Team | None = None, begun: list[parallel.Job] = (),
                  afterwards: Callable[[list[parallel.Job]], object] | None = None, loops: bool = False) -> Result:
    result = Result()
    if not texts:
        return result
    raws: list[rules.Raw] = []
    shown: list[checked_loops.CheckedLoop] | None = [] if loops else None
    try:
        raws = _raws(texts, vocabulary, result.errors, exhaustive, team, begun, afterwards, shown)
    except RecursionError:  # a pathological module the first look let through
        for path in texts:
            result.errors.setdefault(path, SourceError(path, TOO_DEEP))
    for path, text in texts.items():
        if path in result.errors:
            continue
        mine = [raw for raw in raws if raw.path == path]
        kept = rules.suppress(path, mine, rules.scan_markers(text))[0] if mine else rules.unused_markers(path, text)
        result.findings[path] = sorted(_finding(path, raw) for raw in kept)
    if shown:
        result.loops = checked_loops.settled(shown, {p: t for p, t in texts.items() if p not in result.errors})
    return result


def _raws(texts: dict[str, str], vocabulary: Vocabulary, errors: dict[str, SourceError], exhaustive: bool,
          team: parallel.Team | None, begun: list[parallel.Job],
          afterwards: Callable[[list[parallel.Job]], object] | None,
          loops: list[checked_loops.CheckedLoop] | None = None) -> list[rules.Raw]:
    """The analysis's raw findings. Its plan and CSTs are unreferenced before the cycle collector
    is back: still referenced, they made its next passes walk them again and again as live
    objects (0.2 s on torch); unreferenced, one pass frees what cycles keep."""
    with _cycle_collector_paused():
        planned = plan(texts, vocabulary, errors, exhaustive, begun, team)
        if planned is None:  # nothing worth analysing: LibCST is not even imported
            return []
        raws = analyse_plan(planned, vocabulary, errors, team, afterwards, loops)
        del planned
    return raws


@contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """The analysis allocates millions of objects (ASTs, CSTs, graphs) and frees them by reference
    counting; the cycle collector's passes over them cost a quarter of a large run (torch: 4.1 s
    -> 3.0 s, the same peak memory). Paused while analysing, as it was afterwards, and while
    choosing the files (its passes over the selection's indexes: a twentieth of that)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _eligible(path: str, text: str, known: dict[str, bool]) -> bool:
    """Can the file take part in the analysis at all? Not a stub, nor a file of another framework.
    `known`: the answers so far, by path (a file that trains by itself is asked about twice)."""
    if path not in known:
        known[path] = not path.endswith(".pyi") and not _other_framework(text)
    return known[path]


def _other_framework(text: str) -> bool:
    """The file trains with another framework (and not with torch): it imports one, and not torch.
    Only a line that says `import` or `from` can match (found with `str.find`)."""
    imported = set(_IMPORTS.findall(select.lines_saying(text, ("import", "from"))))
    return "torch" not in imported and not imported.isdisjoint(vocabulary.OTHER_FRAMEWORKS)


def _finding(path: str, raw: rules.Raw) -> Finding:
    rule = RULES[raw.code]
    return Finding(
        path=path,
        line=raw.line,
        column=raw.column + 1,
        code=raw.code,
        message=raw.message,
        name=rule.name,
        end_line=raw.line,
        end_column=raw.column + 1 + raw.length,
        related=tuple(
            Related(role, site.path, site.line, site.column + 1, site.text, site.subject) for role, site in raw.related
        ),
    )
