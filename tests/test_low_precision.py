"""float16 and bfloat16 inputs keep their dtype and PyTorch's values: a sweep of every op-table row (each row's
first sample, every floating input in the low precision) against PyTorch, through the fuzzer's comparison."""
import numpy as np
import pytest

import ember
from ember.testing import fuzz
from ember.testing.compare import has_dtype
from ember.testing.row import B, F, I

torch = pytest.importorskip("torch")

# (row, dtype) pairs still different, each with its reason
DIFFERENT = {
    ("matrix_exp", "bfloat16"): "PyTorch's bfloat16 matrix_exp overflows (-1e30, NaN); ember's is computed in float32",
    ("matrix_exp_large", "bfloat16"): "as matrix_exp",
    ("matrix_exp", "float16"): "PyTorch's float16 matrix_exp overflows (-21072, NaN); ember's is computed in float32",
    ("matrix_exp_large", "float16"): "as matrix_exp",
}


def _low(sample, dtype):
    out = []
    for a in sample:
        if isinstance(a, F):
            out.append(fuzz.Arg(np.asarray(a.data, dtype=float), dtype))
        elif isinstance(a, I):
            out.append(fuzz.Arg(np.asarray(a.data, dtype=np.int64), "int64"))
        elif isinstance(a, B):
            out.append(fuzz.Arg(np.asarray(a.data, dtype=bool), "bool"))
        else:
            out.append(a)
    return out


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_every_row_keeps_low_precision(device, dtype):
    """Result dtypes and values (at the dtype's tolerance) of every row with float16/bfloat16 inputs equal
    PyTorch's: no op upcasts a low-precision result, NaN-ignoring reductions and sorts see bfloat16's NaN."""
    if not has_dtype(device, getattr(ember, dtype)):
        pytest.skip(f"{device} has no {dtype}")
    kind = device.split(":")[0]
    found = []
    for row in fuzz.rows():
        if kind in row.skips or not any(isinstance(a, F) for a in row.samples[0]):
            continue
        for k, detail in fuzz.compare(row, _low(row.samples[0], dtype), device):
            if k in ("dtype", "values") and (row.name, dtype) not in DIFFERENT:
                found.append(f"{row.name}: {k}: {detail[:200]}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("ord", [2, 1, 3.5])
def test_low_precision_norm_accumulates_in_float32(device, dtype, ord):
    """A norm of many float16/bfloat16 values neither saturates nor overflows (PyTorch accumulates in float32)."""
    if not has_dtype(device, getattr(ember, dtype)):
        pytest.skip(f"{device} has no {dtype}")
    x = np.full(1000, 300.0)
    got = ember.linalg.vector_norm(ember.tensor(x, device=device).to(getattr(ember, dtype)), ord)
    want = torch.linalg.vector_norm(torch.tensor(x).to(getattr(torch, dtype)), ord)
    assert str(got.dtype).split(".")[-1] == dtype
    assert float(got) == float(want)
