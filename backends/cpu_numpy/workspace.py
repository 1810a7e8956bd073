"""The CPU backend's page pool: reused buffers for kernels that allocate large arrays on every call (the recurrent
layers' gate and state buffers, the convolutions' columns and outputs).  It is the backend's allocator hook
(``NumpyBackend.allocate``), through which the shared kernels get their large arrays.

A fresh NumPy array of more than about 128 KiB comes from ``mmap`` (or from a heap top that ``free`` trims
back): its pages are faulted in and zeroed by the operating system on first touch, about a microsecond per
4 KiB page.  An LSTM layer's buffers for a sequence of 50 x 32 x 128 are some 7 MB, 1,700 page faults: a
third of its forward time.  :func:`empty` hands out the pages of an earlier call instead.

A buffer is handed out again only once nothing but the pool refers to it.  Every NumPy view of a buffer,
however it was derived, keeps the buffer itself as its ``base`` (NumPy collapses chains of views to the
owner), and so does every Tensor over such a view: the owner's reference count tells whether any array
still uses its memory.  An autograd graph that keeps a layer's cache for its backward keeps its buffers out
of the pool until the graph is freed.

The pool files its buffers by size and dtype, so a request looks only at the buffers it could take (a
training step asks some 500 times among a hundred pooled buffers).  Buffers are reused only on CPython before
3.14: from 3.14 the interpreter may borrow references, so a count could miss a holder, and every call gets a
fresh array.
The pool keeps at most ``LIMIT`` bytes of buffers nobody uses, dropping the least recently handed-out first.
"""
from __future__ import annotations

import itertools
import sys
import threading

import numpy as np

LIMIT = 128 << 20
"""Bytes of idle buffers kept.  ResNet-18's inference at 224 px, batch 8, cycles through ~140 MiB of layer
outputs and layout copies: with 64 MiB kept it faulted in ~900 fresh pages a pass (~20% of its time), with
128 MiB none, at the same peak resident set."""
MIN_BYTES = 64 << 10  # smaller arrays come from NumPy's own cache of small blocks
REUSE = sys.implementation.name == "cpython" and sys.version_info < (3, 14)

_lock = threading.Lock()
_pool: dict = {}    # (bytes, dtype) -> owners (1-D arrays) of that size
_used: dict = {}    # id(owner) -> when it was last handed out (a tick of _clock)
_clock = itertools.count()


def _idle(bucket, i) -> bool:
    """Whether nothing but the pool refers to ``bucket[i]``."""
    return sys.getrefcount(bucket[i]) == _IDLE


def _idle_at(bucket) -> int:
    """The index of the first idle owner in ``bucket``, or -1."""
    for i in range(len(bucket)):
        if _idle(bucket, i):
            return i
    return -1


# the count of an owner that only its bucket refers to, taken the same way
_probe = [np.empty(1, np.uint8)]
_IDLE = sys.getrefcount(_probe[0])
del _probe


def empty(shape, dtype):
    """An uninitialised C-contiguous NumPy array of ``shape`` and ``dtype``, on reused pages where an idle
    buffer of the same size is pooled."""
    dtype = np.dtype(dtype)
    n = dtype.itemsize
    for s in shape:
        n *= s
    if n < MIN_BYTES or not REUSE:
        return np.empty(shape, dtype)
    key = (n, dtype)
    with _lock:
        bucket = _pool.get(key)
        if bucket is None:
            bucket = _pool[key] = []
        i = _idle_at(bucket)
        if i >= 0:
            owner = bucket[i]
        else:
            owner = np.empty(n // dtype.itemsize, dtype)
            _trim()
            bucket.append(owner)
        _used[id(owner)] = next(_clock)
    return owner.reshape(shape)


def _owners():
    """Every pooled owner, in use or idle."""
    return [owner for bucket in _pool.values() for owner in bucket]


def _trim():
    """Forget the least recently handed-out idle buffers while those idle hold more than ``LIMIT`` bytes."""
    idle = [(_used[id(bucket[i])], i, bucket) for bucket in _pool.values() for i in range(len(bucket))
            if _idle(bucket, i)]
    total = sum(bucket[i].nbytes for _, i, bucket in idle)
    if total <= LIMIT:
        return
    drop = []
    for _, i, bucket in sorted(idle, key=lambda e: e[0]):
        if total <= LIMIT:
            break
        total -= bucket[i].nbytes
        drop.append((bucket, i))
    for bucket, i in sorted(drop, key=lambda e: -e[1]):  # from the back, so the other indices hold
        del _used[id(bucket[i])]
        del bucket[i]
    for key in [k for k, b in _pool.items() if not b]:
        del _pool[key]


def clear() -> None:
    """Drop every pooled buffer (those in use stay valid; the pool only forgets them)."""
    with _lock:
        _pool.clear()
        _used.clear()
