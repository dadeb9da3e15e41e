"""What torch does with .grad: the facts the rules and the runtime guard rest on."""

import pytest
import torch
from torch import nn
from torch.nn.functional import linear, mse_loss

LR = 0.1


def batches(n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(n)]


def test_backward_adds_into_grad_until_it_is_zeroed() -> None:
    x = torch.tensor(2.0, requires_grad=True)
    (x**2).backward()
    assert x.grad == 4
    (x**2).backward()
    assert x.grad == 8
    x.grad.zero_()
    (x**2).backward()
    assert x.grad == 4


def test_optimizer_zero_grad_sets_grad_to_none_by_default() -> None:
    p = nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=LR)
    p.sum().backward()
    opt.zero_grad()
    assert p.grad is None


def test_optimizer_zero_grad_without_set_to_none_leaves_zeros() -> None:
    p = nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=LR)
    p.sum().backward()
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad
    assert torch.equal(p.grad, torch.zeros(2))


@pytest.mark.parametrize("set_to_none", [True, False])
def test_model_zero_grad_clears_its_parameters(set_to_none: bool) -> None:
    model = nn.Linear(3, 1)
    model(torch.randn(4, 3)).sum().backward()
    model.zero_grad(set_to_none=set_to_none)
    for p in model.parameters():
        if set_to_none:
            assert p.grad is None
        else:
            assert torch.equal(p.grad, torch.zeros_like(p))


def accumulated_grad(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, k: int, divide: bool
) -> torch.Tensor:
    model.zero_grad()
    for xc, yc in zip(x.chunk(k), y.chunk(k), strict=True):
        loss = mse_loss(model(xc), yc)
        (loss / k if divide else loss).backward()
    return model.weight.grad.clone()


def test_accumulating_k_chunks_of_loss_over_k_gives_the_full_batch_gradient() -> None:
    model = nn.Linear(3, 1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    mse_loss(model(x), y).backward()
    full = model.weight.grad.clone()
    assert torch.allclose(accumulated_grad(model, x, y, k=4, divide=True), full)


def test_accumulating_k_chunks_without_dividing_gives_k_times_the_gradient() -> None:
    model = nn.Linear(3, 1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    mse_loss(model(x), y).backward()
    full = model.weight.grad.clone()
    assert torch.allclose(accumulated_grad(model, x, y, k=4, divide=False), 4 * full)


def by_hand(
    data: list[tuple[torch.Tensor, torch.Tensor]], start: list[torch.Tensor], clear: bool
) -> list[torch.Tensor]:
    """Plain SGD on a linear model: each step applies its own gradient, or the sum of all so far."""
    weights = [t.clone() for t in start]
    applied = [torch.zeros_like(t) for t in start]
    for x, y in data:
        leaves = [t.clone().requires_grad_() for t in weights]
        grads = torch.autograd.grad(mse_loss(linear(x, *leaves), y), leaves)
        applied = list(grads) if clear else [a + g for a, g in zip(applied, grads, strict=True)]
        weights = [torch.add(w, a, alpha=-LR) for w, a in zip(weights, applied, strict=True)]
    return weights


def train(
    model: nn.Linear, data: list[tuple[torch.Tensor, torch.Tensor]], clear: bool
) -> list[torch.Tensor]:
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for x, y in data:
        if clear:
            opt.zero_grad()
        mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach() for p in model.parameters()]


def test_a_loop_that_never_clears_steps_with_the_sum_of_all_past_gradients() -> None:
    model, data = nn.Linear(3, 1), batches(5)
    start = [p.detach().clone() for p in model.parameters()]
    trained = train(model, data, clear=False)
    for got, expected in zip(trained, by_hand(data, start, clear=False), strict=True):
        assert torch.equal(got, expected)


def test_sgd_ends_elsewhere_without_clearing_and_as_computed_by_hand_with_it() -> None:
    data = batches(5)
    model = nn.Linear(3, 1)
    start = [p.detach().clone() for p in model.parameters()]
    other = nn.Linear(3, 1)
    other.load_state_dict(model.state_dict())
    cleared = train(model, data, clear=True)
    stale = train(other, data, clear=False)
    for got, expected in zip(cleared, by_hand(data, start, clear=True), strict=True):
        assert torch.equal(got, expected)
    assert not torch.allclose(cleared[0], stale[0])


def test_generator_backward_deposits_gradients_into_the_discriminator() -> None:
    net_g, net_d = nn.Linear(2, 3), nn.Linear(3, 1)
    err_g = net_d(net_g(torch.randn(4, 2))).mean()
    err_g.backward()
    assert net_g.weight.grad.abs().sum() > 0
    assert net_d.weight.grad.abs().sum() > 0  # the residue netD.zero_grad() drops on purpose
    net_d.zero_grad()
    assert net_d.weight.grad is None


def test_a_step_over_shared_parameters_applies_what_another_step_applied_once_a_backward_adds_to_it() -> None:
    x = nn.Parameter(torch.tensor(2.0))
    first, second = torch.optim.SGD([x], lr=LR), torch.optim.SGD([x], lr=LR)
    (x**2).backward()  # 4
    first.step()  # x = 2 - 0.1 * 4
    (3 * x).backward()  # 4 + 3: the first loss's gradient is still there
    second.step()
    assert x.grad == 7
    assert torch.isclose(x, torch.tensor(2.0 - LR * 4 - LR * 7))


def test_clip_grad_norm_rescales_in_place_and_bumps_the_version_even_by_one() -> None:
    model = nn.Linear(3, 1)
    model(torch.randn(4, 3)).sum().backward()
    grad, version, before = model.weight.grad, model.weight.grad._version, model.weight.grad.clone()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e6)  # factor clamped to 1
    assert model.weight.grad is grad
    assert grad._version > version
    assert torch.equal(grad, before)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-3)
    assert model.weight.grad is grad
    assert torch.count_nonzero(grad) == grad.numel()  # rescaled, not cleared


def test_grad_scaler_style_division_is_in_place() -> None:
    model = nn.Linear(3, 1)
    model(torch.randn(4, 3)).sum().backward()
    grad, version, before = model.weight.grad, model.weight.grad._version, model.weight.grad.clone()
    grad.div_(1.0)
    assert model.weight.grad is grad
    assert grad._version > version
    assert torch.equal(grad, before)


def test_grad_scaler_unscale_divides_in_place() -> None:
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
    scaler.scale(model(torch.randn(4, 3)).sum()).backward()
    grad, scaled = model.weight.grad, model.weight.grad.clone()
    scaler.unscale_(opt)
    assert model.weight.grad is grad
    assert torch.equal(grad, scaled / 8)


def test_grad_scaler_divides_stale_gradients_again_at_every_step() -> None:
    p = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=LR)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    for k in (1, 2):  # no clear: the second step applies 2 + 1/1024, not 2 + 1
        scaler.scale(k * p.sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert p.grad.item() == 2 + 1 / 1024


def test_adam_moves_weights_on_zeroed_gradients_but_not_on_none() -> None:
    p = nn.Parameter(torch.ones(1))
    opt = torch.optim.Adam([p], lr=LR)
    p.sum().backward()
    opt.step()
    after_first = p.detach().clone()
    opt.zero_grad(set_to_none=False)
    opt.step()  # momentum still moves it
    assert not torch.equal(p, after_first)
    moved = p.detach().clone()
    opt.zero_grad()
    opt.step()
    assert torch.equal(p, moved)
