"""A small, correct training script: clear, forward, backward, step, once per batch.

zerograd-lint reports nothing here.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.layers(x)


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    total = 0.0
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(256, 20), torch.randint(0, 3, (256,)))
    loader = DataLoader(data, batch_size=32, shuffle=True)
    model = MLP(20, 64, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        print(f"epoch {epoch}: loss {train_epoch(model, loader, optimizer, criterion):.4f}")


if __name__ == "__main__":
    main()
