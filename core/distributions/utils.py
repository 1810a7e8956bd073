"""Helpers shared by the distributions: broadcasting parameters, probabilities <-> logits, lazy properties."""
from __future__ import annotations

from numbers import Number

import ember
from ember.tensor import Tensor

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers take the dtype and device of the first tensor.

    >>> a, b = broadcast_all(ember.zeros(2, 1), 1.0)
    >>> tuple(b.shape)
    (2, 1)
    """
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, ember.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        ref = next((v for v in values if isinstance(v, Tensor)), None)
        opts = {"dtype": ember.get_default_dtype()} if ref is None else {"dtype": ref.dtype, "device": ref.device}
        values = [v if isinstance(v, Tensor) else ember.tensor(v, **opts) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim: int):
    """Sum the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: sigmoid for binary, softmax over the last dimension otherwise."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


_FINFO: dict = {}


def finfo_of(dtype):
    """``ember.finfo(dtype)``, made once per dtype (the hot paths of tiny distributions ask for it every call)."""
    info = _FINFO.get(dtype)
    if info is None:
        info = _FINFO[dtype] = ember.finfo(dtype)
    return info


def clamp_probs(probs):
    """Clamp probabilities into the open interval ``(eps, 1 - eps)`` of their dtype."""
    eps = finfo_of(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities (log-odds for binary, log-probabilities otherwise)."""
    ps = clamp_probs(probs)
    if is_binary:
        return ember.log(ps) - ember.log1p(-ps)
    return ember.log(ps)


class lazy_property:
    """A property computed on first access and then stored on the instance (replacing the descriptor)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:  # (made once: argument validation asks the class for it at every construction)
            view = self.__dict__.get("_class_view")
            if view is None:
                view = self._class_view = _lazy_property_and_property(self.wrapped)
            return view
        if ember.is_grad_enabled():
            value = self.wrapped(instance)
        else:
            with ember.enable_grad():
                value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: a property too, so introspection sees one."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower triangle (from diagonal ``diag``) of the last two dimensions, as a vector."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    mask = ember.ones(n, n, dtype=ember.bool, device=mat.device).tril(diag)
    return mat[..., mask]


def _tril_count(n: int, diag: int) -> int:
    return sum(min(max(i + diag + 1, 0), n) for i in range(n))


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of :func:`tril_matrix_to_vec`: a lower-triangular matrix from its packed entries."""
    size = vec.shape[-1]
    n = 1
    while _tril_count(n, diag) < size:
        n += 1
    if _tril_count(n, diag) != size:
        raise ValueError(f"vec of size {size} does not fill the lower triangle (diag={diag}) of any square matrix")
    mask = ember.ones(n, n, dtype=ember.bool, device=vec.device).tril(diag)
    out = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    out[..., mask] = vec
    return out
