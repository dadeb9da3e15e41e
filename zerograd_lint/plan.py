"""What the analysis will look at, decided without LibCST: the first look at every chosen file
(`survey`), the project they form (`project`: module names, imports), and the functions worth
analysing (`connect`). A run whose files hold no such function ends here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from zerograd_lint.findings import SourceError
from zerograd_lint.parallel import Job, Team
from zerograd_lint.project import Project
from zerograd_lint.settings import Vocabulary
from zerograd_lint.sparse import sparse_text
from zerograd_lint.survey import (
    MODULE,
    ModuleSurvey,
    Survey,
    Unparsable,
    connect,
    survey_all,
)


@dataclass
class Plan:
    texts: Mapping[str, str]
    surveys: dict[str, ModuleSurvey]
    project: Project
    connected: dict[str, Survey]
    exhaustive: bool = False
    _sparse: dict[str, tuple[str, list[int]]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, texts: Mapping[str, str], surveys: dict[str, ModuleSurvey], connected: dict[str, Survey],
           exhaustive: bool = False, project: Project | None = None,
           cut: dict[str, tuple[str, list[int]]] | None = None) -> Plan:
        """The plan made of its parts (in a helper too), its modules to be cut for LibCST when
        first parsed; `cut`: the sparse texts made already."""
        project = project or _project(texts, surveys)
        made = cls(texts, surveys, project, connected, exhaustive, dict(cut or {}))
        for path, module in project.modules.items():
            module.cut = partial(made.sparse, path)
        return made

    @property
    def cut_already(self) -> dict[str, tuple[str, list[int]]]:
        """The sparse texts made so far (those of the modules holding roots, to size the shares)."""
        return self._sparse

    def sparse(self, path: str) -> tuple[str, list[int]]:
        """What LibCST gets of a module: only what can matter (`sparse.sparse_text`). Made once:
        the shares are sized by it before the module is parsed."""
        if path not in self._sparse:
            found, survey = self.connected[path], self.surveys[path]
            preparing = {line for line, function in survey.functions.items() if function.prepares}
            analysed = self.exhaustive or MODULE in found.roots
            self._sparse[path] = sparse_text(self.texts[path], survey.outline, found.needed | preparing, analysed)
        return self._sparse[path]


def plan(texts: Mapping[str, str], words: Vocabulary, errors: dict[str, SourceError], exhaustive: bool = False,
         begun: list[Job] = (), team: Team | None = None, meanwhile: Callable[[], object] | None = None) -> Plan | None:
    """The plan for `texts`, or None when no function is worth analysing. Files `ast` cannot read
    go to `errors`. `begun`: see `survey.survey_all`. A `team`'s helpers look at some of the files,
    then `prepare` for the analysis (and do what `meanwhile` gives them) while this process
    connects."""
    surveys = {}
    helpers = (lambda: team.helpers or [team.helper(0)]) if team is not None else None
    looked_at = survey_all(texts, words, begun, helpers)
    if team is not None:
        team.each(prepare)
    if meanwhile is not None:
        meanwhile()
    for path, found in looked_at.items():
        if isinstance(found, Unparsable):
            errors[path] = SourceError(path, found.reason)
        else:
            surveys[path] = found
    project = _project(texts, surveys)
    connected = connect(surveys, _imports(project, surveys), everything=exhaustive)
    if not any(s.roots for s in connected.values()):
        return None
    return Plan.of(texts, surveys, connected, exhaustive, project)


def _project(texts: Mapping[str, str], surveys: dict[str, ModuleSurvey]) -> Project:
    project = Project()
    for path in surveys:
        project.add(path, texts[path])
    return project


def _imports(project: Project, surveys: dict[str, ModuleSurvey]) -> dict[str, set[str]]:
    """The project modules each module imports (by path)."""
    out: dict[str, set[str]] = {}
    for path, found in surveys.items():
        module = project.modules[path]
        targets = (project.resolve(origin, module) for origin in found.imports)
        out[path] = {target[0].path for target in targets if target is not None}
    return out


def prepare(_texts: object) -> None:
    """A helper's job while this process plans: import LibCST and the analysis."""
    import zerograd_lint.analysis  # noqa: F401
