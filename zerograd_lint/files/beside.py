"""The files beside a file checked alone: what its analysis may need of its project.

pre-commit names the changed files, an editor one buffer. A loop in such a file may call a training
step, build an optimizer with a factory or inherit a trainer's loop from a module beside it; a
module beside it may subclass its trainer, run its epoch loop from a loop of its own, or hand its
update function to a framework. The file's findings are those a run over its whole project gives
it. So, for the files named by themselves:

- Their project is found: the nearest folder upward holding `pyproject.toml`, `setup.py`,
  `setup.cfg` or `.git` (without one, the file's folder and the package it is in). Its Python
  files are listed as a run over that folder lists them (`exclude`, `.gitignore`, never a virtual
  environment): their names only.
- The files that use a named file are read, unless it holds no loop and parses (nothing they do
  can give it a finding): those that import it and name one of its definitions (whether a run
  looks at the named file at all depends on them), and, in turn, those that use what can
  complete a loop of it (a definition holding a loop, a nested function, a `training_step` or a
  function that trains by itself, which a caller may hand to Ignite; then their own definitions
  that name one). A user is followed only if a run over the project could choose it: it mentions
  an optimizer, gradients or a backward (a model subclassing `nn.Module` does not), or it is a
  package's `__init__.py`, which passes names on to its own users.
- Then what all of these import, in turn, as far as a run could choose it (`select`), through
  any number of imports: a file that trains by itself, a definition imported (or called as
  `module.name(...)`) that mentions gradients or an optimizer, a base class. A package's
  `__init__.py` that only passes such a name on is read, not followed into all it imports.

Imports are read from the text, generously (nothing is parsed here: `imports.py`), and resolved as
the analysis resolves them in a run over the project (`zerograd_lint.project`), among the files
listed, so that the same files take part. Which of them the analysis then looks at is decided as
in any run: these are only the files it may see. A file is decoded only once its bytes name what
is looked for. Nothing is executed, nothing written.

A file that cannot be read or decoded here is not seen; one that cannot be parsed is refused by
the analysis, whose error for it the run does not report (it was not asked for).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass

from zerograd_lint.files import NOTEBOOK_SUFFIXES, FileSelection, _Walk, read_source
from zerograd_lint.files.completed import parses, reached
from zerograd_lint.files.imports import import_origins, import_words, last_name
from zerograd_lint.findings import SourceError
from zerograd_lint.project import Project
from zerograd_lint.prefilter import base_names, cues, definitions, lines_saying, script
from zerograd_lint.settings import Vocabulary
from zerograd_lint.texts import Source, decode

# What marks the top of a project, as ruff, black and mypy look for it.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root(path: str) -> str | None:
    """The nearest folder above `path` (a file) holding one of `PROJECT_MARKERS`, if any."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in PROJECT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def files_beside(named: Collection[str], sources: Mapping[str, Source], selection: FileSelection = FileSelection(),
                 vocabulary: Vocabulary = Vocabulary(), read: Callable[[str], bytes] = read_source) -> dict[str, bytes]:
    """The files of their projects that the analysis of the `named` files may need, read, by path
    (spelt as the named files are: relative to the current folder, or absolute if one of them is).
    `sources`: every source of the run, by path (the named files among them), each standing for
    the file at its path, which is not read again; `selection`: the excludes a run over a project
    folder applies; `vocabulary`: the project's own words, which make more definitions take part."""
    named = [path for path in named if path in sources and path != "-"]
    if not named:
        return {}
    around = _Around(sources, selection, vocabulary, read, absolute=any(os.path.isabs(path) for path in named))
    for path in named:
        around.list_project_of(path)
    return around.needed(named)


@dataclass(frozen=True)
class _Region:
    folder: str  # absolute
    recursive: bool


def _regions(path: str) -> list[_Region]:
    """Where the files beside `path` are listed: its project, else its folder and its package."""
    root = project_root(path)
    if root is not None:
        return [_Region(root, True)]
    folder = os.path.dirname(os.path.abspath(path))
    regions = [_Region(folder, False)]
    package = _outermost_package(folder)
    if package is not None:  # the outermost package, and what lies beside it
        regions += [_Region(package, True), _Region(os.path.dirname(package), False)]
    return regions


def _outermost_package(folder: str) -> str | None:
    """The outermost package holding `folder` (absolute), if it is one."""
    if not os.path.exists(os.path.join(folder, "__init__.py")):
        return None
    while os.path.dirname(folder) != folder and os.path.exists(os.path.join(os.path.dirname(folder), "__init__.py")):
        folder = os.path.dirname(folder)
    return folder


class _Around:
    """The files listed around the named ones, as a project that resolves imports (its modules'
    texts are not needed for that, and are read only when a file is needed)."""

    def __init__(self, sources: Mapping[str, Source], selection: FileSelection, vocabulary: Vocabulary,
                 read: Callable[[str], bytes], absolute: bool) -> None:
        self.sources = sources
        self.selection = selection
        self.read = read
        self.absolute = absolute
        self.here = os.getcwd()
        self.project = Project()
        self.by_real: dict[str, str] = {}  # real path -> path, for every file listed
        self.listed: set[_Region] = set()
        self.content: dict[str, bytes | None] = {}  # what was read, None if it could not be
        self.texts: dict[str, str | None] = {}
        self.targets: dict[str, set[tuple[str, str | None]]] = {}  # what each file's imports name
        self.blocks: dict[str, dict[str, str]] = {}  # each file's module-level definitions
        self.matters: dict[tuple[str, str], bool] = {}  # (path, definition): it mentions gradients
        self.bases: dict[str, set[str]] = {}  # the base classes each file names
        self.called: dict[str, set[str]] = {}  # the attributes each file calls
        self.importing: dict[tuple[bytes, str], set[str]] = {}  # see `_importing`
        self.words_imported: dict[str, set[bytes]] = {}  # the words of each file's import lines
        self.words: dict[str, tuple[set[str], dict[str, set[str]]]] = {}  # see `_words`
        self.spelt: dict[str, set[bytes]] = {}  # see `_spelt`
        self.trains: dict[str, bool | None] = {}  # a file trains by itself (None: it cannot be read)
        self.cues = cues(vocabulary)
        for path in sources:
            self._add(path, os.path.realpath(path))

    def _add(self, path: str, real: str) -> None:
        if real not in self.by_real:
            self.by_real[real] = path
            self.project.add(path, "", named=False)

    def list_project_of(self, path: str) -> None:
        for region in _regions(path):
            if region in self.listed:
                continue
            self.listed.add(region)
            # walked from the folder spelt as the paths are to be, so that they come out so
            folder = region.folder if self.absolute else os.path.relpath(region.folder, self.here)
            cut = 2 if folder == "." else 0  # the "./" of `./pkg/engine.py`
            for found, real in self._walk(folder, region.recursive):
                if found.endswith(".py"):
                    self._add(found[cut:], real)

    def _walk(self, folder: str, recursive: bool) -> Iterator[tuple[str, str]]:
        if recursive:
            yield from _Walk(folder, self.selection).files()
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            try:
                if entry.name.endswith(".py") and entry.is_file():
                    yield entry.path, os.path.realpath(entry.path)
            except OSError:
                continue

    def needed(self, named: list[str]) -> dict[str, bytes]:
        """The files that use what the named ones hold, in turn, then what all of these import."""
        chosen = set(named)
        wanted: dict[str, set[str]] = {}  # what of each file code elsewhere can complete

        def use(users: dict[str, set[str]], grown: set[str]) -> None:
            for user, names in users.items():
                chosen.add(user)
                if not names <= wanted.setdefault(user, set()):
                    wanted[user] |= names
                    grown.add(user)

        frontier: set[str] = set()
        for path in named:
            if path.endswith(NOTEBOOK_SUFFIXES):  # nothing imports a notebook
                continue
            text = self._text(path) or ""
            wanted[path] = reached(text, self.cues.trains_by_itself)
            if wanted[path] or not parses(text):
                # any use of it decides whether a run looks at it at all: the analysis of its loops,
                # its refusal if it does not parse (a file with no loop that parses holds no finding)
                use(self._users_of(path, set(self._definitions(path)), wanted[path]), frontier)
        while frontier:
            grown: set[str] = set()
            for target in sorted(frontier):
                use(self._users_of(target, wanted[target], wanted[target]), grown)
            frontier = grown
        todo = sorted(chosen)
        followed = set(todo)  # the files whose imports are followed: not a package's `__init__.py`
        while todo:  # only passed through (the name it passes on is followed, not all it imports)
            importer = todo.pop()
            for target, name in sorted(self._resolved(importer), key=str):
                *passages, taken = self._taken(target, name, importer) or [None]
                chosen.update(passages)
                if taken is not None and taken not in followed:
                    chosen.add(taken)
                    followed.add(taken)
                    todo.append(taken)
        return {
            path: content for path in sorted(chosen)
            if path not in self.sources and (content := self.content.get(path)) is not None
        }

    def _users_of(self, target: str, used: set[str], names: set[str]) -> dict[str, set[str]]:
        """The files listed that import `target` and name one of `used` (definitions of it), each
        with what of its own may then reach `names` (its definitions that a caller or a subclass
        can complete): its definitions that name one, and those it imports from `target` (a
        package's `__init__.py` passes them on)."""
        module = last_name(target).encode()  # what an import of it spells, unless a relative one
        in_package = os.path.exists(os.path.join(os.path.dirname(os.path.abspath(target)), "__init__.py"))
        found = {}
        candidates = self._importing(module) | (self._importing(b".", _package_of(target)) if in_package else set())
        spelt = {name.encode() for name in used}
        blocks = self._definitions(target)  # a name it does not define, an `__init__.py` passes on
        steps = {name.encode() for name in used if name not in blocks or self.cues.trains_by_itself(blocks[name])}
        for path in sorted(candidates):
            if path == target or spelt.isdisjoint(words := self._spelt(path)) or target not in self._imports_of(path):
                continue
            calls_a_step = not steps.isdisjoint(words) and script(path, self._text(path) or "")
            if not (self._may_train(path) or _is_init(path) or calls_a_step):
                continue  # a package's `__init__.py` passes what it imports on to its users
            imported, by_definition = self._words(path)
            found[path] = (names & imported) | {
                defined for defined, named in by_definition.items() if not named.isdisjoint(names)
            }
        return found

    def _spelt(self, path: str) -> set[bytes]:
        """The words of a file, from its bytes (most files are never decoded)."""
        if path not in self.spelt:
            self.spelt[path] = set(_WORD.findall(self._bytes(path) or b""))
        return self.spelt[path]

    def _may_train(self, path: str) -> bool:
        """Can a file that uses another be chosen for it, as a run over the project chooses, whatever
        it uses (it mentions an optimizer, gradients or a backward)? A model that subclasses
        `nn.Module` cannot, and is not followed further. A script (`prefilter.script`) that uses a
        definition that runs a backward and steps is chosen too (`_users_of`), as the run chooses
        one calling `agent.learn`."""
        text = self._text(path) or ""
        return "optim" in text or self.cues.matters(text)

    def _words(self, path: str) -> tuple[set[str], dict[str, set[str]]]:
        """The names a file's text spells in its import lines, and in each module-level definition."""
        if path not in self.words:
            text = self._text(path) or ""
            self.words[path] = (
                set(_NAME.findall(lines_saying(text, ("import",)))),
                {defined: set(_NAME.findall(block)) for defined, block in self._definitions(path).items()},
            )
        return self.words[path]

    def _taken(self, target: str, name: str | None, importer: str, passing: frozenset[str] = frozenset()) -> list[str]:
        """The files a run could choose for what `importer` imports of `target` (`name`, or the
        module itself), as `zerograd_lint.prefilter` chooses files, but through any number of
        imports: a file that trains by itself, a definition imported (or called as
        `module.name(...)`) that mentions gradients or an optimizer, a base class of the
        importer's; and for a name a package's `__init__.py` passes on, the file that defines
        it, with the `__init__.py` (the analysis resolves the name through it)."""
        if target not in self.trains:
            text = self._text(target)
            self.trains[target] = None if text is None else self.cues.trains_by_itself(text)
        if self.trains[target] is None:
            return []
        if self.trains[target]:
            return [target]
        found = self._definitions(target)
        bases = self._bases(importer)
        if name is None:
            called = self._attributes_called(importer)
            used = any(defined in called and (defined in bases or self._matters(target, defined)) for defined in found)
            return [target] if used else []
        if name in found:
            return [target] if name in bases or self._matters(target, name) else []
        if target in passing:
            return []
        for origin, passed in sorted(self._resolved(target), key=str):
            if passed == name:
                taken = self._taken(origin, name, importer, passing | {target})
                if taken:
                    return [target, *taken]
        return []

    def _attributes_called(self, path: str) -> set[str]:
        """The names a file calls as attributes (`module.name(...)`)."""
        if path not in self.called:
            self.called[path] = set(_ATTRIBUTE_CALL.findall(self._text(path) or ""))
        return self.called[path]

    def _importing(self, word: bytes, within: str = "") -> set[str]:
        """The files listed (under the folder `within`, if given) that spell `word` in their
        import lines (`.`: that have a relative import): a file that imports a module spells its
        last name there. Looked for in the bytes: most files are never decoded."""
        key = (word, within)
        if key not in self.importing:
            spelt = b"from ." if word == b"." else word
            self.importing[key] = {
                path for path in self.by_real.values()
                if path.startswith(within) and spelt in (self._bytes(path) or b"") and word in self._import_words(path)
            }
        return self.importing[key]

    def _import_words(self, path: str) -> set[bytes]:
        if path not in self.words_imported:
            self.words_imported[path] = import_words(self._bytes(path) or b"")
        return self.words_imported[path]

    def _matters(self, path: str, name: str) -> bool:
        """Does the definition `name` of `path` mention gradients or an optimizer?"""
        if (path, name) not in self.matters:
            self.matters[(path, name)] = self.cues.matters(self._definitions(path)[name])
        return self.matters[(path, name)]

    def _bases(self, path: str) -> set[str]:
        if path not in self.bases:
            self.bases[path] = base_names(self._text(path) or "")
        return self.bases[path]

    def _definitions(self, path: str) -> dict[str, str]:
        if path not in self.blocks:
            self.blocks[path] = definitions(self._text(path) or "")
        return self.blocks[path]

    def _imports_of(self, path: str) -> set[str]:
        """The files listed that the imports of `path` name."""
        return {target for target, _ in self._resolved(path)}

    def _resolved(self, path: str) -> set[tuple[str, str | None]]:
        """What the imports of `path` name: (a file listed, the name imported from it or None)."""
        if path not in self.targets:
            text = self._text(path)
            found = set()
            if text is not None:
                module = self.project.modules[path]
                for origin in import_origins(text):
                    target = self.project.resolve(origin, module)
                    if target is not None:
                        found.add((target[0].path, target[1]))
            self.targets[path] = found
        return self.targets[path]

    def _bytes(self, path: str) -> bytes | None:
        if path in self.sources:
            source = self.sources[path]
            return source.encode("utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
        if path not in self.content:
            try:
                self.content[path] = self.read(path)
            except OSError:
                self.content[path] = None
        return self.content[path]

    def _text(self, path: str) -> str | None:
        if path not in self.texts:
            source = self.sources[path] if path in self.sources else self._bytes(path)
            try:
                self.texts[path] = None if source is None else decode(source, path)
            except SourceError:
                self.texts[path] = None
        return self.texts[path]


def _is_init(path: str) -> bool:
    return os.path.basename(path) == "__init__.py"


def _package_of(path: str) -> str:
    """The folder of the outermost package holding `path`, spelt as `path` is and ending in a
    separator: no relative import reaches from outside it ("" where that cannot be told)."""
    folder = os.path.dirname(path)
    real = os.path.abspath(folder)
    for _ in range(real.count(os.sep) - (_outermost_package(real) or real).count(os.sep)):
        folder = os.path.dirname(folder)
    return os.path.join(folder, "") if folder else ""


_ATTRIBUTE_CALL = re.compile(r"\.(\w+)\s*\(")
_WORD = re.compile(rb"\w+")
_NAME = re.compile(r"\w+")
