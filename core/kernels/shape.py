"""Movement kernels: joining, splitting, flipping, triangles, diagonals, strided windows."""
from __future__ import annotations


def kernels(xp) -> dict:
    strided = xp.lib.stride_tricks.as_strided

    def cat(arrays, axis):
        return xp.concatenate(arrays, axis=axis)

    def stack(arrays, axis):
        return xp.stack(arrays, axis=axis)

    def split(x, bounds, axis):
        # views of x between consecutive cut points
        return tuple(xp.split(x, bounds, axis=axis))

    def flip(x, axes):
        return xp.flip(x, axis=axes).copy()

    def roll(x, shifts, axes):
        return xp.roll(x, shifts, axis=axes)

    def tile(x, reps):
        return xp.tile(x, reps)

    def tril(x, k):
        return xp.tril(x, k)

    def triu(x, k):
        return xp.triu(x, k)

    def diagonal(x, offset, axis1, axis2):
        # a writable view (xp.diagonal's view is read-only)
        nd = x.ndim
        order = [d for d in range(nd) if d not in (axis1, axis2)] + [axis1, axis2]
        x = xp.transpose(x, order)
        x = x[..., max(-offset, 0):, max(offset, 0):]
        n = max(min(x.shape[-2], x.shape[-1]), 0)
        return strided(x, x.shape[:-2] + (n,), x.strides[:-2] + (x.strides[-2] + x.strides[-1],))

    def diag_embed(x, offset, axis1, axis2):
        n = x.shape[-1] + abs(offset)
        out = xp.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
        diagonal(out, offset, x.ndim - 1, x.ndim)[...] = x
        nd = out.ndim
        rest = iter(range(nd - 2))
        order = [0] * nd
        for d in range(nd):
            order[d] = nd - 2 if d == axis1 else nd - 1 if d == axis2 else next(rest)
        return xp.transpose(out, order)

    def windows(x, axis, size, step):
        # Tensor.unfold: windows of `size` every `step` along axis, as a new last dimension (a view)
        n = (x.shape[axis] - size) // step + 1
        shape = x.shape[:axis] + (n,) + x.shape[axis + 1:] + (size,)
        st = x.strides
        strides = st[:axis] + (st[axis] * step,) + st[axis + 1:] + (st[axis],)
        return strided(x, shape, strides)

    def nonzero(x):
        return xp.stack(xp.nonzero(x), axis=-1).astype(xp.int64) if x.ndim else \
            xp.zeros((int(bool(x)), 0), dtype=xp.int64)

    return {
        "cat": cat, "stack": stack, "split": split, "flip": flip, "roll": roll, "tile": tile,
        "tril": tril, "triu": triu, "diagonal": diagonal, "diag_embed": diag_embed, "windows": windows,
        "nonzero": nonzero,
    }
