"""A custom autograd Function: a linear layer with a hand-written backward, checked by gradcheck.

    python examples/custom_function.py

The ctx style (``save_for_backward``, ``needs_input_grad``, ``Function.apply``) is the one to use; the
legacy instance style of older PyTorch code also runs, with a deprecation warning.
"""
from __future__ import annotations

import ember
from ember.autograd import Function, gradcheck


class LinearFunction(Function):
    """``input @ weight.T + bias`` with its gradients written out."""

    @staticmethod
    def forward(ctx, input, weight, bias=None):  # noqa: A002 - PyTorch's argument name
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


def linear(input, weight, bias=None):  # noqa: A002
    """The Function behind a plain function, as ``torch.nn.functional.linear`` would be."""
    return LinearFunction.apply(input, weight, bias)


def main() -> dict:
    ember.manual_seed(0)
    x = ember.randn(5, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, dtype=ember.float64, requires_grad=True)
    ok = gradcheck(linear, (x, w, b), eps=1e-6, atol=1e-4)
    print(f"gradcheck of LinearFunction: {ok}")

    out = linear(x, w, b).sum()
    out.backward()
    reference = (x.detach().mm(w.detach().t()) + b.detach()).sum()
    print(f"output {out.item():.6f} (reference {reference.item():.6f}); grad_fn {type(out.grad_fn).__name__}")
    print(f"bias gradient {b.grad.tolist()} (each is the batch size, 5)")
    return {"gradcheck": ok, "output": out.item(), "reference": reference.item(), "bias_grad": b.grad.tolist()}


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.splitlines()[0] + " It writes no files.").parse_args()
    main()
