"""Indexing kernels: subscripts (``x[index]`` read, written, accumulated), gather/scatter and index_* along a
dimension, masks, ``nonzero``, and the index arrays of embedding bags and of a matrix's upper triangle.

Indices arrive already checked (in range, integer); these never validate.
Accumulating writes use ``ufunc.at`` so repeated indices add up.
"""
from __future__ import annotations

MUTATING = {"setitem": (0,), "index_put_acc": (0,)}  # they write into argument 0

SEEDS = {"sum": 0, "mean": 0, "prod": 1}
REDUCE_UFUNCS = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def segmented_product(xp, out, index, values):
    """``out`` with ``out[index] *= values`` done, repeated positions multiplying up (``out`` itself may
    change), for ``index`` a tuple of integer arrays that broadcast with ``values``, one per axis of ``out``:
    what ``xp.multiply.at`` does, from a sort and a segmented scan, for array libraries without
    ``multiply.at`` (CuPy).

    The flat target positions are sorted; a product scan by doubling restarts at each run of
    equal positions, so the last element of a run holds the run's product, which every element of the
    run then reads (``searchsorted``): the writes of one run agree, in whatever order they land."""
    shape = values.shape
    lin = None
    for axis, ix in enumerate(index):
        lin = ix if lin is None else lin * out.shape[axis] + ix
    keys = xp.reshape(xp.broadcast_to(lin, shape), (-1,))
    vals = xp.reshape(xp.broadcast_to(values, shape), (-1,))
    order = xp.argsort(keys)
    keys, vals = xp.take(keys, order), xp.take(vals, order)
    n = keys.shape[0]
    start = xp.searchsorted(keys, keys, side="left")  # first position of each element's run
    pos = xp.arange(n, dtype=start.dtype)
    join = getattr(xp, "concat", None) or xp.concatenate
    shift = 1
    while shift < n:
        same = (pos[shift:] - shift) >= start[shift:]
        vals = join((vals[:shift], xp.where(same, vals[shift:] * vals[:n - shift], vals[shift:])), axis=0)
        shift *= 2
    last = xp.searchsorted(keys, keys, side="right") - 1
    flat = xp.reshape(out, (-1,))
    flat[keys] = flat[keys] * xp.take(vals, last)
    return xp.reshape(flat, out.shape)


def kernels(xp, strategy=None) -> dict:

    def along(index, axis):
        # the full advanced index that addresses x[..., index[...], ...] element by element (scatter/gather)
        nd = index.ndim
        grids = []
        for d, n in enumerate(index.shape):
            shape = [1] * nd
            shape[d] = n
            grids.append(index if d == axis else xp.arange(n).reshape(shape))
        return tuple(grids)

    native_at = [None]  # whether xp.multiply.at works (CuPy declares it and raises)

    def multiply_into(out, index, values):
        """``out`` with ``out[index] *= values``, repeated indices multiplying up: ``xp.multiply.at``, else
        :func:`segmented_product` (no host round trip)."""
        if native_at[0] is not False:
            try:
                xp.multiply.at(out, index, values)
            except (AttributeError, NotImplementedError):
                native_at[0] = False
            else:
                native_at[0] = True
                return out
        return segmented_product(xp, out, index, values)

    def getitem(x, index):
        return x[index]

    def setitem(x, index, value):
        x[index] = value

    def index_put_acc(out, index, values):
        # out[index] += values, with repeated indices accumulating
        newaxis = False
        for i in index:
            if i is None:
                newaxis = True
            elif i is not Ellipsis and not isinstance(i, (int, slice)):
                xp.add.at(out, index, values)
                return
        if newaxis:
            # the array API assigns through no None (newaxis): drop it and the size-1 axes it adds
            basic = tuple(i for i in index if i is not None)
            values = xp.reshape(xp.broadcast_to(values, out[index].shape), out[basic].shape)
            index = basic
        out[index] += values

    def take_along(x, idx, axis):
        return xp.take_along_axis(x, idx, axis=axis)

    def gather(x, axis, index):
        return x[along(index, axis)]

    def scatter(x, axis, index, src):
        out = xp.array(x, copy=True)
        out[along(index, axis)] = src if xp.ndim(src) == 0 else src[tuple(slice(0, n) for n in index.shape)]
        return out

    def scatter_reduce(x, axis, index, src, reduce, include_self):
        # reduce in "sum", "prod", "mean", "amax", "amin"
        idx = along(index, axis)
        src = src[tuple(slice(0, n) for n in index.shape)]
        out = xp.array(x, copy=True)
        if not include_self:
            # written positions start from the identity (max/min: any of their own sources)
            out[idx] = SEEDS[reduce] if reduce in SEEDS else src
        if reduce == "prod":
            out = multiply_into(out, idx, src)
        else:
            getattr(xp, REDUCE_UFUNCS[reduce]).at(out, idx, src)
        if reduce == "mean":
            count = xp.full(x.shape, 1 if include_self else 0, dtype=out.dtype)
            xp.add.at(count, idx, 1)
            count = xp.maximum(count, 1)
            out = xp.floor_divide(out, count) if out.dtype.kind in "iu" else out / count  # (integers: floor)
        return xp.asarray(out, dtype=x.dtype)

    def index_add(x, axis, index, src):
        out = xp.array(x, copy=True)
        xp.add.at(out, (slice(None),) * axis + (index,), src)
        return out

    def index_copy(x, axis, index, src):
        out = xp.array(x, copy=True)
        out[(slice(None),) * axis + (index,)] = src
        return out

    def index_fill(x, axis, index, value):
        out = xp.array(x, copy=True)
        out[(slice(None),) * axis + (index,)] = value
        return out

    def index_select(x, axis, index):
        return xp.take(x, index, axis=axis)

    def masked_scatter(x, mask, src):
        out = xp.array(x, copy=True)
        n = int(xp.sum(mask))
        out[mask] = src.reshape(-1)[:n]
        return out

    def nonzero(x):
        if x.ndim == 0:
            return xp.zeros((int(bool(x)), 0), dtype=xp.int64)
        return xp.asarray(xp.stack(xp.nonzero(x), axis=-1), dtype=xp.int64)

    astype = getattr(xp, "astype", None) or (lambda a, dtype: a.astype(dtype))

    def embedding_bag_segments(offsets, n, keep):
        """Bags of ``n`` entries starting at ``offsets`` (ascending, the first 0): each entry's bag, and the
        number of entries of each bag where ``keep`` (every entry where ``keep`` is None)."""
        at = xp.arange(n, dtype=offsets.dtype)
        bag = xp.searchsorted(offsets, at, side="right") - 1
        kept = xp.cumsum(astype(keep, xp.int64)) if keep is not None else astype(at, xp.int64) + 1
        kept = xp.concatenate((xp.zeros(1, dtype=xp.int64), kept))  # kept entries before each position
        ends = xp.concatenate((offsets[1:], xp.full(1, n, dtype=offsets.dtype)))
        return astype(bag, xp.int64), xp.take(kept, ends) - xp.take(kept, offsets)

    def index_in_range(index, size, op):
        """``index`` itself, once every entry is in ``[0, size)`` (a bounds check as a kernel: a captured
        graph runs it at every call, where a check reading the values into Python would end the graph)."""
        if index.size:
            lo, hi = int(xp.min(index)), int(xp.max(index))
            if lo < 0 or hi >= size:
                raise IndexError(f"{op}: index out of range in self (indices span [{lo}, {hi}] for a weight of "
                                 f"{size} rows)")
        return index

    def triu_pairs(n):
        """``(2, n (n - 1) / 2)`` int64: the row and column of each entry above the diagonal, row by row."""
        i, j = xp.triu_indices(n, 1) if hasattr(xp, "triu_indices") else _np_triu(n)
        return xp.stack([xp.asarray(i, dtype=xp.int64), xp.asarray(j, dtype=xp.int64)])

    def _np_triu(n):
        r = xp.arange(n)
        keep = r[:, None] < r[None, :]
        return xp.broadcast_to(r[:, None], (n, n))[keep], xp.broadcast_to(r[None, :], (n, n))[keep]

    return {
        "embedding_bag_segments": embedding_bag_segments, "triu_pairs": triu_pairs, "index_in_range": index_in_range,
        "getitem": getitem, "setitem": setitem, "index_put_acc": index_put_acc, "take_along": take_along,
        "gather": gather, "scatter": scatter, "scatter_reduce": scatter_reduce, "index_add": index_add,
        "index_copy": index_copy, "index_fill": index_fill, "index_select": index_select,
        "masked_scatter": masked_scatter, "nonzero": nonzero,
    }
