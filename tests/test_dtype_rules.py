"""PyTorch's dtype and number rules, swept against PyTorch on every backend: bool operands of ``**`` and ``//``,
integer tensors with out-of-range or negative Python numbers, integer powers with negative exponents, ``lerp``'s
dtype checks, random sampling into integer dtypes, float16/bfloat16 with numbers they cannot hold, and no NumPy
RuntimeWarning from arithmetic, casts or creation.

Each sweep runs the same call in ember (on the test's device) and in PyTorch and compares the outcome: the
exception class when PyTorch raises, else the dtype and the values.
"""
import math
import warnings

import pytest

import ember

pytest.importorskip("torch")


class On:
    """A module (ember or torch) whose ``tensor`` places new tensors on one device."""

    def __init__(self, mod, device=None):
        self.mod, self.device = mod, device

    def __getattr__(self, name):
        return getattr(self.mod, name)

    def tensor(self, data, dtype=None):
        d = getattr(self.mod, dtype) if isinstance(dtype, str) else dtype
        t = self.mod.tensor(data, dtype=d)
        return t.to(self.device) if self.device is not None else t


def need(device, dtype):
    """Skip where the device's backend has no array type for ``dtype``."""
    if not ember.testing.has_dtype(device, getattr(ember, dtype)):
        pytest.skip(f"no {dtype} arrays on {device}")


def outcome(lib, call):
    """``("raises", class name)`` or ``(dtype name, values)`` of ``call(lib)``, with RuntimeWarnings as errors."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            r = call(lib)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return "raises", type(exc).__name__
    return str(r.dtype).split(".")[-1], [_key(v) for v in r.detach().cpu().reshape(-1).tolist()]


def _key(v):
    return "nan" if isinstance(v, float) and math.isnan(v) else v


def sweep(device, torch, cases):
    """The cases (``{label: call}``) whose outcome differs between ember and PyTorch."""
    e, t = On(ember, device), On(torch)
    diffs = {}
    for label, call in cases.items():
        got, want = outcome(e, call), outcome(t, call)
        if got != want:
            diffs[label] = (got, want)
    return diffs


# --------------------------------------------------------------------------- bool ** and //
BOOL_OTHERS = {"True": lambda L: True, "False": lambda L: False, "2": lambda L: 2, "-1": lambda L: -1,
               "2.5": lambda L: 2.5, "bool tensor": lambda L: L.tensor([True, True]),
               "int tensor": lambda L: L.tensor([2, 0]), "float tensor": lambda L: L.tensor([2.0, 0.5])}


def _bool_cases():
    cases = {}
    for on, op in (("**", lambda a, b: a ** b), ("//", lambda a, b: a // b)):
        for name, other in BOOL_OTHERS.items():
            cases[f"bool {on} {name}"] = lambda L, op=op, other=other: op(L.tensor([True, False]), other(L))
            cases[f"{name} {on} bool"] = lambda L, op=op, other=other: op(other(L), L.tensor([True, False]))
    cases["bool.pow(True)"] = lambda L: L.tensor([True, False]).pow(True)
    cases["bool.pow_(False)"] = lambda L: L.tensor([True, False]).pow_(False)
    cases["div(bool, True, trunc)"] = lambda L: L.div(L.tensor([True, False]), True, rounding_mode="trunc")
    return cases


def test_bool_power_and_floor_division_follow_pytorch(device, torch):
    cases = _bool_cases()
    assert len(cases) == 35
    assert sweep(device, torch, cases) == {}


# --------------------------------------------------------------------------- integer tensors, out-of-range numbers
INT_SCALARS = (-1, -255, -256, -300, 255, 256, 300, -1.5, 127.5, -0.5)
INT_OPS = {
    "add": lambda L, x, s: x + s, "radd": lambda L, x, s: s + x, "sub": lambda L, x, s: x - s,
    "rsub": lambda L, x, s: s - x, "mul": lambda L, x, s: x * s, "div": lambda L, x, s: x / s,
    "floordiv": lambda L, x, s: x // s, "rfloordiv": lambda L, x, s: s // x, "remainder": lambda L, x, s: x % s,
    "fmod": lambda L, x, s: x.fmod(s), "lt": lambda L, x, s: x < s, "ge": lambda L, x, s: x >= s,
    "eq": lambda L, x, s: x == s, "clamp min": lambda L, x, s: x.clamp(min=s),
    "clamp max": lambda L, x, s: x.clamp(max=s), "masked_fill": lambda L, x, s: x.masked_fill(x > 0, s),
    "fill_": lambda L, x, s: x.clone().fill_(s), "index_fill": lambda L, x, s: x.index_fill(0, L.tensor([0]), s),
    "where": lambda L, x, s: L.where(x > 0, x, s), "pow": lambda L, x, s: x ** s,
    "bitwise_and": lambda L, x, s: x & s, "add_": lambda L, x, s: x.clone().add_(s),
    "mul_": lambda L, x, s: x.clone().mul_(s), "add alpha": lambda L, x, s: x.add(x, alpha=s),
    "sub alpha": lambda L, x, s: x.sub(x, alpha=s),
}
BOOL_ALPHAS = (2, 0, -1, 1.5, True, False)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
def test_integer_tensors_with_out_of_range_numbers_follow_pytorch(device, torch, dtype):
    cases = {f"{dtype} {name} {s}": lambda L, op=op, s=s: op(L, L.tensor([0, 1, 100], dtype), s)
             for name, op in INT_OPS.items() for s in INT_SCALARS}
    assert len(cases) == 250
    assert sweep(device, torch, cases) == {}


def test_bool_add_with_alpha_follows_pytorch(device, torch):
    cases = {f"{d} add alpha {a}": lambda L, a=a, d=d: L.tensor([1, 0], d).add(L.tensor([1, 1], d), alpha=a)
             for a in BOOL_ALPHAS for d in ("bool", "int64", "float32")}
    assert sweep(device, torch, cases) == {}


# --------------------------------------------------------------------------- integer ** negative integer
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_powers_with_negative_exponents_follow_pytorch(device, torch, dtype):
    base = [-3, -2, -1, 0, 1, 2, 3] if dtype != "uint8" else [0, 1, 2, 3, 4, 5, 6]
    exps = [-1, -2, -3, -1, -5, 2, 0]
    cases = {
        "tensor ** tensor": lambda L: L.tensor(base, dtype) ** L.tensor(exps, "int8"),
        "tensor ** same dtype": lambda L: L.tensor(base, dtype) ** L.tensor([e % 3 for e in exps], dtype),
        "tensor ** 0-d": lambda L: L.tensor(base, dtype) ** L.tensor(-1, "int64"),
        "2 ** tensor": lambda L: 2 ** L.tensor(exps, "int64"),
        "-1 ** tensor": lambda L: L.pow(-1, L.tensor(exps, "int64")),
        "tensor ** -1": lambda L: L.tensor(base, dtype) ** -1,
        "tensor ** 0": lambda L: L.tensor(base, dtype) ** 0,
        "pow_ tensor": lambda L: L.tensor(base, "int64").pow_(L.tensor(exps, "int64")),
    }
    assert sweep(device, torch, cases) == {}


# --------------------------------------------------------------------------- lerp's dtypes
def test_lerp_dtype_rules_follow_pytorch(device, torch):
    def f(L, a, b, w):
        x, y = L.tensor([0.0, 2.0], a), L.tensor([4.0, 4.0], b)
        return L.lerp(x, y, w(L) if callable(w) else w)

    floats = [d for d in ("float16", "float32", "float64") if ember.testing.has_dtype(device, getattr(ember, d))]
    cases = {}
    for a in floats:
        for b in floats:
            cases[f"lerp {a} {b} 0.5"] = lambda L, a=a, b=b: f(L, a, b, 0.5)
            cases[f"lerp {a} {a} weight {b}"] = lambda L, a=a, b=b: f(L, a, a, lambda L: L.tensor([0.5, 0.25], b))
            cases[f"lerp {a} {a} 0-d weight {b}"] = lambda L, a=a, b=b: f(L, a, a, lambda L: L.tensor(0.5, b))
            cases[f"lerp_ {a} {b}"] = lambda L, a=a, b=b: L.tensor([0.0, 2.0], a).lerp_(L.tensor([4.0, 4.0], b), 0.5)
    cases["lerp int64"] = lambda L: L.lerp(L.tensor([0, 2]), L.tensor([4, 4]), 0.5)
    assert sweep(device, torch, cases) == {}


def test_lerp_refusal_leaves_input_untouched(device):
    x = ember.tensor([0.0, 2.0], device=device)
    with pytest.raises(RuntimeError, match="lerp: expected dtype float32 for `end`"):
        x.lerp_(ember.tensor([4.0, 4.0], dtype=ember.float64, device=device), 0.5)
    assert x.tolist() == [0.0, 2.0]


# --------------------------------------------------------------------------- random samples into integer dtypes
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"])
def test_rand_and_randn_refuse_integer_dtypes_as_pytorch(device, torch, dtype):
    need(device, dtype)
    e, t = On(ember, device), On(torch)
    calls = {"rand": lambda L, d: L.rand(3, dtype=d), "randn": lambda L, d: L.randn(3, dtype=d),
             "rand_like": lambda L, d: L.rand_like(L.zeros(3), dtype=d),
             "randn_like": lambda L, d: L.randn_like(L.zeros(3), dtype=d),
             "rand_like input": lambda L, d: L.rand_like(L.zeros(3, dtype=d)),
             "randn_like input": lambda L, d: L.randn_like(L.zeros(3, dtype=d))}
    for name, call in calls.items():
        got = outcome(e, lambda L, call=call: call(L, getattr(L.mod, dtype)))
        want = outcome(t, lambda L, call=call: call(L, getattr(L.mod, dtype)))
        assert got[0] == want[0], name
        if want[0] == "raises":
            assert got == want, name
    with pytest.raises(NotImplementedError, match="randn: \"normal_kernel_cpu\" not implemented for 'Long'"):
        ember.randn(2, dtype=ember.int64, device=device)


# --------------------------------------------------------------------------- float16 / bfloat16 with numbers
HALF_SCALARS = (1e5, -1e5, 70000, 1e-5, 0.1, 3.3, 2, 0.5, 257, 1e40, -3e38, float("inf"), float("nan"))
HALF_OPS = {"mul": lambda x, s: x * s, "rmul": lambda x, s: s * x, "add": lambda x, s: x + s,
            "sub": lambda x, s: x - s, "rsub": lambda x, s: s - x, "div": lambda x, s: x / s,
            "rdiv": lambda x, s: s / x, "lt": lambda x, s: x < s, "eq": lambda x, s: x == s,
            "maximum-like clamp min": lambda x, s: x.clamp(min=s), "clamp max": lambda x, s: x.clamp(max=s),
            "pow": lambda x, s: x ** s, "mul_": lambda x, s: x.clone().mul_(s), "add_": lambda x, s: x.clone().add_(s)}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_tensors_with_numbers_they_cannot_hold_compute_as_pytorch(device, torch, dtype):
    need(device, dtype)
    data = [0.0, 1e-3, 1.5, -2.0, 300.0, 60000.0]
    cases = {f"{dtype} {name} {s}": lambda L, op=op, s=s: op(L.tensor(data, dtype), s)
             for name, op in HALF_OPS.items() for s in HALF_SCALARS}
    assert len(cases) == 182
    assert sweep(device, torch, cases) == {}


def test_float16_times_a_number_beyond_its_range_is_rounded_once(device):
    need(device, "float16")
    x = ember.tensor([0.0, 1e-3], dtype=ember.float16, device=device)
    assert (x * 1e5).tolist() == [0.0, 100.0625] and (x * 1e5).dtype is ember.float16


def test_half_with_a_wide_number_keeps_its_gradient(device):
    need(device, "float16")
    x = ember.tensor([1e-3, 2e-3], dtype=ember.float16, device=device, requires_grad=True)
    (x * 1e5).sum().backward()
    assert x.grad.dtype is ember.float16 and x.grad.tolist() == [math.inf, math.inf]


# --------------------------------------------------------------------------- no NumPy RuntimeWarning
EXTREMES = [0.0, -1.0, 1.0, math.inf, -math.inf, math.nan, 3e38, -3e38, 1e-45, 65504.0]
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
CAST_TO = ("bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64")
QUIET_OPS = {
    "add": lambda x: x + x, "sub": lambda x: x - x.flip(0), "mul": lambda x: x * x.flip(0),
    "div": lambda x: x / x.flip(0), "mul big": lambda x: x * 1e300, "add big": lambda x: x + 1e300,
    "pow": lambda x: x ** x, "exp": lambda x: x.exp(), "neg": lambda x: -x, "gt": lambda x: x > x.flip(0),
    "eq": lambda x: x == x, "maximum": lambda x: ember.maximum(x, x.flip(0)), "relu": lambda x: x.relu(),
    "clamp": lambda x: x.clamp(-1, 1), "where": lambda x: ember.where(x > 0, x, x.flip(0)),
    "masked_fill": lambda x: x.masked_fill(x > 0, 2.0), "sin": lambda x: x.sin(), "cos": lambda x: x.cos(),
    "add_": lambda x: x.clone().add_(x), "mul_": lambda x: x.clone().mul_(1e30),
    "copy_": lambda x: ember.zeros(len(EXTREMES), dtype=ember.int32, device=x.device).copy_(x),
    "sum": lambda x: x.sum(), "sum of pairs": lambda x: x.reshape(5, 2).sum(1), "mean": lambda x: x.mean(),
    "nansum": lambda x: x.nansum(), "cumsum": lambda x: x.cumsum(0), "prod": lambda x: x.prod(),
}
# the CPU backend's own relu (a faster kernel than the shared one) reports bfloat16 NaN through ml_dtypes
NOT_QUIET_YET = {("relu", "bfloat16")}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_no_runtime_warning_from_arithmetic_and_casts(device, dtype):
    need(device, dtype)
    x = ember.tensor(EXTREMES, dtype=ember.float64, device=device).to(getattr(ember, dtype))
    calls = dict(QUIET_OPS)
    for to in [d for d in CAST_TO if ember.testing.has_dtype(device, getattr(ember, d))]:
        calls[f"to {to}"] = lambda x, to=to: x.to(getattr(ember, to))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for name, call in calls.items():
            if (name, dtype) not in NOT_QUIET_YET:
                assert isinstance(call(x), ember.Tensor), name


def test_no_runtime_warning_from_creation(device, torch):
    need(device, "float16")
    calls = {"tensor float32": lambda L: L.tensor([1e300, -1e300], dtype=L.float32),
             "tensor float16": lambda L: L.tensor([1e5, 1e300], dtype=L.float16),
             "float64 to float32": lambda L: L.tensor([1e300, math.nan], dtype=L.float64).to(L.float32),
             "nan to int64": lambda L: L.tensor([math.nan, math.inf], dtype=L.float32).to(L.int64)[:0],
             "full float16": lambda L: L.full((2,), 1e5, dtype=L.float16)}
    e, t = On(ember, device), On(torch)
    for name, call in calls.items():
        got, want = outcome(e, call), outcome(t, call)
        assert got == want, name
