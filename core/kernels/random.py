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

    def standard_gamma(gen, alpha):
        return as_(gen.standard_gamma(alpha), alpha.dtype)

    def binomial(gen, count, prob):
        return as_(gen.binomial(count.astype("int64"), prob), prob.dtype)

    def digamma_pos(a):
        """digamma for a > 0: the recurrence up to a + 8, then the asymptotic series."""
        acc = sum(1.0 / (a + k) for k in range(8))
        y = a + 8.0
        inv2 = 1.0 / (y * y)
        poly = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
        return xp.log(y) - 0.5 / y - poly - acc

    def standard_gamma_grad(alpha, x):
        """dx/dalpha of a standard Gamma(alpha) draw x at fixed CDF, -(dF/dalpha) / f (implicit
        reparameterisation): a Taylor series of the CDF for x < 0.8, Rice's saddle-point expansion for
        alpha > 8, a bivariate rational fit in (log(x / alpha), log(alpha)) otherwise (the split and the
        fitted coefficients of Jankowiak & Obermeyer, as PyTorch uses)."""
        a = alpha.astype("float64")
        z = x.astype("float64")
        with_small = z < 0.8
        zs = xp.where(with_small, z, 0.5)
        numer, denom = xp.ones_like(zs), a.copy()
        s1, s2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-zs / i)
            denom = denom + 1
            s1 = s1 + numer / denom
            s2 = s2 + numer / (denom * denom)
        pow_xa = zs ** a
        pdf = zs ** (a - 1) * xp.exp(-zs)
        cdf_a = (xp.log(zs) - digamma_pos(a)) * pow_xa * s1 - pow_xa * s2
        small = -cdf_a / pdf
        small = xp.where(xp.isnan(small), 0.0, small)
        # Rice saddle point, for large alpha (with its own form near the mode)
        near = (0.9 * a <= z) & (z <= 1.1 * a)
        n1 = 1 + 24 * a * (1 + 12 * a)
        n2 = 1440 * a * a + 6 * z * (53 - 120 * z) - 65 * z * z / a + a * (107 + 3600 * z)
        mid = n1 * n2 / (1244160 * a * a * a * a)
        zf = xp.where(near, 0.5 * a, z)
        den = xp.sqrt(8 * a)
        t2 = den / (a - zf)
        t3 = (zf - a - a * xp.log(zf / a)) ** -1.5
        t23 = xp.where(zf < a, t2 - t3, t2 + t3)
        t1 = xp.log(zf / a) * t23 - xp.sqrt(2 / a) * (a + zf) / ((a - zf) * (a - zf))
        stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
        large = xp.where(near, mid, -stirling * zf * t1 / den)
        # rational approximation elsewhere
        u, v = xp.log(z / a), xp.log(a)
        c0 = (0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084)
        c1 = (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
              -0.00058392623)
        c2 = (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
              0.00085092367, -1.5247877e-07)
        cv = [c0[i] + u * (c1[i] + u * c2[i]) for i in range(8)]
        pp = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]))
        qq = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))
        rational = xp.exp(pp / qq)
        out = xp.where(with_small, small, xp.where(a > 8.0, large, rational))
        return out.astype(alpha.dtype, copy=False)

    return {"uniform": uniform, "normal": normal, "randint": randint, "permutation": permutation,
            "exponential": exponential, "geometric": geometric, "cauchy": cauchy, "log_normal": log_normal,
            "bernoulli": bernoulli, "poisson": poisson, "multinomial": multinomial,
            "standard_gamma": standard_gamma, "binomial": binomial, "standard_gamma_grad": standard_gamma_grad}
