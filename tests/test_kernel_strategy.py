"""The backend contract's two strategy hooks (``Backend.allocate`` and ``Backend.run_blocks``): the shared kernels
take their large arrays from a backend's allocator and run their blocks on its runner, the CPU backend's are its
page pool and thread pool, and without hooks every kernel works in one call on ``xp.empty`` arrays with the same
results.  The kernel library itself names no array library and keeps its functions short."""
import ast
import pathlib
import re

import numpy as np
import pytest

import ember
import ember.testing
from ember.backend import ArrayBackend, Backend
from ember.kernels import library

KERNELS = pathlib.Path(ember.kernels.__file__).parent


def _spied():
    """``(table, allocated, runs)``: the kernel table for NumPy with hooks that record each call."""
    allocated, runs = [], []

    def allocate(shape, dtype):
        allocated.append(tuple(shape))
        return np.empty(shape, dtype)

    def run_blocks(body, n, size):
        runs.append(n)
        for lo in range(0, n, 2):  # blocks of two: the results must not depend on the cut
            body(lo, min(lo + 2, n))

    return library(np, allocate, run_blocks), allocated, runs


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


CONV = [  # (x shape, w shape, padding): im2col's two column layouts and Winograd
    ((4, 8, 20, 20), (6, 8, 3, 3), ((1, 1), (1, 1))),
    ((6, 4, 7, 7), (5, 4, 3, 3), ((0, 0), (0, 0))),
    ((8, 64, 16, 16), (64, 64, 3, 3), ((1, 1), (1, 1))),
]


@pytest.mark.parametrize("xs,ws,padding", CONV, ids=["batch-major", "batch-last", "winograd"])
def test_convolutions_use_the_hooks_with_the_plain_results(xs, ws, padding):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws) * 0.1
    g = rng.standard_normal((xs[0], ws[0]) + tuple(s + sum(p) - 2 for s, p in zip(xs[2:], padding)))
    table, allocated, runs = _spied()
    plain = library(np)
    args = ((1, 1), padding, (1, 1), 1)
    y, cols = table["conv_forward"](x, w, None, *args)
    y0, cols0 = plain["conv_forward"](x, w, None, *args)
    assert allocated and runs  # the columns or transforms came from the allocator, their copies from the runner
    assert np.array_equal(_bits(y), _bits(y0))
    gx = table["conv_input_grad"](g, w, xs, *args)
    gw = table["conv_weight_grad"](x, g, ws, *args, cols)
    assert np.array_equal(_bits(gx), _bits(plain["conv_input_grad"](g, w, xs, *args)))
    assert np.array_equal(_bits(gw), _bits(plain["conv_weight_grad"](x, g, ws, *args, cols0)))


def test_blocked_forms_run_only_with_a_runner():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5, 9, 11))
    w, b = rng.standard_normal(5), rng.standard_normal(5)
    table, allocated, runs = _spied()
    plain = library(np)
    pool = ((3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1))
    assert np.array_equal(table["max_pool"](x, *pool), plain["max_pool"](x, *pool))  # separable vs windows
    for got, want in zip(table["batch_norm_train"](x, w, b, 1e-5), plain["batch_norm_train"](x, w, b, 1e-5)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)  # partial sums by block: rounding only
    mean, var = rng.standard_normal(5), rng.random(5) + 0.5
    assert np.array_equal(table["batch_norm_eval"](x, mean, var, w, b, 1e-5),
                          plain["batch_norm_eval"](x, mean, var, w, b, 1e-5))
    assert len(runs) >= 4 and allocated


def test_optimizer_updates_run_in_blocks_on_the_runner(monkeypatch):
    monkeypatch.setattr(ember.kernels.optim, "BLOCK", 64)
    rng = np.random.default_rng(2)
    p0, g, m0 = rng.standard_normal((40, 50)), rng.standard_normal((40, 50)), rng.standard_normal((40, 50))
    table, _, runs = _spied()
    plain = library(np)
    p1, m1, p2, m2 = p0.copy(), m0.copy(), p0.copy(), m0.copy()
    table["sgd_update"](p1, g, m1, 0.1, 0.01, 0.9, 0.0, False, False)
    plain["sgd_update"](p2, g, m2, 0.1, 0.01, 0.9, 0.0, False, False)
    assert runs == [-(-p0.size // 64)]  # one run over the blocks of 64 elements
    assert np.array_equal(p1, p2) and np.array_equal(m1, m2)


def test_recurrent_buffers_come_from_the_allocator():
    rng = np.random.default_rng(3)
    table, allocated, _ = _spied()
    layer = ember.nn.LSTM(4, 6)
    x = ember.tensor(rng.standard_normal((5, 2, 4)).astype(np.float32))
    be = ember.backend.get_backend("cpu")
    with ember.testing.builtin_kernels("cpu", "lstm_forward"):  # the shared kernel, not a plugin's
        want, _ = layer(x)
        own = be.kernels["lstm_forward"]
        be.kernels["lstm_forward"] = table["lstm_forward"]
        try:
            got, _ = layer(x)
        finally:
            be.kernels["lstm_forward"] = own
    assert allocated
    assert np.array_equal(got.detach().numpy(), want.detach().numpy())


def test_cpu_backend_hooks_are_its_page_pool_and_thread_pool():
    cpu = pytest.importorskip("ember_cpu_numpy")
    be = ember.backend.get_backend("cpu")
    assert be.allocate is cpu.workspace.empty
    assert be.run_blocks is cpu.threads.run_blocks


def test_hooks_default_to_none_and_a_backend_without_them_works():
    assert Backend.allocate is None and Backend.run_blocks is None
    for hook in ("allocate", "run_blocks"):
        assert f"``{hook}(" in Backend.__doc__  # documented in the contract, with its default

    class Plain(ArrayBackend):
        name = "plain_numpy"

        def __init__(self):
            super().__init__(np)

    k = Plain().kernels
    x = np.random.default_rng(4).standard_normal((2, 3, 8, 8))
    w = np.ones((4, 3, 3, 3))
    y, _ = k["conv_forward"](x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    assert y.shape == (2, 4, 8, 8)
    assert np.allclose(y[:, 0, 1:-1, 1:-1], y[:, 1, 1:-1, 1:-1])


def _kernel_sources():
    return sorted(p for p in KERNELS.glob("*.py"))


def _names_xp(node) -> bool:
    """Whether ``node`` is ``xp.__name__`` or ``getattr(xp, "__name__", ...)``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__name__" and isinstance(node.value, ast.Name) and node.value.id == "xp"
    return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" and len(node.args) >= 2 and \
        getattr(node.args[0], "id", "") == "xp" and getattr(node.args[1], "value", "") == "__name__"


@pytest.mark.parametrize("path", _kernel_sources(), ids=lambda p: p.name)
def test_kernels_name_no_array_library(path):
    src = path.read_text()
    tests = [n.lineno for n in ast.walk(ast.parse(src))
             if isinstance(n, ast.Compare) and any(_names_xp(e) for e in [n.left, *n.comparators])]
    assert not tests, f"{path.name} tests the array library's name at lines {tests}"
    assert not re.search(r"""["'](numpy|cupy)["']""", src), f"{path.name} names an array library in a string"


@pytest.mark.parametrize("path", _kernel_sources(), ids=lambda p: p.name)
def test_kernel_functions_stay_under_200_lines(path):
    tree = ast.parse(path.read_text())
    long = [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)" for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 200]
    assert not long, f"{path.name}: {', '.join(long)}"
