"""Multivariate families: MultivariateNormal, LowRankMultivariateNormal, Dirichlet."""
from __future__ import annotations

import math

import ember

from . import constraints
from ._special import digamma, lgamma
from .distribution import AtLoc, Distribution, expand_params
from .exp_family import ExponentialFamily
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal", "LowRankMultivariateNormal", "Dirichlet"]


def _batch_mv(bmat, bvec):
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """``|L^-1 x|^2`` for lower-triangular ``L``, broadcasting the batch dimensions of both."""
    batch = ember.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    n = bx.shape[-1]
    sol = ember.linalg.solve(bL.expand(tuple(batch) + (n, n)), bx.expand(tuple(batch) + (n,)).unsqueeze(-1))
    return sol.squeeze(-1).pow(2).sum(-1)


def _eye_like(m):
    return ember.eye(m.shape[-1], dtype=m.dtype, device=m.device)


def _precision_to_scale_tril(P):
    # the lower Cholesky factor of P^-1, from the Cholesky factor of P with rows and columns reversed
    Lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))
    L_inv = ember.transpose(ember.flip(Lf, (-2, -1)), -2, -1)
    return ember.linalg.solve(L_inv, _eye_like(P).expand(tuple(P.shape))).tril()


class _FromScaleTril:
    """Mixin for the families given by a lower Cholesky factor ``_unbroadcasted_scale_tril`` of a covariance
    (MultivariateNormal, Wishart): the one matrix given, and the three matrices, each expanded to the family's
    ``_matrix_shape()``."""

    @staticmethod
    def _given(covariance_matrix, precision_matrix, scale_tril):
        """``(name, matrix)`` of the one matrix given (PyTorch's error unless exactly one is)."""
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        return given[0]

    def _set_scale_tril(self, covariance_matrix, precision_matrix, scale_tril):
        """``_unbroadcasted_scale_tril`` from the matrix given."""
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.linalg.inv(ember.matmul(L, L.mT)).expand(self._matrix_shape())


class MultivariateNormal(AtLoc, _FromScaleTril, Distribution):
    """The multivariate normal of mean ``loc``, given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (a lower Cholesky factor of the covariance).

    >>> d = MultivariateNormal(ember.zeros(2), ember.eye(2))
    >>> round(float(d.log_prob(ember.zeros(2))), 4)
    -1.8379
    """

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, matrix = self._given(covariance_matrix, precision_matrix, scale_tril)
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch "
                             "dimensions")
        batch_shape = tuple(ember.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._set_scale_tril(covariance_matrix, precision_matrix, scale_tril)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, MultivariateNormal, batch_shape, _instance,
                            ("loc", "covariance_matrix", "scale_tril", "precision_matrix"))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape)
                                                                    + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of ``I + W^T D^-1 W``."""
    K = ember.matmul(W.mT / D.unsqueeze(-2), W) + _eye_like(W)
    return ember.linalg.cholesky(K)


def _batch_lowrank_logdet(W, D, capacitance_tril):
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, _batch_mv(Wt_Dinv, x))


class LowRankMultivariateNormal(AtLoc, Distribution):
    """The multivariate normal with covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                       cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, LowRankMultivariateNormal, batch_shape, _instance,
                            ("loc", "cov_diag", "cov_factor"))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / d_sqrt
        K = ember.matmul(Dinvsqrt_W, Dinvsqrt_W.mT) + _eye_like(Dinvsqrt_W.mT)
        return (d_sqrt * ember.linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        return (ember.matmul(W, W.mT) + ember.diag_embed(self._unbroadcasted_cov_diag)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        L = self._capacitance_tril
        A = ember.linalg.solve(L.expand(tuple(Wt_Dinv.shape[:-2]) + tuple(L.shape[-2:])), Wt_Dinv)
        P = ember.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return P.expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps_W = _standard_normal(shape[:-1] + tuple(self.cov_factor.shape[-1:]), dtype=self.loc.dtype,
                                 device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        W, D, C = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        M = _batch_lowrank_mahalanobis(W, D, value - self.loc, C)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + _batch_lowrank_logdet(W, D, C) + M)

    def entropy(self):
        W, D, C = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + _batch_lowrank_logdet(W, D, C))
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution of ``concentration`` over the simplex of its last dimension; ``rsample`` is
    reparameterised by the implicit derivative of the draw at fixed marginal Beta CDFs, as in PyTorch."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return ember._sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return ember.xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        all_small = (self.concentration < 1).all(-1, keepdim=True)
        corner = ember.nn.functional.one_hot(cm1.argmax(-1), cm1.shape[-1]).to(mode.dtype)
        return ember.where(all_small, corner, mode)

    @property
    def variance(self):
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return lgamma(c).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0) - ((c - 1.0) * digamma(c)).sum(-1)

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))
