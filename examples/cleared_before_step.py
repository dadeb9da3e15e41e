"""ZG002 cleared-before-step: the clear sits between backward and step, so every step applies
nothing (with set_to_none=True the optimizer skips every parameter). The model never learns."""

import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def training_step(self, x, y) -> float:
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.zero_grad(set_to_none=True)
        self.optimizer.step()
        return loss.item()

    def fit(self, batches) -> None:
        for x, y in batches:
            self.training_step(x, y)


if __name__ == "__main__":
    torch.manual_seed(0)
    Trainer(nn.Linear(8, 3)).fit([(torch.randn(4, 8), torch.randint(0, 3, (4,))) for _ in range(20)])
