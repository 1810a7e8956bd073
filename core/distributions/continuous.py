"""Univariate continuous families: Normal, LogNormal, HalfNormal, Laplace, Uniform, Cauchy, HalfCauchy,
Exponential, Gamma, Chi2, Beta, StudentT, Gumbel, Pareto, Weibull."""
from __future__ import annotations

import math
from numbers import Number

import ember

from . import constraints
from ._special import digamma, gammainc, lgamma, log_beta
from .composite import TransformedDistribution
from .distribution import AtLoc, Distribution, expand_params
from .exp_family import ExponentialFamily
from .transforms import AbsTransform, AffineTransform, ExpTransform, PowerTransform
from .utils import _standard_normal, broadcast_all, euler_constant

__all__ = ["Normal", "LogNormal", "HalfNormal", "Laplace", "Uniform", "Cauchy", "HalfCauchy", "Exponential",
           "Gamma", "Chi2", "Beta", "StudentT", "Gumbel", "Pareto", "Weibull"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _batch(*params):
    """The batch shape of broadcast parameters: () when every one was given as a Python number."""
    return () if all(isinstance(p, Number) for p in params[1:]) else params[0].shape


def _filled(dist, ref, value):
    return ember.full(tuple(dist._extended_shape()), value, dtype=ref.dtype, device=ref.device)


class _LocScale(Distribution):
    """A location-scale family on the real line (Normal, Laplace, Cauchy): ``loc`` and ``scale`` broadcast
    together; reparameterised samples."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if _LocScale in cls.__bases__:  # the family, which expand checks a subclass against: one with its own
            cls._family = cls          # __init__ must have its own expand (PyTorch's rule)

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch(self.loc, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, self._family, batch_shape, _instance, ("loc", "scale"))


class Normal(AtLoc, _LocScale, ExponentialFamily):
    """The normal distribution of mean ``loc`` and standard deviation ``scale``.

    >>> d = Normal(ember.tensor([0.0]), ember.tensor([1.0]))
    >>> round(float(d.log_prob(ember.tensor([0.0]))), 4)
    -0.9189
    """

    _mean_carrier_measure = 0

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ember.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * ember.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + self.scale.log()

    @property
    def _natural_params(self):
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * ember.log(-math.pi / y)


class LogNormal(TransformedDistribution):
    """``exp`` of a Normal(``loc``, ``scale``) variable."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogNormal, _instance))

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _Folded(TransformedDistribution):
    """|X| for X symmetric about 0 (HalfNormal, HalfCauchy)."""

    support = constraints.nonnegative
    has_rsample = True
    arg_constraints = {"scale": constraints.positive}

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(type(self), _instance))

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, lp, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """The absolute value of a Normal(0, ``scale``) variable."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """The absolute value of a Cauchy(0, ``scale``) variable."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return _filled(self, self.scale, math.inf)

    @property
    def variance(self):
        return self.base_dist.variance


class Laplace(AtLoc, _LocScale):
    """The Laplace (double exponential) distribution of location ``loc`` and scale ``scale``."""


    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return 2 ** 0.5 * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(
            ember.finfo(self.loc.dtype).eps - 1, 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * ember.expm1(-d.abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``."""

    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(_batch(self.low, low, high), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(tuple(shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value).to(self.low.dtype) * (self.high > value).to(self.low.dtype)
        return ember.log(inside) - ember.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return ember.log(self.high - self.low)


class Cauchy(_LocScale):
    """The Cauchy (Lorentz) distribution: the ratio of independent normals, shifted and scaled."""


    @property
    def mean(self):
        return _filled(self, self.loc, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return _filled(self, self.loc, math.inf)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = ember.empty(shape, dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return ember.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Exponential(ExponentialFamily):
    """The exponential distribution of rate ``rate``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(() if isinstance(rate, Number) else self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return ember.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return ember.empty(shape, dtype=self.rate.dtype, device=self.rate.device).exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ember.exp(-self.rate * value)

    def icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - ember.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -ember.log(-x)


class Gamma(ExponentialFamily):
    """The Gamma distribution of shape ``concentration`` and rate ``rate``; ``rsample`` is reparameterised
    through the implicit derivative of the standard Gamma draw."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(_batch(self.concentration, concentration, rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        value = ember._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=ember.finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration, self.rate) + ember.xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - ember.log(self.rate) + lgamma(c) + (1.0 - c) * digamma(c)

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(Chi2, _instance))

    @property
    def df(self):
        return self.concentration * 2


class Beta(ExponentialFamily):
    """The Beta distribution of ``concentration1`` (alpha) and ``concentration0`` (beta); ``rsample`` is the
    first coordinate of a reparameterised Dirichlet((alpha, beta)) draw, as in PyTorch."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            c1 = ember.tensor(float(concentration1))
            c0 = ember.tensor(float(concentration0))
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
        self.concentration1, self.concentration0 = c1, c0
        super().__init__(c1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Beta, batch_shape, _instance, ("concentration1", "concentration0"))

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        am1, bm1 = (a - 1).clamp(min=0), (b - 1).clamp(min=0)
        interior = am1 / (am1 + bm1)
        both_small = (a < 1) & (b < 1)
        return ember.where(both_small, ember.ones_like(interior), interior)  # PyTorch picks x = 1 then

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        both = ember.stack([self.concentration1.expand(shape), self.concentration0.expand(shape)], -1)
        return ember._sample_dirichlet(both).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return ember.xlogy(a - 1, value) + ember.xlogy(b - 1, 1 - value) - log_beta(a, b)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        return (log_beta(a, b) - (a - 1) * digamma(a) - (b - 1) * digamma(b)
                + (a + b - 2) * digamma(a + b))

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return lgamma(x) + lgamma(y) - lgamma(x + y)


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return ember.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / ember.where(df > 2, df - 2, ember.ones_like(df))
        return ember.where(df > 2, finite, ember.where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * ember.rsqrt(z / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + lgamma(0.5 * self.df)
             - lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ember.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution: ``loc - scale * log(-log(U))``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = ember.finfo(self.loc.dtype)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base = Uniform(ember.full_like(self.loc, finfo.tiny), ember.full_like(self.loc, 1 - finfo.eps),
                           validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-ember.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return y - y.exp() - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return math.pi / math.sqrt(6) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)


class Pareto(TransformedDistribution):
    """The Pareto Type I distribution: ``scale * exp(Exponential(alpha))``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.alpha = self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: ``scale * Exponential(1) ** (1 / concentration)``."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        super().__init__(Exponential(ember.ones_like(self.scale), validate_args=validate_args),
                         [PowerTransform(exponent=self.concentration_reciprocal),
                          AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base = self.base_dist.expand(batch_shape)
        TransformedDistribution.__init__(new, base, [PowerTransform(exponent=new.concentration_reciprocal),
                                                     AffineTransform(loc=0, scale=new.scale)], validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * ember.exp(lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (ember.exp(lgamma(1 + 2 * r)) - ember.exp(2 * lgamma(1 + r)))

    def entropy(self):
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + ember.log(self.scale * r) + 1
