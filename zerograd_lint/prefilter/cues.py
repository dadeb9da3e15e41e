"""The text tests of the prefilter: does a text (a file, or one definition's) run a backward,
step, clear, or build an optimizer? Substrings first, each found fast; a pattern only to confirm
what a substring found (a pattern of many alternatives is tried at every position of the text).
"""

from __future__ import annotations

import re

from zerograd_lint.settings import Vocabulary
from zerograd_lint.vocabulary import OPTIMIZER_CLASSES

_BACKWARD_CALL = re.compile(r"backward\s*\(")
_FACTORY = r"(?:create|build|make|get|init|setup|configure|load)_?optimi[sz]ers?\s*\("
# (a substring every match contains, the pattern, if the substring is not enough). A substring is
# found fast; a pattern of many alternatives is tried at every position of the text.
_STEP_CUES = ((".step", r"\.step\s*\("), ("update_params", None), ("optimizer_step", None))
_TOUCH_CUES = (
    *_STEP_CUES, ("zero_grad", None), (".grad", r"\.grad\b"), ("_foreach_zero_", None),
    # an optimizer built: `optim.AdamW(`, `SGD(`, `build_optimizer(`, or the word `Optimizer`
    ("optim.", r"optim\.\w+\s*\("), ("Optimizer", None), ("Optimiser", None), ("ptimi", _FACTORY),
    (".prepare", r"\.prepare(?:_optimizer)?\s*\("),  # Accelerate gates what it prepares
    *((name, re.escape(name) + r"\s*\(") for name in sorted(OPTIMIZER_CLASSES)),
)
# a hand-written update reading `.grad` on the same line, before it: a step too (see `_updates`)
_UPDATE = re.compile(r"-=|\+=|\.(?:add|sub|addcdiv|addcmul|copy|lerp)_\(")
_GRAD = re.compile(r"\.grad\b")


def _updates(text: str) -> bool:
    """Does a line update a tensor from a `.grad` it reads (`p -= lr * p.grad`, `p.add_(p.grad)`)?
    Each `.grad` is found fast, then its line is searched before it: a pattern starting with an
    alternative would be tried at every position of the text."""
    for grad in _GRAD.finditer(text):
        if _UPDATE.search(text, text.rfind("\n", 0, grad.start()) + 1, grad.start()):
            return True
    return False


def _accumulates(extra: tuple[str, ...]):
    """Does a text call a backward (`loss.backward()`, `backward(t)`, `self.manual_backward(loss)`)?
    The `def backward(ctx, grad)` of an autograd Function does not count. Patterns that start
    with a literal are searched fast; a look-behind would be tried at every position."""
    own = _cues((("update_params", None),), extra)

    def accumulates(text: str) -> bool:
        if own(text):
            return True
        return "backward" in text and any(not text.endswith("def ", 0, m.start()) for m in _BACKWARD_CALL.finditer(text))

    return accumulates


def _cues(cues, extra: tuple[str, ...]):
    """Does a text hold one of the cues, or one of the vocabulary's own words?"""
    compiled = [(sub, re.compile(pattern) if pattern else None) for sub, pattern in cues]
    compiled += [(word, re.compile(r"\b" + re.escape(word) + r"\b")) for word in extra]

    def found(text: str) -> bool:
        return any(sub in text and (pattern is None or pattern.search(text)) for sub, pattern in compiled)

    return found


class Cues:
    """The text tests of a vocabulary."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.accumulates = _accumulates(vocabulary.backwards)
        self.touches = _cues(_TOUCH_CUES, (*vocabulary.clears, *vocabulary.steps, *vocabulary.optimizers))
        self._steps = _cues(_STEP_CUES, (*vocabulary.steps, *vocabulary.optimizers))

    def steps_in(self, text: str) -> bool:
        return self._steps(text) or (".grad" in text and _updates(text))

    def matters(self, text: str) -> bool:
        return self.accumulates(text) or self.touches(text)

    def trains(self, text: str) -> bool:
        return self.accumulates(text) and (self.steps_in(text) or self.touches(text))

    def trains_by_itself(self, text: str) -> bool:
        """Can the text hold a training loop by itself (the files chosen first)?"""
        return self.accumulates(text) and self.steps_in(text)


def cues(vocabulary: Vocabulary) -> Cues:
    """The text tests of a vocabulary: what a file, or a definition, mentions when it can take part."""
    return Cues(vocabulary)


_OPTIM_CALL = re.compile(r"\boptim\.\w+\s*\(")
_WRAPPING_OPTIMIZER = re.compile(r"^(?![ \t]*class\b).*\b\w*Optimi[sz]er\(", re.MULTILINE)
def builds_optimizer(text: str) -> bool:
    """`torch.optim.SGD(`, `optim.AdamW(`, `LBFGS(`: substrings first, each found fast."""
    if "optim." in text and _OPTIM_CALL.search(text) is not None:
        return True
    if ("Optimizer(" in text or "Optimiser(" in text) and _WRAPPING_OPTIMIZER.search(text):
        return True  # `PainterOptimizer(cfg, painter)`: a project's own optimizer wrapper
    return any(  # a call of the class, not its definition, nor a longer name's (`SparseAdam(` for `Adam`)
        call in text and definition not in text and pattern.search(text)
        for call, definition, pattern in _OPTIMIZER_CALLS
    )


_OPTIMIZER_CALLS = [
    (f"{name}(", f"class {name}(", re.compile(rf"(?<!\w){name}\(")) for name in sorted(OPTIMIZER_CLASSES)
]
