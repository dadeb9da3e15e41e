"""The kinds of fix beyond a clear after an optimizer's step: a clear after an update by hand, a
clear first in a closure, a clearing loop moved whole; which are unsafe, and what is declined.
(The fixtures' snapshots, `case.fixed.py`, are checked by test_fix.py.)"""

from __future__ import annotations

from pathlib import Path

from zerograd_lint.checker import check_project
from zerograd_lint.fix import fix_project, fix_source

FIXTURES = Path(__file__).parent / "fixtures"
HEADER = ("import torch\nmodel = torch.nn.Linear(3, 1)\n"
          "optimizer = torch.optim.LBFGS(model.parameters(), max_iter=4)\nx = torch.ones(3)\n")


def test_a_closure_used_elsewhere_too_is_fixed_only_with_unsafe_fixes() -> None:
    source = (FIXTURES / "ZG001" / "closure_also_called_to_report.py").read_text()
    out, fixes = fix_source(source, "fit.py")
    assert out == source and fixes.fixed == []
    [declined] = fixes.declined
    assert declined.reason == ("unsafe fix held back: `closure()` is used elsewhere too (line 19), where the added "
                               "clear would run as well; --unsafe-fixes makes it")
    assert declined.fix is not None and declined.fix.applicability == "unsafe"
    out, fixes = fix_source(source, "fit.py", unsafe=True)
    [fixed] = fixes.fixed
    assert fixed.fix is not None and fixed.fix.applicability == "unsafe"
    assert out == source.replace("def closure():\n", "def closure():\n    optimizer.zero_grad()\n")


def test_the_clear_goes_first_in_the_closure_before_its_comments() -> None:
    source = HEADER + ("def closure():\n    # the loss\n    loss = model(x).sum()\n    loss.backward()\n"
                       "    return loss\nfor _ in range(3):\n    optimizer.step(closure)\n")
    out, fixes = fix_source(source, "fit.py")
    assert out == source.replace("def closure():\n", "def closure():\n    optimizer.zero_grad()\n")
    [fixed] = fixes.fixed
    assert fixed.fix is not None and fixed.fix.applicability == "safe"
    assert fixed.fix.message == ("Insert `optimizer.zero_grad()` first in `closure()` (line 5), which "
                                 "`optimizer.step(closure)` evaluates")


def test_a_closure_defined_in_the_loop_names_the_optimizer_as_the_step_does() -> None:
    source = ("import torch\nclass Fit:\n    def __init__(self, model):\n        self.model = model\n"
              "        self.opt = torch.optim.LBFGS(model.parameters())\n    def run(self, x):\n"
              "        for _ in range(3):\n            def closure():\n                loss = self.model(x).sum()\n"
              "                loss.backward()\n                return loss\n            self.opt.step(closure)\n")
    out, fixes = fix_source(source, "fit.py")
    assert [f.code for f in fixes.fixed] == ["ZG001"]
    assert out == source.replace("def closure():\n", "def closure():\n                self.opt.zero_grad()\n")


def test_a_closure_made_in_another_module_is_declined() -> None:
    project = FIXTURES / "projects" / "zg001_lbfgs_closure_from_a_factory"
    sources: dict[str, str | bytes] = {str(f): f.read_bytes() for f in sorted(project.glob("*.py"))}
    fixes = fix_project(sources, check_project(sources), check_project, unsafe=True)
    assert fixes.changed == {}
    [declined] = fixes.declined
    assert declined.reason.startswith("the closure comes from `make_closure`, imported from another module, where "
                                      "`optimizer` is not in scope")


def test_an_update_reading_two_tensors_gradients_is_declined() -> None:
    source = ("import torch\nw = torch.zeros(3, requires_grad=True)\nv = torch.zeros(3, requires_grad=True)\n"
              "for x in []:\n    (w * v * x).sum().backward()\n    with torch.no_grad():\n"
              "        w -= 0.1 * (w.grad + v.grad)\n")
    out, fixes = fix_source(source, "train.py")
    assert out == source and fixes.fixed == []
    assert [d.reason for d in fixes.declined] == [
        "the update by hand reads the gradients of several tensors (`w`, `v`): which of them to clear is a "
        "judgement the fix does not make"]


def test_a_clearing_loop_moves_whole_and_says_so() -> None:
    source = (FIXTURES / "ZG002" / "grad_none_by_hand_between.py").read_text()
    _, fixes = fix_source(source, "train.py")
    [fixed] = fixes.fixed
    assert fixed.fix is not None and fixed.fix.applicability == "safe"
    assert fixed.fix.message == ("Move `for p in model.parameters(): ...` (lines 12-13) to right after "
                                 "`optimizer.step()` (line 14)")
