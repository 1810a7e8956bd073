"""PyTorch's CPU sampling algorithms on the mt19937 stream of :mod:`.mt19937`: the CPU backend's random kernels.

Each kernel draws its words in bulk and transforms them with NumPy, in the order and with the roundings of
PyTorch's CPU kernels (``DistributionsHelper.h``, ``TransformationHelper.h``, ``cpu/DistributionTemplates.h``),
so that ``manual_seed(s)`` followed by the same calls gives PyTorch's numbers:

* a uniform float of a 32-bit word's low 24 bits (float32, float16, bfloat16: computed in float32) or of a
  64-bit word's low 53 bits (float64), times ``to - from`` plus ``from`` in one rounding (a fused multiply-add),
  with a result that rounds to ``to`` replaced by ``from``;
* normals of fewer than 16 elements one at a time by Box-Muller in float64 (``log1p``, the second of each pair
  kept in the generator for the next call); of 16 or more by ``normal_fill``: a uniform per element, then
  Box-Muller over blocks of 16 (the first 8 with the last 8), the last 16 drawn again when 16 does not divide
  the size (float32 and the half types by PyTorch's vectorised float code: Cephes' ``logf`` and ``sincosf``);
* integers as ``word % range + from`` (a 64-bit word when the range needs it), permutations by PyTorch's
  Fisher-Yates swaps;
* Gamma (and so Dirichlet) and Poisson draws element by element with PyTorch's rejection loops (Marsaglia and
  Tsang; Hoermann), which consume a data-dependent number of words.  A Dirichlet's float64 normalising sum is
  NumPy's, which may differ from PyTorch's in the last bit.

``log`` and ``log1p`` go through Python's ``math`` (the C library's, as PyTorch's scalar code calls them) where
the result must be exact: NumPy's own differ in the last bit.
"""
from __future__ import annotations

import math

import numpy as np

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_LOW24, _LOW53 = np.uint32((1 << 24) - 1), np.uint64((1 << 53) - 1)
_TWO_PI = 2.0 * math.pi
_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitting constant for float64
_BLOCKS = 4096  # blocks of 16 transformed at a time by normal()


def _libm(fn, x: np.ndarray) -> np.ndarray:
    """``fn`` (a ``math`` function) of each element of the float64 array ``x``."""
    return np.fromiter(map(fn, x.ravel().tolist()), _F64, x.size).reshape(x.shape)


def _fma64(a: np.ndarray, b: float, c: float) -> np.ndarray:
    """``a * b + c`` rounded once (float64): the product's exact error (Dekker) and the sum's (Knuth) are added
    back before the last rounding."""
    p = a * b
    t = a * _SPLIT
    ah = t - (t - a)
    al = a - ah
    t = b * _SPLIT
    bh = t - (t - b)
    bl = b - bh
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    v = s - p
    return s + (((p - (s - v)) + (c - v)) + err)


def _cast(x: np.ndarray, dtype) -> np.ndarray:
    """float32 or float64 ``x`` in ``dtype`` as C++ casts it: float64 to a half type through float32."""
    dtype = np.dtype(dtype)
    if x.dtype == _F64 and dtype.name in ("float16", "bfloat16"):
        x = x.astype(_F32)
    return x.astype(dtype, copy=False)


def _unit(gen, n: int, wide: bool) -> np.ndarray:
    """``n`` uniform draws on [0, 1): float64 of a 64-bit word's low 53 bits (``wide``), else float32 of a word's
    low 24 bits (both exact)."""
    if wide:  # (in place, through int64: NumPy's fastest conversion)
        k = gen.words64(n)
        k &= _LOW53
        u = k.view(np.int64).astype(_F64)
        u *= 2.0 ** -53
        return u
    w = gen.words(n)
    np.bitwise_and(w, _LOW24, out=w)  # (in place: one large temporary fewer)
    return np.multiply(w.view(np.int32), 2.0 ** -24, dtype=_F32)  # (NumPy's fastest cast to float32)


def uniform(gen, shape, dtype, low=0.0, high=1.0):
    """U[low, high) in ``dtype`` (PyTorch's ``uniform_``)."""
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    wide = dtype == _F64
    x = _unit(gen, n, wide)
    lo, hi = (float(low), float(high)) if wide else (float(np.float32(low)), float(np.float32(high)))
    if (lo, hi) == (0.0, 1.0):
        return _cast(x, dtype).reshape(shape)
    if wide:
        r = _fma64(x, hi - lo, lo)
    else:  # in float32: x * (to - from) + from in one rounding (the product exact in float64 before it)
        r = (x.astype(_F64) * float(np.float32(hi - lo)) + lo).astype(_F32)
    r = _cast(r, dtype)
    top, bottom = _cast(np.array(hi, _F64), dtype), _cast(np.array(lo, _F64), dtype)
    r[r == top] = bottom  # a value rounded up to `to` is `from`
    return r.reshape(shape)


def _box_muller(gen, pairs: int) -> np.ndarray:
    """``pairs`` Box-Muller pairs of PyTorch's scalar ``normal_distribution<double>``, each (cos half, sin half):
    ``r = sqrt(-2 log1p(-u2))``, ``theta = 2 pi u1`` of two 53-bit uniforms."""
    u = _unit(gen, 2 * pairs, True)
    if pairs <= 8:  # a few: on Python floats, fewer calls than NumPy's
        out = []
        for u1, u2 in zip(u[0::2].tolist(), u[1::2].tolist()):
            r, theta = math.sqrt(-2.0 * math.log1p(-u2)), _TWO_PI * u1
            out += [r * math.cos(theta), r * math.sin(theta)]
        return np.array(out, _F64)
    r = np.sqrt(-2.0 * _libm(math.log1p, -u[1::2]))
    theta = _TWO_PI * u[0::2]
    return np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).ravel()


def _normal_serial(gen, n: int) -> np.ndarray:
    """``n`` standard normals one at a time, the generator's cached second normal first."""
    cached = gen.normal_double
    start = 0 if cached is None or not n else 1
    m = n - start
    z = _box_muller(gen, (m + 1) // 2) if m else np.empty(0, _F64)
    gen.normal_double = float(z[m]) if m % 2 else None if start else cached
    return np.concatenate([[cached], z[:m]]) if start else z[:m]


def _fma32(a, b, c) -> np.ndarray:
    """float32 ``a * b + c`` rounded once (the product is exact in float64)."""
    t = np.multiply(a, b, dtype=_F64)
    t += c
    return t.astype(_F32)


_LOG_P = (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
          2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1)  # Cephes' logf polynomial


def _log32(x: np.ndarray) -> np.ndarray:
    """log of positive normal float32 ``x`` as PyTorch's vectorised float code computes it (Cephes' ``logf``:
    the mantissa in [sqrt(1/2), sqrt(2)) by its exponent, a degree-9 polynomial, fused multiply-adds where the
    compiler fuses them)."""
    f = np.float32
    bits = x.view(np.uint32)
    e = ((bits >> 23).astype(np.int32) - 127).astype(_F32) + f(1)
    m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(_F32)  # in [0.5, 1)
    low = m < f(0.707106781186547524)
    m = (m - f(1)) + np.where(low, m, f(0))
    e = e - low.astype(_F32)
    z = m * m
    y = _fma32(f(_LOG_P[0]), m, f(_LOG_P[1]))
    for p in _LOG_P[2:]:
        y = _fma32(y, m, f(p))
    y = _fma32(y * m, z, e * f(-2.12194440e-4))
    y = y - z * f(0.5)
    return _fma32(e, f(0.693359375), m + y)


def _sincos32(x: np.ndarray):
    """(sin, cos) of non-negative float32 ``x`` as PyTorch's vectorised float code computes them (Cephes'
    ``sinf``/``cosf``: reduction by multiples of pi/4 in three parts, one of two polynomials by octant)."""
    f = np.float32
    j = (x * f(1.27323954473516)).astype(np.int32)  # 4 / pi, truncated
    j += 1
    j &= ~1
    y = j.astype(_F32)
    for part in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = _fma32(y, f(part), x)
    z = x * x
    c = _fma32(f(2.443315711809948E-005), z, f(-1.388731625493765E-003))
    c = _fma32(c, z, f(4.166664568298827E-002))
    c = _fma32(c * z, z, -(z * f(0.5)))
    c += f(1)
    s = _fma32(f(-1.9515295891E-4), z, f(8.3321608736E-3))
    s = _fma32(s, z, f(-1.6666654611E-1))
    s = _fma32(s * z, x, x)
    first = (j & 2) == 0
    sin, cos = np.where(first, s, c), np.where(first, c, s)
    return np.where((j & 4) != 0, -sin, sin), np.where(((j - 2) & 4) == 0, -cos, cos)


def _fill16(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """Box-Muller over blocks of 16 uniforms (rows of ``u``, float32 or float64): the first 8 with the last 8."""
    if u.dtype == _F32:  # PyTorch's AVX2 float code, step by step
        f = np.float32
        radius = np.sqrt(f(-2) * _log32(f(1) - u[:, :8]))
        sin, cos = _sincos32(f(_TWO_PI) * u[:, 8:])
        pair = np.concatenate([radius * cos, radius * sin], axis=1)
        return _fma32(pair, f(std), f(mean))
    radius = np.sqrt(-2.0 * _libm(math.log, 1.0 - u[:, :8]))
    theta = _TWO_PI * u[:, 8:]
    return np.concatenate([_fma64(radius * np.cos(theta), std, mean), _fma64(radius * np.sin(theta), std, mean)],
                          axis=1)


def normal_serial(gen, shape, dtype, mean=0.0, std=1.0):
    """N(mean, std**2) one element at a time (PyTorch's ``normal_`` below 16 elements or of a non-contiguous
    tensor, in its memory order)."""
    z = _normal_serial(gen, math.prod(shape))
    mean, std = float(mean), float(std)
    return _cast(z if (mean, std) == (0.0, 1.0) else _fma64(z, std, mean), dtype).reshape(shape)


def normal(gen, shape, dtype, mean=0.0, std=1.0):
    """N(mean, std**2) in ``dtype`` (PyTorch's ``normal_`` of a contiguous tensor)."""
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    mean, std = float(mean), float(std)
    if n < 16:
        return normal_serial(gen, shape, dtype, mean, std)
    calc = _F64 if dtype == _F64 else _F32  # a half type is drawn in float32
    full = n - n % 16
    # float32 and float64 draw a uniform for every element, a half type only for the whole blocks of 16
    u = uniform(gen, (n if dtype.itemsize >= 4 else full,), calc)
    out = np.empty(n, calc)
    blocks, done = u[:full].reshape(-1, 16), out[:full].reshape(-1, 16)
    for i in range(0, len(blocks), _BLOCKS):  # (a slice's temporaries stay in the cache: twice as fast)
        done[i:i + _BLOCKS] = _fill16(blocks[i:i + _BLOCKS], mean, std)
    if n % 16:  # the last 16 drawn again
        out[n - 16:] = _fill16(uniform(gen, (1, 16), calc), mean, std).ravel()
    return out.astype(dtype, copy=False).reshape(shape)


def _wide_int(dtype) -> bool:
    return np.dtype(dtype).name in ("int64", "float64", "float32", "bfloat16")


def randint(gen, shape, dtype, low, high):
    """Integers uniform on [low, high) (PyTorch's ``random_(from, to)``): ``word % range + low``."""
    n = math.prod(shape)
    span = int(high) - int(low)
    if span >= 1 << 32 and _wide_int(dtype):
        r = (gen.words64(n) % np.uint64(span)).astype(np.int64)
    else:
        w = gen.words(n)
        if span < 1 << 32:
            np.remainder(w, np.uint32(span), out=w)
        r = w.astype(np.int64)
    r += np.int64(low)
    return r.astype(dtype).reshape(shape)


def _swaps(targets: np.ndarray, n: int) -> np.ndarray:
    """The permutation of ``range(n)`` after swapping entry i with entry ``targets[i]`` (>= i) for each i in turn,
    without the sequential loop.

    Entry i is final after step i and holds what position ``targets[i]`` held just before: the value that the
    last earlier step aiming there moved out of its own position, or the position's own value if none did.  The
    value a step k moves out of position k is, by the same rule, what the last step before k aiming at k moved,
    so each position's value is the root of a chain of such links, found by pointer jumping."""
    steps = np.arange(n - 1)
    order, shift = steps, 0
    while shift == 0 or (n - 1) >> shift:  # the steps grouped by target, in step order: a radix sort by 16 bits
        digit = (targets[order] >> shift).astype(np.uint16)  # (NumPy sorts 16-bit keys stably by radix)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
    grouped = targets[order]
    same = grouped[1:] == grouped[:-1]
    prev = np.full(n - 1, -1)  # the last earlier step with the same target
    prev[order[1:][same]] = order[:-1][same]
    ends = np.append(~same, True)
    link = np.full(n, -1)  # the last step before p aiming at position p
    link[grouped[ends]] = order[ends]
    own = link[:-1] == steps  # (a step aiming at itself swaps nothing: the one before it)
    link[:-1][own] = prev[own]
    root = np.where(link >= 0, link, np.arange(n))
    while True:
        jumped = root[root]
        if np.array_equal(jumped, root):
            break
        root = jumped
    out = np.empty(n, np.int64)
    out[:-1] = np.where(prev >= 0, root[prev], targets)
    out[-1] = root[-1]
    return out


def permutation(gen, n, dtype):
    """PyTorch's ``randperm`` of ``n``: a Fisher-Yates walk swapping entry i with entry ``i + word % (n - i)``
    (a plain loop for a short walk, :func:`_swaps` for a long one)."""
    if n < 512:
        perm = list(range(n))
        if n > 1:
            jumps = (gen.words(n - 1).astype(np.int64) % np.arange(n, 1, -1)).tolist()
            for i, z in enumerate(jumps):
                j = i + z
                perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, dtype=dtype)
    targets = gen.words(n - 1).astype(np.int64) % np.arange(n, 1, -1)
    targets += np.arange(n - 1)
    return _swaps(targets, n).astype(dtype, copy=False)


def bernoulli(gen, p, dtype):
    """1 where a uniform draw is below ``p`` (24 bits for a float32 or narrower ``p``, 53 for float64)."""
    wide = p.dtype == _F64
    u = _unit(gen, p.size, wide).reshape(p.shape)
    return (u < (p if wide else p.astype(_F32, copy=False))).astype(dtype)


def exponential(gen, shape, dtype, lambd):
    """Exponential(lambd): ``-1 / lambd * log1p(-u)`` of a 53-bit uniform."""
    u = _unit(gen, math.prod(shape), True)
    return _cast(-1.0 / lambd * _libm(math.log1p, -u), dtype).reshape(shape)


def geometric(gen, shape, dtype, p):
    """Geometric(p): ``ceil(log(u) / log(1 - p))`` of a 53-bit uniform."""
    u = _unit(gen, math.prod(shape), True)
    return _cast(np.ceil(_libm(math.log, u) / math.log(1.0 - p)), dtype).reshape(shape)


def cauchy(gen, shape, dtype, median, sigma):
    """Cauchy(median, sigma): ``median + sigma * tan(pi * (u - 0.5))`` of a 53-bit uniform."""
    u = _unit(gen, math.prod(shape), True)
    return _cast(median + sigma * _libm(math.tan, math.pi * (u - 0.5)), dtype).reshape(shape)


def log_normal(gen, shape, dtype, mean, std):
    """exp of N(mean, std**2), the normals drawn one at a time (PyTorch's ``log_normal_``)."""
    z = _normal_serial(gen, math.prod(shape))
    return _cast(_libm(math.exp, _fma64(z, float(std), float(mean))), dtype).reshape(shape)


def multinomial(gen, probs, n, replacement):
    """``n`` int64 category indices per row of ``probs`` (a vector or a matrix of weights).

    With replacement (and more than one draw): per row, the cumulative sum in the weights' dtype (float32 for a
    half type) divided by its total, the last edge set to 1, and for each draw the first edge not below a 53-bit
    uniform.  Otherwise the exponential race: the ``n`` largest of ``weight / Exponential(1)``.
    """
    rows = probs.reshape(1, -1) if probs.ndim == 1 else probs
    k = rows.shape[1]
    if replacement and n > 1:
        calc = _F64 if rows.dtype == _F64 else _F32
        cum = np.cumsum(rows, axis=1, dtype=calc)
        cum /= cum[:, -1:]
        cum[:, -1] = 1
        u = _unit(gen, rows.shape[0] * n, True).reshape(rows.shape[0], n)
        idx = np.array([np.searchsorted(c.astype(_F64), v, side="left") for c, v in zip(cum, u)], np.int64)
        idx = idx.reshape(u.shape)  # (no rows: (0, n))
    else:
        keys = rows / exponential(gen, rows.shape, rows.dtype, 1.0)
        idx = np.argmax(keys, axis=1)[:, None] if n == 1 else np.argsort(-keys, axis=1, kind="stable")[:, :n]
    idx = np.minimum(idx, k - 1).astype(np.int64)
    return idx.reshape(n) if probs.ndim == 1 else idx


def _uniform1(gen) -> float:
    """One 53-bit uniform draw on [0, 1)."""
    hi, lo = gen.words(2).tolist()
    return ((hi & 0x1FFFFF) * 4294967296 + lo) * 2.0 ** -53


def _normal1(gen) -> float:
    """One standard normal of PyTorch's scalar ``normal_distribution<double>`` (its cached second one first)."""
    if gen.normal_double is not None:
        z, gen.normal_double = gen.normal_double, None
        return z
    u1, u2 = _uniform1(gen), _uniform1(gen)
    r, theta = math.sqrt(-2.0 * math.log1p(-u2)), _TWO_PI * u1
    gen.normal_double = r * math.sin(theta)
    return r * math.cos(theta)


_THIRD32, _C0331 = float(np.float32(1 / 3)), float(np.float32(0.0331))  # PyTorch's float literals 1.0f/3.0f, 0.0331f


def _gamma1(gen, alpha: float, single: bool) -> float:
    """One Gamma(alpha, 1) draw as PyTorch's ``sample_gamma`` (Marsaglia and Tsang's rejection in double precision;
    ``alpha`` below 1 boosted by one, in the input's precision, float32 when ``single``)."""
    f = np.float32 if single else float
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= math.pow(1.0 - _uniform1(gen), float(f(1.0) / f(alpha)))
        alpha = float(f(alpha) + f(1.0))
    d = float(f(alpha) - f(_THIRD32))  # (in the input's precision: alpha - 1.0f / 3.0f)
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = _normal1(gen)
        y = 1.0 + c * x
        while y <= 0:
            x = _normal1(gen)
            y = 1.0 + c * x
        v = y * y * y
        u = 1.0 - _uniform1(gen)
        xx = x * x
        if u < 1.0 - _C0331 * xx * xx or math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def standard_gamma(gen, alpha):
    """Gamma(alpha, 1) per element, one rejection loop each (PyTorch's ``_standard_gamma``), at least the
    dtype's smallest normal number."""
    single = alpha.dtype == _F32
    out = np.array([_gamma1(gen, a, single) for a in alpha.ravel().tolist()], _F64).astype(alpha.dtype)
    return np.maximum(out, np.finfo(alpha.dtype).tiny).reshape(alpha.shape)


def dirichlet(gen, alpha):
    """Dirichlet(alpha) over the last axis: float64 Gamma draws normalised, then clamped to
    [smallest normal, largest below 1] in ``alpha``'s dtype (PyTorch's ``_sample_dirichlet``)."""
    g = np.array([_gamma1(gen, a, False) for a in alpha.ravel().tolist()], _F64).reshape(alpha.shape)
    g = np.maximum(g, np.finfo(_F64).tiny)
    x = (g / g.sum(axis=-1, keepdims=True)).astype(alpha.dtype)
    return np.clip(x, np.finfo(alpha.dtype).tiny, np.nextafter(np.array(1, alpha.dtype), 0))


def _poisson1(gen, lam: float) -> int:
    """One Poisson(lam) draw as PyTorch's ``sample_poisson``: Hoermann's transformed rejection from 10 up, a
    product of uniforms below."""
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = _uniform1(gen) - 0.5
            v = _uniform1(gen)
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or us < 0.013 and v > us:
                continue
            if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - math.lgamma(k + 1):
                return k
    if lam == 0:
        return 0
    enlam, count, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= _uniform1(gen)
        if prod <= enlam:
            return count
        count += 1


def poisson(gen, lam):
    """Poisson(lam) per element (PyTorch's ``poisson``), in ``lam``'s dtype."""
    return np.array([_poisson1(gen, v) for v in lam.astype(_F64).ravel().tolist()], _F64).astype(
        lam.dtype).reshape(lam.shape)


KERNELS = {"uniform": uniform, "normal": normal, "normal_serial": normal_serial,
           "randint": randint, "permutation": permutation,
           "bernoulli": bernoulli, "exponential": exponential, "geometric": geometric, "cauchy": cauchy,
           "log_normal": log_normal, "multinomial": multinomial, "standard_gamma": standard_gamma,
           "dirichlet": dirichlet, "poisson": poisson}
