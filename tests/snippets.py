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

# The same, with the loss on one line: ZG001 at 4:1.
STALE_BRIEF = """\
import torch
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in data:
    model(x).sum().backward()
    optimizer.step()
"""

# A clear before every backward of a window that steps every fourth: ZG003 at 1:1.
DISCARDED = """\
for i, (x, y) in enumerate(data):
    optimizer.zero_grad()
    model(x).sum().backward()
    if (i + 1) % 4 == 0:
        optimizer.step()
"""

# A clean training script with `{padding}` for text that makes it as large as a test needs.
PADDED_SCRIPT = """import torch

model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
{padding}

def train(loader):
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
"""
