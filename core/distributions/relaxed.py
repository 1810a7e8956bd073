"""Continuous relaxations: RelaxedBernoulli, RelaxedOneHotCategorical (Gumbel-softmax / Concrete), their
logit-space bases, and LogisticNormal."""
from __future__ import annotations

import ember

from . import constraints
from ._special import lgamma
from .composite import TransformedDistribution
from .continuous import Normal
from .discrete import _Odds, _probs_or_logits, _ViaCategorical
from .distribution import Distribution
from .transforms import ExpTransform, SigmoidTransform, StickBreakingTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical", "RelaxedOneHotCategorical",
           "LogisticNormal"]


class LogitRelaxedBernoulli(_Odds, Distribution):
    """The logit of a :class:`RelaxedBernoulli` sample."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        super().__init__(_probs_or_logits(self, probs, logits), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = ember.Size(batch_shape)
        new.temperature = self.temperature
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape))
                new._param = new.__dict__[name]
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        return self._param.shape

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(ember.rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class _OfBase:
    """A relaxed distribution as a transform of its base: the base's temperature, logits and probs."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class RelaxedBernoulli(_OfBase, TransformedDistribution):
    """A relaxation of Bernoulli to ``(0, 1)`` at ``temperature``: sigmoid of a LogitRelaxedBernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedBernoulli, _instance))


class ExpRelaxedCategorical(_ViaCategorical):
    """The log of a :class:`RelaxedOneHotCategorical` sample."""

    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        super().__init__(probs, logits, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        return self._expand_into(new, batch_shape)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = clamp_probs(ember.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -(-u.log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature if isinstance(self.temperature, ember.Tensor) else ember.tensor(
            float(self.temperature), dtype=logits.dtype, device=logits.device)
        log_scale = lgamma(ember.full_like(t, float(k))) + t.log() * (k - 1)
        score = logits - value * t
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_OfBase, TransformedDistribution):
    """A relaxation of OneHotCategorical to the simplex at ``temperature`` (Gumbel-softmax)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args),
                         ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape,
                              _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))


class LogisticNormal(TransformedDistribution):
    """Stick-breaking of a Normal(``loc``, ``scale``) vector onto the simplex of one more dimension."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogisticNormal, _instance))

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
