"""Faster forms of some shared kernels for float32 NumPy arrays: overrides of the CPU backend, so eager mode and
compiled graphs call the same ones through the backend's kernel table.

Each serves one case (float32, contiguous, at least :data:`MIN_SIZE` elements; tiny arrays, last below) and hands
every other call to the kernel it replaces.  They reorder or approximate the arithmetic, so results match the
shared kernels' within float32 tolerance, not bit for bit:

* ``erf``: SciPy's ufunc evaluates element by element in double precision (about 10 ns an element: a training
  step of a GELU network spends most of its GELU backward there).  :func:`erf_float32` computes it with NumPy
  ufunc passes over cache-sized chunks, 3x faster, within 2.5 ulp of the exact value (SciPy's float32 result is
  correctly rounded).  Its two polynomials were fitted here, by least squares on Chebyshev nodes against float64
  ``erf``: ``erf(x) = x * P(x*x)`` for ``|x| < 0.6`` and ``erf(x) = 1 - exp(Q(|x| - 0.6))`` above, ``|x|``
  clamped at 4 (where float32 ``erf`` is 1; the clamp also keeps +-inf finite through the polynomial, and NaN
  passes);
* ``softmax`` along the last axis, and ``cross_entropy_index``'s log-softmax of logits ``(N, C)``: exponentiated
  as they are, with no pass for a maximum, the row sums as a matrix-vector product; the rows whose sums show a
  maximum above 64 or far below zero (or an infinite or NaN entry) shifted by their own maxima, taken from the
  rows laid out as columns (NumPy's ``max`` along a short inner axis is ~10x slower than along the outer one);
  softmax's backward's row sums likewise, spread back by ``repeat``;
* ``sum``, ``mean`` and ``sum_to`` over the leading axes or the last one: a matrix-vector product;
* ``nn_gelu`` (exact, erf) of float32: ``max(x*q, x - x*q)``, ``q = Phi(-|x|)`` from a fit of the normal tail
  (:data:`_NDTR_P`), in ufunc passes over cache-sized chunks: several times faster than through SciPy's ``erf``,
  within 2.4e-7 of the exact value; its gradient ``nn_gelu_backward`` likewise, ``Phi(x) + x * phi(x)`` from the
  same fit;
* ``layer_norm`` over the last axis of float32 and its backward ``layer_norm_backward``: the shared kernels with
  the means over the rows (and the backward's sums over them) as matrix-vector products, as the ``mean``
  kernel below (so the composed ops of a traced model give the same bits);
* ``masked_fill`` of at least :data:`MIN_SIZE` elements whose mask broadcasts to the input (attention's causal
  mask): a copy, then the value written where the mask is set (``copyto``'s ``where``), exact, ~15% faster than
  the three-operand ``where``;
* ``index_add`` of float32 rows along axis 0 (an embedding's gradient): the rows sorted by index and summed per
  index (``reduceat``), 6x faster than ``np.add.at``'s element-by-element accumulation;
* ``matmul`` of float32 stacks of four or more dimensions whose right operand is a stack of transposed views
  (attention's ``q @ k.transpose(-2, -1)`` and its gradient ``g @ v.transpose(-2, -1)``): that operand copied
  to C order first.  NumPy's loop over the stack calls the BLAS once per small matrix, and each call with a
  transposed operand costs more than the copy: char_gpt's 128 products of 32x16 by 16x32 a call, 0.2-0.5 ms
  less CPU time in a training step's products (13.3-13.9 ms), measured in place;
* at the other end, ``softmax`` and ``log_softmax`` of float32 and float64 arrays of at most :data:`TINY`
  elements (a policy head's few actions) along the last axis: on Python floats, in double precision rounded once
  to the array's dtype, where NumPy's per-call costs are most of the work (3.7 to 1.9 us for two elements;
  softmax's backward, no faster so, keeps its NumPy form).

The backend quiets these by name as it does any kernel the shared library lists in ``QUIET``
(:func:`ember.kernels.quieted`), so each calls the replaced kernel without the library's floating-point-error
guard (a guard entered twice takes a slow path); ``erf`` keeps the library's ``LOW_PRECISION`` rounding back.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ember import kernels as _kernels

_CUT = 0.6
_TOP = 4.0
_P = (1.1283791583131844, -0.37612516141552854, 0.11281040144181635, -0.026649120427129726,
      0.004515304399939827)
_Q = (-0.9259776032813449, -1.9872730630554298, -0.7821907896750211, -0.061275300671805026,
      0.014897397598257117, -0.0028700560358788543, 0.0003990256154698294, -3.4838724595344007e-05,
      1.411977026031445e-06)
_P32 = tuple(np.float32(c) for c in _P)
_Q32 = tuple(np.float32(c) for c in _Q)
_CUT32 = np.float32(_CUT)
CHUNK = 32768
"""Elements per pass of :func:`erf_float32` (measured best on 262144 elements: the scratch buffers stay in the
L2 cache)."""
MIN_SIZE = 4096
"""Arrays below this size keep the replaced kernel (the chunked passes cost a few microseconds of calls)."""
TINY = 16
"""Arrays of at most this many elements take the softmax family's Python-float forms (:func:`_tiny_rows`)."""
_TINY_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _horner(coeffs, x, out):
    """``sum(coeffs[k] * x**k)`` into ``out`` (float32, one ufunc call per step)."""
    np.multiply(x, coeffs[-1], out=out)
    out += coeffs[-2]
    for c in coeffs[-3::-1]:
        out *= x
        out += c


_NDTR_C = 0.5
_NDTR_P = (-1.6124926185583544, 1.009792569353313, 0.1550153932824445, 0.3153618430629255, -1.7159368251059646,
           1.9213641948027258, -0.9505340879624462, 0.18428213145497302)
"""The normal tail ``Phi(-a) = t * exp(P(t) - a*a/2)``, ``t = 1 / (1 + _NDTR_C * a)``, ``a >= 0``: ``P`` (lowest
degree first) is the least-squares Chebyshev fit of ``log(Phi(-a) / t) + a*a/2`` over ``t`` in ``(1/8, 1]``
(``a`` up to 14, where the tail leaves float32).  In float32 gelu is then within 2.4e-7 of the exact value
(float64 ``x * Phi(x)``), about PyTorch's own error."""
_NDTR_P32 = tuple(np.float32(c) for c in _NDTR_P)


def _fitted_chunks(x, out):
    """The chunks of :data:`CHUNK` elements of float32 ``x`` (and of ``out``, of its shape) with the first passes
    of the normal-tail fit done: yields ``(start, xs, a, t, p, d)``, ``a = |xs|``, ``t = 1 / (1 + C a)``, ``p``
    the fit's polynomial in ``t`` (:data:`_NDTR_P32`) and ``d`` the chunk of ``out``; ``a``, ``t``, ``p`` are
    buffers reused from chunk to chunk."""
    src, dst = x.reshape(-1), out.reshape(-1)
    a, t, p = (np.empty(min(CHUNK, src.size), np.float32) for _ in range(3))
    for s in range(0, src.size, CHUNK):
        xs = src[s:s + CHUNK]
        n = xs.size
        ai, ti, pi = a[:n], t[:n], p[:n]
        np.abs(xs, out=ai)
        np.multiply(ai, _NDTR_C, out=ti)
        ti += 1
        np.reciprocal(ti, out=ti)
        _horner(_NDTR_P32, ti, pi)
        yield s, xs, ai, ti, pi, dst[s:s + n]


def gelu_float32(x, gelu_erf):
    """Exact (erf) gelu of a float32 NumPy array as ``max(x*q, x - x*q)``, ``q = Phi(-|x|)`` (``x*q`` for x <= 0,
    ``x - x*q`` above): about 25 ufunc passes over chunks of :data:`CHUNK`.  A chunk with a non-finite result
    (inf or NaN inputs) is recomputed by ``gelu_erf`` (the formula through ``erf``), so those follow it exactly."""
    out = np.empty(x.shape, np.float32)
    for _, xs, ai, ti, pi, d in _fitted_chunks(x, out):
        ai *= ai
        ai *= 0.5
        pi -= ai
        np.exp(pi, out=pi)
        pi *= ti
        pi *= xs
        np.subtract(xs, pi, out=d)
        np.maximum(d, pi, out=d)
        if not np.isfinite(np.add.reduce(d)):
            d[...] = gelu_erf(xs, "none")
    return out


_INV_SQRT_2PI = np.float32(1 / np.sqrt(2 * np.pi))


def gelu_backward_float32(g, x):
    """``g * gelu'(x)`` (exact gelu) of float32 NumPy arrays of one shape: ``Phi(x) + x * phi(x)``, with
    ``Phi(x) = 0.5 + copysign(0.5 - q, x)`` and ``q = Phi(-|x|)`` from the fit :func:`gelu_float32` uses, in
    ufunc passes over chunks of :data:`CHUNK`.  An infinite ``x`` gives NaN (``inf * phi(inf)``), as PyTorch's."""
    grad = g.reshape(-1)
    out = np.empty(x.shape, np.float32)
    for s, xs, ai, ti, pi, d in _fitted_chunks(x, out):
        np.exp(pi, out=pi)
        pi *= ti
        ai *= ai
        ai *= -0.5
        np.exp(ai, out=ai)          # exp(-x*x/2)
        pi *= ai                    # q
        np.subtract(0.5, pi, out=pi)
        np.copysign(pi, xs, out=pi)
        pi += 0.5                   # Phi(x)
        ai *= _INV_SQRT_2PI
        ai *= xs                    # x * phi(x)
        np.add(pi, ai, out=d)
        d *= grad[s:s + d.size]
    return out


def erf_float32(x, out=None):
    """``erf`` of a float32 NumPy array (see the module docstring), into ``out`` if given."""
    if out is None:
        out = np.empty(x.shape, np.float32)
    src = x.reshape(-1)
    dst = out.reshape(-1) if out.flags.c_contiguous else np.empty(x.size, np.float32)
    n0 = min(CHUNK, src.size)
    a, s, p, q, m = (np.empty(n0, np.float32) for _ in range(5))
    cut, top = np.full(n0, _CUT, np.float32), np.full(n0, _TOP, np.float32)  # (minimum with an array operand
    for i in range(0, src.size, CHUNK):                                       # is vectorised, with a scalar 3x slower)
        xs, d = src[i:i + CHUNK], dst[i:i + CHUNK]
        n = xs.size
        ai, si, pi, qi, mi = a[:n], s[:n], p[:n], q[:n], m[:n]
        np.abs(xs, out=ai)
        np.less(ai, cut[:n], out=mi, casting="unsafe")  # 1.0 near 0, else 0.0
        np.minimum(ai, cut[:n], out=qi)
        np.multiply(qi, qi, out=si)
        _horner(_P32, si, pi)
        pi *= qi                                # erf(|x|) near 0 (finite everywhere: |x| clamped)
        np.minimum(ai, top[:n], out=si)
        si -= _CUT32
        _horner(_Q32, si, qi)
        np.exp(qi, out=qi)
        np.subtract(1, qi, out=qi)              # erf(|x|) away from 0
        pi *= mi                                # the one or the other, by the 0/1 mask (each product exact)
        np.subtract(1, mi, out=mi)
        qi *= mi
        pi += qi
        np.copysign(pi, xs, out=d)
    if not out.flags.c_contiguous:
        out[...] = dst.reshape(x.shape)
    return out


# --------------------------------------------------------------------------- reductions along one end of an array
@lru_cache(maxsize=64)
def _ones(n):
    """A read-only float32 vector of ``n`` ones, one per length for every sum taken as a matrix-vector product: a
    fresh one each call cost more than the product itself in a training step (1024 rows of 192 with a cold cache:
    ~130 us against ~90 with a kept vector)."""
    v = np.ones(n, np.float32)
    v.flags.writeable = False
    return v


def _ends(x, axes):
    """``(rows, cols, side)`` where summing ``axes`` of C-contiguous ``x`` is a matrix-vector product: the
    leading axes (``side`` "left": ``ones @ x2``) or the last one (``"right"``: ``x2 @ ones``); else None."""
    nd = x.ndim
    axes = tuple(sorted(a % nd for a in axes))
    if not axes or len(axes) == nd:
        return None
    shape = x.shape
    if axes == tuple(range(len(axes))):
        rows = 1
        for n in shape[:len(axes)]:
            rows *= n
        return rows, x.size // max(rows, 1), "left"
    if axes == (nd - 1,):
        return x.size // max(shape[-1], 1), shape[-1], "right"
    return None


def _gemv_sum(x, axes, keep_shape):
    """The sum of float32 ``x`` over ``axes`` as one BLAS matrix-vector product (NumPy's reduction along a
    short inner axis costs ~1.5 ns an element, the product ~0.15), or None where it does not apply."""
    if type(x) is not np.ndarray or x.dtype != np.float32 or x.size < MIN_SIZE or not x.flags.c_contiguous:
        return None
    ends = _ends(x, axes)
    if ends is None:
        return None
    rows, cols, side = ends
    if min(rows, cols) < 8:
        return None
    x2 = x.reshape(rows, cols)
    out = _ones(rows) @ x2 if side == "left" else x2 @ _ones(cols)
    return out.reshape(keep_shape(side))


def _float32_rows(x, *others):
    """Whether ``x`` (and each of ``others`` not None) is a float32 NumPy array, ``x`` of at least
    :data:`MIN_SIZE` elements in rows of at least 8."""
    return type(x) is np.ndarray and x.dtype == np.float32 and x.size >= MIN_SIZE and x.ndim >= 2 and \
        x.shape[-1] >= 8 and all(o is None or (type(o) is np.ndarray and o.dtype == np.float32) for o in others)


def _axes(axis, nd):
    return tuple(range(nd)) if axis is None else tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)


def _kept(x, axes, keepdims):
    nd = x.ndim
    red = {a % nd for a in axes}
    return lambda side: tuple(1 if i in red else n for i, n in enumerate(x.shape) if keepdims or i not in red)


def _shifted_rows(x):
    """``x - max(x)`` along the last axis of C-contiguous float32 ``x``, as rows ``(-1, n)``: the maxima from the
    rows laid out as columns."""
    rows = x.reshape(-1, x.shape[-1])
    return rows - np.maximum.reduce(np.ascontiguousarray(rows.T), axis=0)[:, None]


_LOW_TOTAL = np.float32(2.0 ** -40)
"""A row of :func:`_exp_rows` whose exponentials sum below this (its maximum more than ~28 below the shift) is
shifted by its own maximum instead: above it, each shifted argument's rounding error (within float32's at the
gap) moves a probability by at most ~1.7e-6 of itself, a log-probability by ~2e-6."""

_HIGH_TOTAL = np.float32(math.exp(64.0))
"""A row of :func:`_exp_rows` whose exponentials sum above this (or to inf or NaN) is shifted by its own maximum
instead.  Below it the row's maximum is at most 64: its exponentials stay far from float32's overflow, and each
``exp(x)`` is as exact as ``exp(x - max)`` without rounding the difference."""


_NORMAL_EXP_FLOOR = np.float32(-87.0)
"""An entry below this (and finite) has a subnormal or zero ``exp`` in float32 (its smallest normal is ~e^-87.34)."""

_DEEP_TOTAL = np.float32(2.0 ** -4)
"""A row of :func:`_exp_rows` whose exponentials sum below this and that has an entry below
:data:`_NORMAL_EXP_FLOOR` is shifted by its own maximum: unshifted, that entry's subnormal ``exp(x)`` (rounded to
2^-149 absolute) divided by the small total is a normal probability with the few bits of a subnormal (a row topped
by -20, an entry at -100: 1.6% off).  At a larger total such a probability is off by at most 2^-24 / total < 1e-6
of itself where it is normal, and subnormal itself otherwise."""


def _exp_rows(x):
    """``(s, e, total)`` for C-contiguous float32 ``x`` taken as rows ``(-1, n)``: ``s`` the rows as exponentiated,
    ``e = exp(s)`` and its row sums as a matrix-vector product.  The rows are exponentiated as they are (``s`` is
    ``x``'s own rows, not to be written): no pass for a maximum, whose reduction along short rows needs a
    transposed copy.  The rows whose sums fall outside [:data:`_LOW_TOTAL`, :data:`_HIGH_TOTAL`] (far below zero,
    above 64, infinite or NaN), and those below :data:`_DEEP_TOTAL` with an entry below :data:`_NORMAL_EXP_FLOOR`, are
    shifted by their own maximum and taken again.  A row with no finite entry meets ``-inf - -inf``: NaN, as the
    shared kernels give, inside the caller's floating-point-error guard."""
    rows = x.reshape(-1, x.shape[-1])
    ones = _ones(rows.shape[1])
    s = rows
    e = np.exp(s)
    total = e @ ones
    odd = np.flatnonzero(~((total >= _DEEP_TOTAL) & (total <= _HIGH_TOTAL)))
    if odd.size:  # (of the rows summing in [_LOW_TOTAL, _DEEP_TOTAL), those with no deep entry are kept)
        mid = odd[(total[odd] >= _LOW_TOTAL) & (total[odd] < _DEEP_TOTAL)]
        low = rows[mid]
        odd = np.setdiff1d(odd, mid[~((low < _NORMAL_EXP_FLOOR) & (low > -np.inf)).any(axis=1)], assume_unique=True)
    if 4 * odd.size > total.size:  # (many: every row, without the gathers)
        s = _shifted_rows(rows)
        e = np.exp(s)
        total = e @ ones
    elif odd.size:
        s = s.copy()
        s[odd] = _shifted_rows(rows[odd])
        e[odd] = np.exp(s[odd])
        total[odd] = e[odd] @ ones
    return s, e, total


def _log_softmax_rows(x):
    """Log-softmax along the rows of C-contiguous float32 matrix ``x`` (:func:`_exp_rows`)."""
    s, _, total = _exp_rows(x)
    shift = np.log(total)[:, None]
    return s - shift if np.may_share_memory(s, x) else np.subtract(s, shift, out=s)


def _softmax_rows(x):
    """Softmax along the last axis of C-contiguous float32 ``x`` (:func:`_exp_rows`), each row multiplied by its
    sum's reciprocal (PyTorch's CPU kernel's form; a division along rows of a few dozen costs a third more)."""
    _, e, total = _exp_rows(x)
    e *= (np.float32(1) / total)[:, None]
    return e.reshape(x.shape)


def _tiny_rows(x, axis) -> bool:
    """Whether ``x`` is a float32 or float64 NumPy array of 1 to :data:`TINY` elements taken along its last axis
    ``axis``."""
    return type(x) is np.ndarray and 0 < x.size <= TINY and x.dtype in _TINY_DTYPES and x.ndim > 0 and \
        axis % x.ndim == x.ndim - 1


def _rows(x) -> list:
    return x.reshape(-1, x.shape[-1]).tolist()


def _softmax_tiny(x):
    out = []
    for row in _rows(x):
        m = max(row)  # (a NaN anywhere makes the row's total NaN, and so the whole row, as NumPy's)
        e = [math.exp(v - m) for v in row]  # (never above 1: no overflow)
        total = sum(e)
        out += [v / total for v in e]
    return np.array(out, x.dtype).reshape(x.shape)


def _log_softmax_tiny(x):
    out = []
    for row in _rows(x):
        m = max(row)
        lse = math.log(sum([math.exp(v - m) for v in row]))  # (the maximum's term is 1: the total is >= 1 or NaN)
        out += [v - m - lse for v in row]
    return np.array(out, x.dtype).reshape(x.shape)


def _bare(fn):
    """Kernel ``fn`` without the wrappers the shared library put around it (floating-point-error guard, rounding
    back to a low precision): its ``__wrapped__`` chain followed to the end."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def _by_gemv(reduce, average: bool):
    """``reduce`` (the shared ``sum`` or ``mean`` kernel) with the float32 reductions of large arrays as
    matrix-vector products (``_gemv_sum``); ``average``: divided by the count of elements reduced (``mean``)."""
    def fast(x, axis=None, keepdims=False, dtype=None):
        if x.size < MIN_SIZE:  # (the common small case first: a faster form must not slow it down)
            return reduce(x, axis, keepdims, dtype)
        axes = _axes(axis, x.ndim)
        r = None if dtype is not None else _gemv_sum(x, axes, _kept(x, axes, keepdims))
        if r is None:
            return reduce(x, axis, keepdims, dtype)
        if average:
            r /= np.float32(x.size // max(r.size, 1))
        return r
    fast.__name__ = f"fast_{'mean' if average else 'sum'}"
    return fast


def overrides(kernels: dict) -> dict:
    """The faster forms (module docstring) of those of ``kernels`` (the backend's table before they are merged in)
    that it has, each falling back to the one it replaces.  All but ``index_add`` are names the shared library
    runs quietly: the backend's merge wraps them in the guard, and their fallbacks run bare inside it."""
    out = {}
    erf = kernels.get("erf")
    if erf is not None:
        erf_ = _bare(erf)

        def fast_erf(x, out=None):
            if x.size < MIN_SIZE or type(x) is not np.ndarray or x.dtype != np.float32:
                return erf_(x) if out is None else erf_(x, out=out)
            return erf_float32(x, out)
        out["erf"] = _kernels._keeping_low_precision(fast_erf)  # (float16 and bfloat16 rounded back, as the library's)

    softmax = kernels.get("softmax")
    if softmax is not None:
        softmax_ = _bare(softmax)

        def fast_softmax(x, axis):
            if _tiny_rows(x, axis):
                return _softmax_tiny(x)
            if x.size < MIN_SIZE or type(x) is not np.ndarray or x.dtype != np.float32 or x.ndim < 2 or \
                    axis % x.ndim != x.ndim - 1 or not x.flags.c_contiguous or x.shape[-1] < 2:
                return softmax_(x, axis)
            return _softmax_rows(x)
        out["softmax"] = fast_softmax

    log_softmax = kernels.get("log_softmax")
    if log_softmax is not None:
        log_softmax_ = _bare(log_softmax)

        def fast_log_softmax(x, axis):
            return _log_softmax_tiny(x) if _tiny_rows(x, axis) else log_softmax_(x, axis)
        out["log_softmax"] = fast_log_softmax

    softmax_backward = kernels.get("softmax_backward")
    if softmax_backward is not None:
        softmax_backward_ = _bare(softmax_backward)

        def fast_softmax_backward(g, y, axis):
            if g.size < MIN_SIZE or type(g) is not np.ndarray or type(y) is not np.ndarray or \
                    g.dtype != np.float32 or y.dtype != np.float32 or g.shape != y.shape or \
                    axis % g.ndim != g.ndim - 1 or not (g.flags.c_contiguous and y.flags.c_contiguous):
                return softmax_backward_(g, y, axis)
            n = g.shape[-1]
            # y * (g - sum(g * y)), PyTorch's form; the row sums spread by repeat, then flat passes (a subtraction
            # along rows of a few dozen, NumPy's broadcast, costs twice a flat one)
            r = np.repeat((g * y).reshape(-1, n) @ _ones(n), n).reshape(g.shape)
            np.subtract(g, r, out=r)
            r *= y
            return r
        out["softmax_backward"] = fast_softmax_backward

    cross_entropy = kernels.get("cross_entropy_index")
    if cross_entropy is not None:
        cross_entropy_ = _bare(cross_entropy)

        def fast_cross_entropy_index(x, t, ignore_index, mean):
            fast = _float32_rows(x) and x.ndim == 2 and x.flags.c_contiguous
            return cross_entropy_(x, t, ignore_index, mean, _log_softmax_rows if fast else None)
        out["cross_entropy_index"] = fast_cross_entropy_index

    gelu = kernels.get("nn_gelu")
    if gelu is not None:
        gelu_ = _bare(gelu)

        def fast_gelu(x, approximate):
            if approximate == "tanh" or type(x) is not np.ndarray or x.dtype != np.float32:
                return gelu_(x, approximate)
            return gelu_float32(x, gelu_)
        out["nn_gelu"] = fast_gelu

    gelu_backward = kernels.get("nn_gelu_backward")
    if gelu_backward is not None:
        gelu_backward_ = _bare(gelu_backward)

        def fast_gelu_backward(g, x, approximate):
            if x.size < MIN_SIZE or approximate == "tanh" or type(x) is not np.ndarray or type(g) is not np.ndarray \
                    or x.dtype != np.float32 or g.dtype != np.float32 or g.shape != x.shape:
                return gelu_backward_(g, x, approximate)
            return gelu_backward_float32(g, x)
        out["nn_gelu_backward"] = fast_gelu_backward

    for name in ("sum", "mean"):
        if kernels.get(name) is not None:
            out[name] = _by_gemv(_bare(kernels[name]), name == "mean")

    # layer norm's means over the rows (and its backward's sums over them) by the mean and sum kernels above, so the
    # composed ops of a traced model give the same bits
    def row_mean(a):
        return out["mean"](a, -1, True)

    def column_total(a):
        return out["sum"](a, tuple(range(a.ndim - 1)))

    layer_norm = kernels.get("layer_norm")
    if layer_norm is not None and "mean" in out:
        def fast_layer_norm(x, w, b, nd, eps):
            return layer_norm(x, w, b, nd, eps, mean=row_mean if nd == 1 and _float32_rows(x, w, b) else None)
        out["layer_norm"] = fast_layer_norm

    layer_norm_backward = kernels.get("layer_norm_backward")
    if layer_norm_backward is not None and "mean" in out and "sum" in out:
        def fast_layer_norm_backward(g, x, w, mean, rstd, nd, need):
            fast = nd == 1 and _float32_rows(x, g, w) and g.shape == x.shape
            if not fast:
                return layer_norm_backward(g, x, w, mean, rstd, nd, need)
            return layer_norm_backward(g, x, w, mean, rstd, nd, need, row_mean, column_total)
        out["layer_norm_backward"] = fast_layer_norm_backward

    masked_fill = kernels.get("masked_fill")
    if masked_fill is not None:
        masked_fill_ = _bare(masked_fill)

        def fast_masked_fill(x, mask, value):
            # a copy of x with the value written where the mask (broadcast to x, not growing it) is set: two passes
            # of copies, where a three-operand where with a broadcast mask runs its inner loop a row at a time
            if x.size < MIN_SIZE or type(x) is not np.ndarray or type(mask) is not np.ndarray or \
                    mask.ndim > x.ndim or any(m not in (1, n) for m, n in zip(mask.shape[::-1], x.shape[::-1])):
                return masked_fill_(x, mask, value)
            out = np.array(x, order="C")  # (C-ordered, as where's result)
            np.copyto(out, np.asarray(value, dtype=x.dtype), where=mask)
            return out
        out["masked_fill"] = fast_masked_fill

    index_add = kernels.get("index_add")  # (not a quiet kernel: the fallback is the table's entry as it is)
    if index_add is not None:
        def fast_index_add(x, axis, index, src):
            if src.size < MIN_SIZE or axis != 0 or type(x) is not np.ndarray or type(src) is not np.ndarray or \
                    type(index) is not np.ndarray or x.dtype != np.float32 or src.dtype != np.float32 or \
                    index.ndim != 1 or src.ndim < 1 or src.shape != index.shape + x.shape[1:] or \
                    index.dtype.kind not in "iu":
                return index_add(x, axis, index, src)
            order = np.argsort(index, kind="stable")
            keys = np.take(index, order)
            if keys[0] < 0:  # (a negative index and its positive twin would be two rows: the general kernel)
                return index_add(x, axis, index, src)
            starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            r = np.array(x, copy=True)
            r[keys[starts]] += np.add.reduceat(np.take(src, order, axis=0), starts, axis=0)  # (take: half the time)
            return r
        out["index_add"] = fast_index_add

    matmul = kernels.get("matmul")  # (not a quiet kernel either)
    if matmul is not None:
        def fast_matmul(a, b):
            if type(b) is np.ndarray and b.ndim >= 4 and b.dtype == np.float32 and b.strides[-2] == 4 and \
                    b.shape[-2] > 1 and b.shape[-1] > 1 and b.size >= MIN_SIZE and type(a) is np.ndarray and \
                    a.ndim == b.ndim and a.dtype == np.float32:
                b = np.ascontiguousarray(b)
            return matmul(a, b)
        out["matmul"] = fast_matmul

    sum_to = kernels.get("sum_to")
    if sum_to is not None:
        sum_to = _bare(sum_to)

        def fast_sum_to(x, shape):
            if x.size < MIN_SIZE or type(x) is not np.ndarray:
                return sum_to(x, shape)
            lead = x.ndim - len(shape)
            axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape)
                                              if n == 1 and x.shape[i + lead] != 1)
            r = _gemv_sum(x, axes, lambda side: tuple(shape)) if axes else None
            return sum_to(x, shape) if r is None else r
        out["sum_to"] = fast_sum_to
    return out
