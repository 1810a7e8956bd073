"""Faster stand-ins for some CPU kernels, which the compiled replay calls on NumPy arrays (:mod:`.replay`).

Each serves one case (float32, contiguous, large enough to pay) and hands every other call to the kernel it
replaces.  All reorder or approximate the arithmetic, so a compiled graph using one matches eager mode within
float32 tolerance, not bit for bit.  :func:`overrides` lists those standing in for kernels called by Ops
(softmax, its backward, sums, means, ``index_add``); :func:`substitute` the one for fused elementwise runs:

``erf`` on the CPU backend is SciPy's ufunc, which evaluates element by element in double precision (about
10 ns an element: a training step of a GELU network spends most of its GELU backward there).
:func:`erf_float32` computes it with NumPy ufunc passes over cache-sized chunks, 3x faster, within 2.5 ulp
of the exact value (SciPy's float32 result is correctly rounded).  Its two polynomials were fitted here, by
least squares on Chebyshev nodes against float64 ``erf``: ``erf(x) = x * P(x*x)`` for ``|x| < 0.6`` and
``erf(x) = 1 - exp(Q(|x| - 0.6))`` above, ``|x|`` clamped at 4 (where float32 ``erf`` is 1; the clamp also
keeps +-inf finite through the polynomial, and NaN passes).
"""
from __future__ import annotations

import numpy as np

from ..kernels import _ignoring_fp_errors

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
_QUIET = _ignoring_fp_errors()
CHUNK = 32768
"""Elements per pass (measured best on 262144 elements: the scratch buffers stay in the L2 cache)."""
MIN_SIZE = 4096
"""Arrays below this size keep the replaced kernel (the chunked passes cost a few microseconds of calls)."""


def _horner(coeffs, x, out):
    """``sum(coeffs[k] * x**k)`` into ``out`` (float32, one ufunc call per step)."""
    np.multiply(x, coeffs[-1], out=out)
    out += coeffs[-2]
    for c in coeffs[-3::-1]:
        out *= x
        out += c


def erf_float32(x):
    """``erf`` of a float32 NumPy array (see the module docstring)."""
    out = np.empty(x.shape, np.float32)
    src, dst = x.reshape(-1), out.reshape(-1)
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
    return out


def substitute(kernel_name, kernel, dtype, atype):
    """A faster stand-in for backend kernel ``kernel_name`` (the function ``kernel``) on arrays of ``dtype``
    and array type ``atype`` (NumPy's float32 only), or None.  Arrays below :data:`MIN_SIZE` elements keep
    ``kernel``."""
    if kernel_name == "erf" and dtype == np.float32 and atype is np.ndarray:
        def erf(x):
            return erf_float32(x) if x.size >= MIN_SIZE and x.dtype == np.float32 else kernel(x)
        return erf
    return None


# --------------------------------------------------------------------------- reductions along one end of an array
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
    out = np.ones(rows, np.float32) @ x2 if side == "left" else x2 @ np.ones(cols, np.float32)
    return out.reshape(keep_shape(side))


def _axes(axis, nd):
    return tuple(range(nd)) if axis is None else tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)


def _kept(x, axes, keepdims):
    nd = x.ndim
    red = {a % nd for a in axes}
    return lambda side: tuple(1 if i in red else n for i, n in enumerate(x.shape) if keepdims or i not in red)


@_QUIET
def _softmax_rows(x):
    """Softmax along the last axis of C-contiguous float32 ``x`` (inside the floating-point-error guard: a row
    with no finite entry meets ``-inf - -inf``, NaN as in eager mode)."""
    n = x.shape[-1]
    rows = x.reshape(-1, n)
    top = np.maximum.reduce(np.ascontiguousarray(rows.T), axis=0)
    e = rows - top[:, None]
    np.exp(e, out=e)
    e /= (e @ np.ones(n, np.float32))[:, None]
    return e.reshape(x.shape)


def overrides(kernels, atype):
    """Stand-ins for some of backend ``kernels`` (each falls back to the kernel it replaces outside its case),
    for a replay on arrays of type ``atype``: ``{}`` unless those are NumPy's.

    * ``softmax`` along the last axis of a float32 array: the row maxima from the rows laid out as columns
      (NumPy's ``max`` along a short inner axis is ~10x slower than along the outer one), the row sums as a
      matrix-vector product; its backward's row sums likewise;
    * ``sum``, ``mean`` and ``sum_to`` over the leading axes or the last one: a matrix-vector product;
    * ``index_add`` of float32 rows (an embedding's gradient): the rows sorted by index and summed per index
      (``reduceat``), 6x faster than ``np.add.at``'s element-by-element accumulation.

    Each sums in another order than NumPy's reduction: results agree within float32 tolerance.  A stand-in is
    called as the kernels are, outside any floating-point-error guard: its fallback calls the guarded kernel
    (a guard entered twice takes a slow path), and its own work enters the guard where it needs it."""
    if atype is not np.ndarray:
        return {}
    softmax, sum_, mean, sum_to = (kernels.get(k) for k in ("softmax", "sum", "mean", "sum_to"))
    out = {}

    if softmax is not None:
        def fast_softmax(x, axis):
            if x.size < MIN_SIZE or type(x) is not np.ndarray or x.dtype != np.float32 or x.ndim < 2 or \
                    axis % x.ndim != x.ndim - 1 or not x.flags.c_contiguous or x.shape[-1] < 2:
                return softmax(x, axis)
            return _softmax_rows(x)
        out["softmax"] = fast_softmax

    softmax_backward = kernels.get("softmax_backward")
    if softmax_backward is not None:
        def fast_softmax_backward(g, y, axis):
            if g.size < MIN_SIZE or type(g) is not np.ndarray or type(y) is not np.ndarray or \
                    g.dtype != np.float32 or y.dtype != np.float32 or g.shape != y.shape or \
                    axis % g.ndim != g.ndim - 1 or not (g.flags.c_contiguous and y.flags.c_contiguous):
                return softmax_backward(g, y, axis)
            n = g.shape[-1]
            gy = g * y
            r = g - (gy.reshape(-1, n) @ np.ones(n, np.float32)).reshape(g.shape[:-1] + (1,))
            r *= y
            return r
        out["softmax_backward"] = fast_softmax_backward

    index_add = kernels.get("index_add")
    if index_add is not None:
        def fast_index_add(x, axis, index, src):
            if src.size < MIN_SIZE or axis != 0 or type(x) is not np.ndarray or type(src) is not np.ndarray or \
                    type(index) is not np.ndarray or x.dtype != np.float32 or src.dtype != np.float32 or \
                    index.ndim != 1 or src.ndim < 1 or src.shape != index.shape + x.shape[1:] or \
                    index.dtype.kind not in "iu":
                return index_add(x, axis, index, src)
            order = np.argsort(index, kind="stable")
            keys = index[order]
            if keys[0] < 0:  # (a negative index and its positive twin would be two rows: the general kernel)
                return index_add(x, axis, index, src)
            starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            out = np.array(x, copy=True)
            out[keys[starts]] += np.add.reduceat(src[order], starts, axis=0)
            return out
        out["index_add"] = fast_index_add

    if sum_ is not None:
        def fast_sum(x, axis=None, keepdims=False, dtype=None):
            if x.size < MIN_SIZE:  # (the common small case first: a stand-in must not slow it down)
                return sum_(x, axis, keepdims, dtype)
            axes = _axes(axis, x.ndim)
            r = None if dtype is not None else _gemv_sum(x, axes, _kept(x, axes, keepdims))
            return sum_(x, axis, keepdims, dtype) if r is None else r
        out["sum"] = fast_sum

    if mean is not None:
        def fast_mean(x, axis=None, keepdims=False, dtype=None):
            if x.size < MIN_SIZE:
                return mean(x, axis, keepdims, dtype)
            axes = _axes(axis, x.ndim)
            r = None if dtype is not None else _gemv_sum(x, axes, _kept(x, axes, keepdims))
            if r is None:
                return mean(x, axis, keepdims, dtype)
            r /= np.float32(x.size // max(r.size, 1))
            return r
        out["mean"] = fast_mean

    if sum_to is not None:
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
