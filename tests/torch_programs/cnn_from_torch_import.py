"""A PyTorch-style CNN: ``from torch import nn, optim``, a Module subclass, state_dict save and load."""
import os
import sys
import tempfile

import torch
from torch import nn, optim
from torch.nn import functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return self.fc(torch.flatten(x, 1))


device = torch.device(sys.argv[1] if len(sys.argv) > 1 else "cpu")
torch.manual_seed(1)
net = Net().to(device)
opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(24, 1, 8, 8, device=device)
y = torch.arange(24, device=device) % 3
first = None
for _ in range(30):
    opt.zero_grad()
    loss = nn.CrossEntropyLoss()(net(x), y)
    loss.backward()
    opt.step()
    first = loss.item() if first is None else first
path = os.path.join(tempfile.mkdtemp(), "net.pt")
torch.save(net.state_dict(), path)
net2 = Net().to(device)
net2.load_state_dict(torch.load(path, map_location=device))
same = torch.equal(net(x), net2(x))
print(f"loss {first:.3f} -> {loss.item():.3f}; reloaded equal {same}")
print("pytorch loaded:", "torch._C" in sys.modules)
