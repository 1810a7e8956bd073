"""``Distribution``: the base class of every family (shapes, sampling, scoring, argument validation)."""
from __future__ import annotations

import warnings

import ember

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _size(shape):
    return shape if isinstance(shape, ember.Size) else ember.Size(shape)


class Distribution:
    """Abstract base of probability distributions.

    Samples have shape ``sample_shape + batch_shape + event_shape``; ``log_prob`` reduces the event dimensions.
    Validation (on by default, as ``assert`` is) checks parameters against ``arg_constraints`` at construction
    and values against ``support`` in ``log_prob``/``cdf``, raising ``ValueError``.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions created without ``validate_args``."""
        if value not in (True, False):
            raise ValueError("set_default_validate_args expects a bool")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with `validate_args=False` "
                              "to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # lazily built parameters are not checked
                value = getattr(self, param)
                if not constraints.holds(constraint, value):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dimensions expanded to ``batch_shape`` (parameters are expanded views)."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised sample: differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=()):
        return ember.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = value.dim() - len(self._event_shape)
        if tuple(value.shape[start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(tuple(value.shape)), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {value.shape} vs "
                                 f"{ember.Size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not constraints.holds(support, value):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to "
                             f"be within the support ({support!r}) of the distribution {self!r}, but found "
                             f"invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        def shown(v):  # as PyTorch formats it: a 0-d tensor as its number
            if v.numel() != 1:
                return v.shape
            return v.item() if v.dim() == 0 else v

        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {shown(self.__dict__[p])}" for p in names)
        return f"{self.__class__.__name__}({args})"


class AtLoc:
    """Mixin for the families centred at their ``loc`` (symmetric and unimodal about it): the mean and the mode
    are ``loc``."""

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc


def expand_params(dist, cls, batch_shape, _instance, names, event_shape=None):
    """The ``expand`` of a family whose parameters are the attributes ``names`` (each of shape
    ``batch_shape + its own event part``): a new instance holding expanded views, not re-validated."""
    new = dist._get_checked_instance(cls, _instance)
    batch_shape = ember.Size(batch_shape)
    for name in names:
        value = dist.__dict__.get(name)
        if value is None:
            continue
        tail = tuple(value.shape[len(dist.batch_shape):])
        setattr(new, name, value.expand(tuple(batch_shape) + tail))
    Distribution.__init__(new, batch_shape, dist.event_shape if event_shape is None else event_shape,
                          validate_args=False)
    new._validate_args = dist._validate_args
    return new
