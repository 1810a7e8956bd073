"""Shape and movement kernels: reshapes and views, copies and layout, joining, splitting, flipping,
triangles, diagonals, strided windows."""
from __future__ import annotations

from .strategy import takes_out

MUTATING = {"copy_": (0,), "diagonal_scatter": (0,)}  # copy_ writes src into dst; diagonal_scatter along its diagonal
QUIET = {"copy_"}  # a copy into another dtype overflows to +-inf (or NaN into integers) silently, as in PyTorch


def has_strides(xp) -> bool:
    """Whether ``xp``'s arrays have strides, so that a diagonal, a window or an ``as_strided`` can be a view."""
    return hasattr(xp.zeros(1), "strides")


def copied_views(xp) -> frozenset:
    """The view kernels that return copies with ``xp`` (arrays without strides cannot express those views)."""
    return frozenset() if has_strides(xp) else frozenset({"diagonal", "windows", "as_strided"})


def kernels(xp, strategy=None) -> dict:
    strided = xp.lib.stride_tricks.as_strided
    writes = takes_out(xp)  # arrays written in place (NumPy, CuPy)

    def reshape(x, shape):
        return xp.reshape(x, shape)

    def view(x, shape):
        # a reshape that must not copy; raises when the strides do not allow it
        return xp.reshape(x, shape, copy=False)

    def expand(x, shape):
        return xp.broadcast_to(x, shape)

    def view_dtype(x, dtype):
        # the same bytes read as another dtype (the last dimension scales with the element size)
        return x.view(dtype)

    def copy(x):
        return xp.array(x, copy=True)

    def contiguous(x):
        return xp.ascontiguousarray(x)

    def copy_(dst, src):
        dst[...] = src

    def cat(arrays, axis):
        return xp.concatenate(arrays, axis=axis)

    def stack(arrays, axis):
        if not writes:
            return xp.stack(arrays, axis=axis)
        # one allocation and a write per array (of one dtype): NumPy's stack spends ~2 us in Python on a few
        first = arrays[0]
        out = xp.empty(first.shape[:axis] + (len(arrays),) + first.shape[axis:], dtype=first.dtype)
        lead = (slice(None),) * axis
        for i, a in enumerate(arrays):
            out[lead + (i,)] = a
        return out

    def split(x, bounds, axis):
        # views of x between consecutive cut points
        return tuple(xp.split(x, bounds, axis=axis))

    def flip(x, axes):
        return xp.array(xp.flip(x, axis=axes), copy=True)

    def roll(x, shifts, axes):
        return xp.roll(x, shifts, axis=axes)

    def tile(x, reps):
        return xp.tile(x, reps)

    def tril(x, k):
        return xp.tril(x, k=k)

    def triu(x, k):
        return xp.triu(x, k=k)

    def diag_index(shape, offset, axis1, axis2):
        # the advanced index of a diagonal, and where NumPy puts its dimension in the result
        n = max(min(shape[axis1] - max(-offset, 0), shape[axis2] - max(offset, 0)), 0)
        idx = [slice(None)] * len(shape)
        idx[axis1] = xp.arange(n) + max(-offset, 0)
        idx[axis2] = xp.arange(n) + max(offset, 0)
        return tuple(idx), min(axis1, axis2) if abs(axis1 - axis2) == 1 else 0

    def diagonal_strided(x, offset, axis1, axis2):
        # a writable view (xp.diagonal's view is read-only)
        nd = x.ndim
        order = [d for d in range(nd) if d not in (axis1, axis2)] + [axis1, axis2]
        x = xp.transpose(x, order)
        x = x[..., max(-offset, 0):, max(offset, 0):]
        n = max(min(x.shape[-2], x.shape[-1]), 0)
        return strided(x, x.shape[:-2] + (n,), x.strides[:-2] + (x.strides[-2] + x.strides[-1],))

    def diagonal_copy(x, offset, axis1, axis2):
        idx, pos = diag_index(x.shape, offset, axis1, axis2)
        return xp.moveaxis(x[idx], pos, -1)

    def diagonal_scatter(out, src, offset, axis1, axis2):
        # out's diagonal (in dims axis1, axis2) := src, whose last dimension runs along it
        idx, pos = diag_index(out.shape, offset, axis1, axis2)
        out[idx] = xp.moveaxis(src, -1, pos)
        return out

    def diag_embed(x, offset, axis1, axis2):
        n = x.shape[-1] + abs(offset)
        shape = list(x.shape[:-1])
        for d in sorted((axis1, axis2)):
            shape.insert(d, n)
        return diagonal_scatter(xp.zeros(tuple(shape), dtype=x.dtype), x, offset, axis1, axis2)

    def windows_strided(x, axis, size, step):
        # Tensor.unfold: windows of `size` every `step` along axis, as a new last dimension (a view)
        n = (x.shape[axis] - size) // step + 1
        shape = x.shape[:axis] + (n,) + x.shape[axis + 1:] + (size,)
        st = x.strides
        return strided(x, shape, st[:axis] + (st[axis] * step,) + st[axis + 1:] + (st[axis],))

    def windows_copy(x, axis, size, step):
        n = (x.shape[axis] - size) // step + 1
        idx = xp.reshape(xp.arange(n)[:, None] * step + xp.arange(size)[None, :], (-1,))
        w = xp.take(x, idx, axis=axis)
        w = xp.reshape(w, x.shape[:axis] + (n, size) + x.shape[axis + 1:])
        return xp.moveaxis(w, axis + 1, -1)

    def element_positions(size, stride, offset):
        # flat storage positions of every element of an as_strided view
        pos = xp.full(tuple(size), offset, dtype=xp.int64)
        for d, (n, st) in enumerate(zip(size, stride)):
            shape = [1] * len(size)
            shape[d] = n
            pos = pos + xp.reshape(xp.arange(n, dtype=xp.int64) * st, tuple(shape))
        return pos

    def as_strided_view(x, size, stride, offset):
        # x is contiguous and owns its storage; strides and offset count elements
        flat = xp.reshape(x, (-1,))[offset:]
        return strided(flat, tuple(size), tuple(s * x.itemsize for s in stride))

    def as_strided_copy(x, size, stride, offset):
        pos = xp.reshape(element_positions(size, stride, offset), (-1,))
        return xp.reshape(xp.take(xp.reshape(x, (-1,)), pos, axis=0), tuple(size))

    def repeat(x, repeats, axis):
        # repeat_interleave: each slice along axis repeats[i] times (or repeats times)
        return xp.repeat(x, repeats, axis=axis)

    def repeat_index(repeats, n):
        # 0, 1, ... n-1, each repeated repeats[i] times (repeats: an int array of length n, or an int)
        return xp.repeat(xp.arange(n, dtype=xp.int64), repeats)

    def resize_flat(x, shape):
        # Tensor.resize_: the first elements in the new shape, zeros after the old end
        n = 1
        for s in shape:
            n *= s
        flat = xp.reshape(x, (-1,))
        if n > flat.shape[0]:
            flat = xp.concatenate((flat, xp.zeros(n - flat.shape[0], dtype=x.dtype)))
        return xp.reshape(flat[:n], tuple(shape))

    def combination_index(n, r, with_replacement):
        # the (m, r) index rows of itertools.combinations(range(n), r) (with_replacement: non-decreasing), in order
        grids = xp.meshgrid(*([xp.arange(n, dtype=xp.int64)] * r), indexing="ij")
        cols = [xp.reshape(g, (-1,)) for g in grids]
        keep = cols[0] >= 0
        for a, b in zip(cols, cols[1:]):
            keep = keep & ((a <= b) if with_replacement else (a < b))
        return xp.stack([c[keep] for c in cols], axis=1)

    # views by strides where the arrays have them, copies elsewhere (listed by copied_views)
    strides = has_strides(xp)
    diagonal = diagonal_strided if strides else diagonal_copy
    windows = windows_strided if strides else windows_copy
    as_strided = as_strided_view if strides else as_strided_copy

    return {
        "reshape": reshape, "view": view, "view_dtype": view_dtype, "permute": xp.transpose, "expand": expand,
        "copy": copy,
        "contiguous": contiguous, "copy_": copy_,
        "cat": cat, "stack": stack, "split": split, "flip": flip, "roll": roll, "tile": tile,
        "tril": tril, "triu": triu, "diagonal": diagonal, "diagonal_scatter": diagonal_scatter,
        "diag_embed": diag_embed,
        "windows": windows, "as_strided": as_strided, "element_positions": element_positions,
        "repeat": repeat, "repeat_index": repeat_index, "resize_flat": resize_flat,
        "combination_index": combination_index,
    }
