"""ZG001 stale-gradients: the loop never clears, so step n applies the sum of steps 1..n.

Nothing crashes; the loss just behaves oddly. Fix: optimizer.zero_grad() once per step.
"""

import torch
from torch import nn


def main() -> None:
    torch.manual_seed(0)
    model = nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(16, 10), torch.randn(16, 1)) for _ in range(50)]

    for epoch in range(5):
        for x, y in data:
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        print(f"epoch {epoch}: last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
