"""zerograd_lint.runtime on tiny CPU loops: quiet where docs/contract.md says so, else exact."""

import inspect
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn.functional import mse_loss
from torch.optim.optimizer import _global_optimizer_post_hooks

from zerograd_lint import runtime
from zerograd_lint.runtime import GradientMisuseError, GradientMisuseWarning

Batch = tuple[torch.Tensor, torch.Tensor]


def batches(n: int = 6) -> list[Batch]:
    return [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(n)]


def loss_of(model: nn.Module, batch: Batch) -> torch.Tensor:
    x, y = batch
    return mse_loss(model(x), y)


def sgd(model: nn.Module) -> torch.optim.SGD:
    return torch.optim.SGD(model.parameters(), lr=0.1)


def codes(g: "runtime.Guard") -> set[str]:
    return {f.code for f in g.findings}


# Every spelling of a clear, each a function of (model, optimizer).


def set_grads_to_none(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for p in model.parameters():
        p.grad = None


def replace_grads_by_zeros(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for p in model.parameters():
        p.grad = torch.zeros_like(p)


def zero_grads_in_place(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()


def zero_grads_data(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for p in model.parameters():
        if p.grad is not None:
            p.grad.data.zero_()  # .data has its own version counter: the grad's does not move


def foreach_zero(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if grads:
        torch._foreach_zero_(grads)


CLEARS: dict[str, Callable[[nn.Module, torch.optim.Optimizer], None]] = {
    "opt.zero_grad()": lambda model, opt: opt.zero_grad(),
    "opt.zero_grad(set_to_none=False)": lambda model, opt: opt.zero_grad(set_to_none=False),
    "model.zero_grad()": lambda model, opt: model.zero_grad(),
    "model.zero_grad(set_to_none=False)": lambda model, opt: model.zero_grad(set_to_none=False),
    "p.grad = None": set_grads_to_none,
    "p.grad = torch.zeros_like(p)": replace_grads_by_zeros,
    "p.grad.zero_()": zero_grads_in_place,
    "p.grad.data.zero_()": zero_grads_data,
    "torch._foreach_zero_": foreach_zero,
}


# Quiet: docs/contract.md, "Must stay quiet (each is a real pattern)".


@pytest.mark.parametrize("where", ["before backward", "after step"])
@pytest.mark.parametrize("clear", CLEARS.values(), ids=CLEARS.keys())
def test_quiet_when_every_iteration_clears(clear: Callable[..., None], where: str) -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches():
            if where == "before backward":
                clear(model, opt)
            loss_of(model, batch).backward()
            opt.step()
            if where == "after step":
                clear(model, opt)
    assert g.findings == []


@pytest.mark.parametrize("accumulation_steps", [1, 3])
def test_quiet_on_correct_accumulation(accumulation_steps: int) -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record", accumulation_steps=accumulation_steps) as g:
        for i, batch in enumerate(batches()):
            (loss_of(model, batch) / 3).backward()
            if (i + 1) % 3 == 0:
                opt.step()
                opt.zero_grad()
    assert g.findings == []


def test_quiet_on_micro_step_loop_declared() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    data = batches(6)
    with runtime.guard(opt, on_error="record", accumulation_steps=3) as g:
        for step in range(2):
            for micro in range(3):
                (loss_of(model, data[3 * step + micro]) / 3).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    assert g.findings == []


def test_quiet_when_clipping_and_clearing() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches():
            opt.zero_grad()
            loss_of(model, batch).backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
            opt.step()
    assert g.findings == []


def dcgan(
    net_g: nn.Module,
    net_d: nn.Module,
    opt_g: torch.optim.Optimizer,
    opt_d: torch.optim.Optimizer,
    clear_g: bool = True,
) -> None:
    """The training loop of pytorch/examples dcgan, on vectors."""
    criterion = nn.BCELoss()
    real_label, fake_label = torch.ones(4, 1), torch.zeros(4, 1)
    for _ in range(4):
        net_d.zero_grad()  # also drops the residue errG.backward() left in netD
        err_d_real = criterion(net_d(torch.randn(4, 3)), real_label)
        err_d_real.backward()
        fake = net_g(torch.randn(4, 2))
        err_d_fake = criterion(net_d(fake.detach()), fake_label)
        err_d_fake.backward()
        opt_d.step()
        if clear_g:
            net_g.zero_grad()
        err_g = criterion(net_d(fake), real_label)
        err_g.backward()
        opt_g.step()


def gan() -> tuple[nn.Module, nn.Module, torch.optim.Optimizer, torch.optim.Optimizer]:
    net_g = nn.Sequential(nn.Linear(2, 3), nn.Tanh())
    net_d = nn.Sequential(nn.Linear(3, 1), nn.Sigmoid())
    opt_g = torch.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    return net_g, net_d, opt_g, opt_d


@pytest.mark.parametrize("accumulation_steps", [1, 2])
def test_quiet_on_dcgan_loop_that_drops_generator_residue(accumulation_steps: int) -> None:
    net_g, net_d, opt_g, opt_d = gan()
    with runtime.guard(opt_d, opt_g, on_error="record", accumulation_steps=accumulation_steps) as g:
        dcgan(net_g, net_d, opt_g, opt_d)
    assert g.findings == []


def test_quiet_on_grad_scaler_loop_that_skips_a_step_on_nan() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    scaler = torch.amp.GradScaler("cpu", init_scale=16.0)
    with runtime.guard(opt, on_error="record") as g:
        for i, (x, y) in enumerate(batches()):
            opt.zero_grad()
            if i == 2:
                x = x * float("inf")
            scaler.scale(mse_loss(model(x), y)).backward()
            scaler.step(opt)
            scaler.update()
    assert scaler.get_scale() == 8.0  # one step was skipped: its nan gradients were dropped
    assert g.findings == []


@pytest.mark.parametrize("as_keyword", [False, True])
def test_quiet_on_lbfgs_clearing_in_the_closure(as_keyword: bool) -> None:
    model = nn.Linear(3, 1)
    opt = torch.optim.LBFGS(model.parameters(), max_iter=4)
    x, y = batches(1)[0]

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = mse_loss(model(x), y)
        loss.backward()
        return loss

    with runtime.guard(opt, on_error="record") as g:
        for _ in range(3):
            opt.step(closure=closure) if as_keyword else opt.step(closure)
    assert g.findings == []


def test_quiet_on_backward_for_inspection_only() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches():
            loss_of(model, batch).backward()  # gradients read, then dropped: never meant for a step
            assert model.weight.grad.norm() > 0
            opt.zero_grad()
            loss_of(model, batch).backward()
            opt.step()
    assert g.findings == []


def test_quiet_on_autograd_grad_beside_the_loop() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches():
            opt.zero_grad()
            loss = loss_of(model, batch)
            torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
            loss.backward()
            opt.step()
    assert g.findings == []


def test_quiet_when_an_iteration_has_all_zero_gradients() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for i, batch in enumerate(batches()):
            opt.zero_grad(set_to_none=False)
            (loss_of(model, batch) * (i != 2)).backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # zeros, edited: cleared?
            opt.step()
    assert g.findings == []


@pytest.mark.parametrize("clear", [True, False])
def test_sparse_gradients(clear: bool) -> None:
    model = nn.Embedding(5, 2, sparse=True)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for i in range(3):
            if clear:
                opt.zero_grad()
            model(torch.tensor([i, i + 1])).sum().backward()
            opt.step()
    assert codes(g) == (set() if clear else {"ZG001"})


# ZG001: a step applies what an earlier step applied.


@pytest.mark.parametrize("clear_before_loop", [False, True])
@pytest.mark.parametrize("optimizer", [torch.optim.SGD, torch.optim.Adam])
def test_never_clearing_is_zg001(
    optimizer: type[torch.optim.Optimizer], clear_before_loop: bool
) -> None:
    model = nn.Linear(3, 1)
    opt = optimizer(model.parameters(), lr=0.1)
    with runtime.guard(opt, on_error="record") as g:
        if clear_before_loop:
            opt.zero_grad()
        for batch in batches():
            loss_of(model, batch).backward()
            opt.step()
    assert codes(g) == {"ZG001"}


def test_clipping_without_clearing_is_zg001() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches():
            loss_of(model, batch).backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e6)  # factor 1, version bumped
            opt.step()
    assert codes(g) == {"ZG001"}


def test_masking_rows_without_clearing_is_zg001() -> None:
    model = nn.Linear(3, 2)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for x, y in batches():
            mse_loss(model(x), y.expand(4, 2)).backward()
            model.weight.grad[0] = 0
            opt.step()
    assert codes(g) == {"ZG001"}


def test_grad_scaler_without_clearing_is_zg001() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    scaler = torch.amp.GradScaler("cpu", init_scale=16.0)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches():
            scaler.scale(loss_of(model, batch)).backward()
            scaler.step(opt)
            scaler.update()
    assert codes(g) == {"ZG001"}


def test_declared_accumulation_never_clearing_is_zg001() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record", accumulation_steps=3) as g:
        for i, batch in enumerate(batches()):
            (loss_of(model, batch) / 3).backward()
            if (i + 1) % 3 == 0:
                opt.step()
    assert codes(g) == {"ZG001"}


def test_second_optimizer_never_cleared_is_zg001() -> None:
    net_g, net_d, opt_g, opt_d = gan()
    with runtime.guard(opt_d, opt_g, names=["D", "G"], on_error="record") as g:
        dcgan(net_g, net_d, opt_g, opt_d, clear_g=False)
    assert {(f.code, f.optimizer) for f in g.findings} == {("ZG001", "G")}


@pytest.mark.parametrize("added_to", [False, True], ids=["each-steps-one-backward", "backward-between-the-steps"])
def test_two_optimizers_over_one_model_zg001_only_once_a_backward_adds_to_what_one_applied(added_to: bool) -> None:
    model = nn.Linear(3, 1)
    first, second = sgd(model), torch.optim.Adam(model.parameters(), lr=0.1)
    with runtime.guard(first, second, names=["first", "second"], on_error="record") as g:
        for batch in batches(3):
            first.zero_grad()
            second.zero_grad()
            loss_of(model, batch).backward()
            first.step()
            if added_to:  # the second step applies this and, again, what the first step applied
                loss_of(model, batch).backward()
            second.step()
    assert {(f.code, f.optimizer) for f in g.findings} == ({("ZG001", "second")} if added_to else set())


@pytest.mark.parametrize(
    "make",
    [
        lambda params: torch.optim.LBFGS(params, max_iter=4),
        lambda params: torch.optim.SGD(params, lr=0.1),
    ],
    ids=["LBFGS", "SGD"],
)
def test_closure_that_does_not_clear_is_zg001(make: Callable[..., torch.optim.Optimizer]) -> None:
    model = nn.Linear(3, 1)
    opt = make(model.parameters())
    x, y = batches(1)[0]

    def closure() -> torch.Tensor:
        loss = mse_loss(model(x), y)
        loss.backward()
        return loss

    with runtime.guard(opt, on_error="record") as g:
        for _ in range(3):
            opt.step(closure)
    assert codes(g) == {"ZG001"}
    assert "closure" in g.findings[0].message


# ZG002: a clear between the backward and the step it should feed. Between those two the guard
# trusts the version counter, which .data skips: p.grad.data.zero_() there goes unseen.
BETWEEN = {spelling: clear for spelling, clear in CLEARS.items() if ".data" not in spelling}


@pytest.mark.parametrize("clear", BETWEEN.values(), ids=BETWEEN.keys())
def test_clear_between_backward_and_step_is_zg002(clear: Callable[..., None]) -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches():
            opt.zero_grad()  # backward then makes a new .grad at version 0, like torch.zeros_like
            loss_of(model, batch).backward()
            clear(model, opt)
            opt.step()
    assert codes(g) == {"ZG002"}


# ZG003: a clear drops contributions meant for a step.


def run_until_error(
    model: nn.Module, opt: torch.optim.Optimizer, accumulation_steps: int
) -> tuple[str, list]:
    """Clear every iteration, step every third: the error's code and where it came out."""
    at: list = []
    with (
        pytest.raises(GradientMisuseError) as error,
        runtime.guard(opt, accumulation_steps=accumulation_steps),
    ):
        for i, batch in enumerate(batches()):
            opt.zero_grad()
            at[:] = [i, "backward"]
            loss_of(model, batch).backward()
            if (i + 1) % 3 == 0:
                at[:] = [i, "step"]
                opt.step()
    return error.value.code, at


def test_clearing_inside_accumulation_is_zg003_once_a_step_shows_what_backward_feeds() -> None:
    model = nn.Linear(3, 1)
    assert run_until_error(model, sgd(model), accumulation_steps=1) == ("ZG003", [2, "step"])


def test_clearing_inside_declared_accumulation_is_zg003_at_the_next_backward() -> None:
    model = nn.Linear(3, 1)
    assert run_until_error(model, sgd(model), accumulation_steps=3) == ("ZG003", [1, "backward"])


def test_zg003_warning_points_at_the_zero_grad_that_discarded() -> None:
    """Issue 19, item 10: the warning is about the clear, not the backward it is noticed at."""
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="warn") as g, pytest.warns(GradientMisuseWarning) as warned:
        for i, batch in enumerate(batches()):
            clear = inspect.currentframe().f_lineno + 1
            opt.zero_grad()
            backward = inspect.currentframe().f_lineno + 1
            loss_of(model, batch).backward()
            if (i + 1) % 3 == 0:
                opt.step()
    assert [(w.filename, w.lineno) for w in warned] == [(__file__, clear)]
    (found,) = g.findings
    assert found.at == (__file__, clear)
    assert found.message.startswith(
        f"ZG003 SGD #0 zero_grad() at test_guard.py:{clear} discarded gradients from the backward"
        f" at test_guard.py:{backward} that no step applied"
    )


def test_zg003_from_a_clear_by_hand_says_clear_and_points_where_it_was_noticed() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for i, batch in enumerate(batches()):
            for p in model.parameters():
                p.grad = None
            loss_of(model, batch).backward()
            if (i + 1) % 3 == 0:
                opt.step()
    (found,) = g.findings
    assert found.at is None and found.message.startswith("ZG003 SGD #0 clear discarded gradients")


def test_detach_gives_the_optimizer_its_own_zero_grad_back() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt):
        assert "zero_grad" in vars(opt)
    assert "zero_grad" not in vars(opt) and opt.zero_grad.__func__ is torch.optim.SGD.zero_grad


def test_per_epoch_clear_dropping_the_accumulation_tail_is_zg003() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    data = batches(5)
    with runtime.guard(opt, on_error="record") as g:
        for _ in range(2):
            opt.zero_grad()
            for i, batch in enumerate(data):
                (loss_of(model, batch) / 3).backward()
                if (i + 1) % 3 == 0:
                    opt.step()
                    opt.zero_grad()
    assert codes(g) == {"ZG003"}


# Updates by hand: tensors no optimizer holds, updated from their .grad (w -= lr * w.grad).

LR = 0.1


def regression() -> list[torch.Tensor]:
    """The tensors of the from-scratch tutorial loop: a weight and a bias."""
    return [torch.randn(3, 1, requires_grad=True), torch.zeros(1, requires_grad=True)]


def regression_loss(params: list[torch.Tensor], batch: Batch) -> torch.Tensor:
    (w, b), (x, y) = params, batch
    return mse_loss(x @ w + b, y)


def subtract_in_place(p: torch.Tensor) -> None:
    p -= LR * p.grad


UPDATES: dict[str, Callable[[torch.Tensor], object]] = {
    "p -= lr * p.grad": subtract_in_place,
    "p.data.add_(p.grad, alpha=-lr)": lambda p: p.data.add_(p.grad, alpha=-LR),
    "p.data.sub_(lr * p.grad)": lambda p: p.data.sub_(LR * p.grad),
}


def update_by_hand(params: list[torch.Tensor], update: Callable[[torch.Tensor], object]) -> None:
    with torch.no_grad():
        for p in params:
            update(p)


def clear_by_hand(params: list[torch.Tensor]) -> None:
    for p in params:
        p.grad = None


def zero_by_hand(params: list[torch.Tensor]) -> None:
    for p in params:
        if p.grad is not None:
            p.grad.zero_()


@pytest.mark.parametrize("where", ["before backward", "after update"])
@pytest.mark.parametrize(
    "clear", [clear_by_hand, zero_by_hand], ids=["p.grad = None", "p.grad.zero_()"]
)
@pytest.mark.parametrize("update", UPDATES.values(), ids=UPDATES.keys())
def test_quiet_when_updates_by_hand_clear(
    update: Callable[[torch.Tensor], object], clear: Callable[..., None], where: str
) -> None:
    params = regression()
    with runtime.guard(params=params, on_error="record") as g:
        for batch in batches():
            if where == "before backward":
                clear(params)
            regression_loss(params, batch).backward()
            update_by_hand(params, update)
            if where == "after update":
                clear(params)
    assert g.findings == []


def test_quiet_on_accumulation_by_hand() -> None:
    params = regression()
    with runtime.guard(params=params, on_error="record") as g:
        for i, batch in enumerate(batches()):
            (regression_loss(params, batch) / 3).backward()
            if (i + 1) % 3 == 0:
                update_by_hand(params, subtract_in_place)
                clear_by_hand(params)
    assert g.findings == []


def test_quiet_on_dcgan_loop_whose_generator_is_updated_by_hand() -> None:
    net_g, net_d, _, opt_d = gan()
    criterion = nn.BCELoss()
    with runtime.guard(
        opt_d, params=net_g.parameters(), on_error="record", accumulation_steps=2
    ) as g:
        for _ in range(4):
            net_d.zero_grad()  # drops the residue of err_g, which the update by hand followed
            fake = net_g(torch.randn(4, 2))
            criterion(net_d(fake.detach()), torch.zeros(4, 1)).backward()
            opt_d.step()
            net_g.zero_grad()
            criterion(net_d(fake), torch.ones(4, 1)).backward()
            update_by_hand(list(net_g.parameters()), subtract_in_place)
    assert g.findings == []


@pytest.mark.parametrize("update", UPDATES.values(), ids=UPDATES.keys())
def test_updating_by_hand_without_clearing_is_zg001(
    update: Callable[[torch.Tensor], object],
) -> None:
    params = regression()
    with runtime.guard(params=params, on_error="record") as g:
        for batch in batches():
            regression_loss(params, batch).backward()
            update_by_hand(params, update)
    assert [(f.code, f.optimizer) for f in g.findings] == [("ZG001", "hand-written")]


def test_clearing_one_of_two_tensors_updated_by_hand_is_zg001_for_the_other() -> None:
    w, b = params = regression()
    with runtime.guard(params=params, on_error="record") as g:
        for batch in batches():
            regression_loss(params, batch).backward()
            update_by_hand(params, subtract_in_place)
            w.grad = None
    assert [(f.code, f.parameters) for f in g.findings] == [("ZG001", ("params[1] (1,)",))]


def test_clearing_before_the_update_by_hand_is_zg002() -> None:
    params = regression()
    with runtime.guard(params=params, on_error="record") as g:
        for batch in batches():
            regression_loss(params, batch).backward()
            zero_by_hand(params)
            update_by_hand(params, subtract_in_place)  # subtracts zeros: w never moves
    assert codes(g) == {"ZG002"}


def test_clearing_inside_accumulation_by_hand_is_zg003() -> None:
    params = regression()
    with runtime.guard(params=params, on_error="record") as g:
        for i, batch in enumerate(batches()):
            clear_by_hand(params)
            (regression_loss(params, batch) / 3).backward()
            if (i + 1) % 3 == 0:
                update_by_hand(params, subtract_in_place)
    assert codes(g) == {"ZG003"}


def test_a_finding_about_an_update_by_hand_comes_out_of_the_next_backward() -> None:
    params = regression()
    at: list[int] = []
    with pytest.raises(GradientMisuseError) as error, runtime.guard(params=params):
        for i, batch in enumerate(batches()):
            at[:] = [i]
            regression_loss(params, batch).backward()
            update_by_hand(params, subtract_in_place)
    assert (error.value.code, at) == ("ZG001", [2])  # the second update, seen by the third pass


def test_message_about_an_update_by_hand_names_the_model_parameters() -> None:
    model = nn.Linear(3, 1)
    with runtime.guard(params=model.parameters(), models=model, on_error="record") as g:
        for batch in batches(3):
            loss_of(model, batch).backward()
            update_by_hand(list(model.parameters()), subtract_in_place)
    assert [f.message for f in g.findings] == [
        "ZG001 hand-written update applies gradients an earlier update already applied"
        " (parameters: weight, bias): clear them after each update with p.grad = None"
    ]


def test_params_an_optimizer_holds_are_watched_through_its_steps() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, params=model.parameters(), on_error="record") as g:
        for batch in batches():
            loss_of(model, batch).backward()
            opt.step()
    assert [(f.code, f.optimizer) for f in g.findings] == [("ZG001", "SGD #0")]


# The API.


def test_raise_stops_the_faulty_step_before_it_applies() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    data = batches(2)
    with runtime.guard(opt):
        loss_of(model, data[0]).backward()
        opt.step()
        loss_of(model, data[1]).backward()
        before = model.weight.detach().clone()
        with pytest.raises(GradientMisuseError) as error:
            opt.step()
    assert error.value.code == "ZG001"
    assert [f.code for f in error.value.findings] == ["ZG001"]
    assert torch.equal(model.weight, before)


def test_warn_points_at_the_users_line() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    data = batches(2)
    with runtime.guard(opt, on_error="warn") as g, pytest.warns(GradientMisuseWarning) as warned:
        for batch in data:
            loss_of(model, batch).backward()
            line = inspect.currentframe().f_lineno + 1
            opt.step()
    assert [(w.filename, w.lineno) for w in warned] == [(__file__, line)]
    assert str(warned[0].message) == g.findings[0].message


def test_each_finding_is_recorded_once() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches(6):
            loss_of(model, batch).backward()
            opt.step()
    assert len(g.findings) == 1


def test_message_names_the_optimizer_and_the_model_parameters() -> None:
    model = nn.Sequential(OrderedDict(fc=nn.Linear(3, 1)))
    opt = torch.optim.Adam(model.parameters())
    with runtime.guard(opt, models=model, on_error="record") as g:
        for batch in batches(2):
            loss_of(model, batch).backward()
            opt.step()
    (found,) = g.findings
    assert found.message == (
        "ZG001 Adam #0 step applies gradients an earlier step already applied"
        " (parameters: fc.weight, fc.bias): clear them after each step with optimizer.zero_grad()"
    )
    assert (found.optimizer, found.parameters) == ("Adam #0", ("fc.weight", "fc.bias"))
    assert str(found) == found.message


def test_message_without_models_gives_group_index_and_shape() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with runtime.guard(opt, on_error="record") as g:
        for batch in batches(2):
            loss_of(model, batch).backward()
            opt.step()
    assert g.findings[0].parameters == ("param_groups[0][0] (1, 3)", "param_groups[0][1] (1,)")


def test_message_names_the_backward_and_lists_at_most_five_parameters() -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 1))
    opt = sgd(model)
    with runtime.guard(opt, models={"net": model}, names=["main"], on_error="record") as g:
        for batch in batches():
            loss = loss_of(model, batch)
            line = inspect.currentframe().f_lineno + 1
            loss.backward()
            opt.zero_grad()
            opt.step()
    assert g.findings[0].message == (
        "ZG002 main step applies no gradient: those of the backward at"
        f" test_guard.py:{line} were cleared before it (parameters: net.0.weight, net.0.bias,"
        " net.1.weight, net.1.bias, net.2.weight and 1 more): clear before backward or after"
        " step, not between them"
    )


def hook_counts(model: nn.Module, opt: torch.optim.Optimizer) -> list[int]:
    return [
        *(len(p._backward_hooks or ()) for p in model.parameters()),
        *(len(p._post_accumulate_grad_hooks or ()) for p in model.parameters()),
        len(opt._optimizer_step_pre_hooks),
        len(opt._optimizer_step_post_hooks),
        len(_global_optimizer_post_hooks),
    ]


def test_detach_removes_every_hook() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    g = runtime.attach(opt, on_error="record")
    assert hook_counts(model, opt) == [1, 1, 1, 1, 1, 1, 1]
    g.detach()
    assert hook_counts(model, opt) == [0, 0, 0, 0, 0, 0, 0]
    for batch in batches():
        loss_of(model, batch).backward()
        opt.step()
    assert g.findings == []


def test_guard_detaches_when_the_block_raises() -> None:
    model = nn.Linear(3, 1)
    opt = sgd(model)
    with pytest.raises(GradientMisuseError), runtime.guard(opt):
        for batch in batches():
            loss_of(model, batch).backward()
            opt.step()
    assert hook_counts(model, opt) == [0, 0, 0, 0, 0, 0, 0]


# guard_all: every optimizer made in the block, and every leaf a backward reaches that none holds.

BACKWARDS: dict[str, Callable[[torch.Tensor], None]] = {
    "loss.backward()": torch.Tensor.backward,
    "torch.autograd.backward(loss)": lambda loss: torch.autograd.backward(loss),
    "torch.autograd.backward(tensors=[loss])": lambda loss: torch.autograd.backward(
        tensors=[loss]
    ),
}


@pytest.mark.parametrize("backward", BACKWARDS.values(), ids=BACKWARDS.keys())
def test_guard_all_finds_the_tensors_updated_by_hand(
    backward: Callable[[torch.Tensor], None],
) -> None:
    with runtime.guard_all(on_error="record") as g:
        w, b = params = regression()
        for batch in batches():
            backward(regression_loss(params, batch))
            update_by_hand(params, subtract_in_place)
            w.grad = None
    assert [(f.code, f.parameters) for f in g.findings] == [("ZG001", ("params[1] (1,)",))]


def test_guard_all_guards_the_optimizers_made_in_the_block() -> None:
    earlier = nn.Linear(3, 1)
    earlier_opt = sgd(earlier)
    with runtime.guard_all(on_error="record") as g:
        models = [nn.Linear(3, 1), nn.Linear(3, 1)]
        opts = [sgd(models[0]), torch.optim.Adam(models[1].parameters())]
        for batch in batches():
            for model, opt in zip([earlier, *models], [earlier_opt, *opts], strict=True):
                loss_of(model, batch).backward()
                opt.step()
    # An optimizer made before the block is not guarded: its steps look like updates by hand.
    assert {(f.code, f.optimizer) for f in g.findings} == {
        ("ZG001", "SGD #0"),
        ("ZG001", "Adam #1"),
        ("ZG001", "hand-written"),
    }


def test_guard_all_hands_a_tensor_over_to_the_optimizer_made_for_it() -> None:
    with runtime.guard_all(on_error="record") as g:
        params = regression()
        regression_loss(params, batches(1)[0]).backward()  # a look at the gradients first
        opt = torch.optim.SGD(params, lr=LR)
        for batch in batches():
            regression_loss(params, batch).backward()
            opt.step()
    assert [(f.code, f.optimizer) for f in g.findings] == [("ZG001", "SGD #0")]


def test_guard_all_puts_torch_back_and_detaches_when_the_block_raises() -> None:
    init, backward = torch.optim.Optimizer.__init__, torch.autograd.backward
    with pytest.raises(GradientMisuseError), runtime.guard_all():
        assert torch.optim.Optimizer.__init__ is not init
        assert torch.autograd.backward is not backward
        model = nn.Linear(3, 1)
        opt = sgd(model)
        for batch in batches():
            loss_of(model, batch).backward()
            opt.step()
    assert torch.optim.Optimizer.__init__ is init
    assert torch.autograd.backward is backward
    assert hook_counts(model, opt) == [0, 0, 0, 0, 0, 0, 0]


def train(optimizer: str, guarded: bool) -> list:
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    if optimizer == "Adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    else:
        opt = torch.optim.LBFGS(model.parameters(), max_iter=4)
    g = runtime.attach(opt) if guarded else None
    for batch in batches(8):

        def closure(batch: Batch = batch) -> torch.Tensor:
            opt.zero_grad()
            loss = loss_of(model, batch)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1)
            return loss

        opt.step(closure)
    if g is not None:
        g.detach()
    leaves = [*model.parameters()]
    for state in opt.state.values():
        for value in state.values():
            leaves += value if isinstance(value, list) else [value]  # LBFGS keeps histories
    return leaves


@pytest.mark.parametrize("optimizer", ["Adam", "LBFGS"])
def test_training_is_bitwise_identical_with_the_guard(optimizer: str) -> None:
    plain, guarded = train(optimizer, guarded=False), train(optimizer, guarded=True)
    assert len(plain) > 3
    for a, b in zip(plain, guarded, strict=True):
        assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


def test_guard_class_is_imported_on_demand() -> None:
    g = runtime.attach(sgd(nn.Linear(3, 1)))
    g.detach()
    assert isinstance(g, runtime.Guard)
    assert not hasattr(runtime, "Gaurd")


def test_importing_the_runtime_does_not_import_torch() -> None:
    code = "import zerograd_lint.runtime, sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2], check=True)


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((), {}, TypeError),
        ((nn.Linear(3, 1),), {}, TypeError),
        (("opt", "opt"), {}, ValueError),
        (("opt",), {"names": ["a", "b"]}, ValueError),
        (("opt",), {"on_error": "ignore"}, ValueError),
        (("opt",), {"accumulation_steps": 0}, ValueError),
        ((), {"params": ["w"]}, TypeError),
    ],
)
def test_bad_arguments(args: tuple, kwargs: dict, error: type[Exception]) -> None:
    opt = sgd(nn.Linear(3, 1))
    with pytest.raises(error):
        runtime.attach(*(opt if a == "opt" else a for a in args), **kwargs)
