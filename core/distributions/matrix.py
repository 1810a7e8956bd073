"""Distributions over matrices and angles: Wishart, LKJCholesky, VonMises."""
from __future__ import annotations

import math
import warnings

import ember

from . import constraints
from ._special import digamma, lgamma, mvlgamma
from .continuous import Beta, Chi2
from .distribution import AtLoc, Distribution, expand_params
from .exp_family import ExponentialFamily
from .multivariate import _FromScaleTril
from .utils import broadcast_all, lazy_property

__all__ = ["Wishart", "LKJCholesky", "VonMises"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    return digamma(x.unsqueeze(-1) - ember.arange(p, dtype=x.dtype, device=x.device) / 2).sum(-1)


class Wishart(_FromScaleTril, ExponentialFamily):
    """The Wishart distribution over positive-definite matrices, with ``df`` degrees of freedom and one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``; ``rsample`` by Bartlett's decomposition."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        name, param = self._given(covariance_matrix, precision_matrix, scale_tril)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, ember.Tensor):
            batch_shape = tuple(ember.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        else:
            batch_shape = tuple(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        event_shape = tuple(param.shape[-2:])
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        setattr(self, name, param.expand(batch_shape + (-1, -1)))
        if bool((self.df < event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._set_scale_tril(covariance_matrix, precision_matrix, scale_tril)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        L = self._unbroadcasted_scale_tril
        offsets = ember.arange(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return Chi2(df=self.df.unsqueeze(-1) - offsets.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        new = expand_params(self, Wishart, batch_shape, _instance,
                            ("df", "covariance_matrix", "scale_tril", "precision_matrix"))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(tuple(batch_shape)
                                                                              + tuple(self.event_shape))
        new._dist_chi2 = new._chi2(batch_shape)
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @property
    def mean(self):
        return self.df.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor <= 0, math.nan, factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self.df.reshape(tuple(self._batch_shape) + (1, 1)) * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=()):
        shape = tuple(sample_shape) + self._matrix_shape()
        L = self._unbroadcasted_scale_tril
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=ember.finfo(L.dtype).eps)
        noise = ember.randn(shape, dtype=L.dtype, device=L.device).tril(-1) + ember.diag_embed(diag)
        chol = L @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett draws; a singular draw is replaced by a fresh one (up to ``max_try_correction`` times)."""
        sample = self._bartlett_sampling(sample_shape)
        bad = ~self.support.check(sample)
        tries = 10 if max_try_correction is None else max_try_correction
        if bool(bad.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(tries):
                sample = ember.where(bad.unsqueeze(-1).unsqueeze(-1), self._bartlett_sampling(sample_shape), sample)
                bad = ~self.support.check(sample)
                if not bool(bad.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        cov = L @ L.mT
        trace = ember.linalg.solve(cov.expand(tuple(value.shape)), value).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1)) - mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1)) + mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + mvlgamma(y + (p + 1) / 2, p))


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors of ``dim x dim`` correlation matrices (onion-method
    sampling)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, LKJCholesky, batch_shape, _instance, ("concentration",))
        new.dim = self.dim
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        return new

    def sample(self, sample_shape=()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = ember.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype, device=y.device).tril(-1)
            norm = u.norm(dim=-1, keepdim=True)
            u = u / ember.where(norm > 0, norm, ember.ones_like(norm))  # the first row stays 0
            w = ember.sqrt(y) * u
            diag = (1 - (w ** 2).sum(-1)).clamp(min=ember.finfo(w.dtype).tiny).sqrt()
            return w + ember.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device).to(self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = 0.5 * dm1 * math.log(math.pi) + mvlgamma(alpha - 0.5, dm1) - lgamma(alpha) * dm1
        return unnormalized - normalize


# the log of the modified Bessel functions I0 and I1 (Abramowitz & Stegun 9.8.1-9.8.4 polynomial fits)
_I0_SMALL = (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813)
_I0_LARGE = (0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537, -0.01647633,
             0.00392377)
_I1_SMALL = (0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411)
_I1_LARGE = (0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967, -0.02895312, 0.01787654,
             -0.00420059)


def _poly(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel(x, order=0):
    small_coef, large_coef = (_I0_SMALL, _I0_LARGE) if order == 0 else (_I1_SMALL, _I1_LARGE)
    xs = ember.where(x < 3.75, x, ember.ones_like(x))
    small = _poly((xs / 3.75) ** 2, small_coef)
    if order == 1:
        small = xs.abs() * small
    xl = ember.where(x < 3.75, ember.full_like(x, 3.75), x)
    large = xl - 0.5 * xl.log() + _poly(3.75 / xl, large_coef).log()
    return ember.where(x < 3.75, small.log(), large)


class VonMises(AtLoc, Distribution):
    """The von Mises distribution on the circle: mean direction ``loc``, concentration ``concentration``
    (sampled by Best & Fisher's rejection scheme, in double precision)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * ember.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_modified_bessel(self.concentration, 0))

    @lazy_property
    def _proposal_r(self):
        kappa = self.concentration.double()
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return ember.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=()):
        with ember.no_grad():
            shape = tuple(self._extended_shape(sample_shape))
            loc, kappa, r = self.loc.double(), self.concentration.double(), self._proposal_r
            x = ember.zeros(shape, dtype=ember.float64, device=self.loc.device)
            done = ember.zeros(shape, dtype=ember.bool, device=self.loc.device)
            while not bool(done.all()):  # rounds of proposals, every element at once
                u1, u2, u3 = ember.rand((3,) + shape, dtype=ember.float64, device=self.loc.device).unbind()
                z = ember.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2 > 0) | ((c / u2).log() + 1 - c >= 0)) & ~done
                x = ember.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @lazy_property
    def variance(self):
        k = self.concentration
        return 1 - (_log_modified_bessel(k, 1) - _log_modified_bessel(k, 0)).exp()
