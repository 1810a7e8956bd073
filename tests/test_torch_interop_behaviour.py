"""Behaviour that programs meet beside ember's ops, each against PyTorch: ember and PyTorch tensors meeting in one
expression, LU of empty matrices, the sizes in convolution and pooling errors, dtype names under the alias, and
factories given a sparse layout."""
import operator
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.testing.case import has_dtype

torch = pytest.importorskip("torch")


def _outcome(fn):
    """``fn()``'s result, or its exception's class name and first line."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the outcome compared
        return type(e).__name__, str(e).splitlines()[0]


# --------------------------------------------------------------------------- ember and PyTorch tensors together
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "ge", "add", "mul", "matmul"])
def test_ember_and_torch_tensors_in_one_expression_refuse_cleanly(device, op):
    e, t = ember.ones(2, device=device), torch.ones(2)
    for left, right in ((e, t), (t, e)):
        got = _outcome(lambda a=left, b=right: getattr(operator, op)(a, b))
        if op in ("eq", "ne"):  # neither side compares with the other: Python's identity comparison
            assert got is (op == "ne")
        else:
            assert got[0] == "TypeError"
    assert _outcome(lambda: torch.add(t, e))[0] == "TypeError"


# --------------------------------------------------------------------------- LU of empty matrices
@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0, 0), (2, 0, 3), (0, 2, 2), (2, 3, 0)])
def test_lu_of_empty_matrices_as_pytorch(device, shape):
    if not has_dtype(device, ember.float64):
        pytest.skip(f"{device} has no float64")
    for transposed in (False, True):  # a non-contiguous input too
        flipped = (*shape[:-2], shape[-1], shape[-2])
        e = ember.zeros(*flipped, dtype=ember.float64, device=device).mT if transposed else \
            ember.zeros(*shape, dtype=ember.float64, device=device)
        t = torch.zeros(*flipped, dtype=torch.float64).mT if transposed else torch.zeros(*shape, dtype=torch.float64)
        for name in ("lu", "lu_factor", "lu_factor_ex"):
            ours, theirs = getattr(ember.linalg, name)(e), getattr(torch.linalg, name)(t)
            for a, b in zip(ours, theirs):
                assert tuple(a.shape) == tuple(b.shape) and str(a.dtype)[-5:] == str(b.dtype)[-5:], name
                np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())


# --------------------------------------------------------------------------- sizes in convolution and pooling errors
_TOO_SMALL = [
    ("conv1d", lambda lib: lib.nn.functional.conv1d(lib.ones(1, 1, 1), lib.ones(1, 1, 2))),
    ("conv2d", lambda lib: lib.nn.functional.conv2d(lib.ones(1, 1, 3, 1), lib.ones(1, 1, 2, 2))),
    ("conv3d", lambda lib: lib.nn.functional.conv3d(lib.ones(1, 1, 1, 2, 1), lib.ones(1, 1, 2, 2, 2),
                                                    padding=(0, 1, 0))),
    ("max_pool2d", lambda lib: lib.nn.functional.max_pool2d(lib.ones(1, 1, 1, 3), 2)),
    ("max_pool2d", lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 1, 3), 2)),
    ("max_pool3d", lambda lib: lib.nn.functional.max_pool3d(lib.ones(1, 1, 1, 2, 2), 2)),
    ("avg_pool2d", lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 1, 1, 1), 2)),
    ("avg_pool2d", lambda lib: lib.nn.functional.lp_pool2d(lib.ones(1, 1, 1, 1), 2, 2)),
]


@pytest.mark.parametrize("name, call", _TOO_SMALL, ids=[f"{n}-{i}" for i, (n, _) in enumerate(_TOO_SMALL)])
def test_size_errors_print_every_dimension_as_pytorch(name, call):
    ours, theirs = _outcome(lambda: call(ember)), _outcome(lambda: call(torch))
    assert ours[0] == theirs[0] == "RuntimeError"
    assert ours[1] == f"{name}: {theirs[1]}"  # PyTorch's text ("(3 x 1)", "(1x0x1)"), after the op's name


# --------------------------------------------------------------------------- dtype names
def test_dtypes_print_as_pytorchs_under_the_alias():
    code = ("import ember.torch_compat as tc; tc.install(); import torch\n"
            "x = torch.ones(2, dtype=torch.float64)\n"
            "print(x.dtype, torch.int8, x.shape, x.type(), torch.sparse_coo, repr(x), sep='|')\n"
            "print(getattr(torch, str(x.dtype).replace('torch.', '')) is torch.float64)\n"
            "tc.uninstall(); import ember; print(ember.float32, ember.Size([1]), sep='|')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    t = torch.ones(2, dtype=torch.float64)
    expected = "|".join(map(str, (t.dtype, torch.int8, t.shape, t.type(), torch.sparse_coo, repr(t))))
    assert out.stdout.splitlines() == [expected, "True", "ember.float32|ember.Size([1])"]


# --------------------------------------------------------------------------- factories given a sparse layout
_SPARSE_MADE = {"zeros": lambda lib, L: lib.zeros(2, 3, layout=L), "empty": lambda lib, L: lib.empty(2, 3, layout=L),
                "zeros_like": lambda lib, L: lib.zeros_like(lib.ones(2, 3, dtype=lib.float64), layout=L)}
_SPARSE_REFUSED = {
    "ones": lambda lib: lib.ones(2, 3, layout=lib.sparse_coo),
    "full": lambda lib: lib.full((2,), 1.0, layout=lib.sparse_coo),
    "ones_like": lambda lib: lib.ones_like(lib.ones(2), layout=lib.sparse_coo),
    "empty_like": lambda lib: lib.empty_like(lib.ones(2), layout=lib.sparse_coo),
    "rand": lambda lib: lib.rand(2, layout=lib.sparse_coo), "randn": lambda lib: lib.randn(2, layout=lib.sparse_coo),
    "randint": lambda lib: lib.randint(3, (2,), layout=lib.sparse_coo),
    "eye": lambda lib: lib.eye(2, layout=lib.sparse_coo),
    "arange": lambda lib: lib.arange(3, layout=lib.sparse_coo),
    "linspace": lambda lib: lib.linspace(0, 1, 3, layout=lib.sparse_coo),
    "randperm": lambda lib: lib.randperm(3, layout=lib.sparse_coo),
    "empty_strided": lambda lib: lib.empty_strided((2,), (1,), layout=lib.sparse_coo),
}


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta:UserWarning")  # PyTorch's
@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr"])
@pytest.mark.parametrize("name", list(_SPARSE_MADE))
def test_zeros_with_a_sparse_layout_are_sparse(device, name, layout):
    ours = _SPARSE_MADE[name](ember, getattr(ember, layout))
    theirs = _SPARSE_MADE[name](torch, getattr(torch, layout))
    assert str(ours.layout).split(".")[-1] == layout and tuple(ours.shape) == tuple(theirs.shape)
    assert ours._nnz() == theirs._nnz() == 0 and str(ours.dtype)[-7:] == str(theirs.dtype)[-7:]
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())


@pytest.mark.parametrize("name", list(_SPARSE_REFUSED))
def test_factories_that_fill_refuse_a_sparse_layout(name):
    ours, theirs = _outcome(lambda: _SPARSE_REFUSED[name](ember)), _outcome(lambda: _SPARSE_REFUSED[name](torch))
    assert isinstance(ours, tuple) and ours[0] == theirs[0] and name in ours[1]
