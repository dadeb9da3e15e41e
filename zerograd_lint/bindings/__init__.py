"""What an expression refers to: a key for the object, its kind, and the models an optimizer holds.

- `keys.py`: keys, the names of objects, and frames, the functions active while they are found;
- `names.py`: the project module, function or class a name stands for (imports, definitions);
- `aliases.py`: the keys of an expression, names followed through their aliases;
- `classes.py`: class chains, subclasses and methods, the objects made of a project class;
- `kinds.py`: the kind of a key (optimizer, scheduler, ...), with what the frameworks make of one
  (`zerograd_lint.frameworks`);
- `links.py`: what an optimizer's parameters are made of, and the other keys of the same module;
- `resolver.py`: the `Resolver`, assembled from the parts above.

The rest of the code imports from here.
"""

from __future__ import annotations

from zerograd_lint.bindings.keys import EACH, Frame, Key, covers, is_prefix, last_name, own_key, param_root, related, self_key
from zerograd_lint.bindings.kinds import PREPARE_METHODS, Info
from zerograd_lint.bindings.links import WRAPPERS
from zerograd_lint.bindings.names import STARRED, bind_arguments, returns
from zerograd_lint.bindings.resolver import Resolver
from zerograd_lint.vocabulary import ACCELERATOR, ENGINE, ENV, OPTIMIZER, OTHER, SCALER, SCHEDULER, UNKNOWN

__all__ = [
    "ACCELERATOR", "EACH", "ENGINE", "ENV", "OPTIMIZER", "OTHER", "PREPARE_METHODS", "SCALER", "SCHEDULER", "STARRED",
    "UNKNOWN", "WRAPPERS", "Frame", "Info", "Key", "Resolver", "bind_arguments", "covers", "is_prefix", "last_name", "own_key",
    "param_root", "related", "returns", "self_key",
]
