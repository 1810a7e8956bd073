"""``ember.sparse``: sparse tensors (COO, CSR, CSC, BSR, BSC) and the functions made for them.

>>> import ember
>>> a = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
>>> ember.sparse.mm(a, ember.ones(3, 1)).tolist()
[[3.0], [9.0]]
>>> ember.sparse.sum(a, 1).to_dense().tolist()
[3.0, 9.0]
"""
from __future__ import annotations

import warnings

from .. import dtypes
from ..ops.creation import zeros
from ..registry import export
from .ops import mm as _mm
from .ops import (  # noqa: F401
    log_softmax, softmax, sparse_bsc_tensor, sparse_bsr_tensor, sparse_compressed_tensor, sparse_coo_tensor,
    sparse_csc_tensor, sparse_csr_tensor, sparse_mask, to_dense, to_sparse, to_sparse_bsc, to_sparse_bsr,
    to_sparse_csc, to_sparse_csr,
)
from .ops import sparse_addmm as _addmm
from .ops import sparse_mm as _sparse_mm
from .ops import sum as _sum
from .tensor import SparseTensor  # noqa: F401

__all__ = ["addmm", "log_softmax", "mm", "softmax", "sum", "FloatTensor", "DoubleTensor", "HalfTensor",
           "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor"]


def mm(mat1, mat2, reduce="sum"):
    """The matrix product with a sparse operand, whose gradient to a sparse operand holds only its stored
    entries, in its layout (``ember.mm``'s gives a sparse leaf a dense gradient, as PyTorch's)."""
    return _sparse_mm(mat1, mat2, reduce)


def addmm(mat, mat1, mat2, *, beta=1, alpha=1):
    """``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` and dense ``mat`` and ``mat2``, with
    gradients to all three (to a sparse operand: its stored entries, as :func:`mm`)."""
    return _addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):  # noqa: A001,A002
    """The sum of a sparse tensor's values, over all dimensions (a dense scalar) or over ``dim``."""
    if not isinstance(input, SparseTensor):
        return input.sum(dtype=dtype) if dim is None else input.sum(dim, dtype=dtype)
    return _sum(input, dim, dtype=dtype)


def _legacy_constructor(name: str, dtype):
    def constructor(*args, device=None):
        if all(isinstance(a, int) for a in args):  # FloatTensor(2, 3): an empty sparse tensor of that size
            return sparse_coo_tensor(zeros(len(args), 0, dtype=dtypes.int64, device=device),
                                     zeros(0, dtype=dtype, device=device), args)
        warnings.warn(f"ember.sparse.{name}(indices, values, shape, *, device=) is deprecated.  Please use "
                      "ember.sparse_coo_tensor(indices, values, shape, dtype=, device=).", UserWarning, stacklevel=2)
        return sparse_coo_tensor(*args, dtype=dtype, device=device)
    constructor.__name__ = constructor.__qualname__ = name
    constructor.__doc__ = (f"The legacy constructor ``{name}(indices, values, size)`` (or ``{name}(*size)``, "
                           f"empty): a COO tensor of dtype {dtype}.")
    return constructor


for _name, _dtype in (("FloatTensor", dtypes.float32), ("DoubleTensor", dtypes.float64),
                      ("HalfTensor", dtypes.float16), ("BFloat16Tensor", dtypes.bfloat16),
                      ("LongTensor", dtypes.int64), ("IntTensor", dtypes.int32), ("ShortTensor", dtypes.int16),
                      ("CharTensor", dtypes.int8), ("ByteTensor", dtypes.uint8)):
    globals()[_name] = _legacy_constructor(_name, _dtype)


def _strided_only(name: str, expected: str = "coordinate"):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected sparse {expected} tensor layout but got Strided")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{name}`` of a sparse tensor (a strided tensor has none: RuntimeError)."
    return method


def _sparse_dim(self) -> int:
    """The number of sparse dimensions: 0 for a strided tensor."""
    return 0


def _dense_dim(self) -> int:
    """The number of dense dimensions: all of a strided tensor's."""
    return self.ndim


export(sparse_coo_tensor, to=("torch",))
for _constructor in (sparse_csr_tensor, sparse_csc_tensor, sparse_bsr_tensor, sparse_bsc_tensor,
                     sparse_compressed_tensor):
    export(_constructor, to=("torch",))
export(_mm, "spmm", to=("torch",))
export(to_sparse, to=("Tensor",), aliases=("to_sparse_coo",))
for _conversion in (to_sparse_csr, to_sparse_csc, to_sparse_bsr, to_sparse_bsc):
    export(_conversion, to=("Tensor",))
export(to_dense, to=("Tensor",))
export(sparse_mask, to=("Tensor",))
export(_sparse_dim, "sparse_dim", to=("Tensor",))
export(_dense_dim, "dense_dim", to=("Tensor",))
for _name in ("indices", "values", "_indices", "_values", "coalesce", "is_coalesced", "_nnz"):
    export(_strided_only(_name), to=("Tensor",))
for _name, _expected in (("crow_indices", "row compressed"), ("col_indices", "row compressed"),
                         ("ccol_indices", "column compressed"), ("row_indices", "column compressed")):
    export(_strided_only(_name, _expected), to=("Tensor",))
