"""A tiny model trained with plain tensors: the loss printed each step falls. It writes no files."""
import argparse

import ember


def main(steps: int = 60) -> None:
    ember.manual_seed(0)
    x = ember.randn(256, 4)
    true_w = ember.tensor([[1.5], [-2.0], [0.5], [3.0]])
    y = x @ true_w + 0.1 * ember.randn(256, 1)
    w = ember.zeros(4, 1, requires_grad=True)
    b = ember.zeros(1, requires_grad=True)
    for step in range(steps):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        with ember.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
            w.grad = None
            b.grad = None
        if step % 10 == 0 or step == steps - 1:
            print(f"step {step:3d}  loss {loss.item():.4f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    main(ap.parse_args().steps)
