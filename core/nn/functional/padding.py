"""``F.pad``: constant padding as one op (its gradient crops), the other modes as index selection."""
from __future__ import annotations

import numpy as np

from ...autograd.function import Op
from ...dispatch import apply
from ...tensor import Tensor

_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


class ConstantPad(Op):
    backward_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, k, x, pairs, value):
        ctx.crop = (Ellipsis,) + tuple(slice(lo, lo + s) for (lo, _), s in zip(pairs, x.shape[x.ndim - len(pairs):]))
        return k["constant_pad"](x, pairs, value)

    @staticmethod
    def backward(ctx, g):
        return g[ctx.crop]


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    """Pad the last ``len(pad) // 2`` dimensions: ``pad = (left_last, right_last, left_prev, right_prev, ...)``.

    >>> import ember
    >>> ember.nn.functional.pad(ember.ones(1, 2), (1, 1)).tolist()
    [[0.0, 1.0, 1.0, 0.0]]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' must be Tensor, not {type(input).__name__}")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"pad: Padding length must be divisible by 2 and at most twice the number of dimensions "
                           f"of the input ({input.ndim}), got {len(pad)}")
    n = len(pad) // 2
    pairs = tuple((int(pad[2 * i]), int(pad[2 * i + 1])) for i in reversed(range(n)))
    if mode == "constant":
        if any(lo < 0 or hi < 0 for lo, hi in pairs):
            crop = tuple(slice(max(-lo, 0), s - max(-hi, 0)) for (lo, hi), s in zip(pairs, input.shape[-n:]))
            input = input[(Ellipsis,) + crop]
            pairs = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pairs)
        return apply(ConstantPad, input, pairs, 0.0 if value is None else value)
    if mode not in _MODES:
        raise NotImplementedError(f"pad: unsupported padding mode {mode!r}; expected one of constant, reflect, "
                                  f"replicate, circular")
    from ...ops.creation import tensor

    out = input
    for i, (lo, hi) in enumerate(pairs):
        dim = input.ndim - n + i
        size = input.shape[dim]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"pad: Padding size should be less than the corresponding input dimension, but got: "
                               f"padding ({lo}, {hi}) at dimension {dim} of input {list(input.shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError(f"pad: Padding value causes wrapping around more than once: ({lo}, {hi}) at "
                               f"dimension {dim} of input {list(input.shape)}")
        idx = np.pad(np.arange(size), (lo, hi), mode=_MODES[mode])
        out = out.index_select(dim, tensor(idx, device=input.device))
    return out
