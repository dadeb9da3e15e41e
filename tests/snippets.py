"""Sources several test modules share."""

# A loop that steps stale gradients: ZG001 at 4:1.
STALE = """\
import torch
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in data:
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
"""
