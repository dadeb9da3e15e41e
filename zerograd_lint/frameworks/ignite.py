"""PyTorch Ignite: an `Engine` runs its process function once per batch, so that function's
body is a loop body. It is found by the call that hands it over (`Engine(update)`, or
`Engine(make_update(...))`, whose nested functions are such callbacks), or by its signature
`(engine, batch)` (an `Engine` subclass hands it to `super().__init__(func)`, where no call shows it)."""

from __future__ import annotations

# Calls whose first argument is a function the framework runs once per batch.
CALLBACK_TAKERS = frozenset({"Engine", "DeterministicEngine"})


def takes_an_engine(parameters: list[str]) -> bool:
    """`(engine, batch)`, `(self, engine, batch)`: the signature of an Ignite process function."""
    if parameters[:1] in (["self"], ["cls"]):
        parameters = parameters[1:]
    return len(parameters) >= 2 and parameters[0] == "engine"
