"""Per-sample gradients with ``vmap``, ``grad`` and ``functional_call``, checked against a per-example loop.

    python examples/per_sample_grads.py [--batch 32] [--device cpu] [--repeat 3]

Differential privacy (clipping each example's gradient), influence estimates and gradient-noise studies
need the gradient of every example, not the batch's sum.  A loop over the examples costs one
forward/backward each; ``vmap(grad(loss))`` gets all of them from one batched forward and backward:
the model's parameters are shared (``in_dims=None``), the data and targets are mapped (``in_dims=0``),
and ``functional_call`` runs the model with the parameters given as an argument.
"""
from __future__ import annotations

import argparse
import time

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.func import functional_call, grad, vmap


class SmallCNN(nn.Module):
    """A small convolutional classifier on 1x12x12 inputs."""

    def __init__(self, classes: int = 5):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.fc1 = nn.Linear(8 * 6 * 6, 32)
        self.fc2 = nn.Linear(32, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def per_example_loop(model, data, targets):
    """The reference: one forward and backward per example."""
    grads = {name: [] for name, _ in model.named_parameters()}
    for x, y in zip(data, targets):
        model.zero_grad()
        F.cross_entropy(model(x.unsqueeze(0)), y.unsqueeze(0)).backward()
        for name, p in model.named_parameters():
            grads[name].append(p.grad.clone())
    return {name: ember.stack(g) for name, g in grads.items()}


def vmapped(model, data, targets):
    """All per-example gradients at once."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss(params, buffers, sample, target):
        out = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.cross_entropy(out, target.unsqueeze(0))

    return vmap(grad(loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32, help="examples in the batch (default 32)")
    parser.add_argument("--device", default="cpu", help="device to run on (default cpu)")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions of each method (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    ember.manual_seed(args.seed)
    model = SmallCNN().to(args.device)
    data = ember.randn(args.batch, 1, 12, 12, device=args.device)
    targets = ember.randint(0, 5, (args.batch,), device=args.device)

    times = {}
    for name, method in (("loop", per_example_loop), ("vmap", vmapped)):
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = method(model, data, targets)
            best = min(best, time.perf_counter() - start)
        times[name] = (best, result)

    loop, fast = times["loop"][1], times["vmap"][1]
    worst = max((loop[k] - fast[k]).abs().max().item() for k in loop)
    for name, g in fast.items():
        print(f"{name:12s} per-sample gradient {tuple(g.shape)}")
    print(f"largest difference from the per-example loop: {worst:.2e}")
    print(f"loop {times['loop'][0] * 1e3:.1f} ms, vmap {times['vmap'][0] * 1e3:.1f} ms "
          f"({times['loop'][0] / times['vmap'][0]:.1f}x faster)")
    if worst > 1e-4:
        raise SystemExit("per-sample gradients differ from the per-example loop")
    return worst


if __name__ == "__main__":
    main()
