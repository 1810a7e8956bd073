"""Random sampling ops: in-place fillers (``uniform_``, ``normal_``, ...) and ``bernoulli``, ``multinomial``,
``normal``, ``poisson``, ``randint_like``.  Every draw comes from a device generator (the default one, or
``generator=``), so ``ember.manual_seed`` reproduces it."""
from __future__ import annotations

import math

from .. import dtypes
from ..autograd.function import Op
from ..dispatch import apply
from ..writes import check_inplace, inplace, out_or
from ..random import native
from ..registry import _type_name, export, op_class
from ..tensor import Tensor
from .creation import complex_draw, empty, randint
from .shape import broadcast_tensors

TORCH, TENSOR = ("torch",), ("Tensor",)


class Sampled(Op):
    """Fill ``x`` with ``kernel(generator, shape, dtype, *params)``: the new values carry no gradient to the old.

    ``bernoulli`` takes the probabilities instead, broadcast to ``x``: ``params`` is ``(array, None)`` or
    ``(number, the array dtype to hold it)``.  ``real`` (the real array dtype of a complex ``x``) draws the
    real and imaginary parts as pairs.  A non-contiguous ``x`` gets its draws in memory order, normals one at a
    time, as PyTorch fills one.
    """

    tensor_args = True  # params are data of the draw, not inputs
    tags = ("pointwise", "random", "nondeterministic")

    @staticmethod
    def forward(ctx, k, x, kernel, generator, params, real=None):
        if real is not None:
            return complex_draw(k, kernel, generator, x.shape, x.dtype, real, *params)
        order = _memory_order(x)
        shape = x.shape if order is None else tuple(x.shape[i] for i in order)
        if kernel == "bernoulli":
            p, wide = params
            if wide is None:  # a tensor of probabilities: drawn in x's logical order
                order, shape = None, x.shape
            probs = p if wide is None else k["full"](shape, p, wide)
            if probs.shape != shape:
                probs = k["expand"](probs, shape)
            draw = k["bernoulli"](generator, probs, x.dtype)
        else:
            draw = k["normal_serial" if kernel == "normal" and order is not None else kernel](
                generator, shape, x.dtype, *params)
        return draw if order is None else k["permute"](draw, tuple(sorted(range(x.ndim), key=order.__getitem__)))

    @staticmethod
    def backward(ctx, g):
        return g.new_zeros(g.shape)


def _memory_order(x):
    """``x``'s axes from the largest stride down when ``x`` is not C-contiguous (None when it is, or when its
    array type has no strides)."""
    strides = getattr(x, "strides", None)
    if strides is None:
        return None
    step = x.itemsize
    for n, st in zip(reversed(x.shape), reversed(strides)):
        if n != 1 and st != step:
            return tuple(sorted(range(x.ndim), key=lambda i: -strides[i]))
        step *= n
    return None


class Drawn(Op):
    """A sample whose distribution parameters require grad: zero gradient to each, as in PyTorch."""

    tags = ("random",)

    @staticmethod
    def forward(ctx, k, *args):
        ctx.n = len(args) - 1
        return args[-1]

    @staticmethod
    def backward(ctx, g):
        z = g.new_zeros(g.shape)
        return (z,) * ctx.n


def _zero_vjp(ctx, g):
    return g.new_zeros(g.shape)


# samples with the shape of their parameter tensor (the generator comes first: apply passes it through)
Bernoulli = op_class("bernoulli", vjp=_zero_vjp, tags=("pointwise", "random", "nondeterministic"))
Poisson = op_class("poisson", vjp=_zero_vjp, tags=("pointwise", "random", "nondeterministic"))
Multinomial = op_class("multinomial", tags=("random", "nondeterministic"))
StandardGammaGrad = op_class("standard_gamma_grad")  # not differentiable itself, as in PyTorch
Binomial = op_class("binomial", vjp=lambda ctx, g: (g.new_zeros(g.shape), g.new_zeros(g.shape)),
                    tags=("random", "nondeterministic"))


def _standard_gamma_vjp(ctx, g):
    (alpha,) = ctx.inputs
    return g * _standard_gamma_grad(alpha, ctx.output)


# a standard Gamma(alpha) draw, differentiable in alpha by implicit reparameterisation
StandardGamma = op_class("StandardGamma", "standard_gamma", saves="both", vjp=_standard_gamma_vjp,
                         tags=("random", "nondeterministic"))
DirichletGrad = op_class("dirichlet_grad")  # not differentiable itself, as in PyTorch


def _sample_dirichlet_vjp(ctx, g):
    (alpha,) = ctx.inputs
    x = ctx.output.detach()
    total = alpha.sum(-1, keepdim=True).expand(tuple(alpha.shape))
    return _dirichlet_grad(x, alpha, total) * (g - (x * g).sum(-1, keepdim=True))


# a Dirichlet(alpha) draw (normalised Gamma draws), differentiable in alpha by implicit reparameterisation
SampleDirichlet = op_class("SampleDirichlet", "dirichlet", saves="both", vjp=_sample_dirichlet_vjp,
                           tags=("random", "nondeterministic"))


def _need_float(t, op, complex_ok=False):
    if not (t.dtype.is_floating_point or complex_ok and t.dtype.is_complex):
        raise NotImplementedError(f'"{op}" not implemented for \'{t.dtype}\' (a floating point tensor is expected)')


def _fill(self, op, kernel, generator, *params):
    """Write samples of ``kernel`` into ``self`` (a leaf requiring grad is refused, as for every in-place op);
    a complex ``self`` gets its real and imaginary parts drawn each with ``params``."""
    check_inplace(self, op)
    gen = native(generator, self._dev)
    if self.dtype.is_complex:
        return inplace(Sampled, self, kernel, gen, params, self._dev.backend.array_dtype(self.dtype.to_real()))
    return inplace(Sampled, self, kernel, gen, params)


@export(to=TENSOR)
def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """Fill with samples uniform on ``[from_, to)``.

    >>> ember.empty(2).uniform_(0, 1).shape
    ember.Size([2])
    """
    _need_float(self, "uniform_", complex_ok=True)
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _fill(self, "uniform_", "uniform", generator, from_, to)


@export(to=TENSOR)
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples; on a complex tensor each part is N(``mean``, ``std**2 / 2``), so that
    ``E|z - mean(1+1j)|^2 = std**2``, as in PyTorch.

    >>> ember.empty(2, dtype=ember.complex64).normal_().dtype
    ember.complex64
    """
    _need_float(self, "normal_", complex_ok=True)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill(self, "normal_", "normal", generator, mean, std / math.sqrt(2) if self.dtype.is_complex else std)


@export(to=TENSOR)
def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential samples of rate ``lambd``."""
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"exponential_: Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {self.dtype}")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, "exponential_", "exponential", generator, lambd)


@export(to=TENSOR)
def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(``p``) trials up to the first success."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill(self, "geometric_", "geometric", generator, p)


@export(to=TENSOR)
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy samples."""
    _need_float(self, "cauchy_")
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _fill(self, "cauchy_", "cauchy", generator, median, sigma)


@export(to=TENSOR)
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with samples whose logarithm is normal(``mean``, ``std``)."""
    _need_float(self, "log_normal_")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _fill(self, "log_normal_", "log_normal", generator, mean, std)


@export(to=TENSOR)
def random_(self, from_=0, to=None, *, generator=None):
    """Fill with integers uniform on ``[from_, to)`` (``[0, from_)`` with one argument); with none, on
    ``[0, max]`` for an integer dtype and ``[0, 2**mantissa_bits]`` for a floating one, as PyTorch's.

    >>> ember.empty(3, dtype=ember.uint8).random_(4).max() < 4
    tensor(True)
    """
    if to is None:
        from_, to = 0, from_ or _random_top(self.dtype)
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    return _fill(self, "random_", "randint", generator, from_, to)


_MANTISSA_BITS = {dtypes.float16: 11, dtypes.bfloat16: 8, dtypes.float32: 24, dtypes.float64: 53}


def _random_top(dtype) -> int:
    """One past the largest value ``random_()`` draws for ``dtype``."""
    if dtype is dtypes.bool:
        return 2
    if dtype.is_floating_point:
        return 2 ** _MANTISSA_BITS[dtype] + 1
    return dtypes.iinfo(dtype).max + 1


def _check_p(p, op):
    if isinstance(p, Tensor):
        if p.numel() and not bool(((p >= 0) & (p <= 1)).all()):
            raise RuntimeError(f"{op}: all elements of p should be between 0 and 1, got p with shape {list(p.shape)}")
    elif not 0 <= p <= 1:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={p}")


@export(to=TENSOR)
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples with probability ``p`` (a number or a tensor broadcastable to ``self``)."""
    _check_p(p, "bernoulli_")
    if isinstance(p, Tensor):
        return _fill(self, "bernoulli_", "bernoulli", generator, p._data, None)
    return _fill(self, "bernoulli_", "bernoulli", generator, p, self._dev.backend.array_dtype(dtypes.float64))


@export
def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002
    """0/1 samples with the probabilities in ``input`` (or a fixed ``p``).

    >>> ember.bernoulli(ember.ones(3)).tolist()
    [1.0, 1.0, 1.0]
    """
    if p is not None:
        return out_or(bernoulli_(input.new_empty(input.shape), p, generator=generator), out)
    _need_float(input, "bernoulli")
    _check_p(input, "bernoulli")
    return out_or(apply(Bernoulli, native(generator, input._dev), input, input._data.dtype), out)


_ZERO_SUM = "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"


@export
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):  # noqa: A002
    """Indices sampled from the rows of ``input`` (non-negative weights).

    >>> ember.multinomial(ember.tensor([0.0, 1.0]), 2, replacement=True).tolist()
    [1, 1]
    """
    if input.dim() not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.dim()}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (got {num_samples})")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} > {input.shape[-1]})")
    if input.shape[-1] == 0 and (input.ndim == 1 or input.shape[0]):  # rows of no categories sum to 0
        raise RuntimeError(_ZERO_SUM)
    if input.numel():  # checked on the array, by its extremes (a NaN is the minimum): the fewest array calls
        xp, p = input._dev.backend.xp, input._data
        lo, hi = float(xp.min(p)), float(xp.max(p))
        if not (lo >= 0 and hi < math.inf):
            raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
        if (hi if p.ndim == 1 else float(xp.min(xp.max(p, axis=-1)))) <= 0:  # a row of zeros
            raise RuntimeError(_ZERO_SUM)
    # the kernel draws in float64 from a vector or the rows of a matrix, and returns int64 indices
    return out_or(apply(Multinomial, native(generator, input._dev), input.detach(), num_samples, replacement), out)


@export(to=TORCH)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples: tensor or scalar ``mean``/``std`` (broadcast), or scalars with ``size``.

    >>> ember.normal(ember.zeros(2), 1.0).shape
    ember.Size([2])
    """
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if isinstance(std, Tensor):
            if std.dtype.is_complex:
                raise RuntimeError("normal expects standard deviation to be non-complex")
            if std.numel() and not bool((std >= 0).all()):
                raise RuntimeError("normal expects all elements of std >= 0.0")
        elif std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        ref = mean if isinstance(mean, Tensor) else std
        shape = (mean * 0 + std * 0).shape if isinstance(mean, Tensor) and isinstance(std, Tensor) else ref.shape
        # as PyTorch: N(0, std) then + mean for a number std, N(0, 1) * std + mean for a tensor one
        scale = 1.0 if isinstance(std, Tensor) else std
        z = normal_(empty(shape, dtype=ref.dtype, device=ref.device), 0.0, scale, generator=generator)
        m = mean.detach() if isinstance(mean, Tensor) else mean
        r = (z * std.detach() if isinstance(std, Tensor) else z) + m
        ts = [p for p in (mean, std) if isinstance(p, Tensor)]
        return out_or(apply(Drawn, *ts, r._data) if any(t._rg for t in ts) else r, out)
    if size is None:
        raise TypeError("normal(): with scalar mean and std, the size argument is required")
    shape = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    if out is not None:
        return normal_(out.resize_(shape), mean, std, generator=generator)
    t = normal_(empty(shape, dtype=dtype, device=device), mean, std, generator=generator)
    return t.requires_grad_() if requires_grad else t


@export(to=TORCH)
def poisson(input, generator=None):  # noqa: A002
    """Poisson samples with rates ``input``.

    >>> ember.poisson(ember.zeros(2)).tolist()
    [0.0, 0.0]
    """
    _need_float(input, "poisson")
    if input.numel() and not bool((input >= 0).all()):
        raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative")
    return apply(Poisson, native(generator, input._dev), input)


@export(to=TORCH)
def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None,  # noqa: A002
                 requires_grad=False, memory_format=None):
    if high is None:
        low, high = 0, low
    r = randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device)
    return r.requires_grad_() if requires_grad else r


@export(to=TORCH)
def _standard_gamma(input, generator=None):  # noqa: A002
    """Samples of Gamma(``input``, 1), differentiable in ``input`` (implicit reparameterisation).

    >>> ember._standard_gamma(ember.ones(3)).shape
    ember.Size([3])
    """
    _need_float(input, "_standard_gamma")
    return apply(StandardGamma, native(generator, input._dev), input)


@export(to=TORCH)
def _standard_gamma_grad(input, output):  # noqa: A002
    """The derivative of a standard Gamma(``input``) draw ``output`` in ``input`` at fixed CDF."""
    _need_float(input, "_standard_gamma_grad")
    return apply(StandardGammaGrad, input.detach(), output.detach().to(input.dtype))


@export(to=TORCH)
def _sample_dirichlet(input, generator=None):  # noqa: A002
    """Dirichlet(``input``) samples over the last dimension, differentiable in ``input``.

    >>> float(ember._sample_dirichlet(ember.ones(3)).sum())
    1.0
    """
    _need_float(input, "_sample_dirichlet")
    return apply(SampleDirichlet, native(generator, input._dev), input)


@export(to=TORCH)
def _dirichlet_grad(x, alpha, total):
    """The derivative of a Beta(``alpha``, ``total - alpha``) draw ``x`` in ``alpha`` at fixed CDF, over
    ``1 - x`` (the factor of the Dirichlet's reparameterised gradient)."""
    _need_float(alpha, "_dirichlet_grad")
    x, alpha, total = broadcast_tensors(x.detach().to(alpha.dtype), alpha.detach(),
                                        total.detach().to(alpha.dtype))
    return apply(DirichletGrad, x.contiguous(), alpha.contiguous(), total.contiguous())


@export(to=TORCH)
def binomial(count, prob, generator=None):
    """Binomial(``count``, ``prob``) samples (counts and probabilities broadcast).

    >>> ember.binomial(ember.tensor([5.0]), ember.tensor([1.0])).tolist()
    [5.0]
    """
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: {_type_name(t.dtype)}")
    count, prob = broadcast_tensors(count.to(prob.dtype), prob)
    return apply(Binomial, native(generator, prob._dev), count.contiguous(), prob.contiguous())
