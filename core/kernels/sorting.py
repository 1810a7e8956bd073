"""Sorting kernels: sorts, insertion points in sorted data, distinct values and runs of equal values."""
from __future__ import annotations

import math


def kernels(xp, strategy=None) -> dict:
    astype = getattr(xp, "astype", None) or (lambda a, dtype: a.astype(dtype))

    def sort(x, axis, descending, stable):
        # ml_dtypes' bfloat16 (kind "V") sorts NaN among the numbers: its keys in float32, where NaN sorts last
        key = astype(x, xp.float32) if x.dtype.kind == "V" else x
        if descending:  # the ascending sort of the reversed axis, read backwards: stable, NaN first (largest)
            n = x.shape[axis]
            idx = (n - 1) - xp.flip(xp.argsort(xp.flip(key, axis=axis), axis=axis, kind="stable"), axis=axis)
        else:
            idx = xp.argsort(key, axis=axis, kind="stable")
        return xp.take_along_axis(x, idx, axis=axis), idx

    def bisect(seq, values, right):
        # PyTorch's binary search, every value at once: a NaN entry compares false both ways, so the search
        # steps past it (NumPy's sorts NaN last, which gives other insertion points)
        n = seq.shape[-1]
        lo = xp.zeros(values.shape, dtype=xp.int64)
        hi = xp.full(values.shape, n, dtype=xp.int64)
        for _ in range(n.bit_length()):
            mid = (lo + hi) // 2
            at = xp.minimum(mid, n - 1)
            if seq.ndim == 1:
                entry = xp.reshape(xp.take(seq, xp.reshape(at, (-1,))), at.shape)
            else:
                entry = xp.take_along_axis(seq, at, axis=-1)
            before = xp.logical_not(entry > values if right else entry >= values)
            lo = xp.where((lo < hi) & before, mid + 1, lo)
            hi = xp.where((lo < hi) & xp.logical_not(before), mid, hi)
        return lo

    def searchsorted(seq, values, right):
        """Insertion points of ``values`` in ``seq`` sorted along its last axis (rows matching ``values``'
        leading axes when ``seq`` has more than one)."""
        if seq.dtype.kind == "V":  # ml_dtypes' bfloat16: NumPy's search misorders it; float32 holds it exactly
            seq, values = astype(seq, xp.float32), astype(values, xp.float32)
        if seq.dtype.kind == "f" and bool(xp.any(seq != seq)):
            return bisect(seq, values, right)
        if seq.ndim == 1:
            return xp.searchsorted(seq, values, side="right" if right else "left")
        # per row: one stable sort of the row and its values together; a value's insertion point is the
        # number of row entries sorted before it (values placed first go before equal entries: 'left')
        n, m = seq.shape[-1], values.shape[-1]
        both = xp.concatenate((seq, values) if right else (values, seq), axis=-1)
        order = xp.argsort(both, axis=-1, kind="stable")
        from_seq = (order < n) if right else (order >= m)
        seen = xp.cumsum(astype(from_seq, xp.int64), axis=-1)
        at = xp.take_along_axis(seen, xp.argsort(order, axis=-1, kind="stable"), axis=-1)
        return at[..., n:] if right else at[..., :m]

    def unique(x, axis):
        """The distinct elements of ``x`` (or its distinct slices along ``axis``), sorted, with the inverse
        (each element's or slice's position among them) and the counts, both int64.  Every NaN is distinct,
        as in PyTorch.  (The standard's ``unique_inverse`` and ``unique_counts`` would take two sorts where
        this takes one; a library without ``unique`` takes the array-API backend's NumPy fallback.)"""
        values, inverse, counts = xp.unique(x, return_inverse=True, return_counts=True, axis=axis, equal_nan=False)
        shape = x.shape if axis is None else (-1,)
        return values, astype(xp.reshape(inverse, shape), xp.int64), astype(counts, xp.int64)

    def unique_consecutive(x, axis):
        """The first element (or slice along ``axis``) of each run of equal ones, the run of each (shaped like
        ``x`` when ``axis`` is None) and the run lengths, both int64."""
        shape = x.shape
        flat = axis is None
        if flat:
            x, axis = xp.reshape(x, (-1,)), 0
        n = x.shape[axis]
        rows = xp.moveaxis(x, axis, 0)
        rows = xp.reshape(rows, (n, math.prod(rows.shape[1:])))
        # each row against the one before it (bounds kept inside the axis: the standard has no slice past it)
        differs = xp.any(rows[min(n, 1):, :] != rows[:max(n - 1, 0), :], axis=1)
        starts = xp.concatenate((xp.ones(min(n, 1), dtype=differs.dtype), differs))
        inverse = xp.cumsum(astype(starts, xp.int64)) - 1
        first = astype(xp.nonzero(starts)[0], xp.int64)
        counts = xp.diff(xp.concatenate((first, xp.full(1, n, dtype=xp.int64))))
        return xp.take(x, first, axis=axis), xp.reshape(inverse, shape) if flat else inverse, counts

    def isin(elements, test, invert):
        hit = xp.isin(elements, test)
        return xp.logical_not(hit) if invert else hit

    return {"sort": sort, "searchsorted": searchsorted, "unique": unique, "unique_consecutive": unique_consecutive,
            "isin": isin}
