"""What the guard remembers about passes, parameters and optimizers."""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import CodeType

import torch
from torch.optim import Optimizer

Models = torch.nn.Module | Iterable[torch.nn.Module] | Mapping[str, torch.nn.Module]


@dataclass(eq=False)
class PassState:
    """One backward pass that accumulated into guarded parameters."""

    site: tuple[tuple[CodeType, int], ...]
    """The user's frames (code, line) when backward ran, innermost first."""
    params: list[ParamState] = field(default_factory=list)
    key: object = None
    """Set when the pass ends: its site and the optimizers it reached. Passes with equal keys are
    "the same backward" in different iterations, which is what the guard learns about."""
    stepped: bool = False
    """Some optimizer stepped after this pass and before the next one."""

    @property
    def where(self) -> str:
        if not self.site:  # the pass ran on a device thread: no Python caller to see
            return "an unknown line"
        code, line = self.site[0]
        return f"{os.path.basename(code.co_filename)}:{line}"


@dataclass(eq=False)
class ParamState:
    tensor: torch.Tensor
    name: str
    index: int
    """Position among the guarded parameters: messages list them in this order."""
    owners: list[OptState] = field(default_factory=list)
    fresh: list[PassState] = field(default_factory=list)
    """Passes that added to ``.grad`` since it was last cleared and that no step has applied."""
    applied: set[OptState] = field(default_factory=set)
    """The gradient sets whose step already applied what ``.grad`` holds (not cleared since).
    Two optimizers over the same parameters each apply a backward's contributions once; once a
    backward adds to what one applied, every optimizer over the parameter would apply it again."""
    norm: torch.Tensor | None = None
    """The norm of .grad when the last pass ended: clearing zeros or inf/nan loses nothing."""
    seen: tuple[weakref.ref[torch.Tensor], int] | None = None
    """.grad and its version when the last pass ended."""
    snapshot: tuple[torch.Tensor, int] | None = None
    """Updated by hand: a copy of the tensor and its version when the guard last looked at it."""
    cleared_by: Line | None = None
    """The user's line of the last ``zero_grad()`` of a guarded optimizer over this parameter
    since a pass last added to it: where a clear the guard notices later was made."""


Line = tuple[str, int]
"""A file name and a line number."""


@dataclass(eq=False)
class Discard:
    """What a clear dropped of one pass, for one optimizer: the parameters, and the line of the
    clear when it was a guarded optimizer's ``zero_grad()``."""

    params: set[ParamState] = field(default_factory=set)
    cleared_by: Line | None = None


@dataclass(eq=False)
class OptState:
    """A gradient set: what one optimizer steps, or the tensors updated by hand (no optimizer)."""

    optimizer: Optimizer | None
    name: str
    step: str = "step"
    """What its steps are called in messages."""
    clear: str = "optimizer.zero_grad()"
    """How messages tell to clear it."""
    params: list[ParamState] = field(default_factory=list)
    feeds: set[object] = field(default_factory=set)
    """Keys of the passes whose contributions a step of this optimizer applied."""
    held: dict[object, tuple[PassState, Discard]] = field(default_factory=dict)
    """Discards of passes not (yet) known to feed this optimizer, one per pass key."""
    in_closure: bool = False
    reaccumulated: list[ParamState] = field(default_factory=list)


def parameter_names(models: Models | None) -> dict[int, str]:
    """``id(parameter) -> name`` from ``named_parameters()``, prefixed by the key of a mapping."""
    if models is None:
        return {}
    if isinstance(models, torch.nn.Module):
        named = [("", models)]
    elif isinstance(models, Mapping):
        named = [(f"{key}.", model) for key, model in models.items()]
    else:
        named = [("", model) for model in models]
    names: dict[int, str] = {}
    for prefix, model in named:
        for name, tensor in model.named_parameters():
            names.setdefault(id(tensor), prefix + name)
    return names


def names_of(params: Iterable[ParamState]) -> list[str]:
    """The names of ``params``, each once, in the order the optimizers hold them."""
    return [p.name for p in sorted(set(params), key=lambda p: p.index)]
