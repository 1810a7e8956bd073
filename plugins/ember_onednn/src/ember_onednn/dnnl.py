"""The few entry points of oneDNN's C API (v3) that the kernels use, through ctypes.

oneDNN ships as ``libdnnl.so.3`` in the ``onednn-cpu-gomp`` wheel (installed under ``<prefix>/lib``); its
threads are GNU OpenMP's.  A :class:`Primitive` is built once per geometry and kept by its kernel; a call points
its memory objects at the caller's arrays, reorders the plain (row-major) inputs into the layouts the
primitive chose, runs it, and reorders its outputs back.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading

import numpy as np


# enumerations of oneapi/dnnl/dnnl_types.h (v3)
F32 = 3
ANY = 1                              # dnnl_format_tag_any: the primitive picks the layout
CPU = 1
FORWARD_TRAINING = 64
CONVOLUTION_DIRECT = 1
QUERY_IMPL_INFO = 8
QUERY_EXEC_ARG_MD = 255
# DNNL_ARG_*: a primitive's arguments, and what its descriptor is asked for their memory descriptors by
SRC, DIFF_SRC, WEIGHTS, DIFF_WEIGHTS, DST, DIFF_DST = 1, 129, 33, 161, 17, 145
ARG_BIAS, ARG_FROM, ARG_TO, ARG_WORKSPACE = 41, 1, 17, 64
MAX_NDIMS = 12

Dims = ctypes.c_int64 * MAX_NDIMS


class _Arg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


def _load():
    names = [os.path.join(p, "lib", "libdnnl.so.3") for p in dict.fromkeys((sys.prefix, sys.base_prefix))]
    found = ctypes.util.find_library("dnnl")
    for name in names + ([found] if found else []):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise OSError(f"oneDNN (libdnnl.so.3) not found under {', '.join(names)} or on the library path; "
                  f"install it with pip install onednn-cpu-gomp")


lib = _load()
lib.dnnl_primitive_desc_query_md.restype = ctypes.c_void_p
lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
_set_data = lib.dnnl_memory_set_data_handle
_set_data.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
_execute = lib.dnnl_primitive_execute
_wait = lib.dnnl_stream_wait
_gomp = ctypes.CDLL("libgomp.so.1")


def address(a, _at=ctypes.c_char.from_buffer, _of=ctypes.addressof) -> int:
    """The address of NumPy array ``a``'s first element: through the buffer protocol where ``a`` (or its
    transpose) is a writable C-contiguous array (0.5 us), else NumPy's ctypes interface (2 us, a few times a call
    into oneDNN)."""
    try:
        return _of(_at(a))
    except (TypeError, ValueError):  # (not C-contiguous, read-only or empty)
        if a.ndim == 2 and a.flags.f_contiguous and a.size:
            try:
                return _of(_at(a.T))  # (a transposed matrix starts where its transpose does)
            except TypeError:
                pass
        return a.ctypes.data


def f32(*arrays) -> bool:
    """Whether every array given (None skipped) is a float32 NumPy array (not a NumPy scalar), the one kind the
    kernels serve."""
    return all(a is None or (type(a) is np.ndarray and a.dtype == np.float32) for a in arrays)


class DnnlError(RuntimeError):
    """A oneDNN call failed (the status is oneDNN's ``dnnl_status_t``)."""


def check(status: int, what: str) -> None:
    if status:
        raise DnnlError(f"oneDNN {what} failed with status {status}")


def dims(values) -> Dims:
    return Dims(*values)


def handle(ctor, *args, what):
    """The handle a oneDNN constructor ``ctor(&handle, *args)`` makes (an engine, a primitive descriptor ...);
    raises :class:`DnnlError` naming ``what`` where it fails."""
    h = ctypes.c_void_p()
    check(ctor(ctypes.byref(h), *args), what)
    return h


ENGINE = handle(lib.dnnl_engine_create, CPU, ctypes.c_size_t(0), what="engine_create")
_STREAMS = threading.local()   # a stream per thread: oneDNN streams are not shared between threads


def _threads():
    """``ember.get_num_threads()`` (ember is imported on first use: this module may load before it)."""
    global _threads
    from ember.runtime import get_num_threads
    _threads = get_num_threads
    return get_num_threads()


def _empty(shape, dtype):
    """The CPU backend's allocator hook (``Backend.allocate``): an array on the reused pages of an earlier call
    where one is idle (megabyte buffers fresh from the OS cost a page fault every 4 KiB); ``numpy.empty`` where
    the backend has none.  Bound on first use, as :func:`_threads`."""
    global _empty
    from ember.backend import get_backend
    empty = get_backend("cpu").allocate or np.empty
    _empty = empty
    return empty(shape, dtype)


def _stream():
    s = getattr(_STREAMS, "stream", None)
    if s is None:
        s = _STREAMS.stream = handle(lib.dnnl_stream_create, ENGINE, 1, what="stream_create")
    n = _threads()
    if getattr(_STREAMS, "threads", None) != n:   # OpenMP's thread count is a per-thread setting
        _gomp.omp_set_num_threads(n)
        _STREAMS.threads = n
    return s


def _after_fork():
    # GNU OpenMP's thread pool does not survive fork(): a forked child runs its regions on one thread
    _STREAMS.__dict__.clear()
    _gomp.omp_set_num_threads(1)
    _STREAMS.threads = 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class Desc:
    """A memory descriptor (owned: destroyed with the object)."""
    __slots__ = ("h", "shape")

    def __init__(self, shape, tag=None, strides=None):
        self.shape = tuple(shape)
        if tag is None:   # row-major, or the strides (in elements) given
            if strides is None:
                strides, s = [], 1
                for d in reversed(self.shape):
                    strides.insert(0, s)
                    s *= d
            self.h = handle(lib.dnnl_memory_desc_create_with_strides, len(shape), dims(shape), F32,
                             dims(strides), what="memory_desc_create")
        else:
            self.h = handle(lib.dnnl_memory_desc_create_with_tag, len(shape), dims(shape), F32, tag,
                             what="memory_desc_create")

    def __del__(self, destroy=lib.dnnl_memory_desc_destroy):
        destroy(self.h)


def query_md(pd, arg):
    """The memory descriptor a primitive descriptor chose for its argument ``arg`` (a ``DNNL_ARG_*``; owned by
    the primitive descriptor)."""
    return ctypes.c_void_p(lib.dnnl_primitive_desc_query_md(pd, QUERY_EXEC_ARG_MD, arg))


class _Bound:
    """A thread's memory objects for one :class:`Primitive`, made once without buffers: a call points each at
    its array (``dnnl_memory_set_data_handle``) and runs the prebuilt argument lists."""

    __slots__ = ("mems", "runs", "at")

    def __init__(self, prim):
        self.mems = []

        def mem(md):
            self.mems.append(handle(lib.dnnl_memory_create, md, ENGINE, None, what="memory_create"))
            return self.mems[-1]

        before, main, after = [], [], []
        raw_outs = [(arg, md) for arg, md, _ in prim.raw_outs]
        for group, raw, into in ((prim.ins, prim.raw_ins, True), (prim.outs, raw_outs, False)):
            for arg, plain, chosen, reorder, _ in group:
                m = mem(plain.h)
                if reorder is not None:   # the plain array is reordered into the chosen layout, or back
                    mb = mem(chosen)
                    if into:
                        before.append((reorder, [(ARG_FROM, m), (ARG_TO, mb)]))
                    else:
                        after.append((reorder, [(ARG_FROM, mb), (ARG_TO, m)]))
                    m = mb
                main.append((arg, m))
            main += [(arg, mem(md)) for arg, md in raw]
        self.runs = [(p, len(args), (_Arg * len(args))(*[_Arg(k, m) for k, m in args]))
                     for p, args in (*before, (prim.prim, main), *after)]
        self.at = [None] * len(self.mems)  # the address each memory object points at (a direct call's)

    def __del__(self, destroy=lib.dnnl_memory_destroy):
        for m in self.mems:
            destroy(m)


class Primitive:
    """A primitive from its descriptor, with the reorders between each argument's plain layout and the one
    the primitive chose: ``ins``/``outs`` are ``[(DNNL_ARG_*, plain Desc)]``.  ``raw_ins``/``raw_outs`` are
    ``[(DNNL_ARG_*, Desc or memory descriptor handle)]`` passed as they are (a bias, statistics, a workspace);
    a raw output is allocated as bytes of the descriptor's size.  Calling it with the arrays of ``ins`` then
    ``raw_ins`` (``ins`` row-major float32) returns the arrays of ``outs`` then ``raw_outs``.

    Each thread calling it gets memory objects of its own (:class:`_Bound`), made on its first call and
    pointed at the call's arrays on every call: oneDNN runs a primitive from several threads at once, but a
    memory object belongs to one call at a time."""

    def __init__(self, pd, ins, outs, raw_ins=(), raw_outs=()):
        self.pd = pd
        self.prim = handle(lib.dnnl_primitive_create, pd, what="primitive_create")
        self.ins = [self._arg(a, d, into=True) for a, d in ins]
        self.outs = [self._arg(a, d, into=False) for a, d in outs]
        self.keep = [md for _, md in (*raw_ins, *raw_outs)]   # the Descs among them live as long as this
        self.raw_ins = [(arg, getattr(md, "h", md)) for arg, md in raw_ins]
        self.raw_outs = [(arg, h, lib.dnnl_memory_desc_get_size(h))
                         for arg, h in ((arg, getattr(md, "h", md)) for arg, md in raw_outs)]
        self._local = threading.local()
        # without reorders a call hands over its arrays as they are: (number of arrays in, outputs' shapes)
        self._direct = None if any(r is not None for *_, r, _ in (*self.ins, *self.outs)) else \
            (len(self.ins) + len(self.raw_ins), [plain.shape for _, plain, *_ in self.outs])

    def _arg(self, arg, plain, into):
        chosen = query_md(self.pd, arg)
        if lib.dnnl_memory_desc_equal(chosen, plain.h):
            return arg, plain, None, None, 0
        src, dst = (plain.h, chosen) if into else (chosen, plain.h)
        rpd = handle(lib.dnnl_reorder_primitive_desc_create, src, ENGINE, dst, ENGINE, None,
                      what="reorder_primitive_desc_create")
        reorder = handle(lib.dnnl_primitive_create, rpd, what="primitive_create")
        lib.dnnl_primitive_desc_destroy(rpd)
        return arg, plain, chosen, reorder, lib.dnnl_memory_desc_get_size(chosen) // 4

    @property
    def impl(self) -> str:
        s = ctypes.c_char_p()
        check(lib.dnnl_primitive_desc_query(self.pd, QUERY_IMPL_INFO, 0, ctypes.byref(s)), "query impl")
        return s.value.decode()

    def __call__(self, *arrays, out=None):
        """``out``: arrays for ``outs`` to write into (in place: one may be an input, where the primitive allows
        it), each row-major float32 of its plain shape; by default they are fresh."""
        stream = _stream()
        bound = getattr(self._local, "bound", None)
        if bound is None:
            bound = self._local.bound = _Bound(self)
        if self._direct is not None:
            n, shapes = self._direct
            outs = [_empty(shape, np.float32) for shape in shapes] if out is None else list(out)
            outs += [_empty((size,), np.uint8) for _, _, size in self.raw_outs]
            # a memory object is pointed again only at a new address (a weight's, a reused buffer's stay)
            at, mems = bound.at, bound.mems
            for i, a in enumerate((*arrays[:n], *outs)):
                ptr = address(a)
                if at[i] != ptr:
                    _set_data(mems[i], ptr)
                    at[i] = ptr
            prim, k, args = bound.runs[0]
            check(_execute(prim, stream, k, args), "primitive_execute")
            check(_wait(stream), "stream_wait")
            return outs
        # the arrays behind the memory objects, in _Bound's order
        data, outs = [], []
        for (_, _, _, reorder, size), a in zip(self.ins, arrays):
            data.append(a)
            if reorder is not None:
                data.append(_empty((size,), np.float32))
        data += arrays[len(self.ins):len(self.ins) + len(self.raw_ins)]
        for i, (_, plain, _, reorder, size) in enumerate(self.outs):
            dest = _empty(plain.shape, np.float32) if out is None else out[i]
            outs.append(dest)
            data.append(dest)
            if reorder is not None:
                data.append(_empty((size,), np.float32))
        for _, _, size in self.raw_outs:
            outs.append(_empty((size,), np.uint8))
            data.append(outs[-1])
        for m, a in zip(bound.mems, data):
            _set_data(m, address(a))
        for prim, n, args in bound.runs:
            check(_execute(prim, stream, n, args), "primitive_execute")
        check(_wait(stream), "stream_wait")
        return outs
