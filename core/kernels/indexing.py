"""Indexing kernels: gather/scatter along a dimension, index_* along a dimension, masks.

Indices arrive already checked (in range, integer); these never validate.
Accumulating writes use ``ufunc.at`` so repeated indices add up.
"""
from __future__ import annotations

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

    return {
        "gather": gather, "scatter": scatter, "scatter_reduce": scatter_reduce, "index_add": index_add,
        "index_copy": index_copy, "index_fill": index_fill, "index_select": index_select,
        "masked_scatter": masked_scatter,
    }
