"""Linear maps, embeddings, one-hot and dropout."""
from __future__ import annotations

from ...autograd.function import Op
from ...autograd.grad_mode import no_grad
from ...dispatch import apply
from ...ops.pointwise import where
from ...tensor import Tensor


class Linear(Op):
    """``x @ w.T + b`` in one GEMM; the gradient flattens leading dimensions into one GEMM each."""

    backward_name = "AddmmBackward0"
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, w, b):
        y = k["matmul"](x, w.T)
        if b is not None:
            y += b
        return y

    @staticmethod
    def backward(ctx, g):
        ins = ctx.inputs
        x, w = ins[0], ins[1]
        nf = ctx.next_functions
        gx = g.matmul(w) if nf[0][0] is not None else None
        g2 = g.reshape(-1, g.shape[-1]) if g.ndim != 2 else g
        gw = g2.t().matmul(x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x) if nf[1][0] is not None else None
        if len(ins) == 2:
            return gx, gw
        return gx, gw, g2.sum(0) if nf[2][0] is not None else None


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """``input @ weight.T + bias``.

    >>> import ember
    >>> ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
    ember.Size([2, 4])
    """
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"linear(): expected Tensor input and weight, got {type(input).__name__} and "
                        f"{type(weight).__name__}")
    if input.ndim == 0 or weight.ndim not in (1, 2) or input.shape[-1] != weight.shape[-1]:
        a = f"{max(input.numel() // max(input.shape[-1], 1), 1)}x{input.shape[-1] if input.ndim else 1}" \
            if input.ndim else "scalar"
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({a} and "
                           f"{'x'.join(str(s) for s in reversed(weight.shape))}): input of size {list(input.shape)} "
                           f"expects its last dimension to be in_features={weight.shape[-1]}")
    if input.dtype is not weight.dtype or (bias is not None and bias.dtype is not input.dtype):
        raise RuntimeError(f"linear: expected m1 and m2 to have the same dtype, but got: {input.dtype} != "
                           f"{weight.dtype}")
    if weight.ndim == 1:
        out = input.matmul(weight)
        return out + bias if bias is not None else out
    return apply(Linear, input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1 @ W_k @ x2 + b_k`` for weight ``(out, in1, in2)``."""
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear: input1 of size {list(input1.shape)} and input2 of size {list(input2.shape)} "
                           f"do not match weight of size {list(weight.shape)} (expected last dimensions "
                           f"{weight.shape[1]} and {weight.shape[2]})")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    t = x1.matmul(weight.permute(1, 0, 2).reshape(weight.shape[1], -1))
    out = (t.reshape(x1.shape[0], weight.shape[0], weight.shape[2]) * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(tuple(lead) + (weight.shape[0],))


# --------------------------------------------------------------------------- embeddings
def _index_tensor(idx, op):
    if not isinstance(idx, Tensor) or idx.dtype.category > 1 or idx.dtype.name == "bool":
        raise RuntimeError(f"{op}: Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {getattr(idx, 'dtype', type(idx).__name__)} instead")
    return idx


def _renorm_rows(weight, idx, max_norm, norm_type):
    with no_grad():
        rows = weight.index_select(0, idx)
        norms = (rows.abs() ** norm_type).sum(-1, keepdim=True) ** (1.0 / norm_type)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), norms.new_ones(()))
        weight.data.index_copy_(0, idx, rows * scale)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,  # noqa: A002
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by integer ``input``; the ``padding_idx`` row gets no gradient.

    >>> import ember
    >>> ember.nn.functional.embedding(ember.tensor([2, 0]), ember.eye(3)).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    idx = _index_tensor(input, "embedding")
    n = weight.shape[0]
    flat = idx.reshape(-1)
    if flat.numel():
        lo, hi = int(flat.cpu().numpy().min()), int(flat.cpu().numpy().max())
        if lo < -n or hi >= n:
            raise IndexError(f"embedding: index out of range in self (indices span [{lo}, {hi}] for a weight of "
                             f"{n} rows)")
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    out = weight.index_select(0, flat)
    if padding_idx is not None:
        pad = padding_idx + n if padding_idx < 0 else padding_idx
        keep = (flat != pad).unsqueeze(-1)
        out = where(keep, out, out.detach())
    return out.reshape(tuple(idx.shape) + (weight.shape[1],))


class EmbeddingBagSegments(Op):
    @staticmethod
    def forward(ctx, k, offsets, n, keep):
        return k["embedding_bag_segments"](offsets, n, keep)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm=None,  # noqa: A002
                  norm_type=2, scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None) -> Tensor:
    """Sums or means of bags of embeddings: ``input`` 2-D (one bag per row) or 1-D with ``offsets``."""
    from ...ops.creation import arange

    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: if input is 2D, then offsets has to be None")
        b, length = input.shape
        offsets = arange(0, b * length, length, device=input.device)
        input = input.reshape(-1)
    else:
        if offsets is None:
            raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
        if include_last_offset:
            offsets = offsets[:-1]
    emb = embedding(input, weight, padding_idx, max_norm, norm_type)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      "supported for mode='sum'")
        emb = emb * per_sample_weights.unsqueeze(-1)
    n, bags, width = input.shape[0], offsets.shape[0], weight.shape[1]
    keep = None if padding_idx is None else (input != padding_idx).unsqueeze(1)
    bag, counts = apply(EmbeddingBagSegments, offsets.detach(), n, None if keep is None else keep.reshape(-1))
    if mode == "max":
        init = emb.new_full((bags, width), float("-inf"))
        kept = emb if keep is None else where(keep, emb, init[:1])
        out = init.scatter_reduce(0, bag.unsqueeze(1).expand(n, width), kept, "amax", include_self=False)
        return where((counts == 0).unsqueeze(1), out.new_zeros(()), out)
    out = emb.new_zeros((bags, width)).index_add(0, bag, emb if keep is None else where(keep, emb, 0))
    return out / counts.clamp(min=1).unsqueeze(1).to(out.dtype) if mode == "mean" else out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Integer class indices to a ``(..., num_classes)`` int64 one-hot tensor.

    >>> import ember
    >>> ember.nn.functional.one_hot(ember.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    from ...ops.creation import arange

    idx = _index_tensor(tensor, "one_hot")
    if num_classes < 0:
        num_classes = int(idx.cpu().numpy().max()) + 1 if idx.numel() else 0
    elif idx.numel() and (int(idx.cpu().numpy().max()) >= num_classes or int(idx.cpu().numpy().min()) < 0):
        raise RuntimeError("one_hot: Class values must be smaller than num_classes.")
    return (idx.unsqueeze(-1) == arange(num_classes, device=idx.device)).long()


# --------------------------------------------------------------------------- dropout
def _check_p(p, op):
    if p < 0 or p > 1:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(x, shape, p):
    from ...ops.creation import rand

    return (rand(shape, dtype=x.dtype, device=x.device) >= p).to(x.dtype)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``, only when ``training``.

    >>> import ember
    >>> ember.nn.functional.dropout(ember.ones(3), 0.5, training=False).tolist()
    [1.0, 1.0, 1.0]
    """
    _check_p(p, "dropout")
    if not training or p == 0:
        return input
    out = input * 0.0 if p == 1 else input * (_keep_mask(input, input.shape, p) * (1.0 / (1 - p)))
    return input.copy_(out) if inplace else out


def _feature_dropout(op, x, p, training, inplace, min_dim):
    _check_p(p, op)
    if not training or p == 0:
        return x
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if x.ndim >= min_dim else (x.shape[0],) + (1,) * (x.ndim - 1)
    out = x * 0.0 if p == 1 else x * (_keep_mask(x, shape, p) * (1.0 / (1 - p)))
    return x.copy_(out) if inplace else out


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels (``(N, C, H, W)``) with probability ``p``."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 4)


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout("dropout3d", input, p, training, inplace, 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:  # noqa: A002
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check_p(p, "alpha_dropout")
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0.0
    alpha = -1.7580993408473766
    keep = _keep_mask(input, input.shape, p)
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    out = (input * keep + (1 - keep) * alpha) * a + b
    return input.copy_(out) if inplace else out
