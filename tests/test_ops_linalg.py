"""Linear-algebra ops: bad input against PyTorch (the rows of ember.testing.rows_linalg, every check, run in
tests/test_kit.py on every backend)."""
import numpy as np
import pytest

import ember
from ember.testing.case import bad_input_test


def _t(m, d, data):
    return m.tensor(data, dtype=m.float32, device=d if m.__name__ == "ember" else "cpu")


def _z(m, d, *shape):
    return m.zeros(*shape, device=d if m.__name__ == "ember" else "cpu")


# bad input: (name, call, exception, message pattern); torch raises the same exception type
BAD = [
    ("matmul_inner", lambda m, d: _z(m, d, 2, 3) @ _z(m, d, 2, 3), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"),
    ("matmul_0d", lambda m, d: m.matmul(_z(m, d, ()), _z(m, d, 2)), RuntimeError, "at least 1D"),
    ("bmm_2d", lambda m, d: m.bmm(_z(m, d, 2, 3), _z(m, d, 3, 2)), RuntimeError, "3"),
    ("dot_2d", lambda m, d: m.dot(_z(m, d, 2, 3), _z(m, d, 3)), RuntimeError, "1D tensors expected"),
    ("einsum_operands", lambda m, d: m.einsum("ij,jk->ik", _z(m, d, 2, 3)), RuntimeError, "fewer operands"),
    ("einsum_dims", lambda m, d: m.einsum("ij->i", _z(m, d, 2, 3, 4)), RuntimeError,
     r"number of subscripts in the equation \(2\) does not match the number of dimensions \(3\)"),
    ("inv_nonsquare", lambda m, d: m.linalg.inv(_z(m, d, 2, 3)), RuntimeError, "batches of square matrices"),
    ("inv_singular", lambda m, d: m.linalg.inv(_z(m, d, 2, 2)), RuntimeError, "singular"),
    ("cholesky_not_pd", lambda m, d: m.linalg.cholesky(-_t(m, d, [[1.0, 0], [0, 1]])), RuntimeError,
     "positive-definite"),
    ("solve_shapes", lambda m, d: m.linalg.solve(_t(m, d, [[1.0, 0], [0, 1]]), _z(m, d, 3)), RuntimeError,
     "Incompatible shapes"),
    ("det_int", lambda m, d: m.linalg.det(m.ones(2, 2, dtype=m.int64)), RuntimeError, "floating point"),
    ("cross_size", lambda m, d: m.linalg.cross(_z(m, d, 2), _z(m, d, 2)), RuntimeError, "length 3"),
]

test_bad_input = bad_input_test(BAD)


def test_linalg_error_is_a_runtime_error(device):
    import ember

    with pytest.raises(ember.linalg.LinAlgError, match="linalg.inv"):
        ember.linalg.inv(ember.zeros(2, 2, device=device))
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)


def test_addmv_inplace_at_top_level(device, torch):
    a, m, v = np.arange(2.0), np.arange(6.0).reshape(2, 3), np.ones(3)
    x = ember.tensor(a, device=device)
    r = ember.addmv_(x, ember.tensor(m, device=device), ember.tensor(v, device=device), beta=2, alpha=3)
    tx = torch.tensor(a)
    torch.addmv_(tx, torch.tensor(m), torch.tensor(v), beta=2, alpha=3)
    assert r is x
    np.testing.assert_allclose(x.cpu().numpy(), tx.numpy())
