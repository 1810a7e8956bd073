"""Sampling kernels: all draw from a generator (``gen``, the backend's per-device random generator)."""
from __future__ import annotations


def kernels(xp) -> dict:
    def as_(a, dtype):
        return xp.asarray(a, dtype=dtype)

    def uniform(gen, shape, dtype, low=0.0, high=1.0):
        return gen.uniform(low, high, size=shape).astype(dtype, copy=False)

    def normal(gen, shape, dtype, mean=0.0, std=1.0):
        return gen.normal(mean, std, size=shape).astype(dtype, copy=False)

    def randint(gen, shape, dtype, low, high):
        return gen.integers(low, high, size=shape).astype(dtype, copy=False)

    def permutation(gen, n, dtype):
        return gen.permutation(n).astype(dtype, copy=False)

    def exponential(gen, shape, dtype, lambd):
        return as_(gen.exponential(1.0 / lambd, size=shape), dtype)

    def geometric(gen, shape, dtype, p):
        return as_(gen.geometric(p, size=shape), dtype)

    def cauchy(gen, shape, dtype, median, sigma):
        return as_(median + sigma * gen.standard_cauchy(size=shape), dtype)

    def log_normal(gen, shape, dtype, mean, std):
        return as_(gen.lognormal(mean, std, size=shape), dtype)

    def bernoulli(gen, p, dtype):
        u = as_(gen.random(size=p.shape), p.dtype)
        return xp.where(u < p, xp.ones(p.shape, dtype=dtype), xp.zeros(p.shape, dtype=dtype))

    def poisson(gen, lam):
        return as_(gen.poisson(lam), lam.dtype)

    def multinomial(gen, probs, n, replacement):
        """``n`` category indices per row of ``probs`` (rows, k), all rows at once: inverse-CDF lookups with
        replacement, Gumbel top-k (sequential draws without replacement, in one sort) without."""
        rows, k = probs.shape
        p = probs / xp.sum(probs, axis=-1, keepdims=True)
        if replacement:
            offset = xp.reshape(xp.arange(rows, dtype=p.dtype), (rows, 1))
            cdf = xp.cumsum(p, axis=-1)
            cdf = xp.where(xp.arange(k) == k - 1, xp.ones_like(cdf), cdf) + offset  # last edge exactly 1
            u = as_(gen.random(size=(rows, n)), p.dtype) + offset
            idx = xp.searchsorted(xp.reshape(cdf, (-1,)), xp.reshape(u, (-1,)), side="right")
            idx = xp.reshape(idx, (rows, n)) - xp.reshape(xp.arange(rows) * k, (rows, 1))
            return xp.minimum(idx, k - 1)
        g = -xp.log(-xp.log(as_(gen.random(size=(rows, k)), p.dtype)))
        keys = xp.where(p > 0, xp.log(xp.where(p > 0, p, xp.ones_like(p))) + g, -xp.inf)
        return xp.argsort(-keys, axis=-1)[:, :n]

    return {"uniform": uniform, "normal": normal, "randint": randint, "permutation": permutation,
            "exponential": exponential, "geometric": geometric, "cauchy": cauchy, "log_normal": log_normal,
            "bernoulli": bernoulli, "poisson": poisson, "multinomial": multinomial}
