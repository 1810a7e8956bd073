"""Large elementwise kernels split over a thread pool.

NumPy runs a ufunc on one thread but releases the GIL inside its loops, so the blocks of one large
elementwise op can run on ``ember.get_num_threads()`` threads at once: the output is cut along its first
dimension, each thread runs the very same ufunc loop on its block (written in place with ``out=``), and
the caller's thread takes the first block.  Each element goes through the same arithmetic as on one thread,
so the result is bit-identical.  Below ``MIN_SIZE`` elements, for a first dimension too short to cut, or
with one thread, a kernel is the plain ufunc call.

:func:`run_blocks` is the backend's block-runner hook (``NumpyBackend.run_blocks``): the shared kernels'
work that splits into blocks of rows (convolution copies and transforms, batch norm's passes, pooling, the
optimizer updates) runs here.
"""
from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ember.kernels.strategy import over, spans
from ember.runtime import get_num_threads

from . import workspace

MIN_SIZE = 1 << 18
"""Elements below which an op or a kernel's blocks run on one thread (~50 us of work for a float32 add: the
hand-off to the pool, ~20 us, would eat the gain)."""

_POOL: dict = {"workers": 0, "executor": None}
_LOCK = threading.Lock()


def _executor(workers: int) -> ThreadPoolExecutor:
    with _LOCK:
        if _POOL["workers"] != workers:
            old = _POOL["executor"]
            _POOL["executor"] = ThreadPoolExecutor(workers, thread_name_prefix="ember-cpu")
            _POOL["workers"] = workers
            if old is not None:
                old.shutdown(wait=False)
        return _POOL["executor"]


def _forget_pool():
    # a forked child has the pool object but not its threads
    _POOL["workers"], _POOL["executor"] = 0, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _blocks(n0: int, parts: int) -> list:
    step = -(-n0 // parts)
    return [(lo, min(lo + step, n0)) for lo in range(0, n0, step)]


def _run_blocks(body, n0: int, threads: int) -> None:
    """``body(lo, hi)`` for the blocks of ``range(n0)``, the first on this thread, the rest on the pool."""
    blocks = _blocks(n0, threads)
    err = np.geterr()  # NumPy's error state is per thread: the pool's threads take the caller's

    def remote(lo, hi):
        with np.errstate(**err):
            body(lo, hi)

    futures = [_executor(threads - 1).submit(remote, lo, hi) for lo, hi in blocks[1:]]
    try:
        body(*blocks[0])
    finally:
        for f in futures:
            f.result()


def _part(a, ndim: int, lo: int, hi: int):
    """Rows ``lo:hi`` of ``a`` along the first of ``ndim`` broadcast dimensions (all of ``a`` where it is
    broadcast there)."""
    if a.ndim < ndim or a.shape[0] == 1:
        return a
    return a[lo:hi]


def _plan(a, b):
    """``(shape, threads)`` when ``ufunc(a, b)`` is worth splitting, else None."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return None
    shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    if not shape or math.prod(shape) < MIN_SIZE:
        return None
    threads = get_num_threads()
    if threads < 2 or shape[0] < 2:
        return None
    return shape, min(threads, shape[0])


def split_binary(ufunc):
    """``ufunc(a, b)`` (into ``out`` when given), computed in blocks on several threads when it is large."""

    def kernel(a, b, out=None):
        try:
            small = a.size < MIN_SIZE and b.size < MIN_SIZE  # the small-op path: two attribute reads
        except AttributeError:  # a Python scalar
            small = True
        plan = None if small else _plan(a, b)
        if plan is None:
            return ufunc(a, b) if out is None else ufunc(a, b, out=out)
        shape, threads = plan
        if out is None:
            out = workspace.empty(shape, ufunc.resolve_dtypes((a.dtype, b.dtype, None))[-1])  # reused pages
        elif out.shape != shape:
            return ufunc(a, b, out=out)  # (NumPy's own error)
        nd = len(shape)

        def body(lo, hi):
            ufunc(_part(a, nd, lo, hi), _part(b, nd, lo, hi), out=out[lo:hi])

        _run_blocks(body, shape[0], threads)
        return out

    kernel.__name__ = ufunc.__name__
    return kernel


ZERO_BLOCK = 1 << 16
"""Elements of the zeros :func:`relu_large` compares against: NumPy's ``maximum`` runs its SIMD loop only when
both operands are contiguous (against a 0-d zero it is ~3x slower), so the input is taken in blocks of this
size against one block of zeros that stays in cache."""

RELU_SPLIT = 1 << 21
"""Elements from which :func:`relu_large` splits its blocks over threads: a comparison against zeros is one
cheap pass (~85 us for 2^20 float32 elements), which the hand-off to a pool thread (20-50 us) would eat."""

_ZEROS: dict = {}


def relu_large(x, out=None):
    """``maximum(0, x)`` (into ``out`` when given) for a C-contiguous ``x`` of 4096 elements or more: block by
    block against a contiguous block of zeros, the blocks on several threads when ``x`` is large."""
    zeros = _ZEROS.get(x.dtype)
    if zeros is None:
        zeros = _ZEROS[x.dtype] = np.zeros(ZERO_BLOCK, x.dtype)
    if out is None:
        out = workspace.empty(x.shape, x.dtype)
    n = x.size
    flat, dest = x.reshape(-1), out.reshape(-1)
    if n <= ZERO_BLOCK:
        np.maximum(zeros[:n], flat, out=dest)
        return out

    def block(part):
        np.maximum(zeros[:part.stop - part.start], flat[part], out=dest[part])

    blocks = spans(n, ZERO_BLOCK)
    run = over(block, blocks)
    if n < RELU_SPLIT:
        run(0, len(blocks))
    else:
        run_blocks(run, len(blocks), n)
    return out


def relu_backward_large(g, out):
    """``g * ~(out <= 0)`` (``g`` where ``out > 0`` or NaN, else 0) for a large ``g`` of ``out``'s shape, in
    blocks on several threads when ember may use them."""
    zero = np.zeros((), out.dtype)
    plan = _plan(g, out)
    if plan is None:
        return g * ~np.less_equal(out, zero)
    shape, threads = plan
    res = workspace.empty(shape, np.result_type(g.dtype, np.bool_))

    def body(lo, hi):
        keep = np.less_equal(out[lo:hi], zero)
        np.invert(keep, out=keep)
        np.multiply(g[lo:hi], keep, out=res[lo:hi])

    _run_blocks(body, shape[0], threads)
    return res


def run_blocks(body, n0: int, size: int) -> None:
    """``body(lo, hi)`` over the blocks of ``range(n0)`` on ``ember.get_num_threads()`` threads when the
    ``size`` elements of the whole work reach :data:`MIN_SIZE`, else the one call ``body(0, n0)`` on this
    thread (the block-runner hook of the backend contract)."""
    threads = min(get_num_threads(), n0) if size >= MIN_SIZE else 1
    if threads < 2:
        body(0, n0)
    else:
        _run_blocks(body, n0, threads)
