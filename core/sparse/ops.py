"""What sparse tensors do: construction, conversion, structure, arithmetic, products, reductions and softmax.

Every result is computed from ``values`` with ember's differentiable ops (``index_add``, ``index_select``,
``scatter_reduce``), so the gradient of a dense result reaches ``values`` and the dense operands.
"""
from __future__ import annotations

import math
import numbers

from .. import dtypes
from ..autograd.function import Function
from ..layouts import EMPTY_OF
from ..dispatch import result_type
from ..ops.creation import arange, as_tensor, zeros
from ..ops.shape import cat, repeat_interleave, stack
from ..state import is_grad_enabled
from ..tensor import Tensor
from .tensor import (
    ALL, BSC, BSR, COMPRESSED, COO, CSC, CSR, INDEX_NAMES, SparseTensor, _nbatch, implements, make, make_csr,
)

BOTH = ALL  # handlers that take every layout


# --------------------------------------------------------------------------- helpers
def _linear(indices, shape):
    """Each column of ``indices`` as one row-major position in ``shape``."""
    lin = indices[0]
    for d in range(1, len(shape)):
        lin = lin * shape[d] + indices[d]
    return lin


def _unravel(lin, shape):
    rows = []
    for n in reversed(shape):
        rows.append(lin.remainder(n))
        lin = lin.div(n, rounding_mode="floor")
    return stack(rows[::-1]) if rows else lin.reshape(0, -1)


def _sd(s) -> int:
    return s._sp_i.shape[0]


def _coo(s):
    """``s`` as a COO tensor of single entries: a compressed tensor's rows (columns) expanded from its pointers,
    each block's entries at their own positions, batch indices first (coalesced only when it comes from CSR)."""
    if s._sp_layout is COO:
        return s
    nb = _nbatch(s)
    batch_shape = tuple(s.shape[:nb])
    ptr, v = s._sp_crow.reshape(-1, s._sp_crow.shape[-1]), s._sp_v
    n_major = ptr.shape[1] - 1
    v = v.reshape(-1, *v.shape[nb + 1:])  # the batches' entries one after another
    counts = (ptr[:, 1:] - ptr[:, :-1]).reshape(-1).long()
    major = repeat_interleave(arange(counts.shape[0], device=ptr.device), counts)  # batch * n_major + row
    batch, major = major.div(n_major, rounding_mode="floor"), major.remainder(n_major)
    minor = s._sp_i.reshape(-1).long()
    rows, cols = (minor, major) if INDEX_NAMES[s._sp_layout][2] else (major, minor)
    if s._sp_layout in (BSR, BSC):
        r, c = v.shape[1:3]
        n = v.shape[0]
        rows = (rows.reshape(-1, 1, 1) * r + arange(r, device=ptr.device).reshape(1, -1, 1)).expand(n, r, c)
        cols = (cols.reshape(-1, 1, 1) * c + arange(c, device=ptr.device).reshape(1, 1, -1)).expand(n, r, c)
        batch = batch.reshape(-1, 1, 1).expand(n, r, c)
        rows, cols, batch, v = rows.reshape(-1), cols.reshape(-1), batch.reshape(-1), v.reshape(-1, *v.shape[3:])
    lead = list(_unravel(batch, batch_shape)) if nb else []
    return make(stack([*lead, rows, cols]), v, s.shape, s._sp_layout is CSR)


def _index_tensor(indices, device):
    if isinstance(indices, Tensor):
        return indices.to(device=device, dtype=dtypes.int64) if device is not None else indices.long()
    return as_tensor(indices, dtype=dtypes.int64, device=device)


def _value_tensor(values, dtype, device):
    values = values if isinstance(values, Tensor) else as_tensor(values, dtype=dtype, device=device)
    return values.to(device=device if device is not None else values.device, dtype=dtype or values.dtype)


# --------------------------------------------------------------------------- construction
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """A COO sparse tensor with ``values[k]`` at position ``indices[:, k]`` (duplicates add up).

    >>> import ember
    >>> s = ember.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.], (2, 3))
    >>> s.to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]
    """
    values = _value_tensor(values, dtype, device)
    indices = _index_tensor(indices, values.device)
    if indices.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(f"sparse_coo_tensor: indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: {values.shape[0]}")
    sd, nnz = indices.shape
    if size is None:
        top = indices.amax(1).tolist() if nnz else [-1] * sd
        size = [m + 1 for m in top] + list(values.shape[1:])
    size = tuple(int(n) for n in size)
    if len(size) != sd + values.ndim - 1:
        raise RuntimeError(f"sparse_coo_tensor: number of dimensions must be sparse_dim ({sd}) + dense_dim "
                           f"({values.ndim - 1}), but got {len(size)}")
    if tuple(values.shape[1:]) != size[sd:]:
        raise RuntimeError(f"sparse_coo_tensor: values has incorrect size, expected {[nnz, *size[sd:]]}, "
                           f"got {list(values.shape)}")
    if nnz:
        low, high = indices.amin(1).tolist(), indices.amax(1).tolist()
        for d in range(sd):
            if low[d] < 0:
                raise RuntimeError(f"sparse_coo_tensor: found negative index {low[d]} for dim {d}")
            if high[d] >= size[d]:
                raise RuntimeError(f"sparse_coo_tensor: size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {high[d]}")
    s = make(indices, values.detach() if requires_grad else values, size, bool(is_coalesced) or nnz == 0)
    return s.requires_grad_() if requires_grad else s


def _dense_start(layout) -> int:
    """The first dimension of a value that is a dense dimension (after nnz and, for blocks, the block)."""
    return 3 if layout in (BSR, BSC) else 1


def _blocksize(layout, values, nb: int = 0) -> tuple:
    return tuple(values.shape[nb + 1:nb + 3]) if layout in (BSR, BSC) else (1, 1)


# PyTorch's C++ names of the dtypes its index checks print
_SCALAR_NAMES = {dtypes.int32: "Int", dtypes.int64: "Long", dtypes.float32: "Float", dtypes.float64: "Double",
                 dtypes.int16: "Short", dtypes.int8: "Char", dtypes.uint8: "Byte", dtypes.bool: "Bool"}


def _compressed_indices(compressed, plain, device, names):
    pair = [i if isinstance(i, Tensor) else as_tensor(i, dtype=dtypes.int64) for i in (compressed, plain)]
    if pair[0].dtype != pair[1].dtype or pair[0].dtype not in (dtypes.int32, dtypes.int64):
        kinds = [_SCALAR_NAMES.get(i.dtype, str(i.dtype)) for i in pair]
        raise RuntimeError(f"{names[0]} and {names[1]} must have the same dtype, bot got {kinds[0]} and "
                           f"{kinds[1]}, respectively")
    return [i.to(device=device) for i in pair]


def _check_compressed(ptr, idx, values, size, layout):
    """PyTorch's invariants of a compressed tensor (its messages, RuntimeError), in each batch."""
    cname, pname, by_column = INDEX_NAMES[layout]
    block = _blocksize(layout, values, ptr.ndim - 1)
    nb = ptr.ndim - 1
    if ptr.ndim != idx.ndim or ptr.ndim < 1:
        raise RuntimeError(f"{cname} and {pname} dimensionalities must be equal but got {ptr.ndim} and {idx.ndim}, "
                           "respectively")
    if ptr.shape[:-1] != idx.shape[:-1] or tuple(values.shape[:nb]) != tuple(ptr.shape[:-1]):
        raise RuntimeError(f"all batch dimensions of {cname}, {pname} and values must be equal, got "
                           f"{list(ptr.shape)}, {list(idx.shape)} and {list(values.shape)}")
    if layout in (BSR, BSC) and values.ndim < nb + 3:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block dimensionalities (={nb} + 2) "
                           f"but got {values.ndim}")
    dense = values.ndim - nb - _dense_start(layout)
    if dense < 0 or len(size) != nb + 2 + dense:
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense dimensionalities (={nb} + "
                           f"2 + {dense}) but got {len(size)}")
    if tuple(size[:nb]) != tuple(ptr.shape[:-1]):
        raise RuntimeError(f"batch dimensions of {cname} ({list(ptr.shape[:-1])}) must be the tensor's "
                           f"({list(size[:nb])})")
    for d in range(2):
        if size[nb + d] % block[d]:
            raise RuntimeError(f"tensor shape[{nb + d}] (={size[nb + d]}) must be divisible with blocksize[{d}] "
                               f"(={block[d]}) as defined by values shape")
    m, n = size[nb] // block[0], size[nb + 1] // block[1]
    n_major, n_minor = (n, m) if by_column else (m, n)
    nnz = values.shape[nb]
    if ptr.shape[-1] != n_major + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {'columns' if by_column else 'rows'}"
                           f" + 1 (={n_major + 1}), but got {ptr.shape[-1]}")
    if idx.shape[-1] != nnz:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by values.shape[{nb}], "
                           f"but got {idx.shape[-1]}")
    nbatch = math.prod(ptr.shape[:-1])
    ptr, idx = ptr.reshape(nbatch, n_major + 1), idx.reshape(nbatch, nnz)
    if bool((ptr[:, 0] != 0).any()):
        raise RuntimeError(f"`{cname}[..., 0] == 0` is not satisfied.")
    if bool((ptr[:, -1] != nnz).any()):
        raise RuntimeError(f"`{cname}[..., -1] == nnz` is not satisfied.")
    plain = "nrows" if by_column else "ncols"
    if nnz and (int(idx.min()) < 0 or int(idx.max()) >= n_minor):
        raise RuntimeError(f"`0 <= {pname} < {plain}` is not satisfied.")
    counts = (ptr[:, 1:] - ptr[:, :-1]).reshape(-1)
    if nnz and bool((counts < 0).any()):
        raise RuntimeError(f"`1 <= {cname}[..., i] - {cname}[..., i - 1] <= {plain}` for all i = 1, ..., "
                           f"{'ncols' if by_column else 'nrows'} is not satisfied.")
    # sorted and distinct within each row (column) of each batch: every step inside one is positive
    major = repeat_interleave(arange(counts.shape[0], device=ptr.device), counts.long())
    flat = idx.reshape(-1)
    if nnz > 1 and bool(((flat[1:] <= flat[:-1]) & (major[1:] == major[:-1])).any()):
        raise RuntimeError(f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = 1, ..., "
                           f"{'ncols' if by_column else 'nrows'} are sorted and distinct along the last dimension "
                           "values` is not satisfied.")


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None, layout=None,
                             device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """A sparse matrix of a compressed ``layout`` (``sparse_csr``, ``sparse_csc``, ``sparse_bsr``,
    ``sparse_bsc``): row (column) ``i`` holds ``values[ptr[i]:ptr[i+1]]`` at the columns (rows) ``plain_indices``
    names; a block layout's values are blocks ``[nnz, R, C]`` and its indices count blocks.  PyTorch's invariants
    are always checked (``check_invariants`` is accepted for its signature), with its messages.

    >>> import ember
    >>> ember.sparse_compressed_tensor([0, 1, 2], [1, 0], [5., 6.], (2, 2), layout=ember.sparse_csc).to_dense().tolist()
    [[0.0, 6.0], [5.0, 0.0]]
    """
    if layout not in COMPRESSED:
        got = "none" if layout is None else {"strided": "Strided", "sparse_coo": "Sparse"}.get(layout._name)
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout but got {got}")
    values = _value_tensor(values, dtype, device)
    ptr, idx = _compressed_indices(compressed_indices, plain_indices, values.device, INDEX_NAMES[layout])
    nb = ptr.ndim - 1
    if size is None and 0 <= nb == idx.ndim - 1 and values.ndim >= nb + _dense_start(layout):
        block = _blocksize(layout, values, nb)
        n_major, n_minor = ptr.shape[-1] - 1, int(idx.max()) + 1 if idx.numel() else 0
        rows, cols = (n_minor, n_major) if INDEX_NAMES[layout][2] else (n_major, n_minor)
        size = (*ptr.shape[:-1], rows * block[0], cols * block[1], *values.shape[nb + _dense_start(layout):])
    size = tuple(int(n) for n in size)
    _check_compressed(ptr, idx, values, size, layout)
    s = make_csr(ptr, idx, values.detach() if requires_grad else values, size, layout)
    return s.requires_grad_() if requires_grad else s


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A CSR sparse matrix: row ``i`` holds ``values[crow[i]:crow[i+1]]`` at columns ``col[crow[i]:crow[i+1]]``.

    >>> import ember
    >>> ember.sparse_csr_tensor([0, 1, 2], [1, 0], [5., 6.], (2, 2)).to_dense().tolist()
    [[0.0, 5.0], [6.0, 0.0]]
    """
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype, layout=CSR, device=device,
                                    requires_grad=requires_grad)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A CSC sparse matrix: column ``j`` holds ``values[ccol[j]:ccol[j+1]]`` at rows ``row[ccol[j]:ccol[j+1]]``.

    >>> import ember
    >>> ember.sparse_csc_tensor([0, 1, 2], [1, 0], [6., 5.], (2, 2)).to_dense().tolist()
    [[0.0, 5.0], [6.0, 0.0]]
    """
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype, layout=CSC, device=device,
                                    requires_grad=requires_grad)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A BSR sparse matrix: CSR over blocks, ``values`` of shape ``[nnz, R, C]``.

    >>> import ember
    >>> ember.sparse_bsr_tensor([0, 1, 2], [1, 0], [[[5.]], [[6.]]]).to_dense().tolist()
    [[0.0, 5.0], [6.0, 0.0]]
    """
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype, layout=BSR, device=device,
                                    requires_grad=requires_grad)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A BSC sparse matrix: CSC over blocks, ``values`` of shape ``[nnz, R, C]``.

    >>> import ember
    >>> ember.sparse_bsc_tensor([0, 1, 2], [1, 0], [[[6.]], [[5.]]]).to_dense().tolist()
    [[0.0, 5.0], [6.0, 0.0]]
    """
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype, layout=BSC, device=device,
                                    requires_grad=requires_grad)


# --------------------------------------------------------------------------- conversion
_KIND = {CSR: "SparseCsr", CSC: "SparseCsc", BSR: "SparseBsr", BSC: "SparseBsc", COO: "Sparse"}


def _kind(t) -> str:
    return _KIND[t._sp_layout] if isinstance(t, SparseTensor) else "Strided"


@implements("to_sparse", "to_sparse_coo", layouts=BOTH)
def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """This tensor in the COO layout (``sparse_dim`` leading dimensions sparse, all by default), or in
    ``layout`` (a block layout with its ``blocksize``).

    >>> import ember
    >>> ember.tensor([[0., 2.], [3., 0.]]).to_sparse().indices().tolist()
    [[0, 1], [1, 0]]
    """
    return _same_matrix(_to_sparse(self, sparse_dim, layout, blocksize, dense_dim), self)


def _to_sparse(self, sparse_dim, layout, blocksize, dense_dim):
    if layout in COMPRESSED:
        if (blocksize is None) == (layout in (BSR, BSC)):
            given = "without" if blocksize is None else "with"
            raise RuntimeError(f"{'dense_' if not isinstance(self, SparseTensor) else ''}to_sparse: conversion from "
                               f"{_kind(self)} to {_KIND[layout]} {given} blocksize argument given is not supported")
        return _to_compressed(self, layout, blocksize, dense_dim)
    if layout not in (None, COO) or blocksize is not None:
        raise RuntimeError(f"to_sparse: conversion from {_kind(self)} to {layout} is not supported")
    if isinstance(self, SparseTensor):
        coo = _coo(self)
        if sparse_dim is not None and sparse_dim != _sd(coo):
            raise RuntimeError(f"to_sparse: conversion from {self.layout} to {COO} with sparse_dim {sparse_dim} "
                               f"is not supported (the tensor has sparse_dim {_sd(coo)})")
        return coo  # in the compressed tensor's order, coalesced only from CSR (as PyTorch)
    sd = self.ndim if sparse_dim is None else sparse_dim
    if dense_dim is not None:
        sd = self.ndim - dense_dim
    if not 0 < sd <= self.ndim:
        raise RuntimeError(f"to_sparse: sparse_dim must be in [1, {self.ndim}], but got {sd}")
    sshape = tuple(self.shape[:sd])
    mask = self != 0
    if sd < self.ndim:
        mask = mask.reshape(*sshape, -1).any(-1)
    indices = mask.nonzero().t()
    flat = self.reshape(math.prod(sshape), *self.shape[sd:])
    return make(indices, flat.index_select(0, _linear(indices, sshape)), self.shape, True)


def _pointers(major, n: int, batches: int = 1):
    """The compressed indices (``[batches, n + 1]``) of sorted ``major`` indices, ``batch * n + row``: where each
    of the ``n`` rows (columns) of each batch starts, and the end."""
    counts = zeros(batches * n, dtype=dtypes.int64, device=major.device)
    counts = counts.index_add(0, major, major.new_ones(major.shape))
    return cat([zeros(batches, 1, dtype=dtypes.int64, device=major.device), counts.reshape(batches, n).cumsum(1)], 1)


def _to_compressed(self, layout, blocksize, dense_dim, op=None):
    """``self`` (2-D, strided or sparse) in the compressed ``layout``; values are gathered from the input with
    differentiable ops, so gradients flow back to it."""
    return _same_matrix(_compress(self, layout, blocksize, dense_dim, op), self)


def _compress(self, layout, blocksize, dense_dim, op):
    op = op or f"to_sparse_{layout._name[7:]}"
    sparse = isinstance(self, SparseTensor)
    if sparse and self._sp_layout is layout and (
            blocksize is None or tuple(blocksize) == _blocksize(layout, self._sp_v, _nbatch(self))):
        return self
    by_column = INDEX_NAMES[layout][2]
    if sparse and self._sp_layout is COO and _sd(self) != 2:
        raise RuntimeError(f"coo_{op}: conversion from Sparse to {_KIND[layout]} for input tensors with "
                           "sparse_dim()!=2 is not supported")
    if dense_dim is None:
        dense_dim = globals()["dense_dim"](self) if sparse else 0
    if sparse and self._sp_layout in (BSR, BSC) and layout in (CSR, CSC):
        raise RuntimeError(f"sparse_compressed_to_sparse_{layout._name[7:]}: expected SparseCsr or SparseCsc "
                           f"layout but got {_kind(self)}")
    if layout in (CSR, CSC) and sparse and self.ndim == 2 and not dense_dim and self._sp_layout is not CSR:
        coo = coalesce(_coo(self))  # explicit entries stay, in row-major (or, transposed, column-major) order
        coo = coalesce(transpose(coo)) if by_column else coo
        major, minor = coo._sp_i
        n_major = self.shape[1 if by_column else 0]
        return make_csr(_pointers(major, n_major)[0], minor, coo._sp_v, self.shape, layout)
    if isinstance(blocksize, int):
        blocksize = (blocksize, blocksize)
    if blocksize is not None and len(blocksize) != 2:
        raise RuntimeError(f"dense_{op}: blocksize needs to be a tuple of size 2, but got {len(blocksize)}")
    r, c = (1, 1) if blocksize is None else blocksize
    nb = self.ndim - 2 - dense_dim  # leading batch dimensions
    if nb < 0 or dense_dim < 0:
        raise RuntimeError(f"{op}: expected a tensor of at least 2 + dense_dim (={dense_dim}) dimensions, got "
                           f"{self.ndim}")
    batch, (m, n), dense_shape = tuple(self.shape[:nb]), self.shape[nb:nb + 2], tuple(self.shape[nb + 2:])
    if m % r or n % c:
        raise RuntimeError(f"dense_{op}: tensor sparse size ({m},{n}) must be divisible by given blocksize "
                           f"({r},{c})")
    nbatch = math.prod(batch)
    blocks = to_dense(self).reshape(nbatch, m // r, r, n // c, c, *dense_shape)
    # [batch, major block, minor block, r, c, *dense]: block rows major, or block columns for CSC/BSC
    blocks = blocks.permute(0, *((3, 1) if by_column else (1, 3)), 2, 4, *range(5, blocks.ndim))
    n_major, n_minor = blocks.shape[1:3]
    mask = (blocks != 0).reshape(nbatch, n_major, n_minor, -1).any(-1)
    counts = mask.reshape(nbatch, -1).sum(1)
    if nbatch > 1 and bool((counts != counts[0]).any()):
        raise RuntimeError(f"{op}: expect the same number of specified elements per batch, got "
                           f"{counts.tolist()}")
    b, major, minor = mask.nonzero().t()
    lin = (b * n_major + major) * n_minor + minor
    values = blocks.reshape(nbatch * n_major * n_minor, r, c, *dense_shape).index_select(0, lin)
    nnz = lin.shape[0] // max(nbatch, 1)
    values = values.reshape(*batch, nnz, *((r, c) if layout in (BSR, BSC) else ()), *dense_shape)
    ptr = _pointers(b * n_major + major, n_major, nbatch).reshape(*batch, n_major + 1)
    return make_csr(ptr, minor.reshape(*batch, nnz), values, self.shape, layout)


@implements("to_sparse_csr", layouts=BOTH)
def to_sparse_csr(self, dense_dim=None):
    """This 2-D tensor in the CSR layout.

    >>> import ember
    >>> ember.tensor([[0., 2.], [3., 0.]]).to_sparse_csr().crow_indices().tolist()
    [0, 1, 2]
    """
    return _to_compressed(self, CSR, None, dense_dim)


@implements("to_sparse_csc", layouts=BOTH)
def to_sparse_csc(self, dense_dim=None):
    """This 2-D tensor in the CSC layout (columns compressed).

    >>> import ember
    >>> ember.tensor([[0., 2.], [3., 4.]]).to_sparse_csc().row_indices().tolist()
    [1, 0, 1]
    """
    return _to_compressed(self, CSC, None, dense_dim)


def _check_blocksize(blocksize, op):
    if not isinstance(blocksize, (int, tuple, list)):
        raise TypeError(f"{op}(): argument 'blocksize' (position 1) must be tuple of ints, not "
                        f"{type(blocksize).__name__}")


@implements("to_sparse_bsr", layouts=BOTH)
def to_sparse_bsr(self, blocksize, dense_dim=None):
    """This 2-D tensor in the BSR layout: blocks of ``blocksize`` (rows, columns) holding a nonzero, rows of
    blocks compressed.

    >>> import ember
    >>> ember.eye(4).to_sparse_bsr((2, 2)).col_indices().tolist()
    [0, 1]
    """
    _check_blocksize(blocksize, "to_sparse_bsr")
    return _to_compressed(self, BSR, blocksize, dense_dim)


@implements("to_sparse_bsc", layouts=BOTH)
def to_sparse_bsc(self, blocksize, dense_dim=None):
    """This 2-D tensor in the BSC layout: blocks of ``blocksize`` holding a nonzero, columns of blocks
    compressed.

    >>> import ember
    >>> ember.eye(4).to_sparse_bsc((2, 2)).ccol_indices().tolist()
    [0, 1, 2]
    """
    _check_blocksize(blocksize, "to_sparse_bsc")
    return _to_compressed(self, BSC, blocksize, dense_dim)


@implements("to_dense", layouts=BOTH)
def to_dense(self, dtype=None, *, masked_grad=None):
    """This tensor in the strided layout (a strided tensor is returned as it is)."""
    if not isinstance(self, SparseTensor):
        return self if dtype in (None, self.dtype) else self.to(dtype)
    s = _coo(self)
    sd, values = _sd(s), s._sp_v if dtype is None else s._sp_v.to(dtype)
    sshape = tuple(s.shape[:sd])
    flat = zeros(math.prod(sshape), *s.shape[sd:], dtype=values.dtype, device=values.device)
    return flat.index_add(0, _linear(s._sp_i, sshape), values).reshape(s.shape)


@implements("coalesce")
def coalesce(self):
    """This COO tensor with its indices sorted and unique (values at repeated indices added)."""
    if self._sp_c:
        return self
    sd = _sd(self)
    sshape = tuple(self.shape[:sd])
    unique, inverse = _linear(self._sp_i, sshape).unique(sorted=True, return_inverse=True)
    v = self._sp_v
    summed = zeros(unique.shape[0], *v.shape[1:], dtype=v.dtype, device=v.device).index_add(0, inverse, v)
    return make(_unravel(unique, sshape), summed, self.shape, True)


@implements("to", layouts=BOTH)
def _to(self, *args, **kwargs):
    if args and isinstance(args[0], Tensor):  # a.to(other): other's device and dtype
        args = (args[0].device, args[0].dtype, *args[1:])
    return _move(self, self._sp_v.to(*args, **kwargs))


for _name in ("cpu", "cuda", "double", "float", "half", "long", "int"):
    def _convert(self, *args, _name=_name, **kwargs):
        return _move(self, getattr(self._sp_v, _name)(*args, **kwargs))
    implements(_name, layouts=BOTH)(_convert)


def _move(self, v):
    structure = [getattr(self, f).to(v.device) for f in ("_sp_crow", "_sp_i") if f in self.__dict__]
    if self._sp_layout is not COO:
        return make_csr(*structure, v, self.shape, self._sp_layout)
    return make(structure[0], v, self.shape, self._sp_c)


@implements("detach", layouts=BOTH)
def detach(self):
    """This tensor's structure with its values detached from the graph."""
    return self._with_values(self._sp_v.detach())


@implements("clone", layouts=BOTH)
def clone(self, *, memory_format=None):
    """A copy of the indices and values (differentiable in the values)."""
    return _move(self, self._sp_v.clone())


@implements("zeros_like", layouts=BOTH)
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):  # noqa: A002
    """A tensor of ``input``'s shape storing no entries, of its layout (or ``layout``; strided: dense zeros)."""
    return input.new_zeros(input.shape, dtype=dtype, layout=input.layout if layout is None else layout,
                           device=device, requires_grad=requires_grad)


# --------------------------------------------------------------------------- structure
@implements("is_coalesced")
def is_coalesced(self) -> bool:
    """Whether the indices are known sorted and unique."""
    return self._sp_c


@implements("indices")
def indices(self):
    """The indices of a coalesced COO tensor (``[sparse_dim, nnz]``)."""
    if not self._sp_c:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return self._sp_i


@implements("values", layouts=BOTH)
def values(self):
    """The values (``[nnz, *dense_shape]``); for COO, of a coalesced tensor."""
    if not self._sp_c:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return self._sp_v


@implements("_indices")
def _indices(self):
    return self._sp_i


@implements("_values")
def _values(self):
    return self._sp_v


def _compressed_part(name: str, field: str, accepted, kind: str, doc: str):
    def part(self):
        if self._sp_layout not in accepted:
            raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but got {_kind(self)}")
        return getattr(self, field)
    part.__name__ = part.__qualname__ = name
    part.__doc__ = doc
    return implements(name, layouts=BOTH)(part)


crow_indices = _compressed_part("crow_indices", "_sp_crow", (CSR, BSR), "row",
                                "Where each row (of blocks) of a CSR (BSR) tensor starts in ``values``, and the end.")
col_indices = _compressed_part("col_indices", "_sp_i", (CSR, BSR), "row",
                               "The column (of blocks) of each value of a CSR (BSR) tensor.")
ccol_indices = _compressed_part("ccol_indices", "_sp_crow", (CSC, BSC), "column",
                                "Where each column (of blocks) of a CSC (BSC) tensor starts in ``values``, and the "
                                "end.")
row_indices = _compressed_part("row_indices", "_sp_i", (CSC, BSC), "column",
                               "The row (of blocks) of each value of a CSC (BSC) tensor.")


@implements("sparse_dim", layouts=BOTH)
def sparse_dim(self) -> int:
    """The number of sparse (leading) dimensions."""
    return 2 if self._sp_layout is not COO else _sd(self)


@implements("dense_dim", layouts=BOTH)
def dense_dim(self) -> int:
    """The number of dense (trailing) dimensions, those of each value."""
    return self._sp_v.ndim - (1 if self._sp_layout is COO else _nbatch(self) + _dense_start(self._sp_layout))


@implements("_nnz", layouts=BOTH)
def _nnz(self) -> int:
    return self._sp_v.shape[_nbatch(self)]


_TRANSPOSED = {CSR: CSC, CSC: CSR, BSR: BSC, BSC: BSR}


@implements("t", layouts=BOTH)
def t(self):
    """The transpose of a sparse matrix (see :func:`transpose`); a tensor of more than 2 dimensions (for COO: of
    dense dimensions) raises, as in PyTorch."""
    if self._sp_layout is COO and (_sd(self) > 2 or dense_dim(self)):
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {_sd(self)} "
                           f"sparse and {dense_dim(self)} dense dimensions")
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return transpose(self, 0, 1)


@implements("transpose", layouts=BOTH)
def transpose(self, dim0=0, dim1=1):
    """The transpose of two sparse dimensions (``t()``: of a matrix).  A COO result is not coalesced; a compressed
    matrix keeps its index arrays and changes layout (CSR <-> CSC, BSR <-> BSC, each block transposed).

    >>> import ember
    >>> ember.tensor([[0., 2.], [3., 0.]]).to_sparse_csr().t().layout
    ember.sparse_csc
    """
    if self.ndim < 2:
        return self
    d0, d1 = (d % self.ndim for d in (dim0, dim1))
    if self._sp_layout is not COO:
        if {d0, d1} != {0, 1}:
            if d0 == d1:
                return self
            raise NotImplementedError(f"transpose: of a tensor of layout {self._sp_layout} only its two sparse "
                                      f"dimensions may be swapped, got {dim0} and {dim1}")
        v = self._sp_v.transpose(1, 2) if self._sp_layout in (BSR, BSC) else self._sp_v
        shape = (self.shape[1], self.shape[0], *self.shape[2:])
        return _same_matrix(make_csr(self._sp_crow, self._sp_i, v, shape, _TRANSPOSED[self._sp_layout]), self,
                            (d0, d1))
    sd = _sd(self)
    if max(d0, d1) >= sd:
        raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got sparse_dim: {sd}, d0: {d0}, "
                           f"d1: {d1}")
    order = list(range(self.ndim))
    order[d0], order[d1] = d1, d0
    shape = [self.shape[d] for d in order]
    return _same_matrix(make(self._sp_i[order[:sd]], self._sp_v, shape, False), self, (d0, d1))


@implements("sparse_mask")
def sparse_mask(self, mask):
    """The entries of the dense ``self`` at the positions ``mask`` (COO) specifies, with ``mask``'s indices.

    >>> import ember
    >>> m = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1., 1.], (2, 2))
    >>> ember.tensor([[1., 2.], [3., 4.]]).sparse_mask(m)._values().tolist()
    [2.0, 3.0]
    """
    if isinstance(self, SparseTensor) or not isinstance(mask, SparseTensor):
        raise NotImplementedError("sparse_mask: expected a strided tensor and a mask of layout "
                                  f"{COO}, got {self.layout} and {mask.layout}")
    if tuple(self.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(self.shape)} "
                           f"but mask has size {list(mask.shape)}")
    sd = _sd(mask)
    sshape = tuple(mask.shape[:sd])
    flat = self.reshape(math.prod(sshape), *self.shape[sd:])
    return make(mask._sp_i, flat.index_select(0, _linear(mask._sp_i, sshape)), self.shape, mask._sp_c)


# --------------------------------------------------------------------------- arithmetic
def _check_same_shape(a, b, op):
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"{op}: the sizes of the sparse operands must match, got {list(a.shape)} and "
                           f"{list(b.shape)}")


@implements("add", "__add__", "__radd__", layouts=BOTH)
def add(input, other, *, alpha=1, out=None):  # noqa: A002
    """``input + alpha * other`` with a sparse ``other``: dense + sparse is dense, sparse + sparse is COO
    (sparse + dense raises, as in PyTorch)."""
    if out is not None:
        raise NotImplementedError(f"add: out= is not supported for a tensor of layout {COO}")
    a_sparse, b_sparse = isinstance(input, SparseTensor), isinstance(other, SparseTensor)
    if not (a_sparse and b_sparse):
        if not isinstance(input if b_sparse else other, Tensor):
            raise NotImplementedError(f"add: a number added to a tensor of layout {COO} is not supported")
        if a_sparse:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        a = input
        b = to_dense(other) if b_sparse else other
        return a.add(b, alpha=alpha)
    a, b = _coo(input), _coo(other)
    _check_same_shape(a, b, "add")
    if _sd(a) != _sd(b):
        raise RuntimeError(f"add: sparse operands must have the same sparse_dim, got {_sd(a)} and {_sd(b)}")
    dtype = result_type(a._sp_v, b._sp_v)
    vb = b._sp_v.to(dtype) if alpha == 1 else b._sp_v.to(dtype) * alpha
    s = make(cat([a._sp_i, b._sp_i], 1), cat([a._sp_v.to(dtype), vb]), a.shape, False)
    return coalesce(s) if a._sp_c and b._sp_c else s


@implements("add_", "__iadd__", layouts=BOTH)
def add_(input, other, *, alpha=1):  # noqa: A002
    """``input += alpha * other`` for a dense ``input`` and a sparse ``other``."""
    if isinstance(input, SparseTensor):
        raise NotImplementedError(f"add_: an in-place update of a tensor of layout {input.layout} is not supported")
    return input.add_(to_dense(other), alpha=alpha)


@implements("sub", "__sub__", layouts=BOTH)
def sub(input, other, *, alpha=1, out=None):  # noqa: A002
    """``input - alpha * other`` where either is sparse."""
    return add(input, other, alpha=-alpha, out=out)


def _scalar(x) -> bool:
    return isinstance(x, numbers.Number) or (isinstance(x, Tensor) and not isinstance(x, SparseTensor)
                                             and x.ndim == 0)


@implements("mul", "__mul__", "__rmul__", layouts=BOTH)
def mul(input, other, *, out=None):  # noqa: A002
    """A sparse tensor times a number, a 0-d tensor or a dense tensor of its shape: sparse, same indices."""
    s, x = (input, other) if isinstance(input, SparseTensor) else (other, input)
    if out is not None or isinstance(x, SparseTensor):
        raise NotImplementedError(f"mul: of two tensors of layout {s.layout} (or with out=) is not supported")
    if _scalar(x):
        return s._with_values(s._sp_v * x)
    if s._sp_layout is not COO or tuple(x.shape) != tuple(s.shape):
        raise NotImplementedError(f"mul: a tensor of layout {s.layout} times a dense tensor of shape "
                                  f"{list(x.shape)} is not supported (only of the same shape, for {COO})")
    sd = _sd(s)
    flat = x.reshape(math.prod(s.shape[:sd]), *s.shape[sd:])
    return s._with_values(s._sp_v * flat.index_select(0, _linear(s._sp_i, tuple(s.shape[:sd]))))


@implements("div", "__truediv__", layouts=BOTH)
def div(input, other, *, rounding_mode=None):  # noqa: A002
    """A sparse tensor divided by a number or 0-d tensor."""
    if not isinstance(input, SparseTensor) or not _scalar(other):
        raise NotImplementedError(f"div: only a sparse tensor divided by a scalar is supported for layout {COO}")
    return input._with_values(input._sp_v.div(other, rounding_mode=rounding_mode))


@implements("neg", "__neg__", layouts=BOTH)
def neg(input):  # noqa: A002
    """The sparse tensor with its values negated."""
    return input._with_values(-input._sp_v)


# --------------------------------------------------------------------------- products
def _sparse_dense_mm(s, d):
    """``s @ d`` for a 2-D COO ``s`` and a dense matrix ``d``: each value times its column's row of ``d``,
    added into its row."""
    rows, cols = s._sp_i
    products = s._sp_v.unsqueeze(1) * d.index_select(0, cols)
    out = zeros(s.shape[0], d.shape[1], dtype=products.dtype, device=products.device)
    return out.index_add(0, rows, products)


class _DenseOfLeaf(Function):
    """A sparse leaf as the dense matrix it stands for, for the ops whose gradient PyTorch gives such a leaf as
    a dense tensor (``mm``, ``matmul``, ``addmm``, ``spmm``, ``Tensor.sum``): the whole incoming gradient,
    every position, reaches the leaf's ``.grad`` (``ember.sparse.mm``, ``to_dense`` and the value-wise ops give
    it only the stored entries)."""

    @staticmethod
    def forward(ctx, s):
        return to_dense(s)

    @staticmethod
    def backward(ctx, grad):
        return grad


def _dense_grad_operand(t):
    """``t``, or a dense tensor equal to the sparse ``t`` through which a dense gradient reaches what ``t`` was
    made from: a sparse leaf's stand-in (:class:`_DenseOfLeaf`), the dense tensor a sparse one was converted
    from, or the transpose of such a tensor (see :func:`_same_matrix`)."""
    if not (isinstance(t, SparseTensor) and is_grad_enabled() and t.requires_grad):
        return t
    source = t.__dict__.get("_sp_src")
    if source is not None:
        return source()
    if t.is_leaf:
        t._rg = True  # the tensor itself is the leaf its dense gradient accumulates into (see SparseTensor.grad)
        return _DenseOfLeaf.apply(t)
    return t


def _same_matrix(out, source, transpose_dims=None):
    """Record that the sparse ``out`` is the matrix ``source`` (dense or sparse) in another layout, or its
    transpose over ``transpose_dims``: the ops whose gradient PyTorch gives a sparse operand densely
    differentiate through ``source`` (PyTorch's conversions and transposes pass a dense gradient on whole)."""
    if out is not source and source.requires_grad:
        if transpose_dims is None:
            out.__dict__["_sp_src"] = lambda: _dense_grad_operand(source)
        else:
            out.__dict__["_sp_src"] = lambda: _dense_grad_operand(source).transpose(*transpose_dims)
    return out


def _mm(mat1, mat2, masked: bool):
    for m in (mat1, mat2):
        if not isinstance(m, Tensor) or m.ndim != 2:
            raise RuntimeError(f"mm: expected 2-D matrices, got {getattr(m, 'ndim', type(m).__name__)}-D")
        if isinstance(m, SparseTensor) and dense_dim(m):
            raise NotImplementedError(f"mm: a hybrid sparse operand (dense_dim {dense_dim(m)}) is not supported")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mm: mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"mm: expected mat1 and mat2 to have the same dtype, but got: {mat1.dtype} != "
                           f"{mat2.dtype}")
    a_sparse, b_sparse = isinstance(mat1, SparseTensor), isinstance(mat2, SparseTensor)
    if not masked and a_sparse != b_sparse:
        mat1, mat2 = _dense_grad_operand(mat1), _dense_grad_operand(mat2)
        a_sparse, b_sparse = isinstance(mat1, SparseTensor), isinstance(mat2, SparseTensor)
    if not (a_sparse or b_sparse):
        return mat1.mm(mat2)
    if a_sparse and b_sparse:
        product = to_sparse(_sparse_dense_mm(_coo(mat1), to_dense(mat2)))
        return to_sparse_csr(product) if mat1._sp_layout is mat2._sp_layout is CSR else product
    if a_sparse:
        return _sparse_dense_mm(_coo(mat1), mat2)
    return _sparse_dense_mm(transpose(_coo(mat2)), mat1.t()).t()


def _check_no_reduce(reduce, out):
    if reduce not in (None, "sum") or out is not None:
        raise NotImplementedError("mm: reduce= other than 'sum' and out= are not supported with a sparse operand")


@implements("mm", "spmm", "smm", layouts=BOTH)
def mm(mat1, mat2, reduce=None, *, out=None):
    """The matrix product with a sparse operand: sparse @ dense and dense @ sparse are dense, sparse @ sparse
    is sparse (CSR for two CSR operands, else COO; computed through a dense product).  As PyTorch's ``mm``, the
    gradient of a sparse leaf operand is dense (``grad @ mat2.T``, every position); :func:`sparse_mm`'s keeps
    the leaf's pattern.

    >>> import ember
    >>> s = ember.tensor([[0., 2.], [3., 0.]]).to_sparse()
    >>> ember.mm(s, ember.ones(2, 1)).tolist()
    [[2.0], [3.0]]
    """
    _check_no_reduce(reduce, out)
    return _mm(mat1, mat2, masked=False)


def sparse_mm(mat1, mat2, reduce=None):
    """``ember.sparse.mm``: the matrix product with a sparse operand (see :func:`mm`), whose gradient to a
    sparse operand holds only its stored entries, in its layout (PyTorch's ``torch.sparse.mm``).

    >>> import ember
    >>> s = ember.tensor([[0., 2.], [3., 0.]]).to_sparse()
    >>> ember.sparse.mm(s, ember.ones(2, 1)).tolist()
    [[2.0], [3.0]]
    """
    _check_no_reduce(reduce, None)
    return _mm(mat1, mat2, masked=True)


@implements("matmul", "__matmul__", layouts=BOTH)
def matmul(input, other, *, out=None):  # noqa: A002
    """``input @ other`` with a sparse matrix operand (a dense vector operand is taken as a column/row)."""
    if isinstance(other, Tensor) and not isinstance(other, SparseTensor) and other.ndim == 1:
        return mm(input, other.unsqueeze(1), out=out).squeeze(1)
    if isinstance(input, Tensor) and not isinstance(input, SparseTensor) and input.ndim == 1:
        return mm(input.unsqueeze(0), other, out=out).squeeze(0)
    return mm(input, other, out=out)


@implements("bmm", layouts=(COO,))
def bmm(input, mat2, *, out=None):  # noqa: A002
    """The batched matrix product of a 3-D COO tensor (no dense dimensions) and a dense 3-D tensor: dense
    ``[b, n, p]``; a sparse leaf's gradient is dense, as :func:`mm`'s.

    >>> import ember
    >>> s = ember.tensor([[[0., 2.]], [[3., 0.]]]).to_sparse()
    >>> ember.bmm(s, ember.ones(2, 2, 1)).tolist()
    [[[2.0]], [[3.0]]]
    """
    if out is not None:
        raise NotImplementedError(f"bmm: out= is not supported for a tensor of layout {COO}")
    if not isinstance(input, SparseTensor) or isinstance(mat2, SparseTensor):
        raise RuntimeError("bmm_sparse: Tensor 'mat2' must be dense")
    if dense_dim(input):
        raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 0 dense dims, but has {dense_dim(input)}")
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm_sparse: expected 3-D tensors, got {input.ndim}-D and {mat2.ndim}-D")
    for d0, d1 in ((0, 0), (2, 1)):
        if input.shape[d0] != mat2.shape[d1]:
            raise RuntimeError(f"bmm_sparse: 'self.size({d0})' and 'mat2.size({d1})' must match")
    if input.dtype != mat2.dtype:
        raise RuntimeError(f"expected scalar type {_SCALAR_NAMES.get(input.dtype, input.dtype)} but found "
                           f"{_SCALAR_NAMES.get(mat2.dtype, mat2.dtype)}")
    dense = _dense_grad_operand(input)
    if dense is not input:
        return dense.bmm(mat2)
    (nb, m, k), n = input.shape, mat2.shape[2]
    b, r, c = input._sp_i
    products = input._sp_v.unsqueeze(1) * mat2.reshape(nb * k, n).index_select(0, b * k + c)
    out = zeros(nb * m, n, dtype=products.dtype, device=products.device)
    return out.index_add(0, b * m + r, products).reshape(nb, m, n)


def _addmm(input, mat1, mat2, beta, alpha, masked: bool):  # noqa: A002
    if isinstance(input, SparseTensor):
        raise RuntimeError(f"addmm: an input of layout {input.layout} is not supported (give a dense input)")
    product = _mm(mat1, mat2, masked)
    if isinstance(product, SparseTensor):
        product = to_dense(product)
    product = product if alpha == 1 else product * alpha
    return product if beta == 0 else product + (input if beta == 1 else input * beta)


@implements("addmm", layouts=BOTH)
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` or ``mat2`` and a dense ``input`` (a
    sparse leaf's gradient dense, as :func:`mm`'s)."""
    _check_no_reduce(None, out)
    return _addmm(input, mat1, mat2, beta, alpha, masked=False)


def sparse_addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """``ember.sparse.addmm``: :func:`addmm` whose gradient to a sparse operand keeps its pattern."""
    return _addmm(input, mat1, mat2, beta, alpha, masked=True)


# --------------------------------------------------------------------------- reductions and softmax
@implements("sum", layouts=BOTH)
def tensor_sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """``Tensor.sum`` of a sparse tensor: :func:`sum`, with a sparse leaf's gradient dense (ones at every
    position), as PyTorch's ``Tensor.sum`` gives it (``ember.sparse.sum``'s keeps the leaf's pattern)."""
    if dim is None:
        dense = _dense_grad_operand(input)
        if dense is not input:
            return dense.sum(dtype=dtype)
    return sum(input, dim, keepdim, dtype=dtype)


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001,A002
    """The sum of all values (a dense 0-d tensor), or over ``dim`` (of a COO tensor): COO while sparse
    dimensions remain, else dense."""
    v = input._sp_v if dtype is None else input._sp_v.to(dtype)
    if dim is None:
        return v.sum()
    if input._sp_layout is not COO:
        raise NotImplementedError(f"sum: over dim {dim} is not supported for a tensor of layout {input.layout}")
    if keepdim:
        raise NotImplementedError(f"sum: keepdim=True is not supported for a tensor of layout {COO}")
    dims = {d % input.ndim for d in ((dim,) if isinstance(dim, int) else dim)}
    sd = _sd(input)
    dense_dims = [d - sd + 1 for d in sorted(dims) if d >= sd]
    if dense_dims:
        v = v.sum(dense_dims)
    kept = [d for d in range(sd) if d not in dims]
    if not kept:
        return v.sum(0)
    shape = [n for d, n in enumerate(input.shape) if d not in dims]
    return coalesce(make(input._sp_i[kept], v, shape, False))


def _softmax(input, dim, dtype, log: bool):  # noqa: A002
    if not isinstance(input, SparseTensor) or input._sp_layout is not COO:
        raise NotImplementedError(f"sparse.{'log_' if log else ''}softmax: expected a tensor of layout {COO}")
    s = coalesce(input)
    v = s._sp_v if dtype is None else s._sp_v.to(dtype)
    sd, dim = _sd(s), dim % s.ndim
    if dim >= sd:  # along a dense dimension: each value's own softmax
        v = v.log_softmax(dim - sd + 1) if log else v.softmax(dim - sd + 1)
        return make(s._sp_i, v, s.shape, True)
    # along a sparse dimension: over the specified entries sharing the other sparse indices
    others = [d for d in range(sd) if d != dim]
    if others:
        groups = _linear(s._sp_i[others], [s.shape[d] for d in others])
        _, inverse = groups.unique(sorted=True, return_inverse=True)
    else:
        inverse = zeros(v.shape[0], dtype=dtypes.int64, device=v.device)
    n = int(inverse.max()) + 1 if v.shape[0] else 0
    index = inverse.reshape(-1, *[1] * (v.ndim - 1)).expand(v.shape)
    empty = zeros(n, *v.shape[1:], dtype=v.dtype, device=v.device)
    shift = empty.scatter_reduce(0, index, v.detach(), "amax", include_self=False).index_select(0, inverse)
    z = v - shift
    totals = empty.index_add(0, inverse, z.exp()).index_select(0, inverse)
    return make(s._sp_i, z - totals.log() if log else z.exp() / totals, s.shape, True)


def softmax(input, dim, *, dtype=None):  # noqa: A002
    """Softmax of a COO tensor along ``dim`` over its specified entries (unspecified ones count as -inf);
    the result has the input's indices."""
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input, dim, *, dtype=None):  # noqa: A002
    """Log-softmax of a COO tensor along ``dim`` over its specified entries (see :func:`softmax`)."""
    return _softmax(input, dim, dtype, log=True)


def _empty_coo(size, dtype, device, requires_grad, op):
    values = zeros(0, dtype=dtype, device=device)
    return sparse_coo_tensor(zeros(len(size), 0, dtype=dtypes.int64, device=values.device), values, size,
                             requires_grad=requires_grad)


def _empty_compressed(layout):
    def empty(size, dtype, device, requires_grad, op):
        if layout in (BSR, BSC):
            raise RuntimeError(f"{op}_sparse_compressed expected sparse compressed (non-block) tensor layout but got "
                               f"{_KIND[layout]}")
        if len(size) < 2:
            raise RuntimeError(f"{op}: a tensor of layout {layout} has at least 2 dimensions, got size "
                               f"{list(size)}")
        batch = tuple(size[:-2])
        values = zeros(*batch, 0, dtype=dtype, device=device)
        index = {"dtype": dtypes.int64, "device": values.device}
        n_major = size[-1] if INDEX_NAMES[layout][2] else size[-2]
        return sparse_compressed_tensor(zeros(*batch, n_major + 1, **index), zeros(*batch, 0, **index), values, size,
                                        layout=layout, requires_grad=requires_grad)
    return empty


EMPTY_OF[COO] = _empty_coo  # what zeros/empty make for each sparse layout
EMPTY_OF.update({layout: _empty_compressed(layout) for layout in COMPRESSED})
