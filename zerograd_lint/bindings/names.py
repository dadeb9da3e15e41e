"""What a name stands for in the project: a module it imports, a function or a class it defines.

The project's modules are parsed only when a name leads into them and their text can hold what is
asked (`torch.zeros(...)`, checked in torch itself, does not parse torch's `__init__`); a package's
small `__init__` that re-exports a name is looked through. Here too: which argument a call passes to
each parameter of a function, and what a function returns.
"""

from __future__ import annotations

import re

import libcst as cst

from zerograd_lint import walk
from zerograd_lint.bindings.keys import Frame
from zerograd_lint.project import REEXPORTS_READ, Module
from zerograd_lint.scopes import Scope, dotted_name


class Names:
    """Resolver part: the project modules parsed so far, and the module, function or class a name
    of a scope stands for (memoised by scope and name). A class's name is looked up in the frame
    `Aliases.frame_for` gives."""

    def __init__(self) -> None:
        super().__init__()
        self._scopes: dict[cst.CSTNode, Scope] = {}
        self._classes: dict[str, Scope] = {}  # by qualified name
        self._loaded: set[str] = set()
        self._imports: dict[tuple[Scope, str], tuple[Module, str | None] | None] = {}
        # is an imported module (attribute None) or name of it worth parsing the module for?
        self.wanted = lambda module, name: True

    def load(self, module: Module) -> bool:
        """Parse a project module for the analysis; False if LibCST cannot."""
        if module.path in self.project.broken:
            return False
        if module.path not in self._loaded:
            try:
                module.parse()
            except cst.ParserSyntaxError as exc:  # Python's own parser accepted it in the first look
                module.error = (
                    f"LibCST cannot parse it (Python can): {exc.message.splitlines()[0]} "
                    f"at {exc.raw_line}:{exc.raw_column + 1}"
                )
            except (SyntaxError, RecursionError, MemoryError, ValueError) as exc:
                module.error = f"cannot parse: {type(exc).__name__}: {exc}"
            if module.error:
                self.project.broken.add(module.path)
                return False
            self._loaded.add(module.path)
            self._scopes.update(module.scopes)
            for scope in module.scopes.values():
                if scope.kind == "class":
                    self._classes[scope.qualname] = scope
        return True

    def scope_of(self, node: cst.CSTNode) -> Scope:
        return self._scopes[node]

    def imported(self, name: str, frame: Frame) -> tuple[Module, str | None] | None:
        """The project module (and attribute) an imported name stands for, parsed."""
        found = self._origin(name, frame)
        if found is None or not self.wanted(*found) or not self.load(found[0]):
            return None
        return found

    def _origin(self, name: str, frame: Frame) -> tuple[Module, str | None] | None:
        """The project module (and attribute) an imported name stands for, not parsed yet."""
        memo = (frame.scope, name)
        if memo not in self._imports:
            self._imports[memo] = self._import(name, frame.scope)
        return self._imports[memo]

    def _import(self, name: str, scope: Scope) -> tuple[Module, str | None] | None:
        if scope.lookup(name) is not None:
            return None
        origin = scope.lookup_import(name)
        if origin is None:
            return None
        found = self.project.resolve(origin, scope.module)
        for _ in range(4):  # a package's small `__init__` re-exporting it: `from gans.gan import GAN`
            if found is None:
                return None
            module, name = found
            if (
                name is not None and module.path.endswith("__init__.py") and len(module.text) < REEXPORTS_READ
                and not self.wanted(module, name) and self.load(module)
            ):
                again = module.root.imports.get(name)
                if again is not None and name not in module.root.bindings:
                    found = self.project.resolve(again, module)
                    continue
            return found
        return None

    def function(self, name: str, frame: Frame) -> tuple[Scope, cst.FunctionDef] | None:
        """A function of the project called by name: nested, module-level, or imported."""
        if frame.scope.lookup(name) is None:
            found = frame.scope.lookup_function(name)
            if found is not None:
                return self._scopes[found[1]], found[1]
        origin = self._origin(name, frame)
        if origin is None or origin[1] is None or not self._may_define(origin[0], "def", origin[1]):
            return None
        imported = self.imported(name, frame)
        if imported is not None and imported[1] in imported[0].root.functions:
            func = imported[0].root.functions[imported[1]]
            return self._scopes[func], func
        return None

    def module_function(self, func: cst.Attribute, frame: Frame) -> tuple[Scope, cst.FunctionDef] | None:
        """`engine.train_one_epoch`: a function of a project module imported as a module."""
        if not isinstance(func.value, cst.Name):
            return None
        origin = self._origin(func.value.value, frame)
        if origin is None or origin[1] is not None or not self._may_define(origin[0], "def", func.attr.value):
            return None
        imported = self.imported(func.value.value, frame)
        if imported is None:
            return None
        target = imported[0].root.functions.get(func.attr.value)
        return (self._scopes[target], target) if target is not None else None

    def klass(self, dotted: str, scope: Scope) -> Scope | None:
        """A class of the project named in `scope` (`Trainer`, `trainer.Trainer`)."""
        head, _, rest = dotted.partition(".")
        if not rest:
            found = scope.lookup_class(head)
            if found is not None:
                return found
        frame = self.frame_for(scope, Frame(scope))
        origin = self._origin(head, frame)
        if origin is None:
            return None
        module, attr = origin
        name = attr if not rest else rest if attr is None else None
        if name is None or "." in name:
            return None
        if not self._may_define(module, "class", name) or not self.wanted(module, attr) or not self.load(module):
            return None
        return module.root.classes.get(name)

    def _may_bind(self, module: Module, name: str) -> bool:
        """Can `module` bind `name` (its text holds it; a star import binds nothing here)?"""
        return module.path in self._loaded or name in module.text

    def _may_define(self, module: Module, keyword: str, name: str) -> bool:
        """Can `module` define a function (`keyword` "def") or class ("class") called `name`? Its
        text says so before it is parsed: `torch.zeros(...)`, checked in torch itself, does not
        parse its `__init__` to learn that `zeros` is neither."""
        if module.path in self._loaded:
            return True
        text = module.text
        if name not in text:
            return False
        # the keyword first (a pattern starting with a literal is found fast), then what precedes it
        for found in re.finditer(rf"{keyword}\s+{re.escape(name)}\b", text):
            if found.start() == 0 or not (text[found.start() - 1].isalnum() or text[found.start() - 1] == "_"):
                return True
        return False

    def qualified(self, expr: cst.BaseExpression, frame: Frame) -> str:
        """The dotted callee with imports resolved: `optim.Adam` -> `torch.optim.Adam`."""
        dotted = dotted_name(expr)
        if dotted is None:
            if isinstance(expr, cst.Attribute):
                return "?." + expr.attr.value
            return "?"
        head, _, tail = dotted.partition(".")
        origin = frame.scope.lookup_import(head)
        if origin is not None and frame.scope.lookup(head) is None:
            return f"{origin}.{tail}" if tail else origin
        return dotted

    def is_module(self, expr: cst.BaseExpression, frame: Frame) -> bool:
        """`torch.nn.utils`, `wandb`, `F`: a name imported as a module or function, not an object."""
        dotted = dotted_name(expr)
        if dotted is None:
            return False
        head = dotted.split(".")[0]
        if frame.scope.lookup_import(head) is None or frame.scope.lookup(head) is not None:
            return False
        imported = self.imported(head, frame)  # `from models import disc`: an object made there
        return imported is None or imported[1] is None or imported[1] not in imported[0].root.bindings


# In what `bind_arguments` returns: the call has `*args` or `**kwargs`, so any parameter may be passed.
STARRED = "*"


def bind_arguments(call: cst.Call, func: cst.FunctionDef, skip_first: bool = False) -> dict[str, cst.BaseExpression]:
    """Which argument expression each parameter of `func` receives at `call` (defaults left out)."""
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if skip_first:
        params = params[1:]
    named = set(params) | {p.name.value for p in func.params.kwonly_params}
    bound = dict(zip(params, [a.value for a in call.args if a.keyword is None and not a.star]))
    bound.update({a.keyword.value: a.value for a in call.args if a.keyword is not None and a.keyword.value in named})
    starred = next((a.value for a in call.args if a.star), None)
    if starred is not None:
        bound[STARRED] = starred
    return bound


def returns(func: cst.FunctionDef) -> list[cst.BaseExpression]:
    """The values a function returns (not those of functions nested in it)."""
    return [
        node.value
        for node in walk.nodes(func.body, skip=(cst.Lambda, cst.FunctionDef, cst.ClassDef))
        if isinstance(node, cst.Return) and node.value is not None
    ]
