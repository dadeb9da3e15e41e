"""Gradient accumulation done right: k micro-batches per step, the loss scaled by 1/k, and the
clear inside the step's block. zerograd-lint reports nothing here."""

import torch
from torch import nn

ACCUMULATION_STEPS = 4


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=10)
    batches = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(32)]

    for step, (x, y) in enumerate(batches):
        loss = nn.functional.mse_loss(model(x), y) / ACCUMULATION_STEPS
        loss.backward()
        if (step + 1) % ACCUMULATION_STEPS == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
