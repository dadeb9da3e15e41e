"""ZG003 accumulation-discarded: the step waits for four micro-batches, but the clear at the top
runs on every iteration, so each step sees one micro-batch scaled by 1/4."""

import torch
from torch import nn

ACCUMULATION_STEPS = 4


def main() -> None:
    torch.manual_seed(0)
    model = nn.Linear(12, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(8, 12), torch.randint(0, 2, (8,))) for _ in range(16)]

    for i, (x, y) in enumerate(batches):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y) / ACCUMULATION_STEPS
        loss.backward()
        if (i + 1) % ACCUMULATION_STEPS == 0:
            optimizer.step()


if __name__ == "__main__":
    main()
