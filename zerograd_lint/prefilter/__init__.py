"""Which files deserve a first look at all, decided from their text alone.

Most files of a large tree cannot take part in a finding, and reading their text is all they
should cost. A file is looked at when

- it can hold a training loop by itself: it mentions a backward and a step (an optimizer's, or a
  hand-written update from `.grad`);
- a chosen file imports from it a definition that mentions a backward, a step, a clear, `.grad`
  or an optimizer (a helper, an optimizer factory), or a class it derives from (a base class whose
  loop calls the subclass's step), unless it is a stub (`.pyi`): a stub's `...` is not what the
  function does, and a call into it is better left unresolved, as a call into compiled code is;
- it imports from a chosen file a definition that runs a backward and steps or clears (a
  `main.py` whose epoch loop calls `train_one_epoch`). A script that never mentions an optimizer
  is chosen when what it imports runs a backward and steps (an episode loop calling
  `agent.learn`, the agent building its own optimizer). Only the imports of files that mention
  an optimizer and of scripts (`script`) are read for this: a library's module that never
  mentions one and whose loop calls such a step (`def fit(agent, env)` in `engine.py`) is not
  looked at, which spares reading the imports of most of torch's files.

A definition's text runs from its `def` or `class` line to the next line that starts a new
module-level statement. Modules are matched by the last part of their name: generous, never strict.
Two rounds of imports are followed, enough for a script, its engine and the engine's helpers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from zerograd_lint.prefilter.cues import Cues, builds_optimizer, cues
from zerograd_lint.prefilter.index import Index, base_names, definitions, lines_saying, stem_of
from zerograd_lint.settings import Vocabulary
from zerograd_lint.vocabulary import OTHER_FRAMEWORKS

__all__ = ["Scan", "base_names", "cues", "definitions", "eligible", "grow", "lines_saying", "scan", "script"]

_ROUNDS = 2


def _callers(files: dict[str, Index], importers: dict[str, list[str]], sources: set[str], known: set[str],
             trains, by_stem: dict[str, list[str]], trains_itself) -> set[str]:
    """Files that import from `sources` a definition that `trains`, also through a package
    `__init__` that re-exports it (chosen with them).
    `importers`: the files that mention an optimizer, and the scripts, by the last part of each
    module they import."""
    training = {path: {name for name, block in files[path].definitions.items() if trains(block)} for path in sources}
    stems: dict[str, list[str]] = {}
    for path in sorted(sources):
        if training[path]:  # a file none of whose definitions trains has no caller to find
            stems.setdefault(stem_of(path), []).append(path)
    reexported: dict[str, list[tuple[str, set[str]]]] = {}  # a package's stem: (its __init__, names from a source)
    for stem, paths in stems.items():
        for source in paths:
            folder = os.path.dirname(source)
            for _ in range(3):  # the packages around a source: `pkg/__init__.py` re-exporting `pkg.gan.GAN`
                init = os.path.join(folder, "__init__.py")
                if init in files and init != source and init not in known and "import" in files[init].text:
                    names = {n for module, ns in files[init].imports if module == stem and not isinstance(ns, str) for n in ns}
                    # what trains by itself, only (a GAN whose step runs backward and steps)
                    names = {n for n in names & training[source] if trains_itself(files[source].definition(n) or "")}
                    if names:
                        reexported.setdefault(stem_of(init), []).append((init, names))
                folder = os.path.dirname(folder)
    # what a script that never says `optim` may call: a step that builds its own (`agent.learn`)
    stepping = {
        path: {name for name in names if trains_itself(files[path].definition(name) or "")}
        for path, names in training.items()
    }
    found = set()
    for path in sorted({p for stem in list(stems) + list(reexported) for p in importers.get(stem, ())}):
        if path in known:
            continue
        file = files[path]
        steps = training if "optim" in file.text else stepping  # else a script (`scan`)
        for module, names in file.imports:
            if module not in stems and module not in reexported:
                continue  # what it uses from there is not looked for (a regex over its text)
            used = file.used(names)
            if any(not steps[source].isdisjoint(used) for source in stems.get(module, ())):
                found.add(path)
            for init, exported in reexported.get(module, ()):
                if not exported.isdisjoint(used):
                    found |= {path, init}
    return found


@dataclass
class Scan:
    """What the text of some files says before any is chosen: those that can hold a training loop
    by themselves (the first ones chosen), and the imports of those that may call a chosen file's
    step (which `grow` reads to find them). Made in shares, then merged."""

    direct: set[str] = field(default_factory=set)
    imports: dict[str, list[tuple[str, str | set[str]]]] = field(default_factory=dict)
    # files that build an optimizer and do half of training: whether they run the backward (else
    # they step); `_halves` looks for the other half in what they import
    halves: dict[str, bool] = field(default_factory=dict)

    def merge(self, other: Scan) -> Scan:
        return Scan(self.direct | other.direct, {**self.imports, **other.imports}, {**self.halves, **other.halves})


def scan(texts: Mapping[str, str], vocabulary: Vocabulary, paths: list[str]) -> Scan:
    """The `Scan` of the files `paths`."""
    cues = Cues(vocabulary)
    out = Scan()
    for path in paths:
        text = texts[path]
        accumulates = cues.accumulates(text)
        steps = accumulates and cues.steps_in(text)
        if steps:
            out.direct.add(path)
        names_optimizer = "optim" in text
        if "import" in text and (names_optimizer or script(path, text)):  # see `_callers`
            out.imports[path] = Index(texts, path).imports
        if names_optimizer:
            # half of a loop: a backward without a step, or a step without a backward, in a
            # script or small module that builds an optimizer (cheapest test first: a step is
            # looked for at every `.grad`, an optimizer built at every optimizer class's name)
            if not steps and _small(path, text) and (accumulates or cues.steps_in(text)) and builds_optimizer(text):
                out.halves[path] = accumulates
    return out


def script(path: str, text: str) -> bool:
    """A script or notebook, small, and run as a program: it says `__main__`, or loops at module
    level. A library's modules, which say neither, are not read for what they import unless they
    mention an optimizer."""
    return _small(path, text) and (
        path.endswith(".ipynb") or "__main__" in text or text.startswith(("for ", "while "))
        or "\nfor " in text or "\nwhile " in text
    )


def _small(path: str, text: str) -> bool:
    """A script or small module, which may do half of training, or call a step that builds its
    own optimizer without naming one (a library's large modules and stubs do not)."""
    return not path.endswith(".pyi") and len(text) <= _HALF_AT_MOST


def grow(texts: Mapping[str, str], scanned: Scan, vocabulary: Vocabulary) -> set[str]:
    """The files `scanned` finds training by themselves, and the files they use or that use them,
    as the module's docstring says."""
    cues = Cues(vocabulary)
    files = {path: Index(texts, path, scanned.imports.get(path)) for path in texts}
    importers: dict[str, list[str]] = {}
    for path, imports in scanned.imports.items():
        for module in {module for module, _ in imports}:
            importers.setdefault(module, []).append(path)
    by_stem: dict[str, list[str]] = {}
    for path in texts:
        by_stem.setdefault(stem_of(path), []).append(path)
    chosen = set(scanned.direct) | _halves(files, scanned, by_stem, cues)
    frontier = set(chosen)
    for _ in range(_ROUNDS):
        grown: set[str] = set()
        for path in sorted(frontier):  # what the newly chosen files use
            bases = base_names(texts[path])
            for module, names in files[path].imports:
                for candidate in by_stem.get(module, ()):
                    if candidate in chosen or candidate in grown or candidate.endswith(".pyi"):
                        continue
                    for name in files[path].used(names):
                        block = files[candidate].definition(name)
                        if block is not None and (name in bases or cues.matters(block)):
                            grown.add(candidate)
                            break
        grown |= _callers(files, importers, frontier, chosen | grown, cues.trains, by_stem, cues.trains_by_itself)
        if not grown:
            break
        chosen |= grown
        frontier = grown
    return chosen


def _halves(files: dict[str, Index], scanned: Scan, by_stem: dict[str, list[str]], cues: Cues) -> set[str]:
    """A file that mentions an optimizer and does half of training (it runs a backward, or it
    steps), and the file it imports the other half from: `loss.backward(); state.apply_gradients()`
    with the step in `state.py`, `optimizer.step(make_closure(...))` with the backward in the
    closure's module. A package `__init__` that re-exports the name is looked through once."""
    found: set[str] = set()
    for path, accumulates in sorted(scanned.halves.items()):  # found by `scan`, in its shares
        file = files[path]
        other = cues.steps_in if accumulates else cues.accumulates
        for module, names in file.imports:
            if isinstance(names, str):
                continue  # `import engine`: only what `from engine import step` names is looked for
            for name in names:
                for source, via in _defining(files, by_stem, module, name):
                    if other(files[source].definition(name) or ""):
                        found |= {path, source} | via
    return found


# A file that does half of training and imports the other half is a script or a small module;
# a larger one is a library's (torch's autograd, its tests), whose halves are not looked for.
_HALF_AT_MOST = 60_000


def _defining(files: dict[str, Index], by_stem: dict[str, list[str]], module: str, name: str) -> list[tuple[str, set[str]]]:
    """The files named `module` that define `name`, or that re-export it from one that does: each
    with the re-exporting file it is reached through (whose import the analysis follows too)."""
    out: list[tuple[str, set[str]]] = []
    for candidate in by_stem.get(module, ()):
        if candidate.endswith(".pyi"):
            continue
        if files[candidate].definition(name) is not None:
            out.append((candidate, set()))
            continue
        for again, names in files[candidate].imports if "import" in files[candidate].text else ():
            if not isinstance(names, str) and name in names:
                out.extend(
                    (c, {candidate}) for c in by_stem.get(again, ())
                    if not c.endswith(".pyi") and files[c].definition(name) is not None
                )
    return out


def eligible(path: str, text: str) -> bool:
    """Can the file take part in the analysis at all? Not a stub, nor a file of another framework."""
    return not path.endswith(".pyi") and not _other_framework(text)


_IMPORTS = re.compile(r"^[ \t]*(?:import|from)[ \t]+(\w+)", re.MULTILINE)


def _other_framework(text: str) -> bool:
    """The file trains with another framework (and not with torch): it imports one, and not torch.
    Only a line that says `import` or `from` can match (found with `str.find`)."""
    imported = set(_IMPORTS.findall(lines_saying(text, ("import", "from"))))
    return "torch" not in imported and not imported.isdisjoint(OTHER_FRAMEWORKS)
