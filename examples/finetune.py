"""Finetuning: reuse a trained feature extractor, freeze it, train a new head; per-group learning rates.

    python examples/finetune.py

Step 1 trains a small network on the digits 0-4 and saves its ``state_dict``.  Step 2 loads those
weights into a new network for all ten digits, freezes the features (``requires_grad = False``),
replaces the classifier and optimizes only it.  Step 3 unfreezes everything and gives each
sub-network its own learning rate through parameter groups (the groups without ``lr`` fall back to
the optimizer's default).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import optim
from ember.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _needs import need  # noqa: E402


class Net(nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Linear(16 * 2 * 2, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def digits(keep=None):
    load_digits = need("sklearn.datasets").load_digits

    d = load_digits()
    mask = np.ones(len(d.target), bool) if keep is None else np.isin(d.target, keep)
    x = ember.from_numpy((d.images[mask] / 16.0).astype(np.float32)[:, None])
    y = ember.from_numpy(d.target[mask].astype(np.int64))
    return x, y


def fit(model, optimizer, x, y, epochs: int) -> float:
    dev = next(model.parameters()).device  # the batches go where the model is (the default device)
    x, y = x.to(dev), y.to(dev)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
    with ember.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main(epochs: int = 3, out_dir: str | None = None) -> dict:
    ember.manual_seed(0)
    path = os.path.join(out_dir or tempfile.mkdtemp(), "pretrained.pt")

    # 1. pretrain on five classes and save the weights
    base = Net(classes=5)
    acc = fit(base, optim.Adam(base.parameters(), lr=3e-3), *digits(keep=[0, 1, 2, 3, 4]), epochs)
    ember.save(base.state_dict(), path)
    print(f"pretrained on digits 0-4: train accuracy {acc:.3f}; weights saved to {path}")

    # 2. new model: pretrained features, frozen; a new classifier for ten classes
    model = Net(classes=10)
    state = {k: v for k, v in ember.load(path).items() if k.startswith("features.")}
    model.load_state_dict(state, strict=False)
    for param in model.features.parameters():
        param.requires_grad = False
    frozen_before = [p.detach().clone() for p in model.features.parameters()]
    optimizer = optim.SGD(model.classifier.parameters(), lr=1e-2, momentum=0.9)
    x, y = digits()
    acc_head = fit(model, optimizer, x, y, epochs)
    unchanged = all(bool((a == b).all()) for a, b in zip(frozen_before, model.features.parameters()))
    print(f"head only (features frozen, unchanged: {unchanged}): accuracy {acc_head:.3f}")

    # 3. unfreeze; a small learning rate for the features, a larger one for the classifier
    for param in model.features.parameters():
        param.requires_grad = True
    optimizer = optim.SGD([
        {"params": model.features.parameters()},               # the default lr below: 1e-2
        {"params": model.classifier.parameters(), "lr": 5e-2},
    ], lr=1e-2, momentum=0.9)
    print("learning rates per group:", [g["lr"] for g in optimizer.param_groups])
    acc_all = fit(model, optimizer, x, y, epochs)
    print(f"all layers, per-group learning rates: accuracy {acc_all:.3f}")
    return {"pretrain_acc": acc, "head_acc": acc_head, "frozen_unchanged": unchanged, "final_acc": acc_all,
            "group_lrs": [g["lr"] for g in optimizer.param_groups]}


def cli(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3, help="epochs for each of the three steps")
    p.add_argument("--out-dir", default=None, help="where the pretrained weights go (default: a new temporary "
                                                     "directory)")
    args = p.parse_args(argv)
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
    return main(args.epochs, args.out_dir)


if __name__ == "__main__":
    cli(sys.argv[1:])
