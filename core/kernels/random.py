"""Sampling kernels beyond uniform/normal/randint (which live in ``base``): all draw from a generator."""
from __future__ import annotations


def kernels(xp) -> dict:
    def exponential(gen, shape, dtype, lambd):
        return gen.exponential(1.0 / lambd, size=shape).astype(dtype, copy=False)

    def geometric(gen, shape, dtype, p):
        return gen.geometric(p, size=shape).astype(dtype, copy=False)

    def cauchy(gen, shape, dtype, median, sigma):
        return (median + sigma * gen.standard_cauchy(size=shape)).astype(dtype, copy=False)

    def log_normal(gen, shape, dtype, mean, std):
        return gen.lognormal(mean, std, size=shape).astype(dtype, copy=False)

    def bernoulli(gen, p, dtype):
        return (gen.random(size=p.shape) < p).astype(dtype)

    def poisson(gen, lam, dtype):
        return gen.poisson(lam).astype(dtype)

    def multinomial(gen, probs, n, replacement):
        p = probs / probs.sum(-1, keepdims=True)
        rows = p.reshape(-1, p.shape[-1])
        out = xp.empty((rows.shape[0], n), dtype="int64")
        for i in range(rows.shape[0]):  # one vectorised draw per distribution
            out[i] = gen.choice(rows.shape[1], size=n, replace=replacement, p=rows[i])
        return out.reshape(p.shape[:-1] + (n,))

    return {"exponential": exponential, "geometric": geometric, "cauchy": cauchy, "log_normal": log_normal,
            "bernoulli": bernoulli, "poisson": poisson, "multinomial": multinomial}
