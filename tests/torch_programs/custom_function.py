"""A PyTorch-style custom autograd Function and Dataset, with torch.utils.data and torch.autograd imports."""
import sys

import torch
from torch.autograd import Function
from torch.utils.data import DataLoader, Dataset


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * grad


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return torch.tensor(float(i)), torch.tensor(float(i * i))


device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
x = torch.linspace(-1, 1, 5, device=device, requires_grad=True)
Cube.apply(x).sum().backward()
ok = torch.allclose(x.grad, 3 * x.detach() ** 2)
total = sum(float(b[1].sum()) for b in DataLoader(Squares(), batch_size=4))
print(f"grad ok {ok}; total {total:.0f}")
print("pytorch loaded:", "torch._C" in sys.modules)
