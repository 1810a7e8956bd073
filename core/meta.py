"""The ``meta`` device: tensors with a shape, dtype and strides but no data.

A meta array is a NumPy array of the right shape and dtype whose every element is one shared value
(zero strides over a one-element buffer), so it costs no memory whatever its size.  Every op runs its
ordinary forward, with the shared NumPy kernels, on these stand-ins; the results are turned back into
stand-ins, so only shapes and dtypes survive.  Kernels whose result's *shape* depends on the values
(``nonzero``, ``unique``, boolean masks, ...) raise :class:`NotImplementedError`, as PyTorch does; in-place
kernels write nothing; factories and random fills only make the stand-in.  Reading values (``item``,
``tolist``, ``numpy``, a copy to another device) raises as in PyTorch: use ``Module.to_empty`` to move a
module off ``meta``.

>>> import ember
>>> x = ember.empty(1000, 1000, 1000, device="meta")
>>> (x @ x).shape, x.is_meta
(ember.Size([1000, 1000, 1000]), True)
"""
from __future__ import annotations

import numpy as np

from . import kernels as _kernels
from .autograd.function import OPS
from .backend import ArrayBackend
from .plugins import hookimpl


def _contiguous(shape, itemsize):
    st, acc = [], itemsize
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


class _Flags:
    __slots__ = ("c_contiguous",)

    def __init__(self, c):
        self.c_contiguous = c


class MetaArray(np.ndarray):
    """A stand-in: the shape and dtype of an array, one value repeated, and the strides it would have."""

    def __array_finalize__(self, obj):
        self._strides = None  # the strides a real array would have (None: contiguous)

    @property
    def strides(self):
        return self._strides if self._strides is not None else _contiguous(self.shape, self.dtype.itemsize)

    @property
    def flags(self):
        return _Flags(self._strides is None or self._strides == _contiguous(self.shape, self.dtype.itemsize))


def stand_in(shape, dtype, strides=None) -> MetaArray:
    """A meta array of ``shape`` and ``dtype`` (no memory beyond one element)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape)
    a = np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape, (0,) * len(shape), writeable=True)
    a = a.view(MetaArray)
    a._strides = strides
    return a


def _data_dependent(name):
    def kernel(*args, **kwargs):
        raise NotImplementedError(f"{name}: the shape of its result depends on the values of its input, which a "
                                  f"meta tensor does not have (it cannot be called on meta tensors)")
    return kernel


_REAL_STRIDES = np.ndarray.strides.__get__


def _as_meta(out):
    if isinstance(out, np.ndarray):
        if type(out) is MetaArray and not any(_REAL_STRIDES(out)):
            return out  # already a stand-in (a view of one)
        return stand_in(out.shape, out.dtype)
    if isinstance(out, (tuple, list)):
        return type(out)(_as_meta(o) for o in out)
    if isinstance(out, (np.generic, int, float, bool, complex)):
        return stand_in((), np.asarray(out).dtype)
    return out


def _wrapped(name, fn):
    def kernel(*args):
        return _as_meta(fn(*args))
    kernel.__name__ = name
    return kernel


def _writes_nothing(name, positions):
    def kernel(*args):
        return args[positions[0]]
    kernel.__name__ = name
    return kernel


def _matmul(a, b):
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    if sa[-1] != sb[-2]:
        raise ValueError(f"matmul: mismatch in its core dimension (size {sa[-1]} is different from {sb[-2]})")
    shape = np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return stand_in(shape, np.result_type(a.dtype, b.dtype))


def _shape_kernels():
    """Kernels computed from shapes alone: factories, random draws, matmul, and views' strides."""
    def sampled(gen, shape, dtype, *params):
        return stand_in(shape, dtype)

    def permute(x, axes=None):
        axes = tuple(range(x.ndim))[::-1] if axes is None else tuple(axes)
        st = x.strides
        return stand_in(tuple(x.shape[a] for a in axes), x.dtype, tuple(st[a] for a in axes))

    def expand(x, shape):
        lead = len(shape) - x.ndim
        st = (0,) * lead + tuple(0 if n == 1 and s != 1 else t for n, s, t in zip(x.shape, shape[lead:], x.strides))
        return stand_in(shape, x.dtype, st)

    table = {name: sampled for name in ("uniform", "normal", "normal_serial", "randint", "exponential", "geometric",
                                        "cauchy", "log_normal")}
    table.update({
        "permutation": lambda gen, n, dtype: stand_in((n,), dtype),
        "bernoulli": lambda gen, p, dtype: stand_in(p.shape, dtype),
        "poisson": lambda gen, lam: stand_in(lam.shape, lam.dtype),
        "full": lambda shape, value, dtype: stand_in(shape, dtype),
        "empty": lambda shape, dtype: stand_in(shape, dtype),
        "matmul": _matmul, "permute": permute, "expand": expand,
        "linear": lambda x, w, b: stand_in(x.shape[:-1] + w.shape[:1], np.result_type(x.dtype, w.dtype)),
    })
    return table


def data_dependent_kernels() -> set:
    """The kernels of the ops whose declaration tags them "data-dependent" (``nonzero``, ``unique``, ...)."""
    return {getattr(Op, "kernel_name", key) for key, Op in OPS.items() if "data-dependent" in Op.tags}


class MetaBackend(ArrayBackend):
    """The ``meta`` device: shape-only arrays, every kernel of the shared library run on stand-ins."""

    name = "meta"
    array_type = MetaArray
    test_by_default = False  # the suite's numeric tests read values; meta has its own tests

    def __init__(self):
        super().__init__(np)
        library = dict(self.kernels)
        self.kernels = {}
        self.writes_into = frozenset()  # stand-ins have no memory to write into
        data_dependent = data_dependent_kernels()
        for name, fn in library.items():
            if name in _kernels.MUTATING:
                self.kernels[name] = _writes_nothing(name, _kernels.MUTATING[name])
            elif name in data_dependent:
                self.kernels[name] = _data_dependent(name)
            else:
                self.kernels[name] = _wrapped(name, fn)
        self.kernels.update(_shape_kernels())
        getitem = self.kernels["getitem"]

        def getitem_checked(x, index):
            for i in index if isinstance(index, tuple) else (index,):
                if getattr(i, "dtype", None) is not None and np.dtype(i.dtype) == np.bool_:
                    _data_dependent("indexing with a boolean mask")()
            return getitem(x, index)

        self.kernels["getitem"] = getitem_checked

    def version(self) -> str:
        return "shape-only (no data)"

    def as_array(self, value):
        value = np.asarray(value)
        return stand_in(value.shape, value.dtype)

    def from_numpy(self, array, index, copy=False, non_blocking=False):
        return stand_in(np.shape(array), np.asarray(array).dtype if not hasattr(array, "dtype") else array.dtype)

    def to_numpy(self, array):
        raise NotImplementedError("Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() "
                                  "instead of torch.nn.Module.to() when moving module from meta to a different "
                                  "device.")


@hookimpl
def ember_backends(registry):
    registry.add_backend(MetaBackend())
