"""Which event a call or a statement is: `Classifier` looks at one call (`classify_call`) or one
assignment (`classify_assign`, `classify_augassign`), with the names resolved by
`bindings.Resolver`, and says what it does to gradients (`events.py`), or which project function
runs there. It never looks at control flow: the graph builder does. A call whose body the analysis
cannot see is left to `unseen_calls.py`; what a framework's call is, to its module in
`zerograd_lint.frameworks` (DeepSpeed's `engine.step()`, the distributed autograd's backward), the
spellings of the others being in the one vocabulary.
"""

from __future__ import annotations

import libcst as cst

from zerograd_lint import vocabulary, walk
from zerograd_lint.bindings import (
    ACCELERATOR, ENGINE, ENV, OPTIMIZER, SCALER, SCHEDULER, Frame, Key, Resolver, bind_arguments, param_root, returns,
)
from zerograd_lint.events import (
    ACC, CLEAR, CLEAR_MODELS, MAY_CLEAR, OVERWRITE, PARAMS, STEP, UPDATE, Action, Event, Inline,
    StepWithClosure,
)
from zerograd_lint.frameworks import deepspeed, distributed_autograd
from zerograd_lint.scopes import Scope, dotted_name
from zerograd_lint.settings import Vocabulary
from zerograd_lint.unseen_calls import unseen_call

_MANUAL_UPDATE_METHODS = frozenset({"add_", "sub_", "addcdiv_", "addcmul_", "copy_", "lerp_"})
_GRAD_ZEROING_METHODS = frozenset({"zero_", "fill_", "mul_"})
_GRAD_OVERWRITING_METHODS = frozenset({"fill_", "copy_", "set_"})


def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    return next((a.value for a in call.args if a.keyword and a.keyword.value == name), None)


def _grad_owner(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """For `p.grad`, `p.grad.data`: the expression `p`."""
    while isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    if isinstance(expr, cst.Attribute) and expr.attr.value in vocabulary.GRADIENTS:
        return expr.value
    return None


def _strip_data(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    return expr


def _reads_grad_of(expr: cst.BaseExpression, target: list[Key], frame: Frame, resolver: Resolver) -> bool:
    """Does `expr` read `.grad` of the same tensor(s) as `target`?"""
    return any(
        isinstance(node, cst.Attribute) and node.attr.value in vocabulary.GRADIENTS
        and any(k in target for k in resolver.keys(_strip_data(node.value), frame))
        for node in walk.nodes(expr)
    )


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value) == 0.0


def _params_key(keys: list[Key]) -> tuple[Key, ...]:
    return tuple(dict.fromkeys((PARAMS,) + param_root(k) for k in keys))


class Classifier:
    def __init__(self, resolver: Resolver, vocabulary: Vocabulary = Vocabulary()) -> None:
        self.resolver = resolver
        self.vocabulary = vocabulary  # the project's own spellings, beside the built-in ones (`vocabulary.py`)

    def kind(self, keys: list[Key]) -> str | None:
        kinds = {self.resolver.info(k).kind for k in keys}
        for kind in (OPTIMIZER, ENGINE, SCALER, ACCELERATOR, SCHEDULER, ENV):
            if kind in kinds:
                return kind
        return None

    # ------------------------------------------------------------------ calls

    def classify_call(self, call: cst.Call, frame: Frame) -> list[Action]:
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in self.vocabulary.backwards or name in self.vocabulary.clears or name in self.vocabulary.steps:
            return self._project_word(call, name, frame)
        if isinstance(func, cst.Attribute):
            return self._method_call(call, func, frame)
        if isinstance(func, cst.Name):
            return self._function_call(call, func.value, frame)
        return []

    def _project_word(self, call: cst.Call, name: str, frame: Frame) -> list[Action]:
        """A project's own backward, clear or step function (`settings.Vocabulary`)."""
        if name in self.vocabulary.backwards:
            return [Event(ACC)]
        targets = [a.value for a in call.args]
        if isinstance(call.func, cst.Attribute) and not self.resolver.is_module(call.func.value, frame):
            targets.append(call.func.value)
        keys = [k for t in targets for k in self.resolver.keys(t, frame)]
        optimizers = tuple(k for k in keys if self.resolver.info(k).kind == OPTIMIZER)
        if name in self.vocabulary.steps:
            return [Event(STEP, optimizers)] if optimizers else []
        if optimizers:
            return [Event(CLEAR, optimizers)]
        return [Event(CLEAR_MODELS, tuple(dict.fromkeys(param_root(k) for k in keys)))]

    def _method_call(self, call: cst.Call, func: cst.Attribute, frame: Frame) -> list[Action]:
        r = self.resolver
        method = func.attr.value
        recv = func.value
        effect = vocabulary.CALLS.get(method)
        if effect == vocabulary.ACCUMULATES and method == "backward":
            if distributed_autograd.is_distributed_autograd(r.qualified(recv, frame)):
                return []  # gradients live in a fresh dist_autograd context, not in .grad
            args = _positional(call)  # `accelerator.backward(loss)`, else `loss.backward()`
            return [self._accumulates(args[0] if args else recv, frame)]
        if effect == vocabulary.ACCUMULATES:  # `self.manual_backward(loss)`
            return [self._accumulates(_positional(call)[0], frame) if _positional(call) else Event(ACC)]
        target = r.module_function(func, frame)
        if target is not None:
            scope, function = target
            return [self._inline(call, function, scope, frame, None)]
        qualified = r.qualified(recv, frame)
        head = qualified.split(".")[0]
        keys = r.keys(recv, frame)
        kind = self.kind(keys) if keys else None
        imported_object = kind in (OPTIMIZER, ENGINE) and head != "torch"  # `disc.optim`, `disc` imported
        if (head in vocabulary.HARMLESS_MODULES or head == "torch" or r.is_module(recv, frame)) and not imported_object:
            return self._module_function(call, qualified, method, frame)
        if effect == vocabulary.STEPS and method == "step":
            if kind not in (OPTIMIZER, ENGINE, SCALER):  # `self.step(x, y)`: a method of the project
                inline = self._inline_method(call, recv, method, keys, frame)
                if inline is not None:
                    return [inline]
            return self._step(call, keys, kind, frame)
        if effect == vocabulary.CLEARS and method == "zero_grad":
            if kind not in (OPTIMIZER, ENGINE):  # a trainer's own `zero_grad()`: what its body does
                inline = self._inline_method(call, recv, method, keys, frame)
                if inline is not None:
                    return [inline]
            if kind in (OPTIMIZER, ENGINE):
                return [Event(CLEAR, tuple(keys), recv)]
            return [Event(CLEAR_MODELS, tuple(keys), recv)]
        if effect == vocabulary.UPDATES and kind == OPTIMIZER:
            return [Event(UPDATE, tuple(keys))]
        if method in vocabulary.STEPS_WHAT_IT_IS_GIVEN and _positional(call):  # `accelerator.optimizer_step(opt)`
            return self._keys_event(STEP, _positional(call)[0], frame)
        owner = _grad_owner(recv)
        if owner is not None:
            args = _positional(call)
            keys = _owner_keys(r.keys(owner, frame))
            if method == "zero_" or method in _GRAD_ZEROING_METHODS and args and _is_zero(args[0]):
                return [Event(CLEAR_MODELS, keys)]
            if method in _GRAD_OVERWRITING_METHODS:  # new values replace the old ones
                return [Event(OVERWRITE, keys)]
            return []  # an in-place edit (clipping, unscaling, masking) is not a clear
        if method in _MANUAL_UPDATE_METHODS:
            target = r.keys(_strip_data(recv), frame)
            if target and any(_reads_grad_of(a.value, target, frame, r) for a in call.args):
                return [Event(STEP, _params_key(target))]
        inline = self._inline_method(call, recv, method, keys, frame)
        if inline is not None:
            return [inline]
        if method in vocabulary.HARMLESS_METHODS or kind in (SCHEDULER, SCALER, ENV, ACCELERATOR):
            return []
        if keys and self._is_attribute_object(recv, method, frame):
            called = self._call_method(call, func, frame)
            return [called] if called is not None else []  # `self.model(x)`: a forward pass
        if vocabulary.reads_as_model(method) and not vocabulary.says_clears(method):
            return []  # `self.net(x)`, `critic.net(fake)`: a module attribute called, its forward
        return unseen_call(call, method, keys, frame, self.resolver, self.vocabulary)

    def _accumulates(self, loss: cst.BaseExpression, frame: Frame) -> Event:
        """A backward of `loss`, with the objects it was computed from where the code shows them
        (`provenance.py`): its contributions go to their gradient sets."""
        return Event(ACC, loss=(loss, frame))

    def _module_function(self, call: cst.Call, qualified: str, method: str, frame: Frame) -> list[Action]:
        full = f"{qualified}.{method}"
        effect = vocabulary.CALLS.get(method)
        if effect == vocabulary.ACCUMULATES and full.endswith("autograd.backward"):
            return [self._accumulates(_positional(call)[0], frame) if _positional(call) else Event(ACC)]
        if effect == vocabulary.CLEARS and _positional(call):  # `torch._foreach_zero_(grads)`
            roots = self.resolver.link_roots(_positional(call)[0], frame)
            return [Event(CLEAR_MODELS, tuple(roots))] if roots else [Event(MAY_CLEAR, ())]
        if method in vocabulary.STEPS_WHAT_IT_IS_GIVEN and _positional(call):  # torch_xla's xm.optimizer_step(opt)
            return self._keys_event(STEP, _positional(call)[0], frame)
        head = qualified.split(".")[0]
        if head in vocabulary.HARMLESS_MODULES or head == "torch" or vocabulary.is_harmless_function(method):
            return []
        return unseen_call(call, method, [], frame, self.resolver, self.vocabulary)

    def _step(self, call: cst.Call, keys: list[Key], kind: str | None, frame: Frame) -> list[Action]:
        if kind == ENGINE:
            return [deepspeed.step_event(tuple(keys), call.func.value)]
        args = _positional(call)
        if kind == SCALER or (kind is None and args and self.kind(self.resolver.keys(args[0], frame)) == OPTIMIZER):
            return self._keys_event(STEP, args[0], frame) if args else []
        if kind != OPTIMIZER:
            return []
        closure = args[0] if args else _keyword(call, "closure")
        if closure is not None:
            found = self._closure(closure, frame)
            if found is not None:
                return [StepWithClosure(tuple(keys), found, call.func.value)]
        return [Event(STEP, tuple(keys), call.func.value)]

    def _closure(self, expr: cst.BaseExpression, frame: Frame) -> Inline | cst.Lambda | None:
        """The closure handed to `step`: a lambda, a project function, or `functools.partial` of one."""
        if isinstance(expr, cst.Lambda):
            return expr
        if isinstance(expr, cst.Name):
            found = self.resolver.function(expr.value, frame)
            if found is not None:
                scope, func = found
                return Inline(func, scope, {}, frame.cls if scope.self_name else None)
            bound = frame.scope.lookup(expr.value)
            if bound is not None and len(bound[1]) == 1 and isinstance(bound[1][0].value, cst.Call):
                expr = bound[1][0].value
        made = self._made_closure(expr, frame)
        if made is not None:
            return made
        if isinstance(expr, cst.Call) and (dotted_name(expr.func) or "").rsplit(".", 1)[-1] == "partial" and expr.args:
            target = expr.args[0].value
            found = self.resolver.function(target.value, frame) if isinstance(target, cst.Name) else None
            if found is not None:
                scope, func = found
                bound_call = expr.with_changes(func=target, args=expr.args[1:])
                return self._inline(bound_call, func, scope, frame, frame.cls if scope.self_name else None)
        return None

    def _made_closure(self, expr: cst.BaseExpression, frame: Frame) -> Inline | None:
        """`step(make_closure(model, x, y))`: the function a project factory defines and returns,
        its free names bound to what the factory was given."""
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, (cst.Name, cst.Attribute))):
            return None
        r = self.resolver
        found = r.function(expr.func.value, frame) if isinstance(expr.func, cst.Name) else r.module_function(expr.func, frame)
        if found is None:
            return None
        scope, factory = found
        nested = {node.name.value: node for node in factory.body.body if isinstance(node, cst.FunctionDef)}
        for returned in returns(factory):
            if isinstance(returned, cst.Name) and returned.value in nested:
                closure = nested[returned.value]
                outer = self._inline(expr, factory, scope, frame, frame.cls if scope.self_name else None)
                return Inline(closure, r.scope_of(closure), {}, None, {}, outer)
        return None

    def _keys_event(self, op: str, expr: cst.BaseExpression, frame: Frame) -> list[Action]:
        keys = self.resolver.keys(expr, frame)
        return [Event(op, tuple(keys), expr)] if keys else []

    def _function_call(self, call: cst.Call, name: str, frame: Frame) -> list[Action]:
        r = self.resolver
        found = r.function(name, frame)
        if found is not None:
            scope, func = found
            return [self._inline(call, func, scope, frame, frame.cls if scope.self_name else None)]
        handed = _handed_function(self, call, name, frame)
        if handed is not None:
            return [handed]
        qualified = r.qualified(cst.Name(name), frame)
        effect = vocabulary.CALLS.get(name)
        if effect == vocabulary.ACCUMULATES and qualified.endswith("autograd.backward"):
            return [self._accumulates(_positional(call)[0], frame) if _positional(call) else Event(ACC)]
        if effect == vocabulary.CLEARS and qualified.startswith("torch") and _positional(call):
            roots = r.link_roots(_positional(call)[0], frame)
            return [Event(CLEAR_MODELS, tuple(roots))] if roots else [Event(MAY_CLEAR, ())]
        if r.klass(name, frame.scope) is not None:
            return []  # constructing an object of a class from the project
        called = self._call_method(call, cst.Name(name), frame)
        if called is not None:
            return [called]  # an object of a project class with `__call__`
        bound = frame.scope.lookup(name)
        if bound is not None and not any(b.is_param for b in bound[1]) and name not in frame.locals:
            return []  # calling an object (`model(x)`, `criterion(out, y)`): a forward pass
        if vocabulary.is_harmless_function(name) or qualified.split(".")[0] in ("torch",) or (
            qualified.split(".")[0] in vocabulary.HARMLESS_MODULES
        ):
            return []
        if bound is not None and name in frame.locals:
            return []
        return unseen_call(call, name, [], frame, self.resolver, self.vocabulary)

    def _inline_method(self, call: cst.Call, recv, method: str, keys: list[Key], frame: Frame) -> Inline | None:
        r = self.resolver
        for key in keys[:1]:
            cls = r.instance_class(key)
            if cls is None:
                continue
            found = r.method(cls, method)
            if found is None:
                return None
            scope, func = found
            return self._inline(call, func, r.scope_of(func), frame, cls, receiver=[key])
        return None

    def _call_method(self, call: cst.Call, callee: cst.BaseExpression, frame: Frame) -> Inline | None:
        """`loss_scaler(loss, optimizer)`: an object whose project class defines `__call__`."""
        for key in self.resolver.keys(callee, frame)[:1]:
            cls = self.resolver.instance_class(key)
            found = self.resolver.method(cls, "__call__") if cls is not None else None
            if found is not None:
                return self._inline(call, found[1], self.resolver.scope_of(found[1]), frame, cls, receiver=[key])
        return None

    def _is_attribute_object(self, recv, method: str, frame: Frame) -> bool:
        """`self.model(...)`: `model` is an attribute holding an object, not a method."""
        for key in self.resolver.keys(recv, frame)[:1]:
            cls = self.resolver.instance_class(key)
            if cls is not None:
                return any(method in klass.self_attrs or method in klass.class_attrs for klass in self.resolver.class_chain(cls))
        return False

    def _inline(self, call: cst.Call, func: cst.FunctionDef, scope: Scope, frame: Frame, cls, receiver: list[Key] | None = None) -> Inline:
        """A call of a project function, its parameters bound to the caller's arguments (the
        receiver of a method call to `self`)."""
        arguments = bind_arguments(call, func, skip_first=receiver is not None)
        subst = {name: keys for name, value in arguments.items() if (keys := self.resolver.keys(value, frame))}
        if receiver is not None and scope.self_name:
            subst[scope.self_name] = receiver
        return Inline(func, scope, subst, cls, arguments)

    # ------------------------------------------------------------------ statements

    def classify_assign(self, target: cst.BaseExpression, value: cst.BaseExpression | None, frame: Frame) -> list[Action]:
        """`p.grad = None` clears; `p.grad = g` overwrites."""
        owner = _grad_owner(target) if isinstance(target, cst.Attribute) and target.attr.value in vocabulary.GRADIENTS else None
        if owner is None:
            stripped = _strip_data(target)
            if stripped is not target and value is not None:  # p.data = p.data - lr * p.grad
                keys = self.resolver.keys(stripped, frame)
                if keys and _reads_grad_of(value, keys, frame, self.resolver):
                    return [Event(STEP, _params_key(keys))]
            return []
        keys = _owner_keys(self.resolver.keys(owner, frame))
        if not keys:
            return []
        if value is None or isinstance(value, cst.Name) and value.value == "None" or _is_zeros(value):
            return [Event(CLEAR_MODELS, keys)]
        return [Event(OVERWRITE, keys)]

    def classify_augassign(self, node: cst.AugAssign, frame: Frame) -> list[Action]:
        """`w -= lr * w.grad`: a hand-written update of `w`."""
        if not isinstance(node.operator, (cst.SubtractAssign, cst.AddAssign)):
            return []
        target = _strip_data(node.target)
        if _grad_owner(node.target) is not None:
            return []
        keys = self.resolver.keys(target, frame)
        if keys and _reads_grad_of(node.value, keys, frame, self.resolver):
            return [Event(STEP, _params_key(keys))]
        return []


def _owner_keys(keys: list[Key]) -> tuple[Key, ...]:
    return tuple(dict.fromkeys(param_root(k) for k in keys))


def _is_zeros(expr: cst.BaseExpression) -> bool:
    if _is_zero(expr):
        return True
    if isinstance(expr, cst.Call):
        name = (dotted_name(expr.func) or "").rsplit(".", 1)[-1]
        return name in ("zeros_like", "zeros")
    return False


def _handed_function(classifier: Classifier, call: cst.Call, name: str, frame: Frame) -> Inline | None:
    """`step_fn(x, y)`, a parameter the caller bound to a function of the project or a method
    (`run_epoch(loader, step_fn=self.train_step)`): that function's body, as if called by name."""
    argument, caller = frame.arguments.get(name), frame.caller
    if argument is None or caller is None:
        return None
    r = classifier.resolver
    if isinstance(argument, cst.Name):
        found = r.function(argument.value, caller)
        if found is None:
            return None
        scope, func = found
        return classifier._inline(call, func, scope, frame, caller.cls if scope.self_name else None)
    if isinstance(argument, cst.Attribute) and not r.is_module(argument.value, caller):
        return classifier._inline_method(call, argument.value, argument.attr.value, r.keys(argument.value, caller), frame)
    return None
