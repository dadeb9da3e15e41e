"""The modules checked together, and how an import in one names a definition in another.

A project is the set of files of one run. Each becomes a `Module` with a dotted name derived
the way Python would import it: a file inside packages (folders with `__init__.py`) is named
from its outermost package (`pkg/engine.py` -> `pkg.engine`); any other file by its stem, as a
script's folder is on `sys.path` (`train.py` -> `train`). LibCST parses a module only when the
analysis needs it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # naming modules and resolving imports needs no LibCST: it loads at the first parse
    import libcst as cst

    from zerograd_lint.scopes import Scope


# A package `__init__` larger than this is a library's namespace (torch's), not a few re-exports:
# the plan and the analysis look through smaller ones only.
REEXPORTS_READ = 20_000


class TooDeep(Exception):
    """LibCST recursed too deep over a module `ast` accepted (its positions are computed by
    generating the code back, recursively)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


@dataclass(eq=False)
class Module:
    name: str
    path: str
    text: str
    folder: str  # where a bare `import name` in this module looks first
    lines: list[int] | None = None  # the file's line number of each line of `text`, if they differ
    error: str = ""  # why LibCST could not parse it
    # makes `text` and `lines` what LibCST gets of the file (`Plan.sparse`), at the first parse
    cut: Callable[[], tuple[str, list[int]]] | None = None
    _cst: cst.Module | None = None
    _positions: object = None
    _scopes: dict[cst.CSTNode, Scope] | None = None

    def parse(self) -> None:
        """Parse with LibCST (raises `cst.ParserSyntaxError`)."""
        if self._cst is None:
            import libcst

            from zerograd_lint.scopes import build_scopes

            if self.cut is not None:
                self.text, self.lines = self.cut()
                self.cut = None
            tree = libcst.parse_module(self.text)
            self._scopes = build_scopes(tree, self)
            self._cst = tree

    @property
    def cst(self) -> cst.Module:
        self.parse()
        return self._cst

    def start(self, node: cst.CSTNode, statement: cst.CSTNode | None = None) -> tuple[int, int]:
        """Where `node` starts, (line, column) in the file; `statement`: the one it is part of, if
        it is not one (`positions.Starts`). Computed only for modules whose code ends up in a graph,
        not for those parsed to read an optimizer factory or a base class."""
        if self._positions is None:
            from zerograd_lint.positions import Starts

            try:
                self._positions = Starts(self.cst, self.text, self.lines)
            except RecursionError:
                self._positions = TooDeep(self.path)
        if isinstance(self._positions, TooDeep):
            raise self._positions
        try:
            return self._positions.start(node, statement)
        except RecursionError:
            self._positions = TooDeep(self.path)
            raise self._positions from None

    @property
    def scopes(self) -> dict[cst.CSTNode, Scope]:
        self.parse()
        return self._scopes

    @property
    def root(self) -> Scope:
        return self.scopes[self.cst]

    @property
    def parsed(self) -> bool:
        return self._cst is not None


@functools.lru_cache(maxsize=None)
def _parts(path: str) -> tuple[str, ...]:
    """`pkg/engine.py` -> ("pkg", "engine"); `pkg/__init__.py` -> ("pkg",)."""
    parts = Path(path).with_suffix("").parts
    return parts[:-1] if parts and parts[-1] == "__init__" else parts


_folder = functools.lru_cache(maxsize=None)(os.path.dirname)  # asked for each import of each module


@functools.lru_cache(maxsize=None)
def _folder_parts(path: str) -> tuple[str, ...]:
    return Path(path).parent.parts


def _shared(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    count = 0
    for x, y in zip(a, b):
        if x != y:
            break
        count += 1
    return count


def module_name(path: str) -> tuple[str, str]:
    """(dotted name, folder searched by its bare imports) of a file."""
    path = os.path.abspath(path)
    folder, filename = os.path.split(path)
    stem = os.path.splitext(filename)[0]
    parts = [] if stem == "__init__" else [stem]
    top = folder
    while os.path.exists(os.path.join(top, "__init__.py")):
        parts.insert(0, os.path.basename(top))
        top = os.path.dirname(top)
    return ".".join(parts) or stem, folder


@dataclass
class Project:
    modules: dict[str, Module] = field(default_factory=dict)  # by path
    by_stem: dict[str, list[Module]] = field(default_factory=dict)  # by the last part of the name
    by_file: dict[str, list[Module]] = field(default_factory=dict)  # by normalised path
    broken: set[str] = field(default_factory=set)  # paths LibCST could not parse
    # what `find` found, by (name, importer's folder, how many modules were broken then): an
    # import of several names (`from .utils import a, b, c`) looks for `.utils` once, not three times
    _found: dict[tuple[str, str, int], Module | None] = field(default_factory=dict, repr=False)

    def add(self, path: str, text: str, named: bool = True) -> Module:
        """The module of a file. Not `named`: its dotted name and folder are left empty, for a file
        listed only so that imports can name it (`find` and `resolve` read paths alone)."""
        if not named:
            name, folder = "", ""
        else:
            name, folder = module_name(path) if path != "<stdin>" else ("<stdin>", os.getcwd())
        module = Module(name, path, text, folder)
        self.modules[path] = module
        self._found.clear()  # a module added may be what an import names
        self.by_stem.setdefault(_parts(path)[-1] if _parts(path) else name, []).append(module)
        self.by_file.setdefault(os.path.normpath(path), []).append(module)
        return module

    def find(self, dotted: str, importer: Module) -> Module | None:
        """The module a (possibly relative) import names, if it is part of the project.

        Absolute names are matched against the end of the files' paths, so namespace packages
        (folders without `__init__.py`) and folders put on `sys.path` both work; the match closest
        to the importer wins."""
        memo = (dotted, _folder(importer.path), len(self.broken))  # `broken` only grows
        if memo not in self._found:
            self._found[memo] = self._find(dotted, importer)
        return self._found[memo]

    def _find(self, dotted: str, importer: Module) -> Module | None:
        if dotted.startswith("."):
            level = len(dotted) - len(dotted.lstrip("."))
            base = os.path.dirname(importer.path)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            rest = dotted.lstrip(".")
            target = os.path.join(base, *rest.split(".")) if rest else base
            wanted = [os.path.join(target, "__init__.py")] + ([target + ".py"] if rest else [])
            return next((m for m in self._by_file(wanted)), None)
        tail = tuple(dotted.split("."))
        candidates = [m for m in self._suffixed(tail) if m.path not in self.broken]
        if not candidates:
            return None
        here = _folder_parts(importer.path)
        return max(candidates, key=lambda m: (_shared(_folder_parts(m.path), here), -len(m.path)))

    def _suffixed(self, tail: tuple[str, ...]) -> list[Module]:
        return [m for m in self.by_stem.get(tail[-1], ()) if _parts(m.path)[-len(tail):] == tail]

    def _by_file(self, wanted: list[str]) -> list[Module]:
        found = (m for w in wanted for m in self.by_file.get(os.path.normpath(w), ()))
        return [m for m in found if m.path not in self.broken]

    def resolve(self, origin: str, importer: Module) -> tuple[Module, str | None] | None:
        """`pkg.engine.train` -> (module pkg.engine, "train"); `.engine` -> (module, None)."""
        dots = "." * (len(origin) - len(origin.lstrip(".")))
        parts = [p for p in origin.lstrip(".").split(".") if p]
        for cut in range(len(parts), -1, -1):
            dotted = dots + ".".join(parts[:cut])
            if not dotted:
                break
            module = self.find(dotted, importer)
            if module is not None and module is not importer:
                rest = parts[cut:]
                if len(rest) > 1:
                    return None
                return module, (rest[0] if rest else None)
        return None
