"""Shared-memory segments under host tensors, and moving a tensor's storage into one.

A :class:`Segment` is a block of POSIX shared memory mapped into this process.
The storage array of a shared tensor is a NumPy array whose ``base`` is the
segment, so the segment lives exactly as long as some tensor (or view) uses
it, and releasing it is a finalizer on the segment.  Two sharing strategies,
as in PyTorch:

* ``file_descriptor`` (default): the segment is unlinked from ``/dev/shm`` the
  moment it is created; only file descriptors (passed between processes over
  a Unix socket) keep it alive, so the kernel frees it when the last holder
  closes it or dies.  Nothing can leak, even after ``kill -9``.
* ``file_system``: the segment keeps its name in ``/dev/shm`` and a reference
  count in its first bytes (updated under ``flock``); the last holder to
  release it unlinks it.  A holder killed before releasing leaves its count
  behind; the multiprocessing resource tracker then unlinks the segment when
  the whole process family has exited.
"""
from __future__ import annotations

import fcntl
import mmap
import os
import secrets
import weakref
from multiprocessing import resource_tracker, util

import _posixshmem
import numpy as np

_CACHE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key -> live Segment in this process


class Segment:
    """Shared memory of ``nbytes`` bytes mapped here; NumPy arrays over it keep it alive.

    >>> seg = FdSegment.create(16)
    >>> a = seg.array(); a[:] = 7; int(a.sum())
    112
    """

    offset = 0  # where the data starts inside the mapping

    def __init__(self, key: str, nbytes: int, mm: mmap.mmap, fd=None):
        self.key, self.nbytes, self._mm, self.fd = key, nbytes, mm, fd
        buf = np.frombuffer(mm, np.uint8, nbytes, self.offset)
        self.__array_interface__ = buf.__array_interface__
        self._buf = buf  # keeps the mapping exported (and mapped) while the segment lives
        self._root = None
        _CACHE[key] = self
        util.Finalize(self, type(self)._release, (mm, key, fd), exitpriority=0)

    def array(self) -> np.ndarray:
        """The whole segment as a flat ``uint8`` array (one array per segment: the storage root)."""
        root = None if self._root is None else self._root()
        if root is None:
            root = np.asarray(self)
            self._root = weakref.ref(root)
        return root

    @classmethod
    def adopt(cls, key, make):
        """The storage root for segment ``key``: the one mapped here already, or ``make()`` mapped anew."""
        seg = _CACHE.get(key)
        root = None if seg is None or seg._root is None else seg._root()
        if root is not None:
            return root, True
        return make().array(), False


def _name() -> str:
    return f"/ember_{os.getpid()}_{secrets.token_hex(8)}"


def _open_new(name: str, size: int):
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    try:
        os.ftruncate(fd, size)
        return fd, mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        _posixshmem.shm_unlink(name)
        raise


class FdSegment(Segment):
    """Unlinked at birth; kept alive by file descriptors (strategy ``file_descriptor``)."""

    @classmethod
    def create(cls, nbytes: int) -> "FdSegment":
        name = _name()
        fd, mm = _open_new(name, max(nbytes, 1))
        _posixshmem.shm_unlink(name)
        return cls(name, nbytes, mm, fd)

    def handle(self):
        """What crosses to another process: the key and a duplicate of the descriptor."""
        from multiprocessing.reduction import DupFd

        return (type(self), self.key, self.nbytes, DupFd(self.fd))

    @classmethod
    def attach(cls, key, nbytes, dupfd):
        fd = dupfd.detach()

        def make():
            return cls(key, nbytes, mmap.mmap(fd, max(nbytes, 1)), fd)

        root, cached = cls.adopt(key, make)
        if cached:
            os.close(fd)
        return root

    @staticmethod
    def _release(mm, key, fd):
        os.close(fd)


class FileSegment(Segment):
    """Named in ``/dev/shm`` with a reference count in its header (strategy ``file_system``)."""

    offset = 64  # an 8-byte reference count, padded so the data stays aligned

    @classmethod
    def create(cls, nbytes: int) -> "FileSegment":
        name = _name()
        fd, mm = _open_new(name, cls.offset + nbytes)
        os.close(fd)
        mm[:8] = (1).to_bytes(8, "little")
        resource_tracker.register(name, "shared_memory")  # unlinked at family exit if a holder was killed
        return cls(name, nbytes, mm)

    def handle(self):
        """What crosses to another process: the name; the message holds a reference until received."""
        _count(self.key, self._mm, 1)
        return (type(self), self.key, self.nbytes, None)

    @classmethod
    def attach(cls, key, nbytes, _unused):
        def make():
            fd = _posixshmem.shm_open(key, os.O_RDWR, mode=0o600)
            try:
                return cls(key, nbytes, mmap.mmap(fd, cls.offset + nbytes))
            finally:
                os.close(fd)

        root, cached = cls.adopt(key, make)
        if cached:  # this process holds a reference already: drop the message's
            _count(key, _CACHE[key]._mm, -1)
        return root

    @staticmethod
    def _release(mm, key, fd):
        _count(key, mm, -1)


def _count(name: str, mm: mmap.mmap, delta: int) -> None:
    """Add ``delta`` to the segment's reference count; the holder that brings it to zero unlinks it."""
    fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        n = int.from_bytes(mm[:8], "little") + delta
        mm[:8] = n.to_bytes(8, "little")
        if n == 0:
            _posixshmem.shm_unlink(name)
            resource_tracker.unregister(name, "shared_memory")
    finally:
        os.close(fd)


STRATEGIES = {"file_descriptor": FdSegment, "file_system": FileSegment}
_strategy = ["file_descriptor"]


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how host tensors are shared: ``"file_descriptor"`` (default) or ``"file_system"``.

    >>> import ember.multiprocessing as mp
    >>> mp.set_sharing_strategy("file_system"); mp.get_sharing_strategy()
    'file_system'
    >>> mp.set_sharing_strategy("file_descriptor")
    """
    if new_strategy not in STRATEGIES:
        raise ValueError(f"set_sharing_strategy(): unknown strategy {new_strategy!r}, expected one of "
                         f"{sorted(STRATEGIES)}")
    _strategy[0] = new_strategy


def get_sharing_strategy() -> str:
    """The current sharing strategy."""
    return _strategy[0]


def get_all_sharing_strategies() -> set:
    """The sharing strategies this platform supports."""
    return set(STRATEGIES)


def is_shared(t) -> bool:
    """Whether tensor ``t``'s storage is in shared memory (device memory with IPC handles always is, as in PyTorch)."""
    if not t._dev.backend.host:
        return t._dev.backend.supports_ipc()
    return isinstance(t._storage_root().base, Segment)


def check_shareable(t, op: str) -> None:
    """Raise unless ``t``'s memory can be shared with other processes (host memory, or a backend with IPC)."""
    b = t._dev.backend
    if not (b.host or b.supports_ipc()):
        raise RuntimeError(f"{op}(): tensors on {t.device} cannot be shared between processes (expected host memory "
                           f"or a device whose backend supports IPC handles; the {b.name!r} backend does not); "
                           f"copy it to the CPU first")


def share_memory_(t):
    """Move ``t``'s storage into shared memory (a no-op when already there or on a device); returns ``t``.

    ``t`` and the tensor it is a view of or was detached from are re-pointed to the shared copy; a view made
    earlier follows when it is shared itself; other views keep the old private memory.

    >>> import ember
    >>> x = ember.arange(4.).share_memory_(); x.is_shared()
    True
    """
    check_shareable(t, "share_memory_")
    if is_shared(t):
        return t
    base = t._base if t._base is not None else t._vo  # the view base or the tensor t was detached from (a root)
    if base is not None and base._vo is not None:  # a view of a detached tensor: its source holds the storage
        base = base._vo
    root = t._storage_root()
    if base is not None and is_shared(base) and base._storage_root().nbytes == root.nbytes:
        _repoint(t, root, base._storage_root())  # the base moved earlier: follow it
        return t
    flat = np.ravel(root, order="A") if root.flags.c_contiguous or root.flags.f_contiguous else None
    if flat is None or not np.shares_memory(flat, root):  # a storage we cannot copy byte for byte
        t._data = np.ascontiguousarray(t._data)
        t._base = None
        return share_memory_(t)
    new_root = STRATEGIES[_strategy[0]].create(root.nbytes).array()
    new_root[:] = flat.view(np.uint8)
    _repoint(t, root, new_root)
    if base is not None and base._storage_root() is root:
        _repoint(base, root, new_root)
    return t


def _repoint(x, old_root: np.ndarray, new_root: np.ndarray) -> None:
    """Make ``x`` view ``new_root`` where it viewed ``old_root`` (same byte layout)."""
    a = x._data
    off = a.__array_interface__["data"][0] - old_root.__array_interface__["data"][0]
    x._data = np.ndarray(a.shape, a.dtype, new_root, off, a.strides)
