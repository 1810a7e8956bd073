"""Linear algebra: ``matmul`` and friends."""
from __future__ import annotations

from ..autograd.function import Op
from ..dispatch import binary
from ..tensor import Tensor


__all__ = ["matmul", "mm"]


class Matmul(Op):
    save_inputs = True
    backward_name = "MmBackward0"

    @staticmethod
    def forward(ctx, k, x, y):
        return k["matmul"](x, y)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        ga = gb = None
        if a.dim() == 1 and b.dim() == 1:
            return g * b, g * a
        if ctx.next_functions[0][0] is not None:
            if b.dim() == 1:
                ga = g.unsqueeze(-1) * b
            elif a.dim() == 1:
                ga = (g.unsqueeze(-2) @ b.mT).squeeze(-2)
            else:
                ga = g @ b.mT
        if ctx.next_functions[1][0] is not None:
            if a.dim() == 1:
                gb = a.unsqueeze(-1) * g.unsqueeze(-2)
            elif b.dim() == 1:
                gb = (a.mT @ g.unsqueeze(-1)).squeeze(-1)
            else:
                gb = a.mT @ g
        return ga, gb


def matmul(input, other, *, out=None):  # noqa: A002
    """Matrix product with NumPy/PyTorch batching and broadcasting rules.

    >>> import ember
    >>> ember.ones(2, 3) @ ember.ones(3)
    tensor([3., 3.])
    """
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): arguments must be Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if input.dim() == 0 or other.dim() == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {input.dim()}D and "
                           f"{other.dim()}D")
    ka = input.shape[-1]
    kb = other.shape[-2] if other.dim() > 1 else other.shape[0]
    if ka != kb:
        if input.dim() == 2 and other.dim() == 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({input.shape[0]}x{ka} and "
                               f"{other.shape[0]}x{other.shape[1]})")
        raise RuntimeError(f"matmul: size mismatch, got input {list(input.shape)} and other {list(other.shape)} "
                           f"(inner dimensions {ka} and {kb} differ)")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {input.dtype} != {other.dtype}")
    r = binary(Matmul, input, other)
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


def mm(input, mat2, *, out=None):  # noqa: A002
    """Product of two matrices (2-D only)."""
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.dim()}D and {mat2.dim()}D")
    return matmul(input, mat2, out=out)


def _rmatmul(self, other):
    return matmul(other, self)


METHODS = {"matmul": matmul, "__matmul__": matmul, "__rmatmul__": _rmatmul, "mm": mm}
