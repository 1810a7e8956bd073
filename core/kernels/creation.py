"""Creation kernels: filled, empty, ranges and identity matrices, and filling an existing array."""
from __future__ import annotations


MUTATING = {"fill_": (0,)}  # writes value into every element of argument 0
QUIET = {"full", "fill_"}  # a fill value beyond the dtype's range becomes +-inf silently, as in PyTorch


def kernels(xp, strategy=None) -> dict:
    def full(shape, value, dtype):
        if type(value) is int and value == 0:  # (zeros: the library's own, cheaper; -0.0 stays a full)
            return xp.zeros(shape, dtype=dtype)
        return xp.full(shape, value, dtype=dtype)

    def empty(shape, dtype):
        return xp.empty(shape, dtype=dtype)

    def arange(start, end, step, dtype):
        return xp.arange(start, end, step, dtype=dtype)

    def linspace(start, end, steps, dtype):
        return xp.linspace(start, end, steps, dtype=dtype)

    def eye(n, m, dtype):
        return xp.eye(n, m, dtype=dtype)

    def fill_(x, value):
        x[...] = value

    def tri_indices(row, col, offset, dtype, lower):
        # the (2, n) coordinates of the lower (upper) triangle of a row x col matrix, row-major
        i = xp.reshape(xp.arange(row), (row, 1))
        j = xp.reshape(xp.arange(col), (1, col))
        keep = (j - i <= offset) if lower else (j - i >= offset)
        r, c = xp.nonzero(xp.broadcast_to(keep, (row, col)))
        return xp.stack((astype(r, dtype), astype(c, dtype)))

    astype = getattr(xp, "astype", None) or (lambda a, dtype: a.astype(dtype))

    return {"full": full, "empty": empty, "arange": arange, "linspace": linspace, "eye": eye, "fill_": fill_,
            "tri_indices": tri_indices}
