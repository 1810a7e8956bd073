"""Invalid argument combinations the differential fuzzer found: ember refuses them as PyTorch does, with
PyTorch's exception class, and leaves the inputs untouched (a table of calls, each run on both libraries)."""
import pytest

import ember

torch = pytest.importorskip("torch")

CALLS = {
    "solve_two_dtypes": lambda m, d: m.linalg.solve(m.eye(2, device=d), m.ones(2, dtype=m.float64, device=d)),
    "solve_two_dtypes_matrix": lambda m, d: m.linalg.solve(m.eye(2, dtype=m.float64, device=d), m.ones(2, 3, device=d)),
    "meshgrid_two_dtypes": lambda m, d: m.meshgrid(m.ones(2, device=d), m.ones(3, dtype=m.float64, device=d),
                                                   indexing="ij"),
    "isclose_two_dtypes": lambda m, d: m.isclose(m.ones(2, device=d), m.ones(2, dtype=m.float64, device=d)),
    "allclose_number": lambda m, d: m.allclose(m.ones(2, device=d), 1.0),
    "embedding_padding_idx_high": lambda m, d: m.nn.functional.embedding(m.tensor([0, 1], device=d),
                                                                         m.ones(3, 2, device=d), padding_idx=3),
    "embedding_padding_idx_low": lambda m, d: m.nn.functional.embedding(m.tensor([0, 1], device=d),
                                                                        m.ones(3, 2, device=d), padding_idx=-4),
    "float_of_two_elements": lambda m, d: float(m.ones(2, device=d)),
    "int_of_empty": lambda m, d: int(m.ones(0, device=d)),
    "complex_of_two_elements": lambda m, d: complex(m.ones(2, device=d)),
    "label_smoothing_above_one": lambda m, d: m.nn.functional.cross_entropy(m.ones(2, 3, device=d),
                                                                            m.tensor([0, 1], device=d),
                                                                            label_smoothing=1.5),
    "atan2_number": lambda m, d: m.atan2(m.ones(2, device=d), 2.0),
    "maximum_number": lambda m, d: m.maximum(m.ones(2, device=d), 0.5),
    "minimum_number_method": lambda m, d: m.ones(2, device=d).minimum(0.5),
    "logical_or_number": lambda m, d: m.logical_or(m.ones(2, device=d), 1.0),
    "logical_xor_inplace_number": lambda m, d: m.ones(2, device=d).logical_xor_(True),
    **{f"{f}_without_a_size": lambda m, d, f=f: getattr(m, f)(device=d)
       for f in ("zeros", "ones", "empty", "rand", "randn")},
    "clamp_tensor_and_number": lambda m, d: m.clamp(m.ones(2, device=d), min=m.zeros(2, device=d), max=0.5),
    "clamp_number_and_tensor": lambda m, d: m.ones(2, device=d).clamp(0.1, m.ones(2, device=d)),
    "number_for_tensor_mv": lambda m, d: m.mv(m.ones(2, 3, device=d), 2.0),
    "number_for_tensor_cumsum": lambda m, d: m.cumsum(1.5, 0),
    "number_for_tensor_layer_norm": lambda m, d: m.nn.functional.layer_norm(1.0, (2,)),
}


def _builtin(exc_type):
    return next(k for k in exc_type.__mro__ if k.__module__ == "builtins")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_refused_as_pytorch_refuses(device, name):
    """PyTorch raises; ember raises an instance of the same built-in class (``torch``'s own subclasses, such as
    ``LinAlgError``, count as their built-in base)."""
    call = CALLS[name]
    with pytest.raises(Exception) as want:  # noqa: PT011 - the class is PyTorch's, compared below
        call(torch, "cpu")
    with pytest.raises(_builtin(want.type)):
        call(ember, device)


@pytest.mark.parametrize("padding_idx", [-3, -1, 0, 2])
def test_embedding_padding_idx_in_range_is_accepted(device, padding_idx):
    """Every padding index inside [-n, n) works and leaves that row without gradient, as in PyTorch."""
    grads = []
    for m, d in ((torch, "cpu"), (ember, device)):
        w = m.ones(3, 2, device=d, requires_grad=True)
        m.nn.functional.embedding(m.tensor([0, 1, 2, 2], device=d), w, padding_idx=padding_idx).sum().backward()
        grads.append(w.grad.cpu().tolist())
    assert grads[0] == grads[1]
