"""ZG003: the clear runs every iteration, the step every fourth."""
import torch

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(8)]

for i, (x, y) in enumerate(data):
    optimizer.zero_grad()
    (torch.nn.functional.mse_loss(model(x), y) / 4).backward()
    if (i + 1) % 4 == 0:
        optimizer.step()
