"""What the analysis will look at, decided without LibCST: the first looks at the chosen files
(`survey`), the project they form (`project`: module names, imports), which functions reach
which (`reach`), and so what LibCST gets of each module (`sparse`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import partial

from zerograd_lint.project import REEXPORTS_READ, Project
from zerograd_lint.reach import Reach, connect
from zerograd_lint.lines import lines_of
from zerograd_lint.settings import Vocabulary
from zerograd_lint.slicing import Block, Words, blocks, words_of
from zerograd_lint.sparse import at_sign, sparse_text
from zerograd_lint.survey import MODULE, ModuleSurvey

Roots = tuple[str, tuple[int, ...]]  # a module's path, and the `def` lines of roots analysed there


@dataclass
class Plan:
    texts: Mapping[str, str]
    surveys: dict[str, ModuleSurvey]
    project: Project
    reach: dict[str, Reach]
    exhaustive: bool = False  # nothing is left out: no function emptied, no statement sliced away
    kept_methods: dict[str, frozenset[int]] = field(default_factory=dict)  # see `methods_kept`
    vocabulary: Vocabulary = field(default_factory=Vocabulary)
    _sparse: dict[str, tuple[str, list[int]]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, texts: Mapping[str, str], surveys: dict[str, ModuleSurvey], reach: dict[str, Reach],
           exhaustive: bool = False, project: Project | None = None,
           cut: dict[str, tuple[str, list[int]]] | None = None,
           kept_methods: dict[str, frozenset[int]] | None = None, vocabulary: Vocabulary = Vocabulary()) -> Plan:
        """The plan made of its parts (in a helper too), its modules to be cut for LibCST when
        first parsed; `cut`: the sparse texts made already; `kept_methods`: `methods_kept`, made
        already (a helper's surveys no longer say what each function calls)."""
        project = project or project_of(texts, surveys)
        kept = methods_kept(surveys, reach) if kept_methods is None else kept_methods
        made = cls(texts, surveys, project, reach, exhaustive, kept, vocabulary, dict(cut or {}))
        for path, module in project.modules.items():
            module.cut = partial(made.sparse, path)
        return made

    @functools.cached_property
    def words(self) -> Words:
        """What the slice knows by name (`slicing.Words`), the functions and classes LibCST gets
        the bodies of among them: a call of one is followed."""
        followed: set[str] = set()
        for path, survey in self.surveys.items():
            if path not in self.reach:
                continue
            keep = _functions_kept(survey, self.reach[path]) | self.kept_methods.get(path, frozenset())
            for named in (survey.functions_named, survey.methods_named):
                followed |= {name for name, lines in named.items() if not keep.isdisjoint(lines)}
            followed |= {klass.name for klass in survey.outline.classes if klass.kept}
        return words_of(self.vocabulary, frozenset(followed))

    @property
    def cut_already(self) -> dict[str, tuple[str, list[int]]]:
        """The sparse texts made so far."""
        return self._sparse

    def sparse(self, path: str) -> tuple[str, list[int]]:
        """What LibCST gets of a module: only what can matter (`sparse.sparse_text`), its functions
        that cannot matter emptied, and the statements of the others that cannot sliced away
        (`_sliced`). Made once, where the module is parsed: the slicing is a share of the analysis."""
        if path not in self._sparse:
            text, survey, keep, analysed = self._cut(path)
            sliced = () if self.exhaustive else _sliced(text, survey, keep, self.words)
            self._sparse[path] = sparse_text(text, survey.outline, keep, analysed, sliced)
        return self._sparse[path]

    def size(self, path: str) -> int:
        """How much LibCST text a module holding roots makes, about: the measure of its work the
        shares are sized by, before anything is sliced."""
        if path in self._sparse:
            return len(self._sparse[path][0])
        text, survey, keep, analysed = self._cut(path)
        return len(sparse_text(text, survey.outline, keep, analysed)[0])

    def _cut(self, path: str) -> tuple[str, ModuleSurvey, frozenset[int], bool]:
        found, survey = self.reach[path], self.surveys[path]
        keep = _functions_kept(survey, found) | self.kept_methods.get(path, frozenset())
        return self.texts[path], survey, keep, self.exhaustive or MODULE in found.roots


# A function body of fewer lines is given to LibCST whole, and so is a module whose long functions
# kept are less than a share of its lines: there, what slicing leaves out is little of what LibCST
# parses (a training script's `main()` is most of it; torch's `distributed_test.py` keeps 1,181
# lines of such functions among 11,007, and slicing them takes 2,160 LibCST lines to 2,099).
SLICED_FROM = 25  # lines
SLICED_SHARE = 0.3


def _sliced(text: str, survey: ModuleSurvey, keep: frozenset[int], words: Words) -> list[Block]:
    """The blocks of statements the slice leaves out (`slicing.blocks`) in the long functions kept,
    each parsed with `ast` again, alone (a tenth of what LibCST costs)."""
    long = [b for b in survey.outline.bodies if b.header in keep and b.last - b.first >= SLICED_FROM]
    if sum(b.last - b.first for b in long) < SLICED_SHARE * text.count("\n"):
        return []
    lines = lines_of(text)
    found: list[Block] = []
    imported = frozenset(survey.imported)
    for body in long:
        first = at_sign(lines, body.decorated) if body.decorated < body.header else body.header
        header = lines[body.header - 1]
        indented = header[: len(header) - len(header.lstrip())] != ""
        code = ("if 1:\n" if indented else "") + "".join(lines[first - 1 : body.last])
        try:  # an indented one (a method) as the body of an `if`
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        function = tree.body[0].body[0] if indented else tree.body[0]
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += blocks(function, words, keep, imported, first - 1 - indented)
    return found


def _functions_kept(survey: ModuleSurvey, found: Reach) -> frozenset[int]:
    """The `def` lines of a module's functions whose bodies LibCST gets: those the analysis can
    reach, and those kept for what they do themselves (`kept_for_themselves`)."""
    return found.needed | kept_for_themselves(survey, found)


def kept_for_themselves(survey: ModuleSurvey, found: Reach) -> frozenset[int]:
    """The `def` lines of the functions whose bodies LibCST gets though the analysis does not reach
    them: those that prepare (what they return is known to be Accelerate's), and those that call
    a root by name (what they pass it may say what its parameters are: `do_train(cfg, model)`)."""
    roots = {name for name, lines in survey.functions_named.items() if not found.roots.isdisjoint(lines)}
    return frozenset(
        line for line, function in survey.functions.items()
        if function.prepares or (line != MODULE and not function.names.isdisjoint(roots))
    )


def methods_kept(surveys: Mapping[str, ModuleSurvey], reach: Mapping[str, Reach]) -> dict[str, frozenset[int]]:
    """The `def` lines, by module, of the `__init__`, `configure_optimizers` and `__call__` whose
    bodies the analysis may read: those of the classes it may meet, named by the last part of
    their name wherever they are (generous, never strict). It meets

    - the class of each function it analyses or keeps (its `self`), and the subclasses of that
      class (a base class's loop runs with `self` an object of each subclass that inherits it);
    - the classes called (objects made) or renamed on import in a function it analyses or keeps,
      or in the body of any module (`scaler = NativeScaler()` at the top of a script);
    - the bases of each class it meets; and the classes called in the methods it keeps of those.

    The others are emptied like any function that cannot matter: in a large test module, the
    `__init__` of a hundred model classes no training loop makes were a third of what LibCST parsed."""
    keep = {path: _functions_kept(found, reach[path]) for path, found in surveys.items() if path in reach}
    classes = [(path, klass) for path in keep for klass in surveys[path].outline.classes]
    called: set[str] = set()
    for path, lines in keep.items():
        found = surveys[path]
        called |= found.renamed
        for line in lines | {MODULE}:
            function = found.functions.get(line)
            if function is not None:
                called |= function.names | function.attributes
    selves = {klass.name for path, klass in classes if not klass.methods.isdisjoint(keep[path])}
    grown = True
    while grown:  # the subclasses of each
        grown = False
        for _, klass in classes:
            if klass.name not in selves and not klass.bases.isdisjoint(selves):
                selves.add(klass.name)
                grown = True
    met, kept, grown = set(selves), {}, True
    done: set[int] = set()  # the classes met, by their place in `classes`
    while grown:
        grown = False
        for index, (path, klass) in enumerate(classes):
            if index not in done and (klass.name in met or klass.name in called):
                done.add(index)
                kept[path] = kept.get(path, frozenset()) | klass.kept
                met |= klass.bases | {klass.name}
                for line in klass.kept:
                    function = surveys[path].functions.get(line)
                    if function is not None:
                        called |= function.names | function.attributes
                grown = True
    return kept


def planned(texts: Mapping[str, str], surveys: dict[str, ModuleSurvey], exhaustive: bool = False,
            reported: Collection[str] | None = None, vocabulary: Vocabulary = Vocabulary()) -> Plan | None:
    """The plan of the modules `texts` given their first looks, or None when no function is worth
    analysing (LibCST is then not even imported). `reported`: the only files whose findings are
    wanted, if not all (`reach.connect`)."""
    project = project_of(texts, surveys)
    reach = connect(surveys, imports_of(project, surveys), everything=exhaustive, reported=reported)
    if not any(found.roots for found in reach.values()):
        return None
    return Plan.of(texts, surveys, reach, exhaustive, project, vocabulary=vocabulary)


def project_of(texts: Mapping[str, str], surveys: dict[str, ModuleSurvey]) -> Project:
    project = Project()
    for path in surveys:
        project.add(path, texts[path])
    return project


def imports_of(project: Project, surveys: dict[str, ModuleSurvey]) -> dict[str, set[str]]:
    """The project modules each module imports (by path)."""
    out: dict[str, set[str]] = {}
    for path, found in surveys.items():
        module = project.modules[path]
        targets = (project.resolve(origin, module) for origin in found.imports)
        out[path] = {target[0].path for target in targets if target is not None}
    # through a small package `__init__`, what it re-exports (a large one is a library's namespace,
    # torch's: what it imports does not make every module importing it near them all)
    for path, targets in out.items():
        for target in list(targets):
            if target.endswith("__init__.py") and target != path and len(project.modules[target].text) < REEXPORTS_READ:
                targets |= out.get(target, set())
    return out
