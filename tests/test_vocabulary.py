"""One vocabulary: the call names the analysis knows (`vocabulary.CALLS`) mean the same thing to the
prefilter, the survey and the event classifier.

Each known name is used in a small training script, checked end to end (prefilter, survey,
classification, dataflow), where what the call does decides the finding; a name added to the
table without a script here fails `test_every_known_call_has_a_script`.
"""

from __future__ import annotations

import pytest

from zerograd_lint import check_source, survey, vocabulary
from zerograd_lint.vocabulary import ACCUMULATES, CALLS, CLEARS, STEPS, UPDATES

SETUP = """\
import torch
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""

# name -> (the loop's body, the codes the script must get)
SCRIPTS = {
    # accumulating: the loop never clears, so its steps re-apply old gradients
    "backward": ("loss = model(x).sum()\n    loss.backward()\n    optimizer.step()", {"ZG001"}),
    "manual_backward": ("loss = model(x).sum()\n    trainer.manual_backward(loss)\n    optimizer.step()", {"ZG001"}),
    # stepping: the backward is cleared at the top, each step applies it once
    "step": ("optimizer.zero_grad()\n    model(x).sum().backward()\n    optimizer.step()", set()),
    "optimizer_step": ("model(x).sum().backward()\n    xm.optimizer_step(optimizer)", {"ZG001"}),
    # clearing: between the backward and the step, the step never sees the gradients
    "zero_grad": ("model(x).sum().backward()\n    optimizer.zero_grad()\n    optimizer.step()", {"ZG002"}),
    "_foreach_zero_": (
        "model(x).sum().backward()\n    torch._foreach_zero_([p.grad for p in model.parameters()])\n    optimizer.step()",
        {"ZG002"},
    ),
    # accumulating, stepping and clearing in one call: nothing to report
    "update_params": ("loss = model(x).sum()\n    optim_wrapper.update_params(loss)", set()),
}


def test_every_known_call_has_a_script() -> None:
    assert set(SCRIPTS) == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_known_call_does_what_the_table_says(name: str) -> None:
    body, expected = SCRIPTS[name]
    assert name in body
    source = SETUP + "for x in data:\n    " + body + "\n"
    assert {f.code for f in check_source(source, "train.py")} == expected, source


def test_the_survey_reads_its_sets_from_the_table() -> None:
    assert survey._ACCUMULATING == vocabulary.calls_that(ACCUMULATES, UPDATES)
    assert survey._STEPPING == vocabulary.calls_that(STEPS, UPDATES)
    assert survey._TOUCHING == vocabulary.calls_that(STEPS, CLEARS, UPDATES) | vocabulary.GRADIENTS


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_survey_sees_each_known_call(name: str) -> None:
    found = survey.survey_module(f"def f(x):\n    x.{name}(x)\n").functions
    function = next(f for line, f in found.items() if line != survey.MODULE)
    effect = CALLS[name]
    assert function.accumulates == (effect in (ACCUMULATES, UPDATES))
    assert function.steps == (effect in (STEPS, UPDATES))
    assert function.touches == (effect in (STEPS, CLEARS, UPDATES))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("reset_grads", True), ("zero_gradients", True), ("clear_grad", True), ("free_grads", True),
        ("zero_grad", True), ("encode", False), ("grad_norm", False), ("reset", False), ("zeros_like", False),
        ("resetGradients", True), ("grads_reset", True), ("freeze_grads", False), ("unfreeze_grad", False),
        ("reset_grad_scaler", False), ("clear_grad_hooks", False), ("compute_grad_zero_ratio", False),
    ],
)
def test_names_that_say_they_clear(name: str, expected: bool) -> None:
    assert vocabulary.says_clears(name) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("adjust_learning_rate", True), ("update_lr", True), ("step_scheduler", True), ("log_metrics", True),
        ("save_checkpoint", True), ("load_state", True), ("state_dict", True), ("print_stats", True),
        ("loss_fn", True), ("train_context", True),
        ("train_step", False), ("sync_state", False), ("apply_gradients", False), ("closure", False),
        ("optimize_loss", False), ("train_step_with_loss", False), ("loader_step", False), ("update_context", False),
    ],
)
def test_names_that_say_they_are_harmless(name: str, expected: bool) -> None:
    assert vocabulary.says_harmless(name) is expected
