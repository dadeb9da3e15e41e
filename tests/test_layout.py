"""The package's shape: imports flow one way (no module imports, at its top, one that imports it
back), every module imports alone in a fresh interpreter, and modules and classes stay small."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "zerograd_lint"
MODULE_LINES = 400
CLASS_LINES = 300


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _top_level_imports(name: str, path: Path) -> set[str]:
    """The package's modules that `name` imports when it is imported: its module-level imports,
    not those inside functions (lazy) nor under `if TYPE_CHECKING:`."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    todo = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.If, ast.Try)):
            todo.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            todo.extend(child for handler in getattr(node, "handlers", []) for child in handler.body)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    # importing `a.b.c` runs the `__init__` of `a` and `a.b` first, unless this module is inside them
    # (then they are being imported already)
    inside = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    for module in list(found):
        parts = module.split(".")
        found.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return {module for module in found if module in MODULES and module != name and module not in inside}


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = {name: _top_level_imports(name, path) for name, path in MODULES.items()}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = path[path.index(name):] + [name]
            pytest.fail("an import loop: " + " -> ".join(cycle))
        if name in done:
            return
        for imported in sorted(graph[name]):
            visit(imported, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


ALONE = [n for n in MODULES if not n.startswith("zerograd_lint.lsp")]
# Imports each module first of all: none of the package's modules loaded before it (the others'
# imports, of LibCST or click, are kept: they cannot hide a loop of ours). One interpreter for all,
# rather than one each (a tenth of a second apiece).
_IMPORT_EACH_ALONE = """
import importlib, json, sys, traceback
failed = {}
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "zerograd_lint" or m.startswith("zerograd_lint.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except BaseException:
        failed[name] = traceback.format_exc()
print(json.dumps(failed))
"""


@pytest.fixture(scope="module")
def import_failures() -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", _IMPORT_EACH_ALONE, *ALONE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", ALONE)
def test_each_module_imports_alone(name: str, import_failures: dict[str, str]) -> None:
    """In a fresh interpreter, first of all: an import loop that the order of imports hid shows."""
    assert name not in import_failures, import_failures.get(name)


def test_modules_and_classes_stay_small() -> None:
    large = []
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        if (lines := len(text.splitlines())) > MODULE_LINES:
            large.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and (lines := node.end_lineno - node.lineno + 1) > CLASS_LINES:
                large.append(f"{name}.{node.name}: {lines} lines")
    assert not large, f"over {MODULE_LINES} lines a module, {CLASS_LINES} a class: {large}"
