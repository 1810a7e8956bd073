"""CTC loss: ``ember.nn.functional.ctc_loss`` and ``ember.nn.CTCLoss`` against PyTorch, and float64 gradcheck."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck
from ember.testing import assert_close, to_numpy

from nn_helpers import TOL

R = np.random.default_rng(0)
T, N, C = 6, 3, 5

# (id, targets, input_lengths, target_lengths, keywords); log_probs are (T, N, C)
ROWS = [
    ("padded", [[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 1]], [6, 5, 6], [4, 2, 3], {}),
    ("padded_junk_past_length", [[2, -1, 7], [1, 4, 4], [3, 9, -5]], [6, 4, 5], [1, 3, 1], {}),
    ("concatenated", [1, 2, 2, 3, 4, 1, 3, 3, 3], [6, 5, 6], [4, 2, 3], {}),
    ("variable_lengths", [[1, 2, 3, 4], [2, 2, 0, 0], [4, 0, 0, 0]], [6, 3, 1], [4, 2, 1], {}),
    ("empty_target_and_input", [[1, 2], [3, 0], [0, 0]], [6, 4, 0], [2, 0, 0], {}),
    ("blank_last", [[0, 1, 2], [3, 3, 0], [2, 1, 1]], [6, 5, 6], [3, 2, 3], {"blank": 4}),
    ("infeasible", [[1, 1, 1], [2, 3, 0], [4, 4, 0]], [4, 6, 2], [3, 2, 2], {}),
    ("infeasible_zero_infinity", [[1, 1, 1], [2, 3, 0], [4, 4, 0]], [4, 6, 2], [3, 2, 2], {"zero_infinity": True}),
]


def _log_probs(shape, dtype):
    x = R.standard_normal(shape)
    return (x - np.log(np.exp(x).sum(-1, keepdims=True))).astype(dtype)


def _pair(torch, device, lp, targets, il, tl, lengths_as_tensors=False):
    """Leaves ``log_probs`` and the other arguments, for ember and for torch."""
    e = [ember.tensor(lp, device=device, requires_grad=True), ember.tensor(targets, device=device)]
    t = [torch.tensor(lp, requires_grad=True), torch.tensor(targets).clamp(min=0)]
    if lengths_as_tensors:
        e += [ember.tensor(il, device=device), ember.tensor(tl, device=device)]
        t += [torch.tensor(il), torch.tensor(tl)]
    else:
        e += [tuple(il), list(tl)]
        t += [tuple(il), tuple(tl)]
    return e, t


def _compare(torch, device, dtype, lp, targets, il, tl, lengths_as_tensors=False, **kw):
    (elp, *eargs), (tlp, *targs) = _pair(torch, device, lp, targets, il, tl, lengths_as_tensors)
    eo, to = F.ctc_loss(elp, *eargs, **kw), torch.nn.functional.ctc_loss(tlp, *targs, **kw)
    assert_close(eo, to, **TOL[dtype])
    w = R.uniform(0.5, 1.5, tuple(to.shape)).astype(dtype)
    eo.backward(ember.tensor(w, device=device))
    to.backward(torch.tensor(w))
    assert_close(elp.grad, tlp.grad, **TOL[dtype])
    return eo, elp.grad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_ctc_loss_matches_torch(torch, device, row, reduction, dtype):
    _, targets, il, tl, kw = row
    _compare(torch, device, dtype, _log_probs((T, N, C), dtype), np.array(targets), il, tl, reduction=reduction,
             **kw)


def test_lengths_as_tensors_and_int32_targets(torch, device):
    lp = _log_probs((T, N, C), "float64")
    targets = np.array([[1, 2, 2], [3, 4, 0], [1, 0, 0]], dtype=np.int32)
    _compare(torch, device, "float64", lp, targets, [6, 5, 4], [3, 2, 1], lengths_as_tensors=True)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_unbatched(torch, device, reduction):
    lp = _log_probs((T, C), "float64")
    out, _ = _compare(torch, device, "float64", lp, np.array([1, 1, 3]), [5], [3], reduction=reduction)
    assert out.shape == ()
    _compare(torch, device, "float64", lp, np.array([1, 2, 3]), [6], [3], lengths_as_tensors=True)


def test_repeated_labels_need_a_blank_between(device):
    lp = ember.tensor(_log_probs((4, 1, C), "float64"), device=device)
    assert np.isfinite(to_numpy(F.ctc_loss(lp, ember.tensor([[2, 2]], device=device), [3], [2])))
    assert np.isinf(to_numpy(F.ctc_loss(lp, ember.tensor([[2, 2, 2]], device=device), [4], [3])))
    assert np.isfinite(to_numpy(F.ctc_loss(lp, ember.tensor([[2, 3, 2, 3]], device=device), [4], [4])))


def test_zero_infinity_zeroes_loss_and_gradient(device):
    lp = ember.tensor(_log_probs((3, 2, C), "float64"), device=device, requires_grad=True)
    targets = ember.tensor([[1, 1], [2, 3]], device=device)
    loss = F.ctc_loss(lp, targets, [2, 3], [2, 2], reduction="none", zero_infinity=True)
    assert to_numpy(loss)[0] == 0 and np.isfinite(to_numpy(loss)[1]) and to_numpy(loss)[1] > 0
    loss.sum().backward()
    g = to_numpy(lp.grad)
    assert (g[:, 0] == 0).all() and np.abs(g[:2, 1]).sum() > 0


def test_exact_probability_of_a_tiny_case(device):
    # two steps, two classes (blank 0), target [1]: alignments 1-1, 1-b, b-1 -> p = a1 b1 + a1 b0 + a0 b1
    p = np.array([[0.3, 0.7], [0.6, 0.4]])
    lp = ember.tensor(np.log(p)[:, None, :], device=device)
    loss = F.ctc_loss(lp, ember.tensor([[1]], device=device), [2], [1], reduction="sum")
    expected = -np.log(0.7 * 0.4 + 0.7 * 0.6 + 0.3 * 0.4)
    np.testing.assert_allclose(to_numpy(loss), expected, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_gradcheck_through_log_softmax(device, reduction):
    # PyTorch's gradient (exp(lp) - occupancy) is the exact gradient of the logits through log_softmax
    x = ember.tensor(R.standard_normal((4, 2, 3)), device=device, requires_grad=True)
    targets = ember.tensor([1, 2, 1], device=device)
    fn = lambda a: F.ctc_loss(F.log_softmax(a, 2), targets, [4, 3], [2, 1], reduction=reduction)  # noqa: E731
    assert gradcheck(fn, (x,))


def test_no_double_backward(device):
    lp = ember.tensor(_log_probs((3, 1, C), "float64"), device=device, requires_grad=True)
    loss = F.ctc_loss(lp, ember.tensor([[1]], device=device), [3], [1])
    with pytest.raises(RuntimeError, match="ctc_loss: double backward"):
        ember.autograd.grad(loss, lp, create_graph=True)


def test_module_and_repr(torch, device):
    lp = _log_probs((T, N, C), "float64")
    targets = np.array([[1, 2, 2], [3, 4, 0], [1, 0, 0]])
    m = ember.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert (m.blank, m.reduction, m.zero_infinity) == (0, "sum", True)
    assert repr(m) == repr(torch.nn.CTCLoss()) == "CTCLoss()"
    expected = torch.nn.CTCLoss(reduction="sum", zero_infinity=True)(torch.tensor(lp), torch.tensor(targets),
                                                                      (6, 5, 4), (3, 2, 1))
    assert_close(m(ember.tensor(lp, device=device), ember.tensor(targets, device=device), (6, 5, 4), (3, 2, 1)),
                 expected)
    assert ember.nn.CTCLoss().reduction == "mean"


# (id, what to change, exception, message fragment)
BAD = [
    ("rank", lambda a: {**a, "lp": a["lp"][0, 0]}, RuntimeError, "Expected 3-dimensional"),
    ("input_lengths_size", lambda a: {**a, "il": [6, 6]}, RuntimeError, "input_lengths must be of size batch_size"),
    ("target_lengths_size", lambda a: {**a, "tl": [1, 1, 1, 1]}, RuntimeError,
     "target_lengths must be of size batch_size"),
    ("input_too_long", lambda a: {**a, "il": [7, 6, 6]}, RuntimeError, "input_lengths to have value at most 6"),
    ("negative_length", lambda a: {**a, "tl": [1, -1, 1]}, RuntimeError, "target_lengths to have value at least 0"),
    ("target_too_long", lambda a: {**a, "tl": [1, 3, 1]}, RuntimeError, "size at least 3 at dimension 1"),
    ("concatenated_size", lambda a: {**a, "targets": np.array([1, 2, 3])}, RuntimeError,
     "size 4 at dimension 0, but got size 3"),
    ("blank_high", lambda a: {**a, "blank": C}, RuntimeError, "blank must be in label range"),
    ("blank_negative", lambda a: {**a, "blank": -1}, RuntimeError, "blank must be in label range"),
    ("reduction", lambda a: {**a, "reduction": "avg"}, ValueError, "avg is not a valid value for reduction"),
    ("float_lengths", lambda a: {**a, "il": ember.tensor([6.0, 6.0, 6.0]), "tl": ember.tensor([1.0, 2.0, 1.0])},
     RuntimeError, "input_lengths must be integral"),
    ("mixed_lengths", lambda a: {**a, "il": ember.tensor([6, 6, 6])}, TypeError, "both be Tensors"),
    ("integer_log_probs", lambda a: {**a, "lp": np.zeros((T, N, C), dtype=np.int64)}, NotImplementedError,
     "ctc_loss_.* not implemented for 'Long'"),
]


@pytest.mark.parametrize("bad", BAD, ids=[b[0] for b in BAD])
def test_bad_input(device, bad):
    _, change, exc, fragment = bad
    good = {"lp": _log_probs((T, N, C), "float64"), "targets": np.array([[1, 2], [3, 4], [2, 0]]), "il": [6, 6, 6],
            "tl": [1, 2, 1], "blank": 0, "reduction": "mean"}
    a = change(good)
    lp = ember.tensor(a["lp"], device=device, requires_grad=a["lp"].dtype.kind == "f")
    lengths = [v.to(device) if isinstance(v, ember.Tensor) else v for v in (a["il"], a["tl"])]
    with pytest.raises(exc, match=fragment):
        F.ctc_loss(lp, ember.tensor(a["targets"], device=device), *lengths, blank=a["blank"],
                   reduction=a["reduction"])
    assert lp.grad is None


def test_target_label_out_of_range(device):
    lp = ember.tensor(_log_probs((T, 1, C), "float64"), device=device)
    with pytest.raises(IndexError, match="ctc_loss: target label 5 is out of bounds"):
        F.ctc_loss(lp, ember.tensor([[1, 5]], device=device), [6], [2])
