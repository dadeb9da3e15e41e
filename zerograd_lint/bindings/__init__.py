"""What an expression refers to: a key for the object, its kind, and the models an optimizer holds.

`resolver.py` holds it all for now; the rest of the code imports it from here.
"""

from __future__ import annotations

from zerograd_lint.bindings.resolver import (
    ACCELERATOR, ENGINE, ENV, OPTIMIZER, OTHER, PREPARE_METHODS, SCALER, SCHEDULER, STARRED, UNKNOWN, WRAPPERS,
    Frame, Info, Key, Resolver, bind_arguments, is_prefix, last_name, own_key, param_root, related, returns, self_key,
)

__all__ = [
    "ACCELERATOR", "ENGINE", "ENV", "OPTIMIZER", "OTHER", "PREPARE_METHODS", "SCALER", "SCHEDULER", "STARRED",
    "UNKNOWN", "WRAPPERS", "Frame", "Info", "Key", "Resolver", "bind_arguments", "is_prefix", "last_name", "own_key",
    "param_root", "related", "returns", "self_key",
]
