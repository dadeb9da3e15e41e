"""Check many files: reading, notebooks, per-file errors, selection. No printing, no exiting.

Every source of a run goes to the core in one `check_project` call, so a loop in one file that
calls a training step in another is followed. A file named by itself (pre-commit's changed files,
an editor's buffer) is checked as part of its project: the files beside it that its analysis may
need are read too (`zerograd_lint.files.beside`) and go in with it, and only the files asked for
are reported (their findings, their errors). A notebook goes in as the Python of its code cells
(`zerograd_lint.notebook`) and its findings come back placed in their cells.

`fix_files` then fixes the reported findings where they can be (`zerograd_lint.fix`, which
checks the fixed project again, in one call too); its report holds the findings of the sources
as fixed, and `Report.fixes` the fixed texts. Nothing is written here. A notebook is fixed as its
Python, which then goes back into its cells (`zerograd_lint.notebook.writing`): its fixed text is
the notebook's JSON. One whose fixes cannot all be put back into their cells is not fixed, and
the project is fixed again without it.

A file that cannot be checked is an error of its own; a project that cannot be checked as a
whole (an internal error, out of memory) raises `NotChecked`, and is never checked otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from zerograd_lint import checked_loops
from zerograd_lint.cache import Cache
from zerograd_lint.cache import key as cache_key
from zerograd_lint.files import FileSelection
from zerograd_lint.files.reading import LIMIT, NOTEBOOK_LIMIT, NotRead, check_size, read_source
from zerograd_lint.findings import Finding, SourceError, describe
from zerograd_lint.notebook import Index, NotANotebook, is_notebook, read_notebook
from zerograd_lint.schedule.early import Early, Reader
from zerograd_lint.schedule.endings import HelperDied
from zerograd_lint.settings import Settings, Vocabulary
from zerograd_lint.texts import Source

if TYPE_CHECKING:
    from zerograd_lint.checker import Result
    from zerograd_lint.fix import Declined, Fixes
    from zerograd_lint.schedule.processes import Team

_NO_MEMORY = re.compile(r"failed to map segment|cannot allocate memory", re.IGNORECASE)


class NotChecked(Exception):
    """The project could not be checked as a whole: an internal error, out of memory, a helper that
    died. One line for the run: its files are never checked one by one instead, which would give
    other findings (a file checked alone can get findings its project does not, and lose others).
    A file that cannot be checked is an error of its own (`SourceError`), never this."""


@dataclass(frozen=True)
class Buffer:
    """Text to check as if it were the file at `path`, which is never read: standard input (bytes,
    decoded as a file's would be), or an editor's buffer (text, already decoded)."""

    path: str
    content: str | bytes


@dataclass(frozen=True)
class Fixable:
    """What `--fix` has fixes for among a check's findings, as ruff's hint counts them: the
    findings with a fix it makes; how many more only `--unsafe-fixes` makes; and how many files
    with findings were too large to parse for the count (`HINT_LARGEST`)."""

    fixed: list[Finding] = field(default_factory=list)
    hidden: int = 0
    too_large: int = 0


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    files: int = 0
    fixes: Fixes | None = None  # with `fix`: the fixed texts, the fixed findings, the declined ones and why
    unfixed: list[Finding] = field(default_factory=list)  # with `fix`: the findings before fixing
    loops: list[checked_loops.CheckedLoop] = field(default_factory=list)  # with `Settings.show_loops`
    fixable: Fixable | None = None  # with `hint`: what `--fix` has fixes for

    def undo_fixes(self, path: str) -> None:
        """Report `path` as it was before fixing (its fixed text could not be written)."""
        assert self.fixes is not None
        self.findings = [f for f in self.findings if f.path != path] + [f for f in self.unfixed if f.path == path]
        self.fixes.changed.pop(path, None)
        self.fixes.fixed = [f for f in self.fixes.fixed if f.path != path]


def check_files(files: Iterable[str | Buffer], settings: Settings = Settings(), early: Early | None = None,
                named: Collection[str] = (), selection: FileSelection = FileSelection(), hint: bool = False) -> Report:
    """Check these files (already discovered; a `Buffer` stands for a file whose text is given)
    as one project. Unreadable or unparsable files become errors. `early`: a first helper forked
    before the files were known (see `zerograd_lint.schedule.early`), closed by the time this returns.
    `named`: the paths among `files` named by themselves rather than found in a folder, checked
    as part of their projects, which are listed with `selection`'s excludes (see the module's
    docstring). `hint`: say in `Report.fixable` what `fix_files` has fixes for, when there are
    findings (it parses the files it would edit)."""
    return _run(files, settings, fix=False, early=early, named=named, selection=selection, hint=hint)


def fix_files(files: Iterable[str | Buffer], settings: Settings = Settings(), early: Early | None = None,
              named: Collection[str] = (), selection: FileSelection = FileSelection()) -> Report:
    """`check_files`, then fix what can be fixed: the report holds the findings of the sources as
    fixed, `Report.fixes` the fixed texts and what was declined. Nothing is written."""
    return _run(files, settings, fix=True, early=early, named=named, selection=selection)


def _run(files: Iterable[str | Buffer], settings: Settings, fix: bool, early: Early | None,
         named: Collection[str], selection: FileSelection, hint: bool = False) -> Report:
    report = Report()
    if fix and early is not None:  # fixes are checked again in this process, serially
        early.close()
        early = None
    reader = Reader(None if named else early)  # named files are read as bytes, as the files beside them are
    sources: dict[str, Source] = {}
    notebooks: dict[str, Index] = {}
    notebook_files: dict[str, str | bytes] = {}  # each notebook's JSON, as read
    for item in files:
        report.files += 1
        path = item.path if isinstance(item, Buffer) else item
        try:
            content = item.content if isinstance(item, Buffer) else (
                read_source(path, NOTEBOOK_LIMIT) if is_notebook(path) else reader.read(path)
            )
            if isinstance(item, Buffer):  # held to the limits a file's reading is
                check_size(content, NOTEBOOK_LIMIT if is_notebook(path) else LIMIT)
        except NotRead as exc:
            report.errors.append(SourceError(path, str(exc)))
            continue
        except OSError as exc:
            report.errors.append(SourceError(path, f"cannot read: {exc.strerror or exc}"))
            continue
        if not is_notebook(path):
            sources[path] = content
            continue
        try:
            notebook = read_notebook(content)
            check_size(notebook.source, holder="its code cells hold ")
        except (NotANotebook, NotRead) as exc:
            report.errors.append(SourceError(path, str(exc)))
            continue
        sources[path], notebooks[path], notebook_files[path] = notebook.source, notebook.index, content
    asked = set(sources)
    if named:
        from zerograd_lint.files.beside import files_beside

        sources.update(files_beside(named, sources, selection, settings.vocabulary))
    try:
        team = early.given(sources) if named and early is not None else reader.sources(sources)
        with team or nullcontext():
            cache = Cache(settings.cache) if settings.cache else None
            reported = asked if len(asked) < len(sources) else None
            result = _only(asked, checked(sources, settings.vocabulary, cache, team, settings.show_loops, reported))
            found = _reported(result, notebooks, settings)
            if hint and found:  # in a helper, which has LibCST
                report.fixable = _fixable(sources, result, found, notebooks, settings, asked, team)
    except Exception as exc:  # never checked file by file instead: see NotChecked
        raise _not_checked(exc) from exc
    report.loops = checked_loops.reported(result.loops, asked, settings, notebooks)
    if fix:
        report.unfixed = found
        report.fixes, rewritten = _fix(sources, result, notebooks, notebook_files, settings, asked)
        result = report.fixes.result
        notebooks = {**notebooks, **rewritten}
        found = _reported(result, notebooks, settings)
    for path, error in result.errors.items():
        report.errors.append(notebooks[path].place_error(error) if path in notebooks else error)
    report.findings.extend(found)
    return report


def checked(sources: Mapping[str, Source], vocabulary: Vocabulary = Vocabulary(), cache: Cache | None = None,
            team: Team | None = None, loops: bool = False, reported: Collection[str] | None = None) -> Result:
    """`checker.check_project`, with a cache between its phases: a run whose sources did not
    change reuses the last result, and one whose chosen files did not change (an edit elsewhere)
    reuses their analysis (see `zerograd_lint.cache`). Not with `loops`: the cache keeps
    findings only. `reported`: the only files whose findings are wanted, if not all (the others
    were read beside them): what the result says of the others is not true."""
    from zerograd_lint.checker import Result, check_project
    from zerograd_lint.schedule.run import Run

    if cache is None or loops:
        return check_project(sources, vocabulary, team=team, loops=loops, reported=reported)
    said_of = "" if reported is None else "\0" + "\0".join(sorted(reported))  # the same sources, other files reported
    whole = cache_key("all" + said_of, sources, vocabulary)
    if (hit := cache.get(whole, sources)) is not None:
        return Result(*hit)
    with Run(sources, vocabulary, team=team, reported=reported) as run:
        chosen = run.choose()
        part = cache_key("chosen" + said_of, chosen, vocabulary)
        if (hit := cache.get(part, chosen)) is not None:
            analysed = Result(*hit)
        else:
            analysed = run.analyse()
            cache.put(part, analysed.findings, analysed.errors)
        result = run.finish(analysed)
    cache.put(whole, result.findings, result.errors)
    return result


def _reported(result: Result, notebooks: dict[str, Index], settings: Settings) -> list[Finding]:
    """The findings the settings report, placed in their cells for a notebook."""
    reported = []
    for path, found in result.findings.items():
        placed = [notebooks[path].place(f) for f in found] if path in notebooks else found
        reported.extend(f for f in placed if settings.reports(path, f.code))
    return reported


def _only(asked: set[str], result: Result) -> Result:
    """What a result says of the files asked for, not of those read beside them."""
    if asked.issuperset(result.findings) and asked.issuperset(result.errors):  # nothing was read beside them
        return result
    return replace(result, findings={p: f for p, f in result.findings.items() if p in asked},
                   errors={p: e for p, e in result.errors.items() if p in asked})


# Characters of a file with findings parsed whole for the fix hint, at most: LibCST's tree of one
# takes hundreds of times its size, where the check parses only what its loops need.
HINT_LARGEST = 1_000_000
NOT_ASKED = "was only read beside the files checked: name it (or its folder) for --fix to edit it"


def _fix(sources: dict[str, str | bytes], result: Result, notebooks: dict[str, Index],
         notebook_files: dict[str, str | bytes], settings: Settings, asked: set[str]) -> tuple[Fixes, dict[str, Index]]:
    """The fixes, a notebook's as its new JSON; and where the cells of the notebooks fixed now start."""
    from zerograd_lint.checker import check_project
    from zerograd_lint.fix import fix_project
    from zerograd_lint.notebook.mapping import NotMapped, in_one_cell
    from zerograd_lint.notebook.writing import written_back

    # a file read beside those asked for is never written (a fix in a helper there is declined)
    not_fixed = {path: NOT_ASKED for path in sources if path not in asked}
    reasons: dict[tuple[str, int, int, str], str] = {}  # why a finding was declined before its notebook was
    while True:
        fixes = fix_project(
            sources, result, lambda fixed: _only(asked, check_project(fixed, settings.vocabulary)),
            wanted=lambda finding: settings.reports(finding.path, finding.code),
            vocabulary=settings.vocabulary, not_fixed=not_fixed, unsafe=settings.unsafe_fixes,
        )
        reasons = {_key(d.finding): d.reason for d in fixes.declined if d.fix is None} | reasons
        written: dict[str, tuple[str | bytes, Index]] = {}
        for path in sorted(notebooks.keys() & fixes.changed.keys()):
            try:
                in_one_cell(notebooks[path], (f.fix for f in fixes.fixed if f.path == path and f.fix is not None))
                written[path] = written_back(notebook_files[path], *fixes.changed[path])
            except NotMapped as exc:
                not_fixed[path] = f"the fixed code cannot be put back into the notebook's cells: {exc}"
        if not not_fixed.keys() & fixes.changed.keys():  # all or nothing, per notebook: fixed again without it
            break
    for path, (new, _) in written.items():
        fixes.changed[path] = (notebook_files[path], new)
    fixes.fixed = [notebooks[f.path].place(f) if f.path in notebooks else f for f in fixes.fixed]
    fixes.declined = [_placed(d, notebooks[d.finding.path], reasons if d.finding.path in not_fixed else {})
                      if d.finding.path in notebooks else d for d in fixes.declined]
    return fixes, {path: index for path, (_, index) in written.items()}


def _fixable(sources: Mapping[str, Source], result: Result, found: list[Finding], notebooks: dict[str, Index],
             settings: Settings, asked: set[str], team: Team | None) -> Fixable | None:
    """What `--fix` has fixes for among `found` (the findings of `result` the settings report), as
    ruff's hint counts them (`zerograd_lint.fix.pipeline.planned`), in the files small enough to
    parse whole for it: counted by the run's first helper when there is one (it has imported
    LibCST; this process need not). None when it cannot be counted: a hint is not worth a failed
    check."""
    from zerograd_lint.notebook.mapping import NotMapped, in_one_cell

    not_fixed = {path: NOT_ASKED for path in sources if path not in asked}
    large = {path: "too large" for path in sources if len(sources[path]) > HINT_LARGEST}
    job = (result, settings, {**not_fixed, **large}, set(notebooks))
    try:
        fixed, hidden = team.helper(0).submit(_planned, *job).result() if team else _planned(_Bytes(sources), *job)
    except Exception:  # noqa: BLE001 - an internal error of the fixes, or a helper that died: no hint
        return None
    for path in {f.path for f in fixed} & notebooks.keys():  # all or nothing per notebook, as `_fix`
        try:
            in_one_cell(notebooks[path], (f.fix for f in fixed if f.path == path and f.fix is not None))
        except NotMapped:
            fixed = [f for f in fixed if f.path != path]
    return Fixable(fixed, hidden, len(large.keys() & {f.path for f in found}))


def _planned(texts: Mapping[str, str | bytes], result: Result, settings: Settings, not_fixed: Mapping[str, str],
             notebooks: Collection[str]) -> tuple[list[Finding], int]:
    """A job: the fixes planned for the reported findings of `result`, a notebook's with their edits
    (in a helper, `texts` is its sources, as it decoded them)."""
    from zerograd_lint.fix.pipeline import planned

    return planned(texts, result, lambda finding: settings.reports(finding.path, finding.code), settings.vocabulary,
                   not_fixed, settings.unsafe_fixes, notebooks)


class _Bytes(Mapping[str, "str | bytes"]):
    """Sources as the fixes read them: a helper's reading (a view of the bytes read) as bytes."""

    def __init__(self, sources: Mapping[str, Source]) -> None:
        self._sources = sources

    def __getitem__(self, path: str) -> str | bytes:
        source = self._sources[path]
        return bytes(source) if isinstance(source, memoryview) else source

    def __iter__(self):
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


def _placed(declined: Declined, index: Index, earlier: Mapping[tuple[str, int, int, str], str]) -> Declined:
    """A finding of a notebook declined, placed in its cell, with the lines its reason names; the
    reason `earlier` gives it (from before the notebook was declined whole), if any."""
    reason = earlier.get(_key(declined.finding), declined.reason)
    fix = index.place_fix(declined.fix) if declined.fix is not None else None
    return replace(declined, finding=index.place(declined.finding), reason=index.references(reason), fix=fix)


def _key(finding: Finding) -> tuple[str, int, int, str]:
    return finding.path, finding.line, finding.column, finding.code


def _not_checked(exc: Exception) -> NotChecked:
    if isinstance(exc, MemoryError):
        return NotChecked("the project could not be checked: out of memory")
    if isinstance(exc, (ImportError, OSError)) and _NO_MEMORY.search(describe(exc)):  # a library not loaded
        return NotChecked(f"the project could not be checked: out of memory ({describe(exc)})")
    if isinstance(exc, HelperDied):
        return NotChecked(f"the project could not be checked: {exc}")
    return NotChecked(f"the project could not be checked: internal error: {describe(exc)}")
