"""``nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal`` as parametrizations.

Each registers a module through :func:`ember.nn.utils.parametrize.register_parametrization`, so the
state dict holds ``parametrizations.weight.original`` (``original0``/``original1`` for weight norm)
exactly as PyTorch's does.

>>> import ember
>>> from ember.nn.utils.parametrizations import weight_norm
>>> m = weight_norm(ember.nn.Linear(20, 40), name="weight")
>>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
(ember.Size([40, 1]), ember.Size([40, 20]))
"""
from __future__ import annotations

from enum import Enum, auto

from ... import dtypes
from ...autograd.grad_mode import no_grad
from ...ops.creation import eye, randn
from ...ops.linalg import mv, vdot
from ...ops.linalg_decomp import solve
from ...ops.linalg_solve import geqrf, householder_product, matrix_exp
from ...ops.pointwise import where
from ...ops.shape import cat
from ...tensor import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---------------------------------------------------------------------------------------------- weight norm
def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, kept for broadcasting (``dim=-1``: the
    whole tensor, a scalar), as ``torch.norm_except_dim``."""
    if dim == -1:
        return v.norm(pow)
    dim = dim % v.dim()
    return v.norm(pow, dim=[d for d in range(v.dim()) if d != dim], keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """``v * (g / ||v||)`` with the norm taken over every dimension but ``dim`` (``torch._weight_norm``)."""
    return v * (g / norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||``: magnitude ``original0`` and direction ``original1``.

    ``dim`` is the dimension kept by the norm (``None``: one norm for the whole tensor). State dicts
    of the legacy :func:`ember.nn.utils.weight_norm` (``weight_g``/``weight_v``) load into it.

    >>> import ember
    >>> m = ember.nn.utils.parametrizations.weight_norm(ember.nn.Linear(3, 2))
    >>> [k for k in m.state_dict()]
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._hook(module._load_state_dict_pre_hooks, _weight_norm_compat_hook)
    return module


# ---------------------------------------------------------------------------------------------- spectral norm
class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place, so a module that shares them (DataParallel replicas) sees the update
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mv(_mH(weight_mat), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        return weight / vdot(u, mv(weight_mat, v))

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration.

    The ``_u``/``_v`` estimates are buffers of the parametrization; each forward in training mode
    runs ``n_power_iterations`` steps of power iteration, eval mode reuses them. ``dim`` defaults to
    1 for transposed convolutions, else 0.

    >>> import ember
    >>> snm = ember.nn.utils.parametrizations.spectral_norm(ember.nn.Linear(20, 40))
    >>> snm.parametrizations.weight.original.shape, snm.parametrizations.weight[0]._u.shape
    (ember.Size([40, 20]), ember.Size([40]))
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---------------------------------------------------------------------------------------------- orthogonal
def _mH(x: Tensor) -> Tensor:
    return x.mT.conj() if x.is_complex() else x.mT


def _sgn(x: Tensor) -> Tensor:
    return x.sign() if not x.is_complex() else x / x.abs().clamp_min(dtypes.finfo(x.dtype).tiny)


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    Id = eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * dtypes.finfo(Q.dtype).eps
    return bool((_mH(Q) @ Q).allclose(Id, atol=eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A's QR decomposition with R's diagonal made positive (a unique orthogonal matrix)."""
    X, tau = geqrf(A)
    Q = householder_product(X, tau)
    return Q * _sgn(X.diagonal(dim1=-2, dim2=-1)).unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # a skew-symmetric A (from the lower triangle) maps to an orthogonal exp(A) or Cayley transform
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - _mH(X)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            # the strictly lower triangle holds Householder vectors; the diagonal's sign flips columns
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # geqrf's reflectors with the diagonal's sign (flipped where tau is 0) reproduce Q
            A, tau = geqrf(Q)
            sign = A.diagonal(dim1=-2, dim2=-1).sign() * (1 - 2 * (tau == 0.0).to(A.dtype))
            A = where(eye(n, k, dtype=dtypes.bool, device=A.device), sign.unsqueeze(-2), A)
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            N = randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        # -Id: the point the maps send to Id, so that the weight starts at base
        neg_Id = -eye(Q_init.size(-2), Q_init.size(-1), dtype=Q_init.dtype, device=Q_init.device)
        return neg_Id.repeat(*Q_init.shape[:-2], 1, 1) if Q_init.dim() > 2 else neg_Id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal (unitary).

    ``orthogonal_map`` is ``"matrix_exp"`` (default for square or complex), ``"cayley"`` or
    ``"householder"`` (default otherwise). With ``use_trivialization`` a ``base`` buffer holds the
    current orthogonal point and assigning to the weight resets it.

    >>> import ember
    >>> orth_linear = ember.nn.utils.parametrizations.orthogonal(ember.nn.Linear(20, 40))
    >>> Q = orth_linear.weight
    >>> bool((Q.T @ Q - ember.eye(20)).norm() < 1e-4)
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
