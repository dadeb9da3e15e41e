"""Run training scripts one after the other under ``runtime.guard_all``, in one process.

    python run_guarded.py OUT.json SCRIPT...

writes ``{script: {"codes": [the codes the guard found]}}``, or ``{"error": ...}`` for a script
that raised, to OUT.json. What the scripts print is dropped.
"""

import contextlib
import io
import json
import runpy
import sys
import warnings
from pathlib import Path

# A CPU-only torch without numpy says so on import; nothing here uses numpy.
warnings.filterwarnings("ignore", "Failed to initialize NumPy", UserWarning)

import torch  # noqa: E402

from zerograd_lint import runtime  # noqa: E402


def observe(script: str) -> dict[str, object]:
    torch.manual_seed(0)
    try:
        with (
            runtime.guard_all(on_error="record") as guard,
            contextlib.redirect_stdout(io.StringIO()),
        ):
            runpy.run_path(script, run_name="__main__")
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"codes": sorted({f.code for f in guard.findings})}


def main(out: str, *scripts: str) -> None:
    Path(out).write_text(json.dumps({script: observe(script) for script in scripts}))


if __name__ == "__main__":
    main(*sys.argv[1:])
