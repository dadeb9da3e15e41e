"""The keys of an expression: attributes and elements appended to the key of what they belong to,
names followed through their aliases to the key of what they alias.

`o = self.optimizer` makes `o` the key `("Trainer.self", "optimizer")`; a parameter of a function
inlined at a call is what the caller passed; a name bound to something without a key of its own
(`opt = SGD(...)`) keeps its own key, and its bindings are recorded for what is asked of the key
later (its kind, its links).
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint.bindings.keys import Frame, Key, own_key, self_key
from zerograd_lint.bindings.kinds import PREPARE_METHODS
from zerograd_lint.scopes import ELEMENT, Binding, Path, Scope, dotted_name

_KEY_METHODS = frozenset({"parameters", "named_parameters", "optimizers", "module"})
_MAX_DEPTH = 12


class Aliases:
    """Resolver part: the keys of expressions, memoised by frame and name, and the bindings of each
    key met (`_values`), read by the other parts. A name imported from a project module is
    followed into it (`Names`)."""

    def __init__(self) -> None:
        super().__init__()
        self._values: dict[Key, list[tuple[Binding, Frame]]] = {}
        self._bare: dict[Scope, Frame] = {}
        self._memo: dict[tuple[Frame, str], list[Key]] = {}

    def keys(self, expr: cst.BaseExpression, frame: Frame, depth: int = 0) -> list[Key]:
        if depth > _MAX_DEPTH:
            return []
        if isinstance(expr, cst.Name):
            return self._name_keys(expr.value, frame, depth)
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name):
                origin = self._origin(expr.value.value, frame)
                if (  # `engine.optimizer`: a module's name (`torch.zeros` in torch: its `__init__` has none)
                    origin is not None and origin[1] is None and self._may_bind(origin[0], expr.attr.value)
                    and self.imported(expr.value.value, frame) is not None
                ):
                    return self._name_keys(expr.attr.value, self.frame_for(origin[0].root, frame), depth + 1)
            return [k + (expr.attr.value,) for k in self.keys(expr.value, frame, depth + 1)]
        if isinstance(expr, cst.Subscript):
            index = "[*]"
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
                value = expr.slice[0].slice.value
                if isinstance(value, cst.Integer):
                    index = f"[{value.value}]"
                elif isinstance(value, cst.SimpleString):  # `opts["g"]` and `opts['d']`: two objects
                    index = f"[{value.evaluated_value!r}]"
            return [k + (index,) for k in self.keys(expr.value, frame, depth + 1)]
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            if method in _KEY_METHODS and not expr.args:
                return [k + (f"{method}()",) for k in self.keys(expr.func.value, frame, depth + 1)]
            if method in PREPARE_METHODS and len(expr.args) == 1:
                return self.keys(expr.args[0].value, frame, depth + 1)
        return []

    def frame_for(self, scope: Scope, frame: Frame) -> Frame:
        f: Frame | None = frame
        while f is not None:
            if f.scope is scope:
                return f
            f = f.parent
        return self.bare_frame(scope)

    def bare_frame(self, scope: Scope) -> Frame:
        """The frame of `scope` run by no caller the analysis knows (one per scope: what its names
        resolve to is memoised by frame)."""
        if scope not in self._bare:
            self._bare[scope] = Frame(scope, cls=scope.enclosing_class())
        return self._bare[scope]

    def _name_keys(self, name: str, frame: Frame, depth: int) -> list[Key]:
        if name in frame.locals:
            return frame.locals[name]
        found = frame.scope.lookup(name)
        if found is None:
            origin = self._origin(name, frame)  # a module imported is not parsed for its name
            if origin is not None and origin[1] is not None and self.imported(name, frame) is not None:
                # `from engine import optimizer`
                return self._name_keys(origin[1], self.frame_for(origin[0].root, frame), depth + 1)
            return [(name,)]
        scope, bindings = found
        owner = self.frame_for(scope, frame)
        if name in owner.subst:
            return owner.subst[name]
        if scope.kind == "function" and name == scope.self_name and owner.cls is not None:
            return [self_key(owner.cls)]
        local = own_key(scope, name)
        memo = (owner, name)
        if memo in self._memo:
            return self._memo[memo]
        self._memo[memo] = [local]  # what a name means while its own value is being resolved
        result = self._resolve_bindings(local, bindings, owner, depth)
        self._memo[memo] = result
        return result

    def _resolve_bindings(self, local: Key, bindings: list[Binding], owner: Frame, depth: int) -> list[Key]:
        result: list[Key] = []
        needs_local = False
        for binding in bindings:
            if binding.is_param or binding.value is None:
                needs_local = True
                continue
            aliased = self.value_keys(binding.value, binding.path, owner, depth + 1)
            if aliased and local not in aliased:
                result.extend(k for k in aliased if k not in result)
            else:
                needs_local = True
        if needs_local or not result:
            self._values.setdefault(local, [])
            for binding in bindings:
                entry = (binding, owner)
                if all(b is not binding for b, _ in self._values[local]):
                    self._values[local].append(entry)
            result.append(local)
        return result

    def value_keys(self, value: cst.BaseExpression, path: Path, frame: Frame, depth: int = 0) -> list[Key]:
        """Keys of the part `path` of `value`, when that part is an alias of something with a key."""
        if depth > _MAX_DEPTH:
            return []
        if not path:
            return self.keys(value, frame, depth + 1)
        head, rest = path[0], path[1:]
        if head == ELEMENT:
            if isinstance(value, cst.Call):
                callee = dotted_name(value.func) or ""
                args = [a.value for a in value.args if a.keyword is None]
                if callee == "enumerate" and args and rest[:1] == (1,):
                    return self.value_keys(args[0], (ELEMENT,) + rest[1:], frame, depth + 1)
                if callee == "zip" and rest and isinstance(rest[0], int) and rest[0] < len(args):
                    return self.value_keys(args[rest[0]], (ELEMENT,) + rest[1:], frame, depth + 1)
                if callee.endswith(".values") and not args and isinstance(value.func, cst.Attribute):
                    return [_append_path(k + ("[*]",), rest) for k in self.keys(value.func.value, frame, depth + 1)]
                if callee.endswith(("named_parameters", "named_modules", "items")) and rest[:1] == (1,):
                    base = self.keys(value, frame, depth + 1) or (
                        [k + ("parameters()",) for k in self.keys(value.func.value, frame, depth + 1)]
                        if isinstance(value.func, cst.Attribute) else []
                    )
                    return [k + ("[*]",) for k in base]
            if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
                out: list[Key] = []
                for element in value.elements:
                    for k in self.value_keys(element.value, rest, frame, depth + 1):
                        if k not in out:
                            out.append(k)
                return out
            base = self.keys(value, frame, depth + 1)
            return [_append_path(k + ("[*]",), rest) for k in base]
        assert isinstance(head, int)
        if isinstance(value, (cst.Tuple, cst.List)) and head < len(value.elements):
            return self.value_keys(value.elements[head].value, rest, frame, depth + 1)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in PREPARE_METHODS and head < len(value.args):
                return self.value_keys(value.args[head].value, rest, frame, depth + 1)
        base = self.keys(value, frame, depth + 1)
        return [_append_path(k, path) for k in base]


def _append_path(key: Key, path: Path) -> Key:
    return key + tuple("[*]" if p == ELEMENT else f"[{p}]" for p in path)
