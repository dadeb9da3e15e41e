"""ZG001: the loop never clears, so each step applies every earlier gradient again."""
import torch

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(4)]

for x, y in data:
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()

for epoch in range(3):
    optimizer.zero_grad()  # once per epoch: the steps after the first reapply old gradients
    for x, y in data:
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
