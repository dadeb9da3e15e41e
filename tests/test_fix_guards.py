"""What keeps a fix from breaking a script at run time, each from a case a review of the fixes
found: a gradient read after the step (in the loop, through a function, after the loop, after a
helper's call), a helper's parameter rebound before its step, a helper imported under another
name, a closure that opens with `global`/`nonlocal`."""

from __future__ import annotations

from pathlib import Path

from zerograd_lint.checker import check_project
from zerograd_lint.fix import fix_project, fix_source

HEADER = ("import torch\nmodel = torch.nn.Linear(3, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
          "data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(4)]\n")
STEP_IN_A_HELPER = HEADER + "def train_step(x, y, opt):\n    model(x).sum().backward()\n    opt.step()\n"


def fixed(source: str, unsafe: bool = False):
    out, fixes = fix_source(source, "train.py", unsafe=unsafe)
    assert isinstance(out, str)
    return out, fixes


def test_a_read_after_a_helpers_call_keeps_the_clear_out_of_the_helper_and_the_loop() -> None:
    source = STEP_IN_A_HELPER + "for x, y in data:\n    train_step(x, y, optimizer)\n    print(model.weight.grad)\n"
    out, fixes = fixed(source, unsafe=True)
    assert out == source
    [declined] = fixes.declined
    assert declined.reason.startswith("a gradient may be read after `opt.step()` (line 7), at line 10")


def test_a_read_through_a_function_is_a_read() -> None:
    source = (HEADER + "def grad_norm(m):\n    return sum(p.grad.norm() for p in m.parameters())\n"
              "for x, y in data:\n    model(x).sum().backward()\n    optimizer.step()\n    print(grad_norm(model))\n")
    out, fixes = fixed(source)
    assert out == source.replace("print(grad_norm(model))\n", "print(grad_norm(model))\n    optimizer.zero_grad()\n")
    assert "the last read of a gradient" in fixes.fixed[0].fix.message


def test_a_read_through_getattr_is_a_read() -> None:
    source = (HEADER + "for x, y in data:\n    model(x).sum().backward()\n    optimizer.step()\n"
              "    norms = [getattr(p, 'grad').norm() for p in model.parameters()]\n    print(norms)\n")
    out, _ = fixed(source)
    assert out.index("optimizer.zero_grad()") > out.index("getattr(p, 'grad')")


def test_a_read_after_the_loop_declines_the_fix() -> None:
    source = (HEADER + "for x, y in data:\n    model(x).sum().backward()\n    optimizer.step()\n"
              "print('last gradient', model.weight.grad.norm().item())\n")
    out, fixes = fixed(source, unsafe=True)
    assert out == source
    assert fixes.declined[0].reason.startswith("a gradient may be read after `optimizer.step()` (line 7), at line 8")


def test_a_parameter_the_helper_rebinds_is_not_named_by_the_call() -> None:
    source = (HEADER + "def train_step(x, y, opt):\n    if isinstance(opt, dict):\n        opt = opt['main']\n"
              "    model(x).sum().backward()\n    opt.step()\n"
              "for x, y in data:\n    train_step(x, y, {'main': optimizer})\ntrain_step(*data[0], optimizer)\n")
    out, fixes = fixed(source)
    assert out == source and "unsafe fix held back" in fixes.declined[0].reason  # not `{...}.zero_grad()`
    out, fixes = fixed(source, unsafe=True)
    assert "    opt.step()\n    opt.zero_grad()\n" in out


def test_a_helper_imported_under_another_name_has_another_caller(tmp_path: Path) -> None:
    engine = "def train_step(model, optimizer, x):\n    model(x).sum().backward()\n    optimizer.step()\n"
    train = ("import torch\nfrom engine import train_step\nmodel = torch.nn.Linear(3, 1)\n"
             "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
             "for x in torch.randn(4, 2, 3):\n    train_step(model, optimizer, x)\n")
    other = "from engine import train_step as fit_batch\n"
    sources: dict[str, str | bytes] = {"engine.py": engine, "train.py": train, "finetune.py": other}
    fixes = fix_project(sources, check_project(sources), check_project)
    assert set(fixes.changed) == {"train.py"}  # the clear goes after the call: the helper is not edited
    from zerograd_lint.fix.helpers import Project

    assert ("finetune.py", 1) in Project(sources).uses("train_step")


def test_a_clear_in_a_closure_goes_after_its_global_and_nonlocal_lines() -> None:
    source = ("import torch\nmodel = torch.nn.Linear(3, 1)\noptimizer = torch.optim.LBFGS(model.parameters())\n"
              "def fit():\n    calls = 0\n    for x in torch.randn(2, 4, 3):\n        def closure():\n"
              "            nonlocal calls\n            global optimizer\n            calls += 1\n"
              "            loss = model(x).sum()\n            loss.backward()\n            return loss\n"
              "        optimizer.step(closure)\n    return calls\n")
    out, fixes = fixed(source)
    assert "            global optimizer\n            optimizer.zero_grad()\n            calls += 1\n" in out
    compile(out, "fixed.py", "exec")


def test_a_marker_removed_never_leaves_a_continuation_last() -> None:
    source = (HEADER + "z = 1 \\\n  # noqa: ZG003\n").replace("\n", "\r\n")
    out, fixes = fix_source(source.encode(), "train.py")
    assert out == source.encode() and not fixes.fixed
    assert "does not parse to the same program" in fixes.declined[0].reason


def test_what_only_mentions_gradients_is_no_read() -> None:
    from zerograd_lint.fix.helpers import reads_gradients

    for code in ("utils.toggle_grad(D, False)", "optimizer.zero_grad()  # gradients accumulate", "D_loss_grad /= 3",
                 "x = grad_norms[0]", "if step % args.gradient_accumulation_steps == 0: pass",
                 "with torch.no_grad(): pass", "model.requires_grad_(False)", 'print(f"{accumulation} grad steps")'):
        assert not reads_gradients(code), code
    for code in ("print(model.weight.grad)", "print(grad_norm(model))", 'getattr(p, "grad")',
                 'print(f"{model.weight.grad.norm():.3f}")', "torch.nn.utils.clip_grad_norm_(ps, 1.0)"):
        assert reads_gradients(code), code


def test_a_read_after_gradients_are_computed_again_is_of_those() -> None:
    source = (HEADER + "for x, y in data:\n    model(x).sum().backward()\n    optimizer.step()\n"
              "for x, y in data:\n    optimizer.zero_grad()\n    model(x).sum().backward()\n"
              "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    optimizer.step()\n")
    out, fixes = fixed(source)
    assert not fixes.declined and "    optimizer.step()\n    optimizer.zero_grad()\nfor x, y in data:" in out


def test_a_clear_moved_after_the_step_goes_after_the_reads_of_what_it_applied() -> None:
    source = (HEADER + "for i, (x, y) in enumerate(data):\n    optimizer.zero_grad()\n    (model(x).sum() / 2).backward()\n"
              "    if (i + 1) % 2 == 0:\n        optimizer.step()\n        print(model.weight.grad.norm())\n")
    out, fixes = fixed(source)
    assert [f.code for f in fixes.fixed] == ["ZG003"]
    assert out.endswith("        print(model.weight.grad.norm())\n        optimizer.zero_grad()\n")
