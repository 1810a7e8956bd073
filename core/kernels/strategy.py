"""The backend's strategy as the shared kernels see it: where large arrays come from, and how work that splits
into independent blocks runs.

A backend hands the kernel library two hooks (``ember.backend.Backend.allocate`` and ``run_blocks``), each
optional:

* ``allocate(shape, dtype)``: an uninitialised C-contiguous array for a kernel's large results and scratch.
  Without one, ``xp.empty``.  The CPU backend hands out the pages of earlier calls (its page pool).
* ``run_blocks(body, n, size)``: ``body(lo, hi)`` over blocks that cover ``range(n)`` (``size``: the
  elements of the whole work).  Without one, the one call ``body(0, n)``.  The CPU backend runs the blocks
  on its thread pool when the work is worth the hand-off.

A body writes each block of its output from the same block of its inputs by the same calls, so a result is
bit-identical however the range is cut.  Given a block runner, and ufuncs that write into ``out=``, the
kernels take their blocked forms (:attr:`Strategy.blocked`): work cut into cache-sized pieces handed to the
runner.  Without one each kernel works on whole arrays in as few calls as it can, the form for a device
whose every call is a kernel launch.
"""
from __future__ import annotations

from functools import partial


def is_ufunc(fn) -> bool:
    """Whether ``fn`` is a ufunc (NumPy's or CuPy's), which writes into an ``out=`` array, given by keyword or
    after its inputs."""
    return type(fn).__name__ == "ufunc"


def takes_out(xp) -> bool:
    """Whether ``xp``'s elementwise functions are ufuncs (the array API standard has no ``out=``)."""
    return is_ufunc(getattr(xp, "add", None))


class Strategy:
    """The array module ``xp`` with a backend's two hooks (defaults filled in), as the kernels call them."""

    __slots__ = ("xp", "allocate", "run_blocks", "writes_out", "blocked")

    def __init__(self, xp, allocate=None, run_blocks=None):
        self.xp = xp
        self.allocate = allocate
        self.run_blocks = run_blocks
        self.writes_out = takes_out(xp)
        self.blocked = run_blocks is not None and self.writes_out

    def empty(self, shape, dtype):
        """An uninitialised array of ``shape`` and ``dtype`` from the backend's allocator (``xp.empty``)."""
        if self.allocate is None:
            return self.xp.empty(shape, dtype=dtype)
        return self.allocate(shape, dtype)

    def rows(self, body, n: int, size: int) -> None:
        """``body(lo, hi)`` over ``range(n)``: through the block runner, else the one call ``body(0, n)``."""
        if self.run_blocks is None:
            body(0, n)
        else:
            self.run_blocks(body, n, size)

    def each(self, body, items, size: int) -> None:
        """``body(item)`` for every item of the sequence ``items``, in blocks of items through :meth:`rows`
        (``size``: the elements of the whole work)."""
        self.rows(over(body, items), len(items), size)

    def product(self, a, b):
        """``a @ b`` (stacks of matrices, broadcast); into an allocated array where the backend has an
        allocator."""
        xp = self.xp
        if self.allocate is None or not self.writes_out:
            return a @ b
        out = self.allocate(xp.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]),
                            xp.result_type(a, b))
        return xp.matmul(a, b, out=out)

    def into(self, ufunc, op):
        """``f(*operands, out)``: ``op(*operands)`` written into ``out`` (the ufunc's ``out=`` where ``xp`` has
        ufuncs: no temporary)."""
        if self.writes_out:
            def write(*args):
                ufunc(*args[:-1], out=args[-1])
        else:
            def write(*args):
                args[-1][...] = op(*args[:-1])
        return write


def over(body, items):
    """``run(lo, hi)``: ``body(item)`` for ``items[lo:hi]``, in order."""
    def run(lo, hi):
        for item in items[lo:hi]:
            body(item)
    return run


def spans(n: int, block: int) -> list:
    """``range(n)`` cut into slices of ``block`` elements, the last one part-filled."""
    return [slice(i, min(i + block, n)) for i in range(0, n, block)]


def bind(first, table: dict) -> dict:
    """``{name: fn}`` with ``first`` (``xp`` or a :class:`Strategy`) bound as each kernel's first argument."""
    bound = {}
    for name, fn in table.items():
        k = partial(fn, first)
        k.__name__ = fn.__name__
        bound[name] = k
    return bound
