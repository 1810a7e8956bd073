"""``ember.distributions``: probability distributions with PyTorch's API.

Each family has ``sample``/``rsample`` (reparameterised where PyTorch has it), ``log_prob``, ``entropy``,
moments, ``cdf``/``icdf`` where defined, ``expand``, batch and event shapes and argument validation;
``kl_divergence`` dispatches to closed forms registered with ``register_kl``; ``transforms``,
``constraints`` and ``biject_to``/``transform_to`` connect constrained and unconstrained spaces.

>>> import ember
>>> from ember.distributions import Normal, kl_divergence
>>> p, q = Normal(0.0, 1.0), Normal(1.0, 1.0)
>>> float(kl_divergence(p, q))
0.5
"""
import sys as _sys

from . import constraints, transforms  # noqa: F401
from . import composite, continuous, discrete, extra, matrix, mixture, multivariate, relaxed  # noqa: F401
from .composite import Independent, TransformedDistribution
from .constraint_registry import biject_to, transform_to
from .continuous import (
    Beta, Cauchy, Chi2, Exponential, Gamma, Gumbel, HalfCauchy, HalfNormal, Laplace, LogNormal, Normal, Pareto,
    StudentT, Uniform, Weibull,
)
from .discrete import (
    Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial, OneHotCategorical,
    OneHotCategoricalStraightThrough, Poisson,
)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .extra import ContinuousBernoulli, FisherSnedecor, GeneralizedPareto, InverseGamma, Kumaraswamy
from .kl import kl_divergence, register_kl
from .matrix import LKJCholesky, VonMises, Wishart
from .mixture import MixtureSameFamily
from .multivariate import Dirichlet, LowRankMultivariateNormal, MultivariateNormal
from .relaxed import (
    ExpRelaxedCategorical, LogisticNormal, LogitRelaxedBernoulli, RelaxedBernoulli, RelaxedOneHotCategorical,
)
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
           "Distribution", "FisherSnedecor", "GeneralizedPareto", "InverseGamma", "Kumaraswamy",
           "ExpRelaxedCategorical", "Exponential", "ExponentialFamily", "Gamma", "Geometric", "Gumbel",
           "HalfCauchy", "HalfNormal", "Independent", "Laplace", "LogNormal", "LogisticNormal",
           "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical",
           "StudentT", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "LKJCholesky",
           "biject_to", "kl_divergence",
           "register_kl", "transform_to", "constraints", "transforms", *_transforms_all]


def _alias_submodules():
    """PyTorch's per-family module names (``torch.distributions.normal``, ...) as aliases of the modules
    that define the families here, so ``from ember.distributions.normal import Normal`` works."""
    table = {
        composite: ("independent", "transformed_distribution"),
        continuous: ("normal", "log_normal", "half_normal", "laplace", "uniform", "cauchy", "half_cauchy",
                     "exponential", "gamma", "chi2", "beta", "studentT", "gumbel", "pareto", "weibull"),
        discrete: ("bernoulli", "categorical", "one_hot_categorical", "binomial", "multinomial", "poisson",
                   "geometric", "negative_binomial"),
        extra: ("continuous_bernoulli", "fishersnedecor", "kumaraswamy", "inverse_gamma", "generalized_pareto"),
        matrix: ("wishart", "lkj_cholesky", "von_mises"),
        mixture: ("mixture_same_family",),
        multivariate: ("multivariate_normal", "lowrank_multivariate_normal", "dirichlet"),
        relaxed: ("relaxed_bernoulli", "relaxed_categorical", "logistic_normal"),
    }
    package = _sys.modules[__name__]
    for module, names in table.items():
        for name in names:
            _sys.modules[f"{__name__}.{name}"] = module
            setattr(package, name, module)


_alias_submodules()
