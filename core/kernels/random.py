"""Sampling kernels: all draw from a generator (``gen``, the backend's per-device random generator)."""
from __future__ import annotations


SMALL_DRAW = 4096  # multinomial draws with replacement up to rows * samples * categories counted in one comparison

# the rational correction of the Dirichlet gradient: numerator and denominator coefficients, [u power][a power][b]
_DIRICHLET_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1.0, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def digamma_pos(xp, a):
    """digamma for a > 0: the recurrence up to a + 8, then the asymptotic series."""
    acc = sum(1.0 / (a + k) for k in range(8))
    y = a + 8.0
    inv2 = 1.0 / (y * y)
    poly = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return xp.log(y) - 0.5 / y - poly - acc


def gamma_grad(xp, alpha, x):
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
    cdf_a = (xp.log(zs) - digamma_pos(xp, a)) * pow_xa * s1 - pow_xa * s2
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


def kernels(xp, strategy=None) -> dict:
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
        """``n`` int64 category indices per row of ``probs`` (a vector or a matrix of weights, any float dtype,
        drawn in float64): shape ``probs.shape[:-1] + (n,)``."""
        vector = probs.ndim == 1
        rows = as_(xp.reshape(probs, (1, -1)) if vector else probs, xp.float64)
        idx = as_(draw_rows(gen, rows, n, replacement), xp.int64)
        return xp.reshape(idx, (n,)) if vector else idx

    def draw_rows(gen, probs, n, replacement):
        """``n`` category indices per row of ``probs`` (rows, k), all rows at once: inverse-CDF lookups with
        replacement, Gumbel top-k (sequential draws without replacement, in one sort) without."""
        rows, k = probs.shape
        p = probs / xp.sum(probs, axis=-1, keepdims=True)
        replacement = replacement or n == 1  # (one draw is the same either way)
        if replacement and rows * n * k <= SMALL_DRAW:
            # each draw's index is the number of CDF edges at or below it (searchsorted's side="right"), counted
            # in one comparison: a third of the NumPy calls, which is what a draw from a few categories costs
            cdf = xp.cumsum(p, axis=-1)
            cdf[:, k - 1] = 1  # last edge exactly 1
            u = as_(gen.random(size=(rows, n)), p.dtype)
            return xp.sum(xp.reshape(cdf, (rows, 1, k)) <= xp.reshape(u, (rows, n, 1)), axis=-1)
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

    def dirichlet(gen, alpha):
        g = as_(gen.standard_gamma(alpha), alpha.dtype)
        x = g / xp.sum(g, axis=-1, keepdims=True)
        tiny = xp.finfo(alpha.dtype).tiny
        return xp.where(x > tiny, x, xp.full_like(x, tiny))  # no exact zeros

    def binomial(gen, count, prob):
        return as_(gen.binomial(count.astype("int64"), prob), prob.dtype)

    def standard_gamma_grad(alpha, x):
        return gamma_grad(xp, alpha, x)

    def dirichlet_grad(x, alpha, total):
        """d x / d alpha of a Beta(alpha, total - alpha) draw x at fixed CDF, divided by (1 - x): the building
        block of the Dirichlet's implicit reparameterised gradient.  Taylor series near x = 0 and x = 1, Rice's
        saddle point when both parameters exceed 6, and a fitted rational correction of an analytic
        approximation elsewhere (the regions and coefficients PyTorch uses)."""
        xd, a, t = x.astype("float64"), alpha.astype("float64"), total.astype("float64")
        b = t - a
        boundary = t * xd * (1 - xd)

        def grad_alpha_small(x, a, b):  # x near 0
            factor = digamma_pos(xp, a) - digamma_pos(xp, a + b) - xp.log(x)
            numer = xp.ones_like(x)
            series = numer / a * (factor + 1 / a)
            for i in range(1, 11):
                numer = numer * (i - b) * x / i
                denom = a + i
                series = series + numer / denom * (factor + 1 / denom)
            out = x * (1 - x) ** (-b) * series
            return xp.where(xp.isnan(out), 0.0, out)

        def grad_beta_small(x, a, b):
            factor = digamma_pos(xp, a + b) - digamma_pos(xp, b)
            numer, betas, dbetas = xp.ones_like(x), xp.ones_like(x), xp.zeros_like(x)
            series = factor / a
            for i in range(1, 9):
                numer = numer * (-x / i)
                dbetas = dbetas * (b - i) + betas
                betas = betas * (b - i)
                series = series + numer / (a + i) * (dbetas + factor * betas)
            out = -((1 - x) ** (1 - b)) * series
            return xp.where(xp.isnan(out), 0.0, out)

        def grad_alpha_mid(x, a, b):
            total = a + b
            mean = a / total
            std = xp.sqrt(a * b / (total + 1)) / total
            poly = 47 * x * b ** 4 + a * ((43 + 20 * (16 + 27 * b) * x) * b ** 3 + a * (
                3 * (59 + 180 * b - 90 * x) * b * b + a * ((453 + 1620 * b * (1 - x) - 455 * x) * b + a * (
                    8 * (1 - x) * (135 * b - 11)))))
            pre_num = (1 + 12 * a) * (1 + 12 * b) / (total * total)
            pre_den = 12960 * a ** 3 * b * b * (1 + 12 * total)
            near = pre_num / (1 - x) * poly / pre_den
            prefactor = -x / xp.sqrt(2 * a * b / total)
            stirling = ((1 + 1 / (12 * a) + 1 / (288 * a * a)) * (1 + 1 / (12 * b) + 1 / (288 * b * b))
                        / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
            axbx = a * (x - 1) + b * x
            term1 = (2 * a * a * (x - 1) + a * b * (x - 1) - x * b * b) / (
                xp.sqrt(2 * a / b) * total ** 1.5 * axbx * axbx)
            term2 = 0.5 * xp.log(a / (total * x))
            term3 = xp.sqrt(8 * a * b / total) / (b * x + a * (x - 1))
            term4 = (b * xp.log(b / (total * (1 - x))) + a * xp.log(a / (total * x))) ** -1.5
            far = stirling * prefactor * (term1 + term2 * (term3 + xp.where(x < mean, term4, -term4)))
            return xp.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)

        def rational(x, a, t):
            u = xp.log(x)
            la = xp.log(a) - u
            lb = xp.log(t) - la
            p = xp.zeros_like(x)
            q = xp.zeros_like(x)
            pow_u, pow_a = (1.0, u, u * u), (1.0, la, la * la)
            for i in range(3):
                for j in range(3):
                    ua = pow_u[i] * pow_a[j]
                    cp, cq = _DIRICHLET_C[0][i][j], _DIRICHLET_C[1][i][j]
                    p = p + ua * (cp[0] + lb * (cp[1] + lb * (cp[2] + lb * cp[3])))
                    q = q + ua * (cq[0] + lb * (cq[1] + lb * (cq[2] + lb * cq[3])))
            approx = x * (digamma_pos(xp, t) - digamma_pos(xp, a)) / (t - a)
            return p / q * approx

        out = xp.where(
            (xd <= 0.5) & (boundary < 2.5), grad_alpha_small(xd, a, b),
            xp.where((xd >= 0.5) & (boundary < 0.75), -grad_beta_small(1 - xd, b, a),
                     xp.where((a > 6) & (b > 6), grad_alpha_mid(xd, a, b), rational(xd, a, t))))
        return out.astype(x.dtype, copy=False)

    return {"uniform": uniform, "normal": normal, "normal_serial": normal, "randint": randint,
            "permutation": permutation,
            "exponential": exponential, "geometric": geometric, "cauchy": cauchy, "log_normal": log_normal,
            "bernoulli": bernoulli, "poisson": poisson, "multinomial": multinomial,
            "standard_gamma": standard_gamma, "dirichlet": dirichlet, "binomial": binomial,
            "standard_gamma_grad": standard_gamma_grad, "dirichlet_grad": dirichlet_grad}
