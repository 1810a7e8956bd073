"""Reused buffers for kernels that allocate large arrays on every call (the recurrent layers' gate and state
buffers).

A fresh NumPy array of more than about 128 KiB comes from ``mmap`` (or from a heap top that ``free`` trims
back): its pages are faulted in and zeroed by the operating system on first touch, about a microsecond per
4 KiB page.  An LSTM layer's buffers for a sequence of 50 x 32 x 128 are some 7 MB, 1,700 page faults: a
third of its forward time.  :func:`empty` hands out the pages of an earlier call instead.

A buffer is handed out again only once nothing but the pool refers to it.  Every NumPy view of a buffer,
however it was derived, keeps the buffer itself as its ``base`` (NumPy collapses chains of views to the
owner), and so does every Tensor over such a view: the owner's reference count tells whether any array
still uses its memory.  An autograd graph that keeps a layer's cache for its backward keeps its buffers out
of the pool until the graph is freed.

Only NumPy arrays are pooled (CuPy has its own memory pool; other array libraries get ``xp.empty``), and
only on CPython before 3.14: from 3.14 the interpreter may borrow references, so a count could miss a
holder, and every call gets a fresh array.  The pool keeps at most ``LIMIT`` bytes of buffers nobody uses,
dropping the least recently handed-out first.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

LIMIT = 64 << 20   # bytes of idle buffers kept
MIN_BYTES = 64 << 10  # smaller arrays come from NumPy's own cache of small blocks
REUSE = sys.implementation.name == "cpython" and sys.version_info < (3, 14)

_lock = threading.Lock()
_pool: list = []   # owners (1-D arrays), least recently handed out first


def _counts(pool):
    return [sys.getrefcount(owner) for owner in pool]


# the count of an owner that only its pool list refers to, taken the same way
_IDLE = _counts([np.empty(1, np.uint8)])[0]


def empty(shape, dtype):
    """An uninitialised C-contiguous NumPy array of ``shape`` and ``dtype``, on reused pages where an idle
    buffer of the same size is pooled."""
    dtype = np.dtype(dtype)
    n = dtype.itemsize
    for s in shape:
        n *= s
    if n < MIN_BYTES or not REUSE:
        return np.empty(shape, dtype)
    with _lock:
        counts = _counts(_pool)
        for i, owner in enumerate(_pool):
            if owner.nbytes == n and owner.dtype == dtype and counts[i] == _IDLE:
                del _pool[i]
                _pool.append(owner)
                return owner.reshape(shape)
        owner = np.empty(n // dtype.itemsize, dtype)
        _trim(counts)
        _pool.append(owner)
    return owner.reshape(shape)


def _trim(counts):
    """Forget the least recently handed-out idle buffers while those idle hold more than ``LIMIT`` bytes."""
    idle = [i for i, c in enumerate(counts) if c == _IDLE]
    total = sum(_pool[i].nbytes for i in idle)
    drop = set()
    for i in idle:
        if total <= LIMIT:
            break
        drop.add(i)
        total -= _pool[i].nbytes
    if drop:
        _pool[:] = [o for i, o in enumerate(_pool) if i not in drop]


def clear() -> None:
    """Drop every pooled buffer (those in use stay valid; the pool only forgets them)."""
    with _lock:
        _pool.clear()
