"""``ember.layout`` and ``ember.memory_format``: the types of PyTorch's layout and memory-format constants.

ember stores a dense tensor strided, in one memory order; the sparse tensors of ``ember.sparse`` have the
layouts ``sparse_coo``, ``sparse_csr``, ``sparse_csc``, ``sparse_bsr`` and ``sparse_bsc`` (``jagged`` is a name
only).  Every
``memory_format=`` argument (``Tensor.contiguous``, ``to``, ``clone``, ``empty_like``, ...) is accepted
and gives that order.  ``Tensor.is_contiguous(memory_format=...)`` answers from the strides, as PyTorch does.

>>> import ember
>>> ember.zeros(2).layout is ember.strided, type(ember.channels_last).__name__
(True, 'memory_format')
"""
from __future__ import annotations

from .dtypes import NAMESPACE  # the package name constants print with (torch under the alias)

__all__ = ["layout", "memory_format", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
           "sparse_bsc", "jagged", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
           "LAYOUTS", "MEMORY_FORMATS", "channels_last_contiguous"]


class _Constant:
    """One named constant of a closed set (``ember.strided``); it cannot be created by user code."""

    __slots__ = ("_name",)
    _registry: dict

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"cannot create 'ember.{cls.__name__}' instances")

    @classmethod
    def _make(cls, name: str):
        obj = object.__new__(cls)
        obj._name = name
        cls._registry[name] = obj
        return obj

    def __repr__(self):
        return f"{NAMESPACE[0]}.{self._name}"

    def __eq__(self, other):
        # the plain name is accepted too: older ember code spelled layouts and formats as strings
        return self is other or (isinstance(other, str) and other.removeprefix("torch.") == self._name)

    def __hash__(self):
        return hash(self._name)

    def __reduce__(self):
        return (_constant, (type(self).__name__, self._name))


class layout(_Constant):  # noqa: N801  (PyTorch's spelling)
    """The memory layout of a tensor: ``ember.strided`` for a dense one, ``ember.sparse_coo``, ``sparse_csr``,
    ``sparse_csc``, ``sparse_bsr`` or ``sparse_bsc`` for a sparse one."""

    __slots__ = ()
    _registry: dict = {}


class memory_format(_Constant):  # noqa: N801  (PyTorch's spelling)
    """A memory order a tensor's strides may follow (``ember.contiguous_format``, ``ember.channels_last``, ...)."""

    __slots__ = ()
    _registry: dict = {}


def _constant(kind: str, name: str):
    return {"layout": layout, "memory_format": memory_format}[kind]._registry[name]


strided = layout._make("strided")
sparse_coo = layout._make("sparse_coo")
sparse_csr = layout._make("sparse_csr")
sparse_csc = layout._make("sparse_csc")
sparse_bsr = layout._make("sparse_bsr")
sparse_bsc = layout._make("sparse_bsc")
jagged = layout._make("jagged")
LAYOUTS = dict(layout._registry)
# layout -> fn(size, dtype, device, requires_grad, op): a tensor of that layout holding no entries, what
# zeros/empty/zeros_like make for a sparse layout (ember.sparse fills it in)
EMPTY_OF: dict = {}

contiguous_format = memory_format._make("contiguous_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")
preserve_format = memory_format._make("preserve_format")
legacy_contiguous_format = memory_format._make("legacy_contiguous_format")
MEMORY_FORMATS = dict(memory_format._registry)

# the dimension order, innermost first, whose strides grow without gaps in each channels-last format
_ORDER = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def channels_last_contiguous(shape, strides, fmt) -> bool:
    """Whether ``strides`` lay out ``shape`` densely in the channels-last order of ``fmt`` (PyTorch's rule:
    size-1 dimensions are free, a tensor of another rank never is)."""
    rank, order = _ORDER[fmt]
    if len(shape) != rank:
        return False
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


# each channels-last format: the dimension order outermost first (channels innermost), and its inverse
_PERMS = {channels_last: ((0, 2, 3, 1), (0, 3, 1, 2)), channels_last_3d: ((0, 2, 3, 4, 1), (0, 4, 1, 2, 3))}


def dense_in_format(k, arr, fmt):
    """Array ``arr`` copied densely in channels-last format ``fmt`` with the kernels ``k`` of its device (a fresh
    tensor's array; arrays without strides come back as a plain copy)."""
    perm, inv = _PERMS[fmt]
    return k["permute"](k["contiguous"](k["permute"](arr, perm)), inv)


def to_format(t, fmt, copy: bool = False):
    """Tensor ``t`` laid out densely in channels-last format ``fmt`` (differentiably): ``t`` itself when it already
    is and no copy is asked for.

    >>> import ember
    >>> to_format(ember.zeros(2, 3, 4, 5), ember.channels_last).stride()
    (60, 1, 15, 3)
    """
    if not copy and t.is_contiguous(memory_format=fmt):
        return t
    perm, inv = _PERMS[fmt]
    p = t.permute(perm)
    q = p.contiguous()
    if q is p:  # already dense in that order: contiguous() made no copy
        q = p.clone(memory_format=contiguous_format)
    return q.permute(inv)


def suggested_format(t, fmt=None):
    """The channels-last format a result of ``t`` takes under ``memory_format=fmt`` (None and
    ``preserve_format``: ``t``'s own when ``t`` is dense channels-last and not also plainly contiguous, as
    PyTorch's preserve rule gives), or None for the contiguous order."""
    if fmt is not None and fmt is not preserve_format:
        return fmt if fmt in _PERMS else None
    for f, (perm, _) in _PERMS.items():
        if t.dim() == len(perm) and not t.is_contiguous() and t.is_contiguous(memory_format=f):
            return f
    return None


def keep_format(out, like):
    """``out`` in ``like``'s channels-last order where ``like`` has one (convolution and batch norm results follow
    their input's format in PyTorch); otherwise ``out`` itself."""
    fmt = suggested_format(like)
    return out if fmt is None or out.dim() != like.dim() else to_format(out, fmt)


def check_memory_format(fmt, ndim: int, op: str) -> None:
    """PyTorch's checks of a ``memory_format=`` argument: a :class:`memory_format` (or None), and a
    channels-last format only for a tensor of its rank."""
    if fmt is None:
        return
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be ember.memory_format, not {type(fmt).__name__}")
    if fmt is channels_last and ndim != 4:
        raise RuntimeError(f"{op}: required rank 4 tensor to use channels_last format (got rank {ndim})")
    if fmt is channels_last_3d and ndim != 5:
        raise RuntimeError(f"{op}: required rank 5 tensor to use channels_last_3d format (got rank {ndim})")
