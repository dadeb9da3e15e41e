"""What the analysis will look at, decided without LibCST: the first look at every chosen file
(`survey`), the project they form (`project`: module names, imports), and the functions worth
analysing (`connect`). A run whose files hold no such function ends here.
"""

from __future__ import annotations

from dataclasses import dataclass

from zerograd_lint.findings import SourceError
from zerograd_lint.parallel import Later
from zerograd_lint.project import Project
from zerograd_lint.settings import Vocabulary
from zerograd_lint.survey import ModuleSurvey, Survey, Unparsable, connect, survey_all


@dataclass
class Plan:
    texts: dict[str, str]
    surveys: dict[str, ModuleSurvey]
    project: Project
    connected: dict[str, Survey]


def plan(texts: dict[str, str], words: Vocabulary, errors: dict[str, SourceError], exhaustive: bool = False,
         started: Later | None = None) -> Plan | None:
    """The plan for `texts`, or None when no function is worth analysing. Files `ast` cannot read
    go to `errors`. `started`: a first look at some of them already under way (`survey.start`)."""
    surveys = {}
    for path, found in survey_all(texts, words, started).items():
        if isinstance(found, Unparsable):
            errors[path] = SourceError(path, found.reason)
        else:
            surveys[path] = found
    project = Project()
    for path in surveys:
        project.add(path, texts[path])
    connected = connect(surveys, _imports(project, surveys), everything=exhaustive)
    if not any(s.roots for s in connected.values()):
        return None
    return Plan(texts, surveys, project, connected)


def _imports(project: Project, surveys: dict[str, ModuleSurvey]) -> dict[str, set[str]]:
    """The project modules each module imports (by path)."""
    out: dict[str, set[str]] = {}
    for path, found in surveys.items():
        module = project.modules[path]
        targets = (project.resolve(origin, module) for origin in found.imports)
        out[path] = {target[0].path for target in targets if target is not None}
    return out
