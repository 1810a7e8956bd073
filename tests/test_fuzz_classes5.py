"""Classes of disagreement with PyTorch found by the differential fuzzer's runs of seeds 2-12 at 2000 calls
(:mod:`ember.testing.fuzz`), each swept over its ops, forms and dtypes against PyTorch 2.13: the same calls compute
the same values and gradients, and the same ones raise the same exception class."""
# ruff: noqa: B023 - each case's lambdas are called at once, inside the loop iteration that makes them
import itertools

import numpy as np
import pytest

import ember
from test_fuzz_classes import _have
from test_fuzz_classes4 import _check

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")


def _on(device, *ts):
    """The tensors on ``device`` (PyTorch's side passes no device: they stay where they are)."""
    return ts if device is None else tuple(t.to(device) for t in ts)


# --------------------------------------------------------------------------- floor division at inf, NaN and zero
QUOTIENT_VALUES = [INF, -INF, NAN, 0.0, -0.0, 5.0, -5.0, 0.1, -0.1, 7.5, 3.0, 1e30, 1e-30]
FLOOR_FORMS = {"div": lambda m, a, b: m.div(a, b, rounding_mode="floor"),
               "floor_divide": lambda m, a, b: m.floor_divide(a, b), "operator": lambda m, a, b: a // b,
               "number": lambda m, a, b: a // 2.5,
               "inplace": lambda m, a, b: a.clone().floor_divide_(b)}


def _floor_division(m, form, divisor, dtype, device=None):
    a = m.tensor(QUOTIENT_VALUES, dtype=getattr(m, dtype))
    b = m.full((len(QUOTIENT_VALUES),), divisor, dtype=getattr(m, dtype))
    a, b = _on(device, a, b)
    return FLOOR_FORMS[form](m, a, b).float().tolist()


def test_floor_division_of_floats_as_pytorch(device):
    """Floor division of floating operands is PyTorch's (Python's float ``//``), computed from ``fmod``: ``inf // 3``
    is NaN, ``-5 // inf`` is -1, ``5 // 0.1`` is 49, a zero divisor gives the true quotient.  Before: ember took
    ``floor(a / b)`` (inf, -0, 50), and 203 of the 260 cases differed."""
    cases = list(itertools.product(FLOOR_FORMS, QUOTIENT_VALUES, _have(device, ("float32", "float64", "bfloat16",
                                                                                 "float16"))))
    _check(cases, _floor_division, device)


def _remainder_grad(m, divisor, dtype, device=None):
    a = m.tensor(QUOTIENT_VALUES, dtype=getattr(m, dtype))
    b = m.full((len(QUOTIENT_VALUES),), divisor, dtype=getattr(m, dtype))
    a, b = _on(device, a, b)
    a.requires_grad_(True)
    b.requires_grad_(True)
    m.remainder(a, b).sum().backward()
    return a.grad.tolist(), b.grad.tolist()


def test_remainder_gradient_of_the_divisor_as_pytorch(device):
    """The divisor's gradient of ``remainder`` is ``-g * (a // b)`` with PyTorch's floor division (NaN at an infinite
    dividend, -49 at ``5 % 0.1``).  Before: 30 of the 39 cases differed."""
    _check(list(itertools.product(QUOTIENT_VALUES, _have(device, ("float32", "float64", "bfloat16")))),
           _remainder_grad, device)


# --------------------------------------------------------------------------- cosine similarity as PyTorch composes it
COSINE_ROWS = [[1.0, 2.0, 3.0], [1e-9, 0.0, 0.0], [0.0, 0.0, 0.0], [INF, 1.0, 2.0], [NAN, 1.0, 2.0],
               [-INF, INF, 0.0], [1e20, 1.0, 1.0], [0.5, -0.2, 0.1]]


def _cosine(m, form, i, j, dtype, device=None):
    a = m.tensor([COSINE_ROWS[i], [0.3, 0.2, -0.1]], dtype=getattr(m, dtype))
    b = m.tensor([COSINE_ROWS[j], [0.1, 0.1, 0.4]], dtype=getattr(m, dtype))
    c = m.tensor([[0.2, -0.3, 0.5], [0.6, 0.1, 0.1]], dtype=getattr(m, dtype))
    a, b, c = _on(device, a, b, c)
    for t in (a, b):
        t.requires_grad_(True)
    f = m.nn.functional
    if form == "cosine_similarity":  # (a zero weight on a row: its gradient is 0 * its partials)
        y = f.cosine_similarity(a, b) * m.tensor([0.7, 0.0], dtype=a.dtype, device=a.device)
    else:
        y = f.triplet_margin_with_distance_loss(c, a, b, distance_function=lambda u, v: 1 - f.cosine_similarity(u, v))
    y.sum().backward()
    return tuple(t.detach().float().tolist() for t in (y, a.grad, b.grad))


def test_cosine_similarity_values_and_gradients_as_pytorch(device):
    """cosine_similarity is PyTorch's composition, ``sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps))`` with the
    norms clamped outside the graph, so its values at tiny norms (``1e-9`` against itself: 0.01) and its gradients at
    zero, inf and NaN rows (NaN over the whole row, also through a loss that gives the row a zero gradient) are
    PyTorch's; the 2-norm's gradient masks its zero before the product, so a NaN gradient stays NaN there.  Before:
    123 of the 256 cases differed (the fuzzer's triplet_margin_with_distance_loss case among them)."""
    cases = list(itertools.product(("cosine_similarity", "triplet"), range(len(COSINE_ROWS)), range(len(COSINE_ROWS)),
                                   _have(device, ("float32", "float64"))))
    _check(cases, _cosine, device)


# --------------------------------------------------------------------------- multilabel margin loss at NaN and inf
MARGIN_TARGETS = ([2, 0, -1, 1], [3, 1, 2, 0], [-1, 0, 1, 2], [1, -1, 3, 3])


def _multilabel(m, position, special, target, reduction, dtype, device=None):
    v = [0.4, -0.25, -0.1, 0.3]
    v[position] = special
    x = m.tensor([v, [0.1, 0.2, 0.3, 0.4]], dtype=getattr(m, dtype))
    t = m.tensor([MARGIN_TARGETS[target], [0, 1, -1, 2]])
    x, t = _on(device, x, t)
    x.requires_grad_(True)
    loss = m.nn.functional.multilabel_margin_loss(x, t, reduction=reduction)
    w = m.tensor([0.7, 1.3][:loss.numel()], dtype=loss.dtype, device=loss.device).reshape(loss.shape)
    (loss * w).sum().backward()
    return loss.tolist(), x.grad.tolist()


def test_multilabel_margin_loss_at_nan_and_inf_as_pytorch(device):
    """multilabel_margin_loss adds a hinge term only where ``1 - x[target] + x[other] > 0``, as PyTorch's kernel: a
    NaN term adds nothing to the loss or the gradient (an inf one adds inf).  Before: ember's relu kept NaN, and 32 of
    the 256 cases differed."""
    cases = list(itertools.product(range(4), (NAN, INF, -INF, 0.5), range(len(MARGIN_TARGETS)), ("none", "sum"),
                                   _have(device, ("float32", "float64"))))
    _check(cases, _multilabel, device)


# --------------------------------------------------------------------------- lu_solve and lu_unpack dtypes
LU_DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "int64", "bool")
LU_FORMS = {"left": lambda m, LU, p, B: m.linalg.lu_solve(LU, p, B),
            "right": lambda m, LU, p, B: m.linalg.lu_solve(LU, p, B.mT, left=False),
            "adjoint": lambda m, LU, p, B: m.linalg.lu_solve(LU, p, B, adjoint=True),
            "legacy": lambda m, LU, p, B: m.lu_solve(B, LU, p)}
LU_A = [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]
LU_B = [[1.0, 2.0], [0.0, 1.0], [3.0, 1.0]]


def _lu_solve(m, form, lu_dtype, b_dtype, device=None):
    LU, p = m.linalg.lu_factor(m.tensor(LU_A, dtype=m.float64))
    LU, p, B = _on(device, LU.to(getattr(m, lu_dtype)), p, m.tensor(LU_B).to(getattr(m, b_dtype)))
    x = LU_FORMS[form](m, LU, p, B)
    return str(x.dtype).split(".")[-1], x.to(m.complex128).tolist()


@pytest.mark.filterwarnings("ignore:torch.lu_solve is deprecated")
def test_lu_solve_refuses_two_dtypes_as_pytorch(device):
    """linalg.lu_solve (and the legacy ``torch.lu_solve``) refuse an LU and a B of two dtypes with PyTorch's
    RuntimeError, in every form.  Before: ember promoted them (or refused in its matrix product), and 84 of the 196
    cases differed."""
    cases = list(itertools.product(LU_FORMS, _have(device, LU_DTYPES), _have(device, LU_DTYPES)))
    _check(cases, _lu_solve, device)


def _lu_unpack(m, dtype, shape, data, pivots, device=None):
    LU = m.tensor(np.arange(np.prod(shape)).reshape(shape) % 5 - 1.0).to(getattr(m, dtype))
    k = min(shape[-2:])
    piv = m.tensor(np.full(shape[:-2] + (k,), shape[-2]), dtype=m.int32)
    LU, piv = _on(device, LU, piv)
    return tuple((str(t.dtype).split(".")[-1], tuple(t.shape), t.to(m.complex128).tolist())
                 for t in m.lu_unpack(LU, piv, data, pivots))


def test_lu_unpack_of_every_dtype_as_pytorch(device):
    """lu_unpack selects and permutes, so it takes an LU of any dtype (integers, bool, half precision), as PyTorch's.
    Before: ember refused all but float32/64 and complex, and 120 of the 180 cases differed."""
    cases = list(itertools.product(_have(device, ("float32", "float64", "float16", "bfloat16", "complex64", "int64",
                                                  "int32", "uint8", "bool")),
                                   [(3, 3), (2, 3, 3), (3, 2), (2, 3), (0, 3, 3)], (True, False), (True, False)))
    _check(cases, _lu_unpack, device)


# --------------------------------------------------------------------------- empty half-precision linear algebra
EMPTY_LINALG = {"geqrf": lambda m, x: m.geqrf(x)[0], "qr": lambda m, x: m.linalg.qr(x)[0],
                "householder_product": lambda m, x: m.linalg.householder_product(x, x[..., 0, :]),
                "ormqr": lambda m, x: m.ormqr(x, x[..., 0, :], x),
                "cholesky_inverse": lambda m, x: m.cholesky_inverse(x),
                "solve_triangular": lambda m, x: m.linalg.solve_triangular(x, x, upper=True),
                "triangular_solve": lambda m, x: m.triangular_solve(x, x)[0],
                "eigvals": lambda m, x: m.linalg.eigvals(x), "eig": lambda m, x: m.linalg.eig(x)[0]}


def _empty_linalg(m, op, dtype, shape, device=None):
    (x,) = _on(device, m.zeros(shape, dtype=getattr(m, dtype)))
    r = EMPTY_LINALG[op](m, x)
    return str(r.dtype).split(".")[-1], tuple(r.shape)


def test_linear_algebra_refuses_half_precision_even_when_empty_as_pytorch(device):
    """The LAPACK kernels that dispatch on the dtype before looking at the size (geqrf and qr, orgqr, ormqr,
    cholesky_inverse, triangular solves, eig) refuse float16 and bfloat16 also for an empty input, with PyTorch's
    NotImplementedError.  Before: ember returned the empty result (a float64 one for qr of bfloat16), and 46 of the
    72 cases differed."""
    cases = list(itertools.product(EMPTY_LINALG, _have(device, ("float16", "bfloat16")),
                                   [(0, 3, 3), (0, 0), (2, 0, 0), (3, 3)]))
    _check(cases, _empty_linalg, device)


# --------------------------------------------------------------------------- non-constant padding and stft
PAD_SHAPES = [(1, 0, 20), (0, 3, 4), (2, 0, 4), (2, 3, 0), (0, 4), (3, 0), (1, 2, 0, 4), (0, 2, 3, 4), (4,),
              (2, 3, 4)]
PAD_WIDTHS = [(1, 1), (0, 0), (1, 1, 1, 1)]


def _pad(m, shape, mode, widths, device=None):
    (x,) = _on(device, m.arange(float(np.prod(shape))).reshape(shape))
    return m.nn.functional.pad(x, widths, mode=mode).tolist()


def test_non_constant_padding_checks_the_dims_as_pytorch(device):
    """reflect, replicate and circular padding take one, two or three padded dims on an input with one or no batch
    dim more (PyTorch's NotImplementedError otherwise), and reflect and replicate refuse an empty dim other than the
    batch dim with PyTorch's RuntimeError.  Before: ember padded any rank and empty dims (or failed with an
    IndexError), and 46 of the 120 cases differed."""
    cases = list(itertools.product(PAD_SHAPES, ("reflect", "replicate", "circular", "constant"), PAD_WIDTHS))
    _check(cases, _pad, device)


def _stft(m, shape, center, mode, device=None):
    (x,) = _on(device, m.arange(float(np.prod(shape))).reshape(shape))
    r = m.stft(x, 8, hop_length=2, window=m.hann_window(8, device=x.device), center=center, pad_mode=mode,
               return_complex=True)
    return tuple(r.shape), r.abs().sum().item()  # (the values are the stft tests'; here: what computes)


def test_stft_of_no_signals_as_pytorch(device):
    """stft pads its signals as the channels of one batch, as PyTorch's: no signals (or empty ones) with reflect or
    replicate centring are refused as that padding refuses them.  Before: 6 of the 28 cases differed (MKL's
    refusals of some empty transforms are a listed difference and not swept)."""
    cases = list(itertools.product([(0,), (2, 0), (0, 20), (0, 5), (1, 20)], (True, False),
                                   ("reflect", "constant", "replicate", "circular")))
    cases = [c for c in cases if c[0] == (1, 20) or c[0] in ((0,), (2, 0)) or c[2] in ("reflect", "replicate")
             and c[1]]
    _check(cases, _stft, device)


# --------------------------------------------------------------------------- as_strided_scatter into a dense layout
STRIDED_VIEWS = {"fresh": lambda m: m.arange(24).reshape(2, 3, 4).clone(),
                 "view": lambda m: m.arange(24).reshape(2, 3, 4),
                 "transposed": lambda m: m.arange(24).reshape(2, 3, 4).mT,
                 "permuted": lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 2, 0),
                 "matrix_t": lambda m: m.arange(12).reshape(3, 4).t()}
STRIDED_GEOMETRIES = [((2, 2), (1, 2), 1), ((3,), (4,), 0), ((2, 3), (3, 1), 2), ((4,), (1,), 5), ((2, 2), (6, 1), 0),
                      ((5,), (5,), 0)]


def _as_strided_scatter(m, view, geometry, dtype, form, device=None):
    size, stride, offset = STRIDED_GEOMETRIES[geometry]
    (x,) = _on(device, STRIDED_VIEWS[view](m).to(getattr(m, dtype)))
    (src,) = _on(device, (m.arange(int(np.prod(size))) + 100).reshape(size).to(getattr(m, dtype)))
    if form == "method":
        return x.as_strided_scatter(src, size, stride, offset).tolist()
    return m.as_strided_scatter(x, src, size, stride, offset).tolist()


def test_as_strided_scatter_writes_in_the_input_layout_as_pytorch(device):
    """as_strided_scatter reads its positions in the storage of a copy of the input laid out as the input (PyTorch's
    clone that preserves strides): for a transposed or permuted input, storage position 1 is the element below the
    first.  Before: ember read them in a row-major copy (and refused a contiguous view of another tensor's storage),
    and 80 of the 120 cases differed.  (A non-dense input, whose copy PyTorch takes of its whole storage, is not
    swept: ember reads it row-major.)"""
    strided = not ember.zeros(2, 3, device=device).t().is_contiguous()  # (a backend without strided views copies)
    views = [v for v in STRIDED_VIEWS if strided or v in ("fresh", "view")]
    cases = list(itertools.product(views, range(len(STRIDED_GEOMETRIES)), _have(device, ("int64", "float32")),
                                   ("function", "method")))
    _check(cases, _as_strided_scatter, device)


# --------------------------------------------------------------------------- lerp's two-sided formula, quantile
LERP_START = [-INF, 1.0, 3.0, 1.0, 0.1, INF, 0.0, -2.0]
LERP_END = [1.0, INF, INF, 1e30, 0.7, INF, NAN, 5.0]
LERP_FORMS = {"function": lambda m, a, b, w: m.lerp(a, b, w), "method": lambda m, a, b, w: a.lerp(b, w),
              "inplace": lambda m, a, b, w: a.clone().lerp_(b, w),
              "tensor_weight": lambda m, a, b, w: m.lerp(a, b, m.full(a.shape, w, dtype=a.dtype, device=a.device))}


def _lerp(m, form, weight, dtype, device=None):
    a, b = _on(device, m.tensor(LERP_START, dtype=getattr(m, dtype)), m.tensor(LERP_END, dtype=getattr(m, dtype)))
    return LERP_FORMS[form](m, a, b, weight).float().tolist()


def test_lerp_from_the_nearer_end_as_pytorch(device):
    """lerp is PyTorch's two-sided formula: ``start + w (end - start)`` below |w| = 0.5, ``end - (end - start)(1 - w)``
    from there (exact at w = 1; an infinite end gives NaN only on the far side), and float16/bfloat16 compute in
    float32 and round once.  Before: ember took the first form for every weight, in the input's dtype, and 79 of the
    96 cases differed."""
    cases = list(itertools.product(LERP_FORMS, (0.3, 0.5, 0.7, 1.0, -0.2, 1.5),
                                   _have(device, ("float32", "float64", "bfloat16", "float16"))))
    _check(cases, _lerp, device)


QUANTILE_ROWS = ([-INF, 1.0, 2.0, 3.0], [-INF, -INF, 1.0, 2.0], [1.0, 2.0, INF, 3.0], [INF, INF, 1.0], [-INF, INF, 0.0])


def _quantile(m, row, q, interpolation, dtype, device=None):
    (x,) = _on(device, m.tensor(QUANTILE_ROWS[row], dtype=getattr(m, dtype)))
    return m.quantile(x, q, interpolation=interpolation).item(), m.nanquantile(x, q, interpolation=interpolation).item()


def test_quantile_beside_an_infinity_as_pytorch(device):
    """quantile interpolates with PyTorch's lerp, so a quantile between -inf and a finite value is -inf from the
    midpoint on (and NaN before it), and one between a finite value and inf NaN from there.  Before: 18 of the 90
    cases differed."""
    cases = list(itertools.product(range(len(QUANTILE_ROWS)), (0.1, 0.5, 0.9), ("linear", "midpoint", "lower"),
                                   _have(device, ("float32", "float64"))))
    _check(cases, _quantile, device)


def _polygamma(m, n, dtype, device=None):
    (x,) = _on(device, m.tensor([INF, -INF, NAN, 0.0, -2.5, 1.0, 1e30, 0.5, 3.7], dtype=getattr(m, dtype)))
    return m.polygamma(n, x).float().tolist()


def test_polygamma_at_infinities_as_pytorch(device):
    """polygamma of order 2 and up is ``n! zeta(n + 1, x)``, NaN at x = inf as PyTorch's zeta; trigamma is NaN at
    -inf (its reflection step).  (Its values at the poles of negative integers are PyTorch's float sin(pi x)
    accidents and are not swept.)  Before: 10 of the 12 cases differed."""
    _check(list(itertools.product(range(6), _have(device, ("float32", "float64")))), _polygamma, device)


# --------------------------------------------------------------------------- threshold's numbers in the input's dtype
THRESHOLD_NUMBERS = (NAN, INF, -1.0, 300.0, 1e10, 2.5, 1e40, 3, -129)
THRESHOLD_FORMS = {"function": lambda m, x, t, v: m.nn.functional.threshold(x, t, v),
                   "inplace": lambda m, x, t, v: m.nn.functional.threshold_(x.clone(), t, v),
                   "torch": lambda m, x, t, v: m.threshold(x, t, v)}


def _threshold(m, form, dtype, threshold, value, device=None):
    (x,) = _on(device, m.tensor([0, 1, 5, 200]).to(getattr(m, dtype)))
    r = THRESHOLD_FORMS[form](m, x, threshold, value)
    return str(r.dtype).split(".")[-1], r.float().tolist()


def test_threshold_refuses_numbers_its_dtype_cannot_hold_as_pytorch(device):
    """threshold converts its threshold and value to the input's dtype as PyTorch does, refusing what overflows it
    (NaN, inf or an out-of-range float for an integer input, a finite float beyond a floating type's range; float16
    and bfloat16 compare with the threshold in float32).  Before: ember cast them (or failed in NumPy with an
    OverflowError), and 681 of the 1215 cases differed."""
    cases = list(itertools.product(THRESHOLD_FORMS, _have(device, ("uint8", "int32", "int64", "float16", "float32")),
                                   THRESHOLD_NUMBERS, THRESHOLD_NUMBERS))
    _check(cases, _threshold, device)


# --------------------------------------------------------------------------- chunk of an empty dim
def _chunk(m, shape, chunks, dim, form, device=None):
    (x,) = _on(device, m.zeros(shape))
    x.requires_grad_(True)
    r = m.chunk(x, chunks, dim) if form == "function" else x.chunk(chunks, dim)
    return tuple((tuple(t.shape), t.grad_fn.name()) for t in r)


def test_chunk_of_an_empty_dim_as_pytorch(device):
    """chunk of an empty dim gives ``chunks`` empty pieces (PyTorch splits it with sizes), not one.  Before: 24 of
    the 48 cases differed."""
    cases = list(itertools.product([(0, 2), (2, 0), (0,), (5, 2)], (1, 2, 3), (0, -1), ("function", "method")))
    _check(cases, _chunk, device)


# --------------------------------------------------------------------------- multi_margin_loss's terms and weight dtype
def _multi_margin(m, position, special, p, weight, reduction, dtype, device=None):
    v = [0.4, -0.25, -0.1, 0.3, 0.2]
    v[position] = special
    x = m.tensor([v, [0.1, 0.2, 0.3, 0.4, 0.5]], dtype=getattr(m, dtype))
    w = None if weight is None else m.tensor([1.0, 0.5, weight, 2.0, 1.5], dtype=getattr(m, dtype))
    x, t = _on(device, x, m.tensor([2, 4]))
    (w,) = (None,) if w is None else _on(device, w)
    x.requires_grad_(True)
    loss = m.nn.functional.multi_margin_loss(x, t, p=p, weight=w, reduction=reduction)
    w = m.tensor([0.7, 1.3][:loss.numel()], dtype=loss.dtype, device=loss.device).reshape(loss.shape)
    (loss * w).sum().backward()
    return loss.tolist(), x.grad.tolist()


def test_multi_margin_loss_at_nan_and_inf_as_pytorch(device):
    """multi_margin_loss adds (and differentiates) only the terms of the other classes with ``margin - x[y] + x[i] >
    0``, as PyTorch's kernel: a NaN term adds nothing, and an infinite class weight multiplies no skipped term.
    Before: 256 of the 480 cases differed."""
    cases = list(itertools.product(range(5), (NAN, INF, -INF, 0.5), (1, 2), (None, INF, NAN), ("none", "sum"),
                                   _have(device, ("float32", "float64"))))
    _check(cases, _multi_margin, device)


# --------------------------------------------------------------------------- the input dtype of addmm's family
ADD_PRODUCTS = {"addmm": lambda m, i, d: m.addmm(i(4), d(2, 3), d(3, 4)),
                "addmv": lambda m, i, d: m.addmv(i(2), d(2, 3), d(3)),
                "addbmm": lambda m, i, d: m.addbmm(i(2, 4), d(5, 2, 3), d(5, 3, 4)),
                "baddbmm": lambda m, i, d: m.baddbmm(i(5, 2, 4), d(5, 2, 3), d(5, 3, 4)),
                "addr": lambda m, i, d: m.addr(i(2, 3), d(2), d(3)),
                "method": lambda m, i, d: i(2, 4).addmm(d(2, 3), d(3, 4)),
                "inplace": lambda m, i, d: i(2, 4).addmm_(d(2, 3), d(3, 4)),
                "margin_weight": lambda m, i, d: m.nn.functional.multi_margin_loss(d(2, 5), (d(2) + 1).long(),
                                                                                   weight=i(5))}


def _add_product(m, op, input_dtype, dtype, device=None):
    def make(dt):
        return lambda *shape: m.ones(*shape, device=device).to(getattr(m, dt))
    r = ADD_PRODUCTS[op](m, make(input_dtype), make(dtype))
    return str(r.dtype).split(".")[-1], r.float().tolist()


def test_matrix_product_sums_refuse_an_input_of_another_dtype_as_pytorch(device):
    """addmm, addmv, addbmm and baddbmm (their methods and in-place forms) refuse an input of another dtype than
    their matrices with PyTorch's RuntimeError (addr promotes, as PyTorch's), and so does multi_margin_loss a weight
    of another dtype than its input.  Before: ember promoted them, and 124 of the 200 cases differed."""
    cases = list(itertools.product(ADD_PRODUCTS, _have(device, ("float32", "float64", "bfloat16", "int64", "float16")),
                                   _have(device, ("float32", "float64", "bfloat16", "int64", "float16"))))
    _check(cases, _add_product, device)


# --------------------------------------------------------------------------- mode of a NaN
def _mode(m, value, shape, dim, keepdim, dtype, device=None):
    (x,) = _on(device, m.full(shape, value, dtype=getattr(m, dtype)))
    r = x.mode(dim, keepdim)
    return r.values.float().tolist(), r.indices.tolist()


def test_mode_of_a_nan_as_pytorch(device):
    """mode of a row of one NaN finds its index (a NaN equals no value, the mode's own included).  Before: ember
    failed in gather with index -1, on 24 of the 72 cases.  (Rows holding NaN beside other values are a listed
    difference: PyTorch's sort leaves them in an unspecified order.)"""
    cases = list(itertools.product((NAN, INF, 2.0), [(1, 1, 1), (1, 3, 1), (1,)], (-1, 0), (True, False),
                                   _have(device, ("float32", "bfloat16"))))
    _check(cases, _mode, device)
