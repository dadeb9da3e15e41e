"""The resolver: keys, kinds and links across the modules of a project, memoised.

It is assembled from parts, one concern each, that share one object (and so call one another and
read one another's records directly, with no layer between them on the hot paths):

- `names.Names`: the project module, function or class a name stands for;
- `aliases.Aliases`: the keys of an expression, and the bindings recorded for each key;
- `classes.Classes`: class chains, the class a key is an object of, its attributes' bindings;
- `kinds.Kinds`: the kind of a key; `frameworks.accelerate.Prepared` and
  `frameworks.lightning.ConfiguredOptimizers`: what those frameworks' APIs make of one;
- `links.Links`: what an optimizer's parameters are made of, and the other keys of the same module.
"""

from __future__ import annotations

from zerograd_lint.bindings.aliases import Aliases
from zerograd_lint.bindings.classes import Classes
from zerograd_lint.bindings.kinds import Kinds
from zerograd_lint.bindings.links import Links
from zerograd_lint.bindings.names import Names
from zerograd_lint.frameworks.accelerate import Prepared
from zerograd_lint.frameworks.lightning import ConfiguredOptimizers
from zerograd_lint.project import Project
from zerograd_lint.settings import Vocabulary


class Resolver(Aliases, Names, Classes, Kinds, Prepared, ConfiguredOptimizers, Links):
    """Keys, kinds and links across the modules of a project, memoised."""

    def __init__(self, project: Project, vocabulary: Vocabulary = Vocabulary()) -> None:
        self.project = project
        self.vocabulary = vocabulary
        super().__init__()  # each part makes its own records and memos
