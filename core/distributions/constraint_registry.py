"""``biject_to`` and ``transform_to``: from a constraint to a transform whose codomain it is.

``biject_to(c)`` gives a bijection (for HMC-style reparameterisation); ``transform_to(c)`` any transform onto
``c`` (for unconstrained optimisation).

>>> t = transform_to(constraints.positive)
>>> bool((t(ember.tensor([-3.0, 3.0])) > 0).all())
True
"""
from __future__ import annotations

from functools import partial
from numbers import Number

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from constraint classes (or instances' classes) to factories ``constraint -> Transform``."""

    def __init__(self):
        self._registry = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Register ``factory`` for ``constraint`` (a Constraint subclass or instance); usable as a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got "
                            f"{constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint):
    return transforms.identity_transform


@biject_to.register(constraints.positive)
@biject_to.register(constraints.nonnegative)
@transform_to.register(constraints.positive)
@transform_to.register(constraints.nonnegative)
def _transform_to_positive(constraint):
    return transforms.ExpTransform()


@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint):
    lb, ub = constraint.lower_bound, constraint.upper_bound
    if isinstance(lb, Number) and isinstance(ub, Number) and lb == 0 and ub == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(), transforms.AffineTransform(lb, ub - lb)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return transforms.SoftmaxTransform()


@biject_to.register(constraints.lower_cholesky)
@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


@biject_to.register(constraints.positive_definite)
@biject_to.register(constraints.positive_semidefinite)
@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


# constraints made of other constraints: each part goes through the same table (a bijection of bijections)
def _independent(registry, constraint):
    return transforms.IndependentTransform(registry(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


def _cat(registry, constraint):
    return transforms.CatTransform([registry(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


def _stack(registry, constraint):
    return transforms.StackTransform([registry(c) for c in constraint.cseq], constraint.dim)


for _registry in (biject_to, transform_to):
    _registry.register(constraints.independent, partial(_independent, _registry))
    _registry.register(constraints.cat, partial(_cat, _registry))
    _registry.register(constraints.stack, partial(_stack, _registry))
