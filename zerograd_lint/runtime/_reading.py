"""Reading gradients, autograd graphs and Python frames without changing any of them."""

from __future__ import annotations

import math
import os
import sys
import weakref
from collections.abc import Iterable, Iterator, Sequence
from types import CodeType, FrameType

import torch

# Frames from these directories are never the user's code.
_INTERNAL = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep)


def norms(grads: Sequence[torch.Tensor | None]) -> list[torch.Tensor | None]:
    """The 2-norm of each gradient (None for None), a 0-dim float32 tensor on its device.

    0 when the gradient is all zeros (or its squares underflow, below about 1e-23), inf or nan when
    it is not finite (or its squares overflow). Either error only ever hides a finding.
    """
    dense = [g for g in grads if g is not None and not g.is_sparse]
    dense_norms = iter(torch._foreach_norm(dense, 2, dtype=torch.float32) if dense else ())
    found: list[torch.Tensor | None] = []
    for grad in grads:
        if grad is None:
            found.append(None)
        elif grad.is_sparse:
            found.append(torch.linalg.vector_norm(grad.coalesce().values(), dtype=torch.float32))
        else:
            found.append(next(dense_norms))
    return found


def unchanged(seen: tuple[weakref.ref[torch.Tensor], int] | None, grad: torch.Tensor) -> bool:
    """``grad`` is the tensor ``seen`` recorded, at the same version: not edited since."""
    return seen is not None and seen[0]() is grad and seen[1] == grad._version


def snapshot(tensor: torch.Tensor) -> tuple[torch.Tensor, int]:
    """A copy of ``tensor``, and its version: a write through ``.data`` does not move that."""
    return tensor.detach().clone(), tensor._version


def leaves(roots: torch.Tensor | Iterable[object]) -> list[torch.Tensor]:
    """The leaf tensors a backward pass from ``roots`` accumulates into, each once, in the order
    a depth-first walk of the graph meets them."""
    if isinstance(roots, torch.Tensor):
        roots = [roots]
    tensors = [root for root in roots if isinstance(root, torch.Tensor)]
    found = {id(t): t for t in tensors if t.grad_fn is None and t.requires_grad}
    nodes = [t.grad_fn for t in reversed(tensors) if t.grad_fn is not None]
    seen = set()
    while nodes:
        node = nodes.pop()
        if node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # only AccumulateGrad nodes have one
        if variable is not None:
            found.setdefault(id(variable), variable)
        nodes += reversed([child for child, _ in node.next_functions if child is not None])
    return list(found.values())


def carries(norm: torch.Tensor) -> bool:
    """A gradient of this norm holds something a step should apply: not all zero, finite."""
    value = norm.item()
    return value != 0 and math.isfinite(value)


def call_site() -> tuple[tuple[CodeType, int], ...]:
    """The user's frames as (code, line), innermost first: empty on a device thread."""
    return tuple((f.f_code, f.f_lineno) for f in _user_frames(sys._getframe()))


def user_line() -> tuple[str, int] | None:
    """The file and line of the innermost user frame (what `call_site()[0]` names, without walking
    the rest of the stack): None on a device thread."""
    frame = next(_user_frames(sys._getframe()), None)
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def user_stacklevel() -> int:
    """The ``stacklevel`` for a warning issued by the caller, pointing at the user's code."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        level, frame = level + 1, frame.f_back
    return level


def _user_frames(frame: FrameType | None) -> Iterator[FrameType]:
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_INTERNAL):
            yield frame
        frame = frame.f_back
