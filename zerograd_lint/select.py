"""Which files deserve a first look at all, decided from their text alone.

Most files of a large tree cannot take part in a finding, and reading their text is all they
should cost. A file is looked at when

- it can hold a training loop by itself: it mentions a backward and a step (an optimizer's, or a
  hand-written update from `.grad`);
- a chosen file imports from it a definition that mentions a backward, a step, a clear, `.grad`
  or an optimizer (a helper, an optimizer factory), or a class it derives from (a base class whose
  loop calls the subclass's step), unless it is a stub (`.pyi`): a stub's `...` is not what the
  function does, and a call into it is better left unresolved, as a call into compiled code is;
- it mentions an optimizer and imports from a chosen file a definition that runs a backward and
  steps or clears (a `main.py` whose epoch loop calls `train_one_epoch`). Only the imports of
  files that mention one are read (a sixth of torch's files): a script whose loop calls such a
  step and never mentions an optimizer (the step's object builds it) is not looked at.

A definition's text runs from its `def` or `class` line to the next line that starts a new
module-level statement. Modules are matched by the last part of their name: generous, never strict.
Two rounds of imports are followed, enough for a script, its engine and the engine's helpers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import repeat

from zerograd_lint.settings import Vocabulary
from zerograd_lint.vocabulary import OPTIMIZER_CLASSES

_BACKWARD_CALL = re.compile(r"backward\s*\(")
_FACTORY = r"(?:create|build|make|get|init|setup|configure|load)_?optimi[sz]ers?\s*\("
# (a substring every match contains, the pattern, if the substring is not enough). A substring is
# found fast; a pattern of many alternatives is tried at every position of the text.
_STEP_CUES = ((".step", r"\.step\s*\("), ("update_params", None), ("optimizer_step", None))
_TOUCH_CUES = (
    *_STEP_CUES, ("zero_grad", None), (".grad", r"\.grad\b"), ("_foreach_zero_", None),
    # an optimizer built: `optim.AdamW(`, `SGD(`, `build_optimizer(`, or the word `Optimizer`
    ("optim.", r"optim\.\w+\s*\("), ("Optimizer", None), ("Optimiser", None), ("ptimi", _FACTORY),
    (".prepare", r"\.prepare(?:_optimizer)?\s*\("),  # Accelerate gates what it prepares
    *((name, re.escape(name) + r"\s*\(") for name in sorted(OPTIMIZER_CLASSES)),
)
# a hand-written update reading `.grad` on the same line, before it: a step too (see `_updates`)
_UPDATE = re.compile(r"-=|\+=|\.(?:add|sub|addcdiv|addcmul|copy|lerp)_\(")
_GRAD = re.compile(r"\.grad\b")
_FROM = re.compile(r"^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+\(?([^\n#;)]+)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.MULTILINE)
_BASES = re.compile(r"class[ \t]+\w+[ \t]*\(([^)]*)\)")  # at a line's start: see `base_names`
_ROUNDS = 2


def _updates(text: str) -> bool:
    """Does a line update a tensor from a `.grad` it reads (`p -= lr * p.grad`, `p.add_(p.grad)`)?
    Each `.grad` is found fast, then its line is searched before it: a pattern starting with an
    alternative would be tried at every position of the text."""
    for grad in _GRAD.finditer(text):
        if _UPDATE.search(text, text.rfind("\n", 0, grad.start()) + 1, grad.start()):
            return True
    return False


def _stem(path: str) -> str:
    folder, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    return os.path.basename(folder) or stem if stem == "__init__" else stem


def _accumulates(extra: tuple[str, ...]):
    """Does a text call a backward (`loss.backward()`, `backward(t)`, `self.manual_backward(loss)`)?
    The `def backward(ctx, grad)` of an autograd Function does not count. Patterns that start
    with a literal are searched fast; a look-behind would be tried at every position."""
    own = _cues((("update_params", None),), extra)

    def accumulates(text: str) -> bool:
        if own(text):
            return True
        return "backward" in text and any(not text.endswith("def ", 0, m.start()) for m in _BACKWARD_CALL.finditer(text))

    return accumulates


def _cues(cues, extra: tuple[str, ...]):
    """Does a text hold one of the cues, or one of the vocabulary's own words?"""
    compiled = [(sub, re.compile(pattern) if pattern else None) for sub, pattern in cues]
    compiled += [(word, re.compile(r"\b" + re.escape(word) + r"\b")) for word in extra]

    def found(text: str) -> bool:
        return any(sub in text and (pattern is None or pattern.search(text)) for sub, pattern in compiled)

    return found


# the line break before a module-level statement (a literal first: found fast, not tried at
# every position as `^` is)
_TOP = re.compile(r"\n(?=[^\s#)\]}])")
_DEFINITION = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)


class _Index:
    """What one file's text says about its imports and module-level definitions (made on demand,
    from its text read, and decoded, only then)."""

    def __init__(self, texts: Mapping[str, str], path: str, imports: list[tuple[str, str | set[str]]] | None = None) -> None:
        self._texts = texts
        self._path = path
        self._imports = imports
        self._definitions: dict[str, str] | None = None
        self._attributes: dict[str, set[str]] = {}
        self._import_lines: str | None = None

    @property
    def text(self) -> str:
        return self._texts[self._path]

    @property
    def import_lines(self) -> str:
        if self._import_lines is None:
            self._import_lines = lines_saying(self.text, ("import",))
        return self._import_lines

    @property
    def imports(self) -> list[tuple[str, str | set[str]]]:
        """(last part of a module's name, the names used from it, or the local name it is bound to):
        `from a.b import c` gives ("b", {"c"}) and ("c", "c") (`c` may be a module: `c.f(...)`
        uses its `f`); `import a.b as m` gives ("b", "m")."""
        if self._imports is None:
            text = self.import_lines
            found: list[tuple[str, str | set[str]]] = []
            for origin, names in _FROM.findall(text):
                aliases = [words for words in map(str.split, names.split(",")) if words]
                module = origin.strip(".").rsplit(".", 1)[-1]
                if module:
                    found.append((module, {words[0] for words in aliases}))
                found.extend((words[0], words[-1]) for words in aliases)
            for chunk in _IMPORT.findall(text):
                for item in chunk.split(","):
                    words = item.split()
                    if words:
                        local = words[2] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
                        found.append((words[0].rsplit(".", 1)[-1], local))
            self._imports = found
        return self._imports

    def used(self, names: str | set[str]) -> set[str]:
        """The names used from an import: those imported, or those called on its local name
        (`m.f(...)` gives "f"), looked up only for the imports that matter."""
        if not isinstance(names, str):
            return names
        if names not in self._attributes:
            text = self.text
            self._attributes[names] = {  # `m.f(`, not `xm.f(` nor `x.m.f(`
                match.group(1)
                for match in re.finditer(re.escape(names) + r"\.(\w+)\s*\(", text)
                if match.start() == 0 or not (text[match.start() - 1].isalnum() or text[match.start() - 1] in "_.")
            }
        return self._attributes[names]

    @property
    def definitions(self) -> dict[str, str]:
        """The text of each module-level `def` or `class`, by name (the first, if several)."""
        if self._definitions is None:
            self._definitions = definitions(self.text)
        return self._definitions

    def definition(self, name: str) -> str | None:
        """The text of the module-level `def` or `class` called `name`, if the file has one."""
        return self.definitions.get(name)


def definitions(text: str) -> dict[str, str]:
    """The text of each module-level `def` or `class`, by name (the first, if several): from its
    `def` or `class` line to the next line that starts a new module-level statement."""
    found: dict[str, str] = {}
    for match in map(_DEFINITION.match, repeat(text), _line_starts(text, ("def", "class", "async"))):
        if match:
            after = _TOP.search(text, match.end())
            found.setdefault(match.group(1), text[match.start() : after.end() if after else len(text)])
    return found


def lines_saying(text: str, words: tuple[str, ...]) -> str:
    """The lines that hold one of `words`, joined, each once and in order: all that a pattern for
    lines starting with one of them can match, found with `str.find` rather than a pattern tried
    at every line of the file."""
    starts: set[int] = set()
    for word in words:
        at = text.find(word)
        while at != -1:
            starts.add(text.rfind("\n", 0, at) + 1)
            end = text.find("\n", at)
            at = -1 if end == -1 else text.find(word, end)
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append(text[start : len(text) if end == -1 else end])
    return "\n".join(lines)


def _line_starts(text: str, words: tuple[str, ...]) -> list[int]:
    """Where lines that start with one of `words` start, in order."""
    found = [0] if text.startswith(words) else []
    for word in words:
        at = text.find("\n" + word)
        while at != -1:
            found.append(at + 1)
            at = text.find("\n" + word, at + 1)
    return sorted(found)


def _callers(files: dict[str, _Index], importers: dict[str, list[str]], sources: set[str], known: set[str],
             trains, by_stem: dict[str, list[str]], trains_itself=None) -> set[str]:
    """Files that mention an optimizer and import from `sources` a definition that `trains`, also
    through a package `__init__` that re-exports it (chosen with them).
    `importers`: the files that mention an optimizer, by the last part of each module they import."""
    training = {path: {name for name, block in files[path].definitions.items() if trains(block)} for path in sources}
    stems: dict[str, list[str]] = {}
    for path in sorted(sources):
        if training[path]:  # a file none of whose definitions trains has no caller to find
            stems.setdefault(_stem(path), []).append(path)
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
                        reexported.setdefault(_stem(init), []).append((init, names))
                folder = os.path.dirname(folder)
    found = set()
    for path in sorted({p for stem in list(stems) + list(reexported) for p in importers.get(stem, ())}):
        if path in known:
            continue
        file = files[path]
        for module, names in file.imports:
            if module not in stems and module not in reexported:
                continue  # what it uses from there is not looked for (a regex over its text)
            used = file.used(names)
            if any(not training[source].isdisjoint(used) for source in stems.get(module, ())):
                found.add(path)
            for init, exported in reexported.get(module, ()):
                if not exported.isdisjoint(used):
                    found |= {path, init}
    return found


class _Cues:
    """The text tests of a vocabulary."""

    def __init__(self, words: Vocabulary) -> None:
        self.accumulates = _accumulates(words.backwards)
        self.touches = _cues(_TOUCH_CUES, (*words.clears, *words.steps, *words.optimizers))
        self._steps = _cues(_STEP_CUES, (*words.steps, *words.optimizers))

    def steps_in(self, text: str) -> bool:
        return self._steps(text) or (".grad" in text and _updates(text))

    def matters(self, text: str) -> bool:
        return self.accumulates(text) or self.touches(text)

    def trains(self, text: str) -> bool:
        return self.accumulates(text) and (self.steps_in(text) or self.touches(text))

    def trains_by_itself(self, text: str) -> bool:
        """Can the text hold a training loop by itself (the files chosen first)?"""
        return self.accumulates(text) and self.steps_in(text)


def cues(words: Vocabulary) -> _Cues:
    """The text tests of a vocabulary: what a file, or a definition, mentions when it can take part."""
    return _Cues(words)


@dataclass
class Scan:
    """What the text of some files says before any is chosen: those that can hold a training loop
    by themselves (the first ones chosen), and the imports of those that mention an optimizer
    (which `grow` reads to find the callers of a chosen file). Made in shares, then merged."""

    direct: set[str] = field(default_factory=set)
    imports: dict[str, list[tuple[str, str | set[str]]]] = field(default_factory=dict)
    # files that build an optimizer and do half of training: whether they run the backward (else
    # they step); `_halves` looks for the other half in what they import
    halves: dict[str, bool] = field(default_factory=dict)

    def merge(self, other: Scan) -> Scan:
        return Scan(self.direct | other.direct, {**self.imports, **other.imports}, {**self.halves, **other.halves})


def scan(texts: Mapping[str, str], words: Vocabulary, paths: list[str]) -> Scan:
    """The `Scan` of the files `paths`."""
    cues = _Cues(words)
    out = Scan()
    for path in paths:
        text = texts[path]
        accumulates = cues.accumulates(text)
        steps = accumulates and cues.steps_in(text)
        if steps:
            out.direct.add(path)
        if "optim" in text:
            out.imports[path] = _Index(texts, path).imports
            # half of a loop: a backward without a step, or a step without a backward, in a
            # script or small module that builds an optimizer (cheapest test first: a step is
            # looked for at every `.grad`, an optimizer built at every optimizer class's name)
            if not steps and _small(path, text) and (accumulates or cues.steps_in(text)) and _builds_optimizer(text):
                out.halves[path] = accumulates
    return out


def _small(path: str, text: str) -> bool:
    """A script or small module, which may do half of training (a library's large modules and
    stubs do not)."""
    return not path.endswith(".pyi") and len(text) <= _HALF_AT_MOST


def grow(texts: Mapping[str, str], scanned: Scan, words: Vocabulary) -> set[str]:
    """The files `scanned` finds training by themselves, and the files they use or that use them,
    as the module's docstring says."""
    cues = _Cues(words)
    files = {path: _Index(texts, path, scanned.imports.get(path)) for path in texts}
    importers: dict[str, list[str]] = {}
    for path, imports in scanned.imports.items():
        for module in {module for module, _ in imports}:
            importers.setdefault(module, []).append(path)
    by_stem: dict[str, list[str]] = {}
    for path in texts:
        by_stem.setdefault(_stem(path), []).append(path)
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


def _halves(files: dict[str, _Index], scanned: Scan, by_stem: dict[str, list[str]], cues: _Cues) -> set[str]:
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


_OPTIM_CALL = re.compile(r"\boptim\.\w+\s*\(")
_WRAPPING_OPTIMIZER = re.compile(r"^(?![ \t]*class\b).*\b\w*Optimi[sz]er\(", re.MULTILINE)
# A file that does half of training and imports the other half is a script or a small module;
# a larger one is a library's (torch's autograd, its tests), whose halves are not looked for.
_HALF_AT_MOST = 60_000


def _builds_optimizer(text: str) -> bool:
    """`torch.optim.SGD(`, `optim.AdamW(`, `LBFGS(`: substrings first, each found fast."""
    if "optim." in text and _OPTIM_CALL.search(text) is not None:
        return True
    if ("Optimizer(" in text or "Optimiser(" in text) and _WRAPPING_OPTIMIZER.search(text):
        return True  # `PainterOptimizer(cfg, painter)`: a project's own optimizer wrapper
    return any(  # a call of the class, not its definition, nor a longer name's (`SparseAdam(` for `Adam`)
        call in text and definition not in text and pattern.search(text)
        for call, definition, pattern in _OPTIMIZER_CALLS
    )


_OPTIMIZER_CALLS = [
    (f"{name}(", f"class {name}(", re.compile(rf"(?<!\w){name}\(")) for name in sorted(OPTIMIZER_CLASSES)
]


def _defining(files: dict[str, _Index], by_stem: dict[str, list[str]], module: str, name: str) -> list[tuple[str, set[str]]]:
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


def base_names(text: str) -> set[str]:
    """The last part of each base class named in a class statement's header on one line."""
    found = set()
    for match in _BASES.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if not text[line_start : match.start()].strip(" \t"):
            found.update(b.strip().rsplit(".", 1)[-1] for b in match.group(1).split(","))
    return found
