"""Discrete families: Bernoulli, Categorical, OneHotCategorical (+ straight-through), Binomial, Multinomial,
Poisson, Geometric, NegativeBinomial."""
from __future__ import annotations

import math
from numbers import Number

import ember
import ember.nn.functional as F

from . import constraints
from ._special import lgamma
from .continuous import Gamma
from .distribution import Distribution, expand_params
from .exp_family import ExponentialFamily
from .utils import broadcast_all, finfo_of, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Binomial",
           "Multinomial", "Poisson", "Geometric", "NegativeBinomial"]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _probs_or_logits(dist, probs, logits, total_count=None):
    """Store whichever of ``probs``/``logits`` is given (broadcast with ``total_count``, which takes its dtype,
    when there is one) and keep it as ``dist._param``; returns the batch shape (``()`` for a lone number)."""
    _one_of(probs, logits)
    name, given = ("probs", probs) if probs is not None else ("logits", logits)
    if total_count is None:
        (param,) = broadcast_all(given)
        batch = () if isinstance(given, Number) else param.shape
    else:
        total_count, param = broadcast_all(total_count, given)
        dist.total_count = total_count.type_as(param)
        batch = param.shape
    setattr(dist, name, param)
    dist._param = param
    return batch


def _enumerate(dist, n, dtype, expand):
    values = ember.arange(n, dtype=dtype, device=dist._param.device)
    values = values.reshape((-1,) + (1,) * len(dist._batch_shape))
    return values.expand((-1,) + tuple(dist._batch_shape)) if expand else values


class _Odds:
    """The success probability ``probs`` and its log-odds ``logits`` of a family built by
    :func:`_probs_or_logits`: the one not given is derived on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class Bernoulli(_Odds, ExponentialFamily):
    """0/1 outcomes with probability ``probs`` (or log-odds ``logits``) of a 1.

    >>> Bernoulli(probs=ember.tensor([0.25])).log_prob(ember.tensor([1.0])).exp().tolist()
    [0.25]
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(_probs_or_logits(self, probs, logits), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, Bernoulli, batch_shape, _instance, ("probs", "logits"))
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return ember.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    @property
    def param_shape(self):
        return self._param.shape

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        return _enumerate(self, 2, self._param.dtype, expand)

    @property
    def _natural_params(self):
        return (ember.logit(self.probs),)

    def _log_normalizer(self, x):
        return ember.log1p(ember.exp(x))


class Categorical(Distribution):
    """Category indices ``0 .. K-1`` with (unnormalised) probabilities ``probs`` or log-weights ``logits``
    over the last dimension.

    >>> Categorical(probs=ember.tensor([0.0, 1.0])).sample((3,)).tolist()
    [1, 1, 1]
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1] if self._param.dim() > 1 else (), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, Categorical, batch_shape, _instance, ("probs", "logits"))
        new._param = new.__dict__["probs" if self._param is self.__dict__.get("probs") else "logits"]
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return ember.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return ember.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape=()):
        n = math.prod(tuple(sample_shape))
        shape = tuple(self._extended_shape(sample_shape))
        probs = self.probs.detach()
        if probs.dim() == 1:  # one distribution: its n draws are the samples in order (the same draws as below)
            return ember.multinomial(probs, n, True).reshape(shape)
        samples_2d = ember.multinomial(probs.reshape(-1, self._num_events), n, True).T
        return samples_2d.reshape(shape)

    def log_prob(self, value):
        log_pmf = self.logits
        if self._validate_args:
            self._validate_sample(value)
            if log_pmf.dim() == 1:  # one distribution, values checked in range: one indexing op, not three
                return log_pmf[value.long()]
        value = value.long().unsqueeze(-1)
        if value.shape[:-1] != log_pmf.shape[:-1]:  # (values of the batch shape, the usual case: nothing to expand)
            value, log_pmf = ember.broadcast_tensors(value, log_pmf)
            value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = self.logits
        if self._param is not self.__dict__.get("probs"):  # given logits may hold -inf (0 * -inf would be NaN);
            logits = logits.clamp(min=finfo_of(logits.dtype).min)  # those of probs are logs of clamped ones
        if logits.dim() == 1:  # one distribution: its sum of products is one dot product
            return -(logits @ self.probs)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        return _enumerate(self, self._num_events, ember.long, expand)


class _ViaCategorical(Distribution):
    """A family over ``K`` categories given through the Categorical of its ``probs`` or ``logits``
    (``self._categorical``: OneHotCategorical, ExpRelaxedCategorical): its batch shape, event shape ``(K,)``
    and parameters."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def _expand_into(self, new, batch_shape):
        """``expand``'s work: ``new`` (an instance from ``_get_checked_instance``) over the expanded Categorical."""
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape


class OneHotCategorical(_ViaCategorical):
    """One-hot vectors of a :class:`Categorical` draw (event shape ``(K,)``)."""

    support = constraints.one_hot
    has_enumerate_support = True

    def expand(self, batch_shape, _instance=None):
        return self._expand_into(self._get_checked_instance(OneHotCategorical, _instance), batch_shape)

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """One-hot samples whose gradient flows to ``probs`` by the straight-through estimator."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class Binomial(_Odds, Distribution):
    """The number of successes in ``total_count`` Bernoulli(``probs``) trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        super().__init__(_probs_or_logits(self, probs, logits, total_count), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, Binomial, batch_shape, _instance, ("total_count", "probs", "logits"))
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def param_shape(self):
        return self._param.shape

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        normalize = n * logits.clamp(min=0) + n * ember.log1p(ember.exp(-logits.abs())) - lgamma(n + 1)
        return value * logits - lgamma(value + 1) - lgamma(n - value + 1) - normalize

    def _homogeneous_count(self, what):
        total = int(self.total_count.max())
        if not int(self.total_count.min()) == total:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        return _enumerate(self, 1 + self._homogeneous_count("enumerate_support"), self._param.dtype, expand)


class Multinomial(Distribution):
    """Counts over ``K`` categories in ``total_count`` independent Categorical(``probs``) draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(tuple(batch_shape) + tuple(self.event_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        samples = self._categorical.sample((self.total_count,) + sample_shape)
        samples = samples.permute(*range(1, samples.dim()), 0)  # the draws last
        counts = ember.zeros(tuple(self._extended_shape(sample_shape)), dtype=samples.dtype, device=samples.device)
        counts.scatter_add_(-1, samples, ember.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = ember.tensor(float(self.total_count), dtype=self.probs.dtype, device=self.probs.device)
        term1 = n * self._categorical.entropy() - lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = ember.exp(self._binomial.log_prob(support))
        term2 = (binomial_probs * lgamma(support + 1)).sum(0).sum(-1)
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = ember.where((value == 0) & (logits == -math.inf), ember.zeros_like(logits), logits)
        return lgamma(value.sum(-1) + 1) - lgamma(value + 1).sum(-1) + (logits * value).sum(-1)


class Poisson(ExponentialFamily):
    """The Poisson distribution of rate ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(() if isinstance(rate, Number) else self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            return ember.poisson(self.rate.expand(shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return ember.xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self):
        return (ember.log(self.rate),)

    def _log_normalizer(self, x):
        return ember.exp(x)


class Geometric(_Odds, Distribution):
    """The number of failures before the first success in Bernoulli(``probs``) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        given = probs if probs is not None else logits
        super().__init__(() if isinstance(given, Number) else given.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            if not bool((value > 0).all()):
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n"
                                 f"{value[~(value > 0)]}")

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        tiny = ember.finfo(self.probs.dtype).tiny
        with ember.no_grad():
            u = ember.empty(shape, dtype=self.probs.dtype, device=self.probs.device).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = ember.where((probs == 1) & (value == 0), ember.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class NegativeBinomial(_Odds, Distribution):
    """The number of successes before ``total_count`` failures in Bernoulli(``probs``) trials."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        super().__init__(_probs_or_logits(self, probs, logits, total_count), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, NegativeBinomial, batch_shape, _instance, ("total_count", "probs", "logits"))
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=ember.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return ember.poisson(self._gamma.sample(sample_shape=sample_shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = -lgamma(n + value) + lgamma(1.0 + value) + lgamma(n)
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
