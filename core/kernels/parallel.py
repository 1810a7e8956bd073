"""Kernels whose work splits into independent blocks of rows: run those blocks on several threads.

NumPy releases the GIL inside its loops, so the blocks of one large elementwise or pooling kernel can run at
once.  The thread pool belongs to the CPU backend (``ember_cpu_numpy.threads``, which honours
``ember.set_num_threads``); it installs its runner here when it loads (the kernel library sits below the
runtime settings and may not import them).  Without a runner, or for small work, :func:`rows` runs the body
once over every row on the calling thread.

A body writes each row of its output from the same rows of its inputs with the same ufunc loops whatever the
block boundaries, so a split result is bit-identical to the single-thread one.
"""
from __future__ import annotations

_RUNNER: dict = {"run": None}

MIN_SIZE = 1 << 18
"""Elements below which a kernel stays on one thread (the hand-off to a pool thread costs ~20 us)."""


def install(run) -> None:
    """Use ``run(body, n, size)`` to run ``body(lo, hi)`` over the blocks of ``range(n)`` (``size``: the
    elements of the whole work); ``None`` puts every kernel back on one thread."""
    _RUNNER["run"] = run


def rows(body, n: int, size: int) -> None:
    """``body(lo, hi)`` over ``range(n)``: in blocks on the installed pool when ``size`` elements are worth
    it, else one call ``body(0, n)``."""
    run = _RUNNER["run"]
    if run is None or size < MIN_SIZE or n < 2:
        body(0, n)
    else:
        run(body, n, size)


def each(body, items, size: int, split: int = MIN_SIZE) -> None:
    """``body(item)`` for every item of the sequence ``items``: in blocks of items on the installed pool (:func:`rows`)
    when the ``size`` elements of the whole work reach ``split``, else in order on this thread."""
    def run(lo, hi):
        for item in items[lo:hi]:
            body(item)

    if size < split:
        run(0, len(items))
    else:
        rows(run, len(items), size)


def spans(n: int, block: int) -> list:
    """``range(n)`` cut into slices of ``block`` elements, the last one part-filled."""
    return [slice(i, min(i + block, n)) for i in range(0, n, block)]
