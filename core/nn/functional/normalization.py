"""Batch, layer, group and instance normalisation, and ``F.normalize``."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.pointwise import where
from ...tensor import Tensor


def _moments(x, dims):
    mean = x.mean(dims, keepdim=True)
    d = x - mean
    return mean, d, (d * d).mean(dims, keepdim=True)


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _update(running, value, momentum):
    with no_grad():
        running.mul_(1 - momentum).add_(value * momentum)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise over the batch (and spatial) dimensions per channel (dim 1); update running stats in training.

    >>> import ember
    >>> y = ember.nn.functional.batch_norm(ember.tensor([[1.], [3.]]), None, None, training=True)
    >>> [round(v, 3) for v in y.flatten().tolist()]
    [-1.0, 1.0]
    """
    x = input
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"batch_norm: {name} should contain {c} elements not {t.numel()}")
    dims = [0] + list(range(2, x.ndim))
    shape = (1, c) + (1,) * (x.ndim - 2)
    if training or running_mean is None:
        n = x.numel() // c
        if training and n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(x.shape)}")
        mean, d, var = _moments(x, dims)
        if training and running_mean is not None:
            _update(running_mean, mean.detach().reshape(c), momentum)
            _update(running_var, var.detach().reshape(c) * (n / max(n - 1, 1)), momentum)
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
        d = x - mean
    return _affine(d / (var + eps).sqrt(), weight, bias, shape)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-5) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dimensions."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(ns):]) != ns or input.ndim < len(ns):
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    dims = list(range(input.ndim - len(ns), input.ndim))
    _, d, var = _moments(input, dims)
    return _affine(d / (var + eps).sqrt(), weight, bias, ns)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-5) -> Tensor:
    """Normalise over groups of channels (and all spatial positions) per sample."""
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by num_groups, but "
                           f"got input of shape {list(input.shape)} and num_groups={num_groups}")
    g = input.reshape(n, num_groups, -1)
    _, d, var = _moments(g, [2])
    y = (d / (var + eps).sqrt()).reshape(input.shape)
    return _affine(y, weight, bias, (1, c) + (1,) * (input.ndim - 2))


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,  # noqa: A002
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample over its spatial positions."""
    n, c = input.shape[:2]
    dims = list(range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if use_input_stats:
        m = input[0, 0].numel()
        mean, d, var = _moments(input, dims)
        if running_mean is not None:
            _update(running_mean, mean.detach().reshape(n, c).mean(0), momentum)
            _update(running_var, var.detach().reshape(n, c).mean(0) * (m / max(m - 1, 1)), momentum)
    else:
        var = running_var.reshape(shape)
        d = input - running_mean.reshape(shape)
    return _affine(d / (var + eps).sqrt(), weight, bias, shape)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,  # noqa: A002
                        k: float = 1.0) -> Tensor:
    from .padding import pad
    from .pooling import avg_pool2d

    sq = (input * input).unsqueeze(1)
    sq = pad(sq.reshape(sq.shape[0], 1, sq.shape[2], -1), (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(sq, (size, 1), stride=1).reshape(input.shape)
    return input / (div * alpha + k) ** beta


def _pnorm(x, p, dim, keepdim=True):
    if p == 2:
        return (x * x).sum(dim, keepdim=keepdim).sqrt()
    if p == 1:
        return x.abs().sum(dim, keepdim=keepdim)
    return (x.abs() ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:  # noqa: A002
    """``x / max(||x||_p, eps)`` along ``dim``.

    >>> import ember
    >>> ember.nn.functional.normalize(ember.tensor([[3., 4.]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    n = _pnorm(input, p, dim)
    return input / where(n > eps, n, n.new_full((), eps))
