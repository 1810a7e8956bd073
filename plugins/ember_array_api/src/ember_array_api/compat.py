"""The array namespace ember's shared kernels see: the standard's functions, plus NumPy spellings.

ember's kernel library is written against a NumPy-like ``xp``.  This namespace
gives every name the standard has straight from the library; NumPy spellings
the standard renamed map to the standard's function (``power`` -> ``pow``,
``concatenate`` -> ``concat``, ...); anything else NumPy-only (``einsum``,
``pad``, ``add.at``, ...) runs through NumPy by DLPack and comes back as the
library's array.  ``BRIDGED`` records which names took that road.
"""
from __future__ import annotations

import types

import numpy as np

BRIDGED: set = set()

# NumPy's spelling -> the standard's name of the same elementwise function
RENAMED = {
    "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh", "arctan": "atan",
    "arctan2": "atan2", "arctanh": "atanh", "invert": "bitwise_invert", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
}


def to_numpy(xp, x):
    """A NumPy array with the data of library array ``x`` (no copy where DLPack allows)."""
    if isinstance(x, np.ndarray):
        return x
    try:
        return np.from_dlpack(x)
    except (TypeError, BufferError, RuntimeError):
        return np.asarray(x)


def _host_args(xp, atype, args):
    out = []
    for a in args:
        if isinstance(a, atype):
            out.append(to_numpy(xp, a))
        elif isinstance(a, (list, tuple)):
            out.append(type(a)(_host_args(xp, atype, a)))
        else:
            out.append(_np_dtype(a))
    return out


def _np_dtype(a):
    name = getattr(a, "name", None) if type(a).__module__.startswith("array_api") else None
    return np.dtype(name) if name else a


def _back(xp, atype, r):
    if isinstance(r, np.ndarray):
        return xp.asarray(r)
    if isinstance(r, (list, tuple)):
        return type(r)(_back(xp, atype, v) for v in r)
    return r


def bridge(xp, atype, fn, name):
    """``fn`` (a NumPy function) on the library's arrays."""

    def call(*args, **kwargs):
        BRIDGED.add(name)
        kw = {k: v for k, v in zip(kwargs, _host_args(xp, atype, list(kwargs.values())))}
        return _back(xp, atype, fn(*_host_args(xp, atype, args), **kw))

    call.__name__ = name
    return call


class _Ufunc:
    """A standard elementwise function with NumPy's ``.at`` (unbuffered in-place) and ``.reduce``."""

    def __init__(self, xp, atype, name, fn):
        self._fn, self._xp, self._atype, self._np = fn, xp, atype, getattr(np, name)
        self.at = self._at
        self.reduce = bridge(xp, atype, self._np.reduce, f"{name}.reduce")

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def _at(self, out, index, values):
        BRIDGED.add(f"{self._np.__name__}.at")
        host = np.array(to_numpy(self._xp, out))
        idx = _host_args(self._xp, self._atype, index if isinstance(index, tuple) else (index,))
        self._np.at(host, tuple(idx), to_numpy(self._xp, values) if isinstance(values, self._atype) else values)
        out[...] = self._xp.asarray(host)


def namespace(xp) -> types.SimpleNamespace:
    """The NumPy-like namespace over array-API library ``xp``."""
    atype = type(xp.asarray(0))

    def array(obj, dtype=None, copy=True):
        return xp.asarray(obj, dtype=dtype, copy=copy)

    def transpose(x, axes=None):
        return xp.permute_dims(x, tuple(reversed(range(x.ndim))) if axes is None else tuple(axes))

    def swapaxes(x, a, b):
        axes = list(range(x.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return xp.permute_dims(x, tuple(axes))

    def reshape(x, shape, copy=None):
        return xp.reshape(x, tuple(shape) if not isinstance(shape, int) else (shape,), copy=copy)

    def concatenate(arrays, axis=0):
        return xp.concat(list(arrays), axis=axis)

    def mean(x, axis=None, keepdims=False, dtype=None):
        return xp.mean(x if dtype is None else xp.astype(x, dtype), axis=axis, keepdims=keepdims)

    def cumulative(fn):
        def cum(x, axis=None, dtype=None):
            if axis is None:  # NumPy's default: over the flattened array
                x, axis = xp.reshape(x, (-1,)), 0
            return fn(x, axis=axis, dtype=dtype)

        return cum

    def var(x, axis=None, dtype=None, ddof=0, keepdims=False):
        return xp.var(x if dtype is None else xp.astype(x, dtype), axis=axis, correction=ddof, keepdims=keepdims)

    aliases = {
        "array": array, "asarray": xp.asarray, "ascontiguousarray": lambda x: xp.asarray(x, copy=True),
        "power": xp.pow, "transpose": transpose, "swapaxes": swapaxes, "concatenate": concatenate,
        "reshape": reshape, "mean": mean, "ndim": lambda x: x.ndim, "int": int, "inf": float("inf"),
        "bool_": xp.bool, "iinfo": xp.iinfo, "finfo": xp.finfo, "var": var,
    }
    for numpy_name, name in (("cumsum", "cumulative_sum"), ("cumprod", "cumulative_prod")):
        if hasattr(xp, name):
            aliases[numpy_name] = cumulative(getattr(xp, name))
    aliases.update({numpy_name: getattr(xp, name) for numpy_name, name in RENAMED.items() if hasattr(xp, name)})
    ufuncs = {n: _Ufunc(xp, atype, n, getattr(xp, n)) for n in ("add", "multiply", "maximum", "minimum")}

    class Namespace(types.SimpleNamespace):
        def __getattr__(self, name):
            fn = getattr(self.__dict__.get("_fallback", np), name, None)
            if fn is None or name.startswith("_"):
                raise AttributeError(f"{xp.__name__} (through ember_array_api) has no {name!r}")
            value = bridge(xp, atype, fn, name) if callable(fn) else fn
            setattr(self, name, value)
            return value

    ns = Namespace(**{n: getattr(xp, n) for n in dir(xp) if not n.startswith("_")})
    ns.__dict__.update(aliases)
    ns.__dict__.update(ufuncs)
    ns.__name__ = xp.__name__
    ns.__version__ = getattr(xp, "__version__", "")
    ns.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
        sliding_window_view=bridge(xp, atype, np.lib.stride_tricks.sliding_window_view, "sliding_window_view"),
        as_strided=bridge(xp, atype, np.lib.stride_tricks.as_strided, "as_strided")))
    linalg = getattr(xp, "linalg", object())
    ns.linalg = Namespace(_fallback=np.linalg, **{n: getattr(linalg, n) for n in dir(linalg) if not n.startswith("_")})
    fft = getattr(xp, "fft", object())  # the standard's fft extension (a submodule dir() may not list)
    ns.fft = Namespace(_fallback=np.fft, **{n: getattr(fft, n) for n in dir(fft) if not n.startswith("_")})
    return ns


def with_fallback(xp, atype, fn, numpy_fn, name, writes=()):
    """Kernel ``fn`` on the library; if it needs something the standard lacks, ``numpy_fn`` through DLPack.

    A kernel that writes into its arguments at positions ``writes`` first runs on copies of those,
    which are written back only when it succeeds: a failed attempt's partial writes are dropped
    before the fallback runs on the originals.
    """
    bridged = bridge(xp, atype, numpy_fn, name)

    def kernel(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (AttributeError, TypeError, IndexError):
            return bridged(*args, **kwargs)

    def mutating_kernel(*args, **kwargs):
        trial = [xp.asarray(a, copy=True) if i in writes and isinstance(a, atype) else a for i, a in enumerate(args)]
        try:
            r = fn(*trial, **kwargs)
        except (AttributeError, TypeError, IndexError):
            return bridged(*args, **kwargs)
        for a, t in zip(args, trial):
            if t is not a:
                a[...] = t
        for a, t in zip(args, trial):
            if r is t and t is not a:  # the kernel returned the array it wrote into
                return a
        return r

    chosen = mutating_kernel if writes else kernel
    chosen.__name__ = name
    return chosen
