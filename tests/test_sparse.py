"""What LibCST is given of a module (`sparse.sparse_text`), and which methods that build objects
keep their bodies (`planning.methods_kept`). Both only save time: `test_prefilter.py` checks that every
fixture gives the same findings without them; these check that they save it."""

from __future__ import annotations

import textwrap

from zerograd_lint import survey
from zerograd_lint.planning import planned as plan_of
from zerograd_lint.settings import Vocabulary
from zerograd_lint.sparse import sparse_text

MODULE = textwrap.dedent('''\
    import functools


    @functools.lru_cache(
        maxsize=None,
    )
    def helper(
        a,
        b: int = 2,
    ) -> int:
        """Adds."""
        return a + b


    def one_line_header(x):  # a comment
        return x
''')


def test_an_emptied_function_keeps_its_name_on_its_def_line_and_nothing_else() -> None:
    text, lines = sparse_text(MODULE, survey.survey_module(MODULE).outline, frozenset(), module_analysed=False)
    assert text == "import functools\ndef helper(): pass\ndef one_line_header(): pass\n"
    assert lines == [1, 7, 15]


def test_an_emptied_function_keeps_its_header_when_the_module_body_is_analysed() -> None:
    """Decorators run in the module body: they stay, and so does the header they decorate."""
    text, _ = sparse_text(MODULE, survey.survey_module(MODULE).outline, frozenset(), module_analysed=True)
    assert "@functools.lru_cache(" in text and "    b: int = 2,\n" in text
    assert "    pass\n" in text and "return" not in text


def test_a_function_kept_is_left_as_it_is() -> None:
    found = survey.survey_module(MODULE)
    text, _ = sparse_text(MODULE, found.outline, frozenset(found.functions_named["helper"]), module_analysed=False)
    assert "    return a + b\n" in text and "def one_line_header(): pass\n" in text


TRAINING = textwrap.dedent('''\
    import torch
    from stepping import Stepper as Updater


    class Base:
        def __init__(self, model):
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


    class Made(Base):
        def __init__(self, model):
            super().__init__(model)

        def __call__(self, loss):
            return loss


    class Unrelated(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 2)


    class AtTheTop:
        def __init__(self):
            self.lr = 0.1


    class Trainer:
        def __init__(self, model):
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def fit(self, data):
            for x in data:
                self.model(x).sum().backward()
                self.optimizer.step()


    class Subclass(Trainer):
        def __init__(self, model):
            super().__init__(model)


    top = AtTheTop()


    def train(model, data):
        made = Made(model)
        for x in data:
            model(x).sum().backward()
            made.optimizer.step()
''')


def test_only_the_classes_the_analysis_may_meet_keep_the_methods_that_build_their_objects() -> None:
    path = "train.py"
    texts = {path: TRAINING, "stepping.py": "class Stepper:\n    def __init__(self):\n        pass\n"}
    planned = plan_of(texts, {p: survey.survey_module(t, Vocabulary()) for p, t in texts.items()})
    assert planned is not None
    init = {name: line for line, name in _inits(TRAINING).items()}
    kept = planned.kept_methods[path]
    # called in a root (and its base); made at the top of a module; the root's class and a subclass
    assert {init["Made"], init["Base"], init["AtTheTop"], init["Trainer"], init["Subclass"]} <= kept
    assert init["Unrelated"] not in kept
    assert _inits(TRAINING).keys() - kept == {init["Unrelated"]}
    # a class imported under another name, and called by it
    assert planned.kept_methods.get("stepping.py") == frozenset({2})
    text, _ = planned.sparse(path)
    assert "self.linear = torch.nn.Linear(2, 2)" not in text and "def __init__(): pass" in text


def _inits(text: str) -> dict[int, str]:
    """The `def` line of each `__init__`, and its class."""
    out, cls = {}, ""
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("class "):
            cls = line[len("class "):].split("(")[0].rstrip(":")
        elif line.strip().startswith("def __init__"):
            out[number] = cls
    return out
