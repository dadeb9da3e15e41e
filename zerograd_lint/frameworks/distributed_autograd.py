"""`torch.distributed.autograd`: `dist_autograd.backward(context_id, [loss])` deposits gradients
in a fresh distributed autograd context, not in `.grad`, and `DistributedOptimizer.step(context_id)`
reads them from there: nothing accumulates across steps, so no clear is missing."""

from __future__ import annotations

# how the module is spelt where its `backward` is called
QUALIFIED = ("torch.distributed.autograd", "distributed.autograd", "dist_autograd")


def is_distributed_autograd(qualified: str) -> bool:
    """Is `qualified` (a receiver's qualified name) the distributed autograd module?"""
    return qualified.endswith(QUALIFIED)
