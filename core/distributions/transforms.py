"""Invertible transforms with log-Jacobians, for :class:`TransformedDistribution` and ``biject_to``.

>>> t = ExpTransform()
>>> x = ember.tensor([0.0, 1.0])
>>> bool((t.inv(t(x)) - x).abs().max() < 1e-6)
True
"""
from __future__ import annotations

import math
from numbers import Number

import ember
import ember.nn.functional as F

from . import constraints
from .utils import _sum_rightmost, broadcast_all, lazy_property, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
           "SoftplusTransform", "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]


class Transform:
    """An invertible map ``x -> y`` with ``domain``, ``codomain`` and ``log_abs_det_jacobian(x, y)``.

    ``cache_size=1`` remembers the last ``(x, y)`` pair, so ``t.inv(t(x))`` returns ``x`` itself.
    """

    bijective = False

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        if cache_size == 1:
            self._cached_x_y = None, None
        super().__init__()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform (``t.inv.inv is t``)."""
        inv = self._inv
        if inv is None:
            inv = self._inv = _InverseTransform(self)
        return inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._through_cache(x, 0, self._call)

    def _inv_call(self, y):
        return self._through_cache(y, 1, self._inverse)

    def _through_cache(self, value, side, compute):
        """``compute(value)``; with a cache, the other member of the cached ``(x, y)`` pair when ``value`` is its
        member ``side`` (0: x, 1: y), else the result, cached with ``value``."""
        if self._cache_size == 0:
            return compute(value)
        pair = self._cached_x_y
        if value is pair[side]:
            return pair[1 - side]
        result = compute(value)
        self._cached_x_y = (value, result) if side == 0 else (result, value)
        return result

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """``log |dy/dx|`` (summed over the transform's event dimensions)."""
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """The transforms of ``parts`` applied in order."""

    def __init__(self, parts, cache_size: int = 0):
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @lazy_property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @lazy_property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self._inv
        if inv is None:
            inv = self._inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            inv._inv = self
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total = 0
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + _sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        return self.__class__.__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more dimensions counted as event dimensions."""

    def __init__(self, base_transform, reinterpreted_batch_ndims: int, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dimensions to ``out_shape``."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape, self.out_shape = ember.Size(in_shape), ember.Size(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        return x.reshape(tuple(x.shape[:x.dim() - len(self.in_shape)]) + tuple(self.out_shape))

    def _inverse(self, y):
        return y.reshape(tuple(y.shape[:y.dim() - len(self.out_shape)]) + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def _reshaped(self, shape, src, dst):
        if len(shape) < len(src):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(src)
        if tuple(shape[cut:]) != tuple(src):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(src)}")
        return ember.Size(tuple(shape[:cut]) + tuple(dst))

    def forward_shape(self, shape):
        return self._reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshaped(shape, self.out_shape, self.in_shape)


def _all_instances_equal(cls):
    """Class decorator for a transform without parameters: every instance of ``cls`` equals every other."""
    cls.__eq__ = lambda self, other: isinstance(other, cls)  # hashing stays by identity, as for every Transform
    return cls


@_all_instances_equal
class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, tuple(self.exponent.shape))

    def inverse_shape(self, shape):
        return ember.broadcast_shapes(shape, tuple(self.exponent.shape))


def _clipped_sigmoid(x):
    finfo = ember.finfo(x.dtype)
    return ember.sigmoid(x).clamp(min=finfo.tiny, max=1.0 - finfo.eps)


@_all_instances_equal
class SigmoidTransform(Transform):
    """``y = sigmoid(x)`` (kept inside ``(0, 1)`` in finite precision)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        finfo = ember.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


@_all_instances_equal
class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


@_all_instances_equal
class TanhTransform(Transform):
    """``y = tanh(x)``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) in a stable form
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


@_all_instances_equal
class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse picks the positive branch)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``event_dim`` says how many rightmost dimensions form an event."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, Number) and isinstance(b, Number):
                if a != b:
                    return False
            elif not bool((a == b).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, Number):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, Number):
            result = ember.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[:-self.event_dim]) + (-1,)).sum(-1)
            shape = shape[:-self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, tuple(getattr(self.loc, "shape", ())),
                                      tuple(getattr(self.scale, "shape", ())))

    inverse_shape = forward_shape


@_all_instances_equal
class CorrCholeskyTransform(Transform):
    """Unconstrained vectors of length ``D(D-1)/2`` to Cholesky factors of ``D x D`` correlation matrices
    (tanh, then a signed stick-breaking of each row to unit norm)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        x = ember.tanh(x)
        eps = ember.finfo(x.dtype).eps
        x = x.clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z1m_cumprod_sqrt = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * F.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        y_cumsum = 1 - ember.cumsum(y * y, dim=-1)
        y_cumsum_shifted = F.pad(y_cumsum[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(y_cumsum_shifted, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        stick_breaking_logdet = 0.5 * tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return ember.Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return ember.Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


@_all_instances_equal
class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by ``exp`` and normalisation (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()


@_all_instances_equal
class StickBreakingTransform(Transform):
    """Vectors of length ``K - 1`` to the ``K``-simplex by stick breaking (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    @staticmethod
    def _offset(x, k):
        return k - x.new_ones(x.shape[-1]).cumsum(-1)

    def _call(self, x):
        z = _clipped_sigmoid(x - self._offset(x, x.shape[-1] + 1).log())
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        sf = (1 - y_crop.cumsum(-1)).clamp(min=ember.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + self._offset(y_crop, y.shape[-1]).log()

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x, x.shape[-1] + 1).log()
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return ember.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return ember.Size(tuple(shape[:-1]) + (shape[-1] - 1,))


@_all_instances_equal
class LowerCholeskyTransform(Transform):
    """Unconstrained matrices to lower-triangular ones with a positive (exponentiated) diagonal."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


@_all_instances_equal
class PositiveDefiniteTransform(Transform):
    """Unconstrained matrices to positive-definite ones: ``L L^T`` of :class:`LowerCholeskyTransform`."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


class CatTransform(Transform):
    """The transforms ``tseq`` applied to consecutive blocks (of ``lengths``) along ``dim``."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, x, name):
        if not -x.dim() <= self.dim < x.dim():
            raise ValueError(f"dim {self.dim} out of range for {name} with {x.dim()} dimensions")
        if x.shape[self.dim] != self.length:
            raise ValueError(f"{name}.size({self.dim}) = {x.shape[self.dim]} must equal length {self.length}")

    def _blocks(self, x):
        start = 0
        for length in self.lengths:
            yield x.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        self._check(x, "x")
        return ember.cat([t(b) for t, b in zip(self.transforms, self._blocks(x))], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y")
        return ember.cat([t.inv(b) for t, b in zip(self.transforms, self._blocks(y))], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x")
        self._check(y, "y")
        parts = []
        for t, xb, yb in zip(self.transforms, self._blocks(x), self._blocks(y)):
            ld = t.log_abs_det_jacobian(xb, yb)
            if t.event_dim < self.event_dim:
                ld = _sum_rightmost(ld, self.event_dim - t.event_dim)
            parts.append(ld)
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return ember.cat(parts, dim=dim) if dim < 0 else sum(parts)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """The transforms ``tseq`` applied to the slices along ``dim``."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        return ember.stack([t(v) for v, t in zip(self._slice(x), self.transforms)], dim=self.dim)

    def _inverse(self, y):
        return ember.stack([t.inv(v) for v, t in zip(self._slice(y), self.transforms)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        return ember.stack([t.log_abs_det_jacobian(a, b)
                            for a, b, t in zip(self._slice(x), self._slice(y), self.transforms)], dim=self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: from the distribution's support to the unit interval."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
