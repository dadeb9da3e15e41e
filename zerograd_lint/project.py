"""The modules checked together, and how an import in one names a definition in another.

A project is the set of files of one run. Each becomes a `Module` with a dotted name derived
the way Python would import it: a file inside packages (folders with `__init__.py`) is named
from its outermost package (`pkg/engine.py` -> `pkg.engine`); any other file by its stem, as a
script's folder is on `sys.path` (`train.py` -> `train`). LibCST parses a module only when the
analysis needs it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from zerograd_lint.scopes import Scope, build_scopes


@dataclass(eq=False)
class Module:
    name: str
    path: str
    text: str
    folder: str  # where a bare `import name` in this module looks first
    error: str = ""  # why LibCST could not parse it
    _cst: cst.Module | None = None
    _positions: object = None
    _scopes: dict[cst.CSTNode, Scope] | None = None

    def parse(self) -> None:
        """Parse with LibCST (raises `cst.ParserSyntaxError`)."""
        if self._cst is None:
            tree = cst.parse_module(self.text)
            self._scopes = build_scopes(tree, self)
            self._cst = tree

    @property
    def cst(self) -> cst.Module:
        self.parse()
        return self._cst

    @property
    def positions(self):
        """Positions cost as much as the parse itself: computed only for modules whose code ends
        up in a graph, not for those parsed to read an optimizer factory or a base class."""
        if self._positions is None:
            self._positions = MetadataWrapper(self.cst, unsafe_skip_copy=True).resolve(PositionProvider)
        return self._positions

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
    by_name: dict[str, list[Module]] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)  # paths LibCST could not parse

    def add(self, path: str, text: str) -> Module:
        name, folder = module_name(path) if path != "<stdin>" else ("<stdin>", os.getcwd())
        module = Module(name, path, text, folder)
        self.modules[path] = module
        self.by_name.setdefault(name, []).append(module)
        return module

    def find(self, dotted: str, importer: Module) -> Module | None:
        """The module a (possibly relative) import names, if it is part of the project."""
        if dotted.startswith("."):
            level = len(dotted) - len(dotted.lstrip("."))
            base = importer.name.split(".")
            if os.path.basename(importer.path) != "__init__.py":
                base = base[:-1]
            base = base[: len(base) - (level - 1)] if level > 1 else base
            rest = dotted.lstrip(".")
            dotted = ".".join(base + ([rest] if rest else []))
        candidates = [m for m in self.by_name.get(dotted, ()) if m.path not in self.broken]
        if not candidates:
            return None
        near = [m for m in candidates if m.folder == importer.folder or m.name.count(".")]
        return (near or candidates)[0]

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
