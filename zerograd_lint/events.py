"""The gradient events: what a call or a statement does to which gradient set.

`classifier.py` decides which event a call or a statement is (docs/contract.md, "Events"), with
the names resolved by `bindings.Resolver`; the graph builder places the events on the control
flow.

Operations:
    ACC            adds into .grad (`loss.backward()`, `accelerator.backward(loss)`, ...); `keys`:
                   the objects the loss was computed from, where the code shows them, else none
    STEP           applies .grad of the gradient sets named by `keys`
    STEP_CLEAR     steps then clears (DeepSpeed engine `.step()`)
    UPDATE         accumulates, steps and clears (mmengine `optim_wrapper.update_params(loss)`)
    CLEAR          clears the optimizers named by `keys`
    CLEAR_MODELS   clears the parameters of the modules/tensors named by `keys`
    OVERWRITE      replaces .grad of the parameters named by `keys` (`p.grad = g`, `p.grad.copy_(g)`)
    MAY_CLEAR      a call the analysis cannot see into, given the optimizers (or the objects
                   holding them) named by `keys`: it may clear them (weakly, see `unseen_calls.py`)
    REBIND         names bound to new objects: a new model or tensor starts with no `.grad`
    PARTIAL        a clear of the parameters a condition picks (`if "last_layer" in name:
                   p.grad = None`, to keep a layer frozen): the others keep theirs, no set is cleared
A manual update (`p.data.add_(p.grad, alpha=-lr)`) is a STEP of the set `("params",) + root`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from zerograd_lint import provenance
from zerograd_lint.bindings import Frame, Key, Resolver
from zerograd_lint.scopes import Scope

ACC = "acc"
STEP = "step"
STEP_CLEAR = "step_clear"
UPDATE = "update"
CLEAR = "clear"
CLEAR_MODELS = "clear_models"
OVERWRITE = "overwrite"
MAY_CLEAR = "may_clear"
REBIND = "rebind"
PARTIAL = "partial"

PARAMS = "params"


@dataclass(frozen=True)
class Event:
    op: str
    keys: tuple[Key, ...] = ()
    # the expression naming what is stepped or cleared (`self.optimizer`, `opt_d`): what a fix writes
    subject: cst.BaseExpression | None = field(default=None, compare=False)
    # a backward's loss and the frame it is read in: what it was computed from is read only where
    # several gradient sets are in play (`Event.made_from`)
    loss: tuple[cst.BaseExpression, Frame] | None = field(default=None, compare=False)

    def made_from(self, resolver: Resolver) -> tuple[Key, ...]:
        """The objects a backward's loss was computed from, where the code shows them (else none)."""
        if self.loss is None:
            return ()
        return provenance.made_from(self.loss[0], self.loss[1], resolver) or ()


@dataclass(frozen=True)
class Inline:
    """Call a function defined in this module: its body runs here, with its parameters bound."""

    func: cst.FunctionDef
    scope: Scope
    subst: dict[str, list[Key]]
    cls: Scope | None
    arguments: dict[str, cst.BaseExpression] = field(default_factory=dict)  # parameter -> argument
    enclosing: "Inline | None" = None  # a closure made by a factory: the factory's call, for its free names


@dataclass(frozen=True)
class StepWithClosure:
    """`opt.step(closure)`: the optimizer evaluates the closure (LBFGS: repeatedly) and steps."""

    keys: tuple[Key, ...]
    closure: Union[Inline, cst.Lambda]
    subject: cst.BaseExpression | None = None


Action = Union[Event, Inline, StepWithClosure]
