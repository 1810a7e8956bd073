"""Regressions found by the differential fuzzer's long runs (:mod:`ember.testing.fuzz`, seeds 2-12) over the day's
fast paths, each pinned against PyTorch 2.13 with the smallest sweep that shows it."""
# ruff: noqa: B023 - each case's lambdas are called at once, inside the loop iteration that makes them
import itertools

import numpy as np
import pytest

import ember
from test_fuzz_classes import _outcome

torch = pytest.importorskip("torch")

# in-place forms whose number arguments are parameters of the op, not operands of its result type
NUMBER_PARAMETERS = {
    "elu_": lambda m, x: m.nn.functional.elu_(x, 0.5),
    "celu_": lambda m, x: m.nn.functional.celu_(x, 0.7),
    "leaky_relu_": lambda m, x: m.nn.functional.leaky_relu_(x, 0.2),
    "rrelu_": lambda m, x: m.nn.functional.rrelu_(x, 0.1, 0.3),
    "lerp_": lambda m, x: x.lerp_(x.clone(), 0.5),
    "threshold_": lambda m, x: m.nn.functional.threshold_(x, 0.1, 2.0),  # (bool: refused as threshold's)
    "hardtanh_": lambda m, x: m.nn.functional.hardtanh_(x, -0.3, 0.2),
    # numbers that are operands: the cast into self is refused first, as PyTorch's TensorIterator does
    "clamp_": lambda m, x: x.clamp_(0.5),
    "pow_": lambda m, x: x.pow_(0.5),
    "copysign_": lambda m, x: x.copysign_(1.5),
    # a comparison writes bool, which casts into any self: the kernel's refusal of complex answers
    "lt_": lambda m, x: x.lt_(m.ones(3, dtype=m.complex64, device=x.device)),
    "ge_": lambda m, x: x.ge_(m.ones(3, dtype=m.complex64, device=x.device)),
}


def _inplace(m, name, dtype, device=None):
    x = m.tensor([[1, 0, 2], [3, 1, 0]]).to(getattr(m, dtype))
    if device is not None:
        x = x.to(device)
    r = NUMBER_PARAMETERS[name](m, x)
    return str(r.dtype).split(".")[-1], r.tolist()


def test_inplace_number_parameters_do_not_promote_as_pytorch(device):
    """``int.elu_(0.5)`` fails on the kernel's dtype (NotImplementedError) as PyTorch's: alpha, the slope, the
    rrelu bounds and lerp's weight are parameters, not operands, so no cast check of a float result type answers
    first (the in-place cast check counted every number and raised RuntimeError); a number operand (clamp's bound,
    pow's exponent, copysign's other) still meets PyTorch's cast RuntimeError, and what computes agrees.  The
    in-place threshold refuses bool input as the out-of-place one does (it computed); ``int.lt_(complex)`` fails on
    the kernel's dtype too."""
    bad = []
    for name, dtype in itertools.product(NUMBER_PARAMETERS, ("int64", "int32", "uint8", "bool", "float32")):
        got = _outcome(lambda: _inplace(ember, name, dtype, device))
        want = _outcome(lambda: _inplace(torch, name, dtype))
        if got != want:
            bad.append(f"{name} {dtype}: ember {got}, PyTorch {want}")
    assert not bad, f"{len(bad)} cases differ:\n" + "\n".join(bad)


NAN = float("nan")
# symmetric matrices with a NaN on the diagonal or beside a zero column (the NaN at [0, 0] of a real matrix whose
# column is nonzero is left out: PyTorch's real LAPACK pivots past it, its complex one stops, an accident of NaN's
# comparisons listed in fuzz_known_differences.py)
LDL_NAN = [[[0, 0, 0], [0, NAN, 0], [0, 0, 1]], [[1, 2, 0], [2, NAN, 1], [0, 1, 3]],
           [[0, 1, 0], [1, 0, NAN], [0, NAN, 0]], [[2, 1], [1, NAN]]]


def _ldl(m, matrix, dtype, device=None):
    r = m.linalg.ldl_factor_ex(m.tensor(matrix, dtype=getattr(m, dtype), device=device))
    return m.view_as_real(r.LD.to(m.complex128)).tolist(), r.pivots.tolist(), int(r.info)


def test_ldl_of_a_nan_diagonal_stops_as_pytorch(device):
    """``ldl_factor_ex`` of a matrix whose diagonal entry is NaN leaves that column unpivoted and reports it in
    ``info``, as LAPACK's sytf2 does (ember's pivot search took a 2x2 block at the last row and failed with
    IndexError, and ZeroDivisionError before that)."""
    for matrix, dtype in itertools.product(LDL_NAN, ("float64", "complex128")):
        got, want = _ldl(ember, matrix, dtype, device), _ldl(torch, matrix, dtype)
        assert got[1:] == want[1:], (matrix, dtype)
        assert np.allclose(got[0], want[0], equal_nan=True), (matrix, dtype)


def _solve_triangular(m, a_dtype, b_dtype, left, device=None):
    a = (m.triu(m.arange(1.0, 10.0).reshape(3, 3)) + m.eye(3)).to(getattr(m, a_dtype))
    b = m.tensor([[1.0, 2.0], [0.0, 3.0], [1.0, 1.0]]).to(getattr(m, b_dtype))
    if device is not None:
        a, b = a.to(device), b.to(device)
    a.requires_grad_(True)
    x = m.linalg.solve_triangular(a, b if left else b.mT, upper=True, left=left)
    x.sum().backward()
    return str(x.dtype).split(".")[-1], np.round(x.tolist(), 5).tolist(), np.round(a.grad.tolist(), 5).tolist()


def test_solve_triangular_casts_b_to_a_dtype_as_pytorch(device):
    """``linalg.solve_triangular`` solves in A's dtype, B of any dtype cast to it (float16, integer and bool B
    computed in PyTorch, where ember checked B's own dtype against the LAPACK kernel's; a float64 B gave float64):
    found by the fuzzer's seed 11 at 6000 calls, there at the start of the day."""
    halves = ("float16",) if device != "array_api" else ()  # (the strict array API has no float16)
    for a_dtype, b_dtype, left in itertools.product(("float32", "float64"), (*halves, "int64", "bool", "float64"),
                                                    (True, False)):
        got = _outcome(lambda: _solve_triangular(ember, a_dtype, b_dtype, left, device))
        assert got == _outcome(lambda: _solve_triangular(torch, a_dtype, b_dtype, left)), (a_dtype, b_dtype, left)


def test_linear_with_a_bias_of_another_dtype_names_it_as_pytorch(device):
    msgs = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x, w = (lib.ones(*s, dtype=lib.float32, device=dev) for s in ((2, 3), (4, 3)))
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.linear(x, w, lib.ones(4, dtype=lib.float64, device=dev))
        msgs.append(str(info.value).removeprefix("linear: "))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss"])
def test_pointwise_losses_refuse_non_float_operands_as_pytorch(device, name):
    """Integer, bool and complex operands (after promotion) are refused with PyTorch's NotImplementedError."""
    kinds = ("int32", "uint8", "bool", "float32") + (("complex64",) if device != "array_api" else ())
    for a, b in itertools.product(kinds, ("int64", "float32")):
        got, want = [], []
        for lib, dev, out in ((ember, device, got), (torch, "cpu", want)):
            x, t = lib.ones(3, dtype=getattr(lib, a), device=dev), lib.ones(3, dtype=getattr(lib, b), device=dev)
            try:
                out.append(getattr(lib.nn.functional, name)(x, t).item())
            except (NotImplementedError, RuntimeError) as e:
                out.append((type(e).__name__, str(e).replace(f"_{dev}\"", "_cpu\"")))  # (the kernel's device)
        assert got == want, (a, b)
