"""Creation kernels: filled, empty, ranges and identity matrices, and filling an existing array."""
from __future__ import annotations


MUTATING = {"fill_": (0,)}  # writes value into every element of argument 0


def kernels(xp) -> dict:
    def full(shape, value, dtype):
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

    return {"full": full, "empty": empty, "arange": arange, "linspace": linspace, "eye": eye, "fill_": fill_}
