"""Indexing kernels: subscripts (``x[index]`` read, written, accumulated), gather/scatter and index_* along a
dimension, masks, ``nonzero``.

Indices arrive already checked (in range, integer); these never validate.
Accumulating writes use ``ufunc.at`` so repeated indices add up.
"""
from __future__ import annotations

MUTATING = {"setitem": (0,), "index_put_acc": (0,)}  # they write into argument 0

SEEDS = {"sum": 0, "mean": 0, "prod": 1}
REDUCE_UFUNCS = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def kernels(xp) -> dict:

    INTS = {xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8}

    def along(index, axis):
        # the full advanced index that addresses x[..., index[...], ...] element by element (scatter/gather)
        nd = index.ndim
        grids = []
        for d, n in enumerate(index.shape):
            shape = [1] * nd
            shape[d] = n
            grids.append(index if d == axis else xp.arange(n).reshape(shape))
        return tuple(grids)

    def getitem(x, index):
        return x[index]

    def setitem(x, index, value):
        x[index] = value

    def index_put_acc(out, index, values):
        # out[index] += values, with repeated indices accumulating
        if all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in index):
            basic = tuple(i for i in index if i is not None)
            if len(basic) != len(index):
                # the array API assigns through no None (newaxis): drop it and the size-1 axes it adds
                values = xp.reshape(xp.broadcast_to(values, out[index].shape), out[basic].shape)
            out[basic] = out[basic] + values
        else:
            xp.add.at(out, index, values)

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
        getattr(xp, REDUCE_UFUNCS[reduce]).at(out, idx, src)
        if reduce == "mean":
            count = xp.full(x.shape, 1 if include_self else 0, dtype=out.dtype)
            xp.add.at(count, idx, 1)
            count = xp.maximum(count, 1)
            out = xp.floor_divide(out, count) if out.dtype in INTS else out / count
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

    return {
        "getitem": getitem, "setitem": setitem, "index_put_acc": index_put_acc, "take_along": take_along,
        "gather": gather, "scatter": scatter, "scatter_reduce": scatter_reduce, "index_add": index_add,
        "index_copy": index_copy, "index_fill": index_fill, "index_select": index_select,
        "masked_scatter": masked_scatter, "nonzero": nonzero,
    }
