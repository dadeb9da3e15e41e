"""Which files deserve a first look at all, decided from their text alone.

Most files of a large tree cannot take part in a finding, and reading their text is all they
should cost. A file is looked at when

- it can hold a training loop by itself: it mentions a backward and a step (an optimizer's, or a
  hand-written update from `.grad`);
- a chosen file imports from it a definition that mentions a backward, a step, a clear, `.grad`
  or an optimizer (a helper, an optimizer factory), or a class it derives from (a base class whose
  loop calls the subclass's step);
- it mentions an optimizer and imports from a chosen file a definition that runs a backward and
  steps or clears (a `main.py` whose epoch loop calls `train_one_epoch`).

A definition's text runs from its `def` or `class` line to the next line that starts a new
module-level statement. Modules are matched by the last part of their name: generous, never strict.
Two rounds of imports are followed, enough for a script, its engine and the engine's helpers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePath

from zerograd_lint.settings import Vocabulary

_ACCUMULATES = r"backward|update_params"
_TOUCHES = r"\.step\s*\(|zero_grad|\.grad\b|update_params|optimizer_step|_foreach_zero_|optim|Optimizer|LBFGS"
_STEPS = r"\.step\s*\(|update_params|optimizer_step"
# a hand-written update reading `.grad` on the same line: a step too
_UPDATES = re.compile(r"(?:-=|\+=|\.(?:add|sub|addcdiv|addcmul|copy|lerp)_\()[^\n]*\.grad\b")
_FROM = re.compile(r"^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+\(?([^\n#;)]+)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.MULTILINE)
_BASES = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)
_ROUNDS = 2


def _stem(path: str) -> str:
    parts = PurePath(path).with_suffix("").parts
    return parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]


def _word(pattern: str, extra: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join([pattern, *map(re.escape, extra)]))


_TOP = re.compile(r"^(?=[^\s#)\]}])", re.MULTILINE)  # where a module-level statement starts
_DEFINITION = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)
_ATTRIBUTE_CALL = re.compile(r"\b(\w+)\.(\w+)\s*\(")


class _Index:
    """What one file's text says about its imports and module-level definitions (made on demand)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._imports: list[tuple[str, set[str]]] | None = None
        self._definitions: dict[str, str] | None = None

    @property
    def imports(self) -> list[tuple[str, set[str]]]:
        """(last part of a module's name, the names used from it): `from a.b import c` gives
        ("b", {"c"}) and ("c", set()); `import a.b as m` and `m.f(...)` give ("b", {"f"})."""
        if self._imports is None:
            text = self.text
            found: list[tuple[str, set[str]]] = []
            for origin, names in _FROM.findall(text):
                imported = {n.split()[0] for n in names.split(",") if n.split()}
                module = origin.strip(".").rsplit(".", 1)[-1]
                if module:
                    found.append((module, imported))
                found.extend((name, set()) for name in imported)
            plain = _IMPORT.findall(text)
            calls: dict[str, set[str]] = {}
            if plain:
                for owner, attribute in _ATTRIBUTE_CALL.findall(text):
                    calls.setdefault(owner, set()).add(attribute)
            for chunk in plain:
                for item in chunk.split(","):
                    words = item.split()
                    if words:
                        local = words[2] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
                        found.append((words[0].rsplit(".", 1)[-1], calls.get(local, set())))
            self._imports = found
        return self._imports

    def definition(self, name: str) -> str | None:
        """The text of the module-level `def` or `class` called `name`, if the file has one."""
        if self._definitions is None:
            starts = [m.start() for m in _TOP.finditer(self.text)] + [len(self.text)]
            self._definitions = {}
            for match in _DEFINITION.finditer(self.text):
                end = next((s for s in starts if s > match.start()), len(self.text))
                self._definitions.setdefault(match.group(1), self.text[match.start() : end])
        return self._definitions.get(name)


def _callers(files: dict[str, _Index], sources: set[str], known: set[str], trains) -> set[str]:
    """Files that mention an optimizer and import from `sources` a definition that `trains`."""
    stems: dict[str, list[str]] = {}
    for path in sorted(sources):
        stems.setdefault(_stem(path), []).append(path)
    if not stems:
        return set()
    importing = re.compile(r"^[ \t]*(?:from|import)[^\n]*\b(?:" + "|".join(map(re.escape, stems)) + r")\b", re.MULTILINE)
    found = set()
    for path, file in files.items():
        if path in known or "optim" not in file.text or not importing.search(file.text):
            continue
        if any(
            (block := files[source].definition(name)) is not None and trains(block)
            for module, names in file.imports
            for source in stems.get(module, ())
            for name in names
        ):
            found.add(path)
    return found


def select(texts: Mapping[str, str], words: Vocabulary) -> set[str]:
    accumulates = _word(_ACCUMULATES, words.backwards)
    touches = _word(_TOUCHES, (*words.clears, *words.steps, *words.optimizers))
    steps = _word(_STEPS, (*words.steps, *words.optimizers))

    def steps_in(text: str) -> bool:
        return bool(steps.search(text)) or (".grad" in text and bool(_UPDATES.search(text)))

    def matters(text: str) -> bool:
        return bool(accumulates.search(text) or touches.search(text))

    files = {path: _Index(text) for path, text in texts.items()}
    by_stem: dict[str, list[str]] = {}
    for path in texts:
        by_stem.setdefault(_stem(path), []).append(path)
    chosen = {p for p, t in texts.items() if accumulates.search(t) and steps_in(t)}
    frontier = set(chosen)
    for _ in range(_ROUNDS):
        grown: set[str] = set()
        for path in frontier:  # what the newly chosen files use
            text = texts[path]
            bases = {b.strip().rsplit(".", 1)[-1] for found in _BASES.findall(text) for b in found.split(",")}
            for module, names in files[path].imports:
                for candidate in by_stem.get(module, ()):
                    if candidate in chosen or candidate in grown:
                        continue
                    for name in names:
                        block = files[candidate].definition(name)
                        if block is not None and (name in bases or matters(block)):
                            grown.add(candidate)
                            break
        grown |= _callers(files, frontier, chosen | grown, lambda block: bool(accumulates.search(block) and (steps_in(block) or touches.search(block))))
        if not grown:
            break
        chosen |= grown
        frontier = grown
    return chosen
