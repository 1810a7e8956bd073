"""``ArrayAPIBackend``: an ember backend over any array-API-standard library."""
from __future__ import annotations

import importlib
import os

import numpy as np

import ember
from ember.backend import ArrayBackend

from . import compat

LIBRARY_ENV = "EMBER_ARRAY_API_LIBRARY"
STRICT_ENV = "EMBER_ARRAY_API_STRICT"  # 1: no NumPy fallback, every NumPy-ism in a kernel raises


class ArrayAPIBackend(ArrayBackend):
    """Device type ``array_api``: tensors are arrays of the library named by ``$EMBER_ARRAY_API_LIBRARY``
    (default ``array_api_strict``).

    Each shared kernel runs on the library; one that uses something outside the
    standard (an array method NumPy has, a NumPy-only function) falls back to
    the NumPy kernel through DLPack, and its name is recorded in
    ``ember_array_api.compat.BRIDGED``.  ``EMBER_ARRAY_API_STRICT=1`` turns the
    fallback off, so every NumPy-ism raises.
    """

    name = "array_api"
    host = False
    test_by_default = False  # the device fixture uses it only when asked: pytest --backend array_api

    def __init__(self, library: str | None = None):
        self.library = library or os.environ.get(LIBRARY_ENV, "array_api_strict")
        try:
            self.raw = importlib.import_module(self.library)
        except ImportError as exc:
            self.raw, self._reason = None, f"{self.library} is not importable ({exc})"
            ember.backend.Backend.__init__(self)
            return
        self._reason = ""
        self.array_type = type(self.raw.asarray(0))
        self._dtypes = {d.name: getattr(self.raw, d.name) for d in _ember_dtypes() if hasattr(self.raw, d.name)}
        self._from = {v: getattr(ember, k) for k, v in self._dtypes.items()}
        super().__init__(compat.namespace(self.raw))
        if os.environ.get(STRICT_ENV, "") in ("", "0"):
            reference = ember.kernels.library(np)
            own = self.overrides()
            for op, fn in list(self.kernels.items()):
                if op in reference and op not in own:
                    self.kernels[op] = compat.with_fallback(self.raw, self.array_type, fn, reference[op], op,
                                                            writes=ember.kernels.MUTATING.get(op, ()))

    # -- devices
    def is_available(self) -> bool:
        return self.raw is not None

    def unavailable_reason(self) -> str:
        return self._reason

    def version(self) -> str:
        return f"{self.library} {getattr(self.raw, '__version__', '')}"

    # -- data
    def from_numpy(self, array, index, copy=False, non_blocking=False):
        return self.raw.asarray(np.asarray(array), copy=True)

    def to_numpy(self, array):
        return np.array(compat.to_numpy(self.raw, array))

    def array_dtype(self, d):
        try:
            return self._dtypes[d.name]
        except KeyError:
            raise TypeError(f"{self.library} has no dtype {d.name}") from None

    def dtype_of(self, array):
        return self._from[array.dtype]

    def as_array(self, value):
        if isinstance(value, np.generic):
            value = np.asarray(value)
        return self.raw.asarray(value)

    # -- kernels the standard spells differently from NumPy
    def overrides(self) -> dict:
        raw = self.raw

        def copy(x):
            return raw.asarray(x, copy=True)

        def astype(x, dtype):
            return raw.astype(x, dtype)

        def view(x, shape):
            if 0 in x.shape:  # no elements to share: the library may refuse a copy-free reshape of them
                return raw.reshape(x, tuple(shape))
            return raw.reshape(x, tuple(shape), copy=False)

        def fill_(x, value):
            x[...] = raw.full(x.shape, value, dtype=x.dtype)

        def copy_(dst, src):
            dst[...] = raw.broadcast_to(raw.astype(src, dst.dtype), dst.shape)

        def random(kind):
            def sample(gen, shape, dtype, *args):
                return raw.asarray(getattr(gen, kind)(*args, size=shape), dtype=dtype)

            return sample

        def uniform(gen, shape, dtype, low=0.0, high=1.0):
            return random("uniform")(gen, shape, dtype, low, high)

        def normal(gen, shape, dtype, mean=0.0, std=1.0):
            return random("normal")(gen, shape, dtype, mean, std)

        def permutation(gen, n, dtype):
            return raw.asarray(gen.permutation(n), dtype=dtype)

        def contiguous(x):
            # the standard has no memory layout: a fresh array is the only safe "contiguous" result
            return raw.asarray(x, copy=True)

        return {"copy": copy, "astype": astype, "view": view, "fill_": fill_, "copy_": copy_,
                "uniform": uniform, "normal": normal, "randint": random("integers"), "permutation": permutation,
                "contiguous": contiguous, "empty": lambda shape, dtype: raw.empty(tuple(shape), dtype=dtype),
                "full": lambda shape, value, dtype: raw.full(tuple(shape), value, dtype=dtype)}


def _ember_dtypes():
    return [getattr(ember, n) for n in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                       "float64", "complex64", "complex128")]
