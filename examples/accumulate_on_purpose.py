"""A loop that accumulates across steps on purpose says so, and zerograd-lint believes it.

Here every step applies the running sum of all gradients seen so far (a crude momentum). The
`# zerograd: accumulate` marker on the line above the loop suppresses ZG001 for that loop only.
"""

import torch
from torch import nn


def main() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(10)]

    optimizer.zero_grad()
    # zerograd: accumulate
    for x, y in data:
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


if __name__ == "__main__":
    main()
