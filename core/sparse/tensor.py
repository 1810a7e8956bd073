"""The sparse tensor: a Tensor subclass that holds its indices and values and answers the functions it supports.

A sparse tensor of layout ``ember.sparse_coo`` holds ``indices`` (int64, ``[sparse_dim, nnz]``) and ``values``
(``[nnz, *dense_shape]``).  One of a compressed layout holds compressed indices (one pointer per row, or per
column, plus one), plain indices (the column, or row, of each value) and ``values``: ``sparse_csr`` and
``sparse_csc`` one number per entry, ``sparse_bsr`` and ``sparse_bsc`` one block (``[nnz, *blocksize]``).
Its own storage is a zero-stride view of one zero, so shape, dtype and device read as a dense tensor's do. Every
public function or method called on it reaches :meth:`SparseTensor.__torch_function__`: the supported ones
(``HANDLERS``, filled by :func:`implements`) compute on ``values`` with ember's own differentiable ops, so
gradients reach ``values`` and the dense operands on every backend; any other raises ``NotImplementedError`` naming
the function and the layout. Subclass dispatch is switched on when the first sparse tensor is made, so programs
without sparse tensors keep Tensor's plain method path.
"""
from __future__ import annotations

import warnings

from .. import layouts
from .._printing import PRINT_OPTS
from ..autograd.function import grad_edge
from ..autograd.graph import GradientEdge
from ..ops.creation import zeros
from ..overrides import _func_name, _lazy_shell
from ..tensor import DisableTorchFunctionSubclass, Tensor, _disabled_torch_function_impl

HANDLERS: dict = {}  # function or method name -> (implementation, layouts it accepts)
# reads that a sparse tensor answers as its dense shape would (its storage has that shape, dtype and device)
METADATA = frozenset({
    "shape", "dtype", "device", "size", "dim", "ndim", "numel", "nelement", "is_cuda", "is_cpu", "is_meta",
    "is_floating_point", "is_complex", "is_signed", "element_size", "itemsize", "get_device", "__len__",
    "grad_dtype",
})
COO, CSR, CSC = layouts.sparse_coo, layouts.sparse_csr, layouts.sparse_csc
BSR, BSC = layouts.sparse_bsr, layouts.sparse_bsc
COMPRESSED = (CSR, CSC, BSR, BSC)
ALL = (COO, *COMPRESSED)
# each compressed layout: the names of its compressed and plain indices, and whether it compresses columns
INDEX_NAMES = {CSR: ("crow_indices", "col_indices", False), BSR: ("crow_indices", "col_indices", False),
               CSC: ("ccol_indices", "row_indices", True), BSC: ("ccol_indices", "row_indices", True)}


def implements(*names, layouts=(COO,)):
    """Register the decorated function as what ``names`` (functions and methods) do on sparse tensors of
    ``layouts``."""
    def register(fn):
        for name in names:
            HANDLERS[name] = (fn, layouts)
        return fn
    return register


def _sparse_args(args, kwargs):
    for a in (*args, *kwargs.values()):
        for item in (a if isinstance(a, (tuple, list)) else (a,)):
            if isinstance(item, SparseTensor):
                yield item


def _torch_function(cls, func, types, args=(), kwargs=None):
    kwargs = kwargs or {}
    name = _func_name(func)
    impl, accepted = HANDLERS.get(name, (None, ()))
    sparse = list(_sparse_args(args, kwargs))
    if impl is not None and all(s._sp_layout in accepted for s in sparse):
        return impl(*args, **kwargs)
    if name in METADATA:
        with DisableTorchFunctionSubclass():
            return func(*args, **kwargs)
    layout = sparse[0]._sp_layout if sparse else COO
    raise NotImplementedError(f"{name}: not supported for a tensor of layout {layout} (ember's sparse tensors "
                              f"support: {', '.join(sorted(n for n, (_, ls) in HANDLERS.items() if layout in ls))})")


class SparseTensor(Tensor):
    """A tensor of layout ``ember.sparse_coo``, ``sparse_csr``, ``sparse_csc``, ``sparse_bsr`` or ``sparse_bsc``
    (made by ``ember.sparse_coo_tensor``, ``ember.sparse_compressed_tensor`` and its per-layout forms,
    ``Tensor.to_sparse``)."""

    # dispatch is switched on by make() when the first sparse tensor is built (see the module's docstring)
    __torch_function__ = _disabled_torch_function_impl

    @property
    def layout(self):
        return self._sp_layout

    @property
    def is_sparse(self) -> bool:
        return self._sp_layout is COO

    @property
    def is_sparse_csr(self) -> bool:
        return self._sp_layout is CSR

    @property
    def requires_grad(self) -> bool:
        return self._sp_v.requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        if value and not self._sp_v.requires_grad:  # its own leaf: the tensor it was built from stays as it was
            self._sp_v = self._sp_v.detach()
        self._sp_v.requires_grad = value
        self._sp_own = bool(value)

    def requires_grad_(self, requires_grad: bool = True):
        """Make ``values`` (and so this tensor) a leaf that records gradients."""
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        """The gradient: a sparse tensor of this one's pattern (coalesced, as PyTorch gives it) from the ops
        that give a sparse leaf only its stored entries (``to_dense``, ``ember.sparse.mm``, value-wise ops); a
        dense tensor, with those entries added, once ``mm``, ``matmul`` or ``sum`` have given it a dense one."""
        if not self.is_leaf:  # (PyTorch's: None, with a warning)
            warnings.warn("The .grad attribute of a sparse tensor that is not a leaf is being accessed: backward "
                          "does not populate it (the gradient reaches what it was made from, such as its values).",
                          UserWarning, stacklevel=2)
            return None
        return self._grad_join(self._sp_v.grad, self._grad)

    def _grad_parts(self) -> tuple:
        """What ``autograd.grad`` differentiates to find this tensor's gradient: its values and, once ``mm``,
        ``matmul`` or ``sum`` have used it as a dense leaf, its own edge (joined by :meth:`_grad_join`)."""
        if not self.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        return (self._sp_v, GradientEdge(*grad_edge(self))) if self._rg else (self._sp_v,)

    def _grad_join(self, g, dense=None):
        """The gradient of this tensor from its values' gradient ``g`` and a dense one (either may be None): a
        sparse tensor of this one's pattern, plus ``dense`` where there is one (see :attr:`grad`)."""
        if g is None:
            return dense
        if self._sp_c:
            masked = self._with_values(g)
        else:  # every copy of a repeated index has the gradient of its position: their mean is that gradient
            coalesce = HANDLERS["coalesce"][0]  # ember.sparse.ops registers it (it builds on this module)
            summed = coalesce(make(self._sp_i, g, self.shape))
            counts = coalesce(make(self._sp_i, g.new_ones(g.shape[0]), self.shape))._sp_v
            masked = make(summed._sp_i, summed._sp_v / counts.reshape(-1, *[1] * (g.ndim - 1)), self.shape, True)
        return masked if dense is None else dense + HANDLERS["to_dense"][0](masked)

    @grad.setter
    def grad(self, value):
        if value is not None and not isinstance(value, SparseTensor):
            self._sp_v.grad, self._grad = None, value
        elif value is None or value._sp_v.shape == self._sp_v.shape:
            self._sp_v.grad, self._grad = None if value is None else value._sp_v, None
        else:
            raise RuntimeError(f"assigned grad has {value._sp_v.shape[0]} stored entries, the tensor has "
                               f"{self._sp_v.shape[0]}: give one of its pattern, a dense one or None")

    @property
    def grad_fn(self):
        return self._sp_v.grad_fn

    @property
    def is_leaf(self) -> bool:
        """Whether this is a leaf: its values record no gradient, or are its own leaf (made with
        ``requires_grad=True`` or by ``requires_grad_()``); built from values that record one, as PyTorch's, it
        is not (nor are its transposes and conversions)."""
        v = self._sp_v
        return v.is_leaf and (not v.requires_grad or self.__dict__.get("_sp_own", False))

    def new_zeros(self, *size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
        """A tensor of ``size`` storing no entries, of this tensor's layout, dtype and device unless given."""
        return zeros(*size, dtype=self.dtype if dtype is None else dtype, device=self.device if device is None
                     else device, layout=self._sp_layout if layout is None else layout, requires_grad=requires_grad)

    def _with_values(self, values):
        """This tensor's structure with other ``values`` (same nnz)."""
        if self._sp_layout is not COO:
            return make_csr(self._sp_crow, self._sp_i, values, self.shape, self._sp_layout)
        return make(self._sp_i, values, self.shape, self._sp_c)

    def as_subclass(self, cls):
        """Refused: another class would see this tensor's zero-stride storage as its data."""
        raise NotImplementedError(f"as_subclass: not supported for a tensor of layout {self._sp_layout}")

    def __iter__(self):
        raise NotImplementedError(f"iteration: not supported for a tensor of layout {self._sp_layout}")

    def __array__(self, *args, **kwargs):
        raise NotImplementedError(f"numpy conversion: not supported for a tensor of layout {self._sp_layout}; "
                                  "call to_dense() first")

    def __repr__(self):
        if self._sp_layout is not COO:
            compressed, plain, _ = INDEX_NAMES[self._sp_layout]
            parts = [(compressed, self._sp_crow), (plain, self._sp_i), ("values", self._sp_v)]
        else:
            parts = [("indices", self._sp_i), ("values", self._sp_v)]
        lines, dtype = [], None
        for k, (field, t) in enumerate(parts):
            lead = ("tensor(" if k == 0 else "       ") + field + "="
            body = repr(t.detach())
            if f", dtype={t.dtype}" in body:  # PyTorch names the values' once, after the size; the indices' never
                body = body.replace(f", dtype={t.dtype}", "")
                dtype = f"dtype={t.dtype}" if t is self._sp_v else dtype
            if t.numel() == 0 and ", size=" not in body:  # an empty part says its size
                body = f"{body[:-1]}, size={tuple(t.shape)})"
            lines.append(lead + "\n".join(line.rstrip() for line in body.replace("\n", "\n" + " " * len(lead))
                                          .split("\n")))
        suffixes = [f"size={tuple(self.shape)}", f"nnz={self._sp_v.shape[_nbatch(self)]}", dtype,
                    f"layout={self._sp_layout}"]
        if self.grad_fn is not None:
            suffixes.append(f"grad_fn=<{type(self.grad_fn).__name__}>")
        elif self.requires_grad:
            suffixes.append("requires_grad=True")
        # PyTorch's wrapping: each suffix after the values while the line stays within the print width (COO's
        # start on a line of their own)
        text = ",\n".join(lines)
        width, newline = PRINT_OPTS.linewidth, self._sp_layout is COO
        line = len(text) - text.rfind("\n") + 1
        for suffix in filter(None, suffixes):
            if newline or line + len(suffix) + 2 > width:
                text, line, newline = text + ",\n       " + suffix, 7 + len(suffix), False
            else:
                text, line = text + ", " + suffix, line + len(suffix) + 2
        return text + ")"

    __str__ = __repr__


def _nbatch(s) -> int:
    """The number of leading batch dimensions of a compressed tensor (0 for COO)."""
    return s._sp_crow.ndim - 1 if s._sp_layout is not COO else 0


def _shell(values, size):
    return _lazy_shell(SparseTensor, _torch_function, values, size)


def make(indices, values, size, coalesced: bool = False):
    """A COO tensor of ``size`` holding ``indices`` and ``values`` as they are (no copy, no check)."""
    t = _shell(values, size)
    t.__dict__.update(_sp_layout=COO, _sp_i=indices, _sp_v=values, _sp_c=coalesced)
    return t


def make_csr(crow, col, values, size, layout=CSR):
    """A tensor of the compressed ``layout`` (CSR by default) and ``size`` holding its compressed indices
    ``crow``, plain indices ``col`` and ``values`` as they are (no copy, no check)."""
    t = _shell(values, size)
    t.__dict__.update(_sp_layout=layout, _sp_crow=crow, _sp_i=col, _sp_v=values, _sp_c=True)
    return t
