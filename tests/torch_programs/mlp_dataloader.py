"""A PyTorch-style training script: submodule imports, DataLoader, an MLP."""
import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
args = parser.parse_args()

torch.manual_seed(0)
x = torch.randn(128, 4)
y = (x.sum(1) > 0).long()
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2)).to(args.device)
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for _ in range(15):
    for xb, yb in loader:
        xb, yb = xb.to(args.device), yb.to(args.device)
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
with torch.no_grad():
    acc = (model(x.to(args.device)).argmax(1).cpu() == y).float().mean().item()
print(f"accuracy {acc:.3f}")
print("pytorch loaded:", "torch._C" in sys.modules)
