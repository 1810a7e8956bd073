"""Nodes named and saving as PyTorch's: the unsafe splits, the ``*_copy`` views, ``diag`` of a matrix, ``polygamma_``,
``ravel``, ``diff`` of order 0, multi_dot, cdist's product form and the matrix powers under PyTorch's node names;
and the tensors PyTorch's nodes keep (``_saved_*``) for gather, index_add/index_copy, masked_scatter, max/min along
a dim, pow and sgn, linear, lerp, the vector norms, dist, addr, batch norm, layer norm, binary cross entropy, cross
entropy and the in-place activations: names, values (None where PyTorch keeps none), freed by the backward, and the
gradients of the ops whose nodes changed, against PyTorch and by gradcheck."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _data(*shape, seed=0):
    return np.random.default_rng(seed).random(shape) + 0.25


def _pair(device, *shapes, grads=None):
    """The same float64 data in both libraries: ``(torch tensors, ember tensors)``; ``grads`` says which need a
    gradient (all by default)."""
    grads = grads or (True,) * len(shapes)
    arrays = [_data(*s, seed=i) for i, s in enumerate(shapes)]
    ts = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    es = [ember.tensor(a, requires_grad=g, device=device) for a, g in zip(arrays, grads)]
    return ts, es


def _outputs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _same_gradients(call, device, *shapes):
    """``call(m, *inputs)`` in both libraries: each output's node name and values agree, and so do the inputs'
    gradients of a weighted sum of the outputs."""
    ts, es = _pair(device, *shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = _outputs(call(torch, *ts)), _outputs(call(ember, *es))
    assert [g.grad_fn.name() for g in got] == [w.grad_fn.name() for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), rtol=1e-12)
    weights = [np.cos(np.arange(w.numel())).reshape(tuple(w.shape)) for w in want]
    sum(((w * torch.tensor(c)).sum() for w, c in zip(want, weights))).backward()
    sum(((g * ember.tensor(c, device=device)).sum() for g, c in zip(got, weights))).backward()
    for e, t in zip(es, ts):
        np.testing.assert_allclose(e.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_view_as_complex_copy_name(device):
    (t,), (e,) = _pair(device, (3, 2))  # (its complex output has no gradient in PyTorch: the name alone)
    assert ember.view_as_complex_copy(e * 1).grad_fn.name() == "ViewAsComplexBackward0_copy"


# --------------------------------------------------------------------------- node names
NAMED = {
    "unsafe_split": (lambda m, x: m.unsafe_split(x, 2, 1), (2, 3)),
    "unsafe_chunk": (lambda m, x: x.unsafe_chunk(2, 1), (2, 3)),
    "unsafe_split_with_sizes": (lambda m, x: m.unsafe_split_with_sizes(x, [1, 2], 1), (2, 3)),
    "alias_copy": (lambda m, x: m.alias_copy(x), (2, 3)),
    "narrow_copy": (lambda m, x: m.narrow_copy(x, 1, 1, 2), (2, 3)),  # (PyTorch's backward fails at a negative start)
    "diag_matrix": (lambda m, x: m.diag(x, -1), (3, 4)),
    "view_as_real_copy": (lambda m, x: m.view_as_real_copy(m.complex(x, x * 2)), (2, 3)),
    "polygamma_": (lambda m, x: (x * 1).polygamma_(2), (2, 3)),
    "polygamma_0": (lambda m, x: (x * 1).polygamma_(0), (2, 3)),
    "ravel_transposed": (lambda m, x: x.t().ravel(), (2, 3)),
    "diff_order_0": (lambda m, x: m.diff(x, 0, 0, prepend=x * 2), (4, 3)),
    "multi_dot_matrices": (lambda m, a: m.linalg.multi_dot([a, a.t(), a]), (2, 3)),
    "multi_dot_vector_ends": (lambda m, a: m.linalg.multi_dot([a[0], a.t(), a, a[1]]), (2, 3)),
    "chain_matmul": (lambda m, a: m.chain_matmul(a, a.t()), (2, 3)),
    "cdist_matrix_product": (lambda m, a: m.cdist(a, a[1:] * 2, compute_mode="use_mm_for_euclid_dist"), (27, 3)),
    "cdist_matrix_product_batched": (lambda m, a: m.cdist(a, a[..., 1:, :] * 2, compute_mode="use_mm_for_euclid_dist"),
                                     (2, 1, 3, 2)),
    "matrix_power_1": (lambda m, a: m.linalg.matrix_power(a, 1), (3, 3)),
    "matrix_power_3": (lambda m, a: m.linalg.matrix_power(a, 3), (2, 3, 3)),
    "matrix_power_6": (lambda m, a: m.linalg.matrix_power(a, 6), (3, 3)),
    "matrix_power_inverse": (lambda m, a: m.linalg.matrix_power(a + a.new_ones(3).diag() * 2, -3), (3, 3)),
}


@pytest.mark.parametrize("label", sorted(NAMED))
def test_node_name_values_and_gradient(label, device):
    call, shape = NAMED[label]
    _same_gradients(call, device, shape)


def test_named_nodes_keep_arguments(device):
    (t,), (e,) = _pair(device, (2, 3))
    for call in (lambda m, x: m.narrow_copy(x, -1, -2, 1), lambda m, x: m.unsafe_split(x, 2, 1)[0],
                 lambda m, x: m.unsafe_split_with_sizes(x, [1, 2], 1)[1], lambda m, x: (x * 1).polygamma_(3)):
        want, got = call(torch, t).grad_fn, call(ember, e).grad_fn
        names = {n for n in dir(want) if n.startswith("_saved_") and not n.endswith("_strides")}
        assert names == {n for n in dir(got) if n.startswith("_saved_")}
        for n in names:
            w, g = getattr(want, n), getattr(got, n)
            if isinstance(w, torch.Tensor):
                np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy())
            else:
                assert g == w, n


def test_matrix_power_0(device):
    # PyTorch's identity copied over a copy of the input: a node of copy_'s, the result needing a gradient
    a = ember.ones(2, 2, requires_grad=True, device=device)
    r = ember.linalg.matrix_power(a, 0)
    assert r.grad_fn.name() == torch.linalg.matrix_power(torch.ones(2, 2, requires_grad=True), 0).grad_fn.name()
    assert r.tolist() == [[1.0, 0.0], [0.0, 1.0]] and ember.linalg.matrix_power(a, 1) is not a


def test_gradcheck_of_renamed_nodes(device):
    x = ember.tensor(_data(3, 4), requires_grad=True, device=device)
    assert ember.autograd.gradcheck(lambda t: (t * 1).polygamma_(1), (x,))
    assert ember.autograd.gradcheck(lambda t: ember.diff(t, 0, 0, append=t), (x,))
    assert ember.autograd.gradcheck(lambda t: ember.unsafe_split(t, 3, 1), (x,))
    assert ember.autograd.gradcheck(lambda t: ember.narrow_copy(t, 1, 1, 2), (x,))


# --------------------------------------------------------------------------- saved tensors
def _saved(fn, tensor_type):
    """``{name: value}`` of a node's ``_saved_*`` tensors (None where not kept), strides left out."""
    out = {}
    for n in dir(fn):
        if n.startswith("_saved_") and not n.endswith("_strides"):
            v = getattr(fn, n)
            if v is None or isinstance(v, tensor_type):
                out[n] = v
    return out


def _freed(fn, name):
    try:
        getattr(fn, name)
    except RuntimeError as exc:
        assert "already been freed" in str(exc)
        return True
    return False


SAVED = {
    "gather": (lambda m, x: x.gather(1, x.new_tensor([[0, 2], [1, 1]]).long()), [(2, 3)]),
    "index_add_alpha": (lambda m, x, s: x.index_add(0, x.new_tensor([2, 0]).long(), s, alpha=2), [(3, 4), (2, 4)]),
    "index_add_no_source_grad": (lambda m, x, s: x.index_add(0, x.new_tensor([2, 0]).long(), s.detach()),
                                 [(3, 4), (2, 4)]),
    "index_copy": (lambda m, x, s: x.index_copy(0, x.new_tensor([2, 0]).long(), s), [(3, 4), (2, 4)]),
    "masked_scatter": (lambda m, x, s: x.masked_scatter(x.new_tensor([1, 0, 1, 1]).bool(), s), [(3, 4), (12,)]),
    "max_dim": (lambda m, x: x.max(1)[0], [(3, 4)]),
    "min_dim_keepdim": (lambda m, x: x.min(0, keepdim=True)[0], [(3, 4)]),
    "pow_tensor": (lambda m, x, y: x ** y, [(3,), (3,)]),
    "pow_scalar_base": (lambda m, x: 2 ** x, [(3,)]),
    "sgn": (lambda m, x: (x - 0.7).sgn(), [(3,)]),
    "linear_addmm": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), [(2, 3), (4, 3), (4,)]),
    "linear_mm_input_only": (lambda m, x, w: m.nn.functional.linear(x, w.detach()), [(2, 3), (4, 3)]),
    "lerp_input_only": (lambda m, x, y, w: m.lerp(x, y.detach(), w.detach()), [(3,), (3,), (3,)]),
    "lerp_weight": (lambda m, x, y, w: m.lerp(x, y, w), [(3,), (3,), (3,)]),
    "vector_norm_1": (lambda m, x: m.linalg.vector_norm(x - 0.7, 1, 1), [(2, 3)]),
    "vector_norm_3": (lambda m, x: m.linalg.vector_norm(x - 0.7, 3, 1, True), [(2, 3)]),
    "vector_norm_inf": (lambda m, x: m.linalg.vector_norm(x - 0.7, math.inf), [(2, 3)]),
    "norm_2": (lambda m, x: x.norm(dim=0), [(2, 3)]),
    "dist_1": (lambda m, x, y: m.dist(x, y, 1), [(2, 3), (2, 3)]),
    "dist_3": (lambda m, x, y: m.dist(x, y.detach(), 3), [(2, 3), (2, 3)]),
    "addr": (lambda m, a, u, v: m.addr(a, u, v.detach(), beta=2), [(3, 2), (3,), (2,)]),
    "batch_norm_running": (lambda m, x, w: m.nn.functional.batch_norm(
        x, x.new_zeros(3), x.new_ones(3), w, None, True), [(4, 3, 2), (3,)]),
    "layer_norm_bias_only": (lambda m, x, b: m.nn.functional.layer_norm(x, (3, 2), None, b), [(4, 3, 2), (3, 2)]),
    "binary_cross_entropy_weight": (lambda m, p, t: m.nn.functional.binary_cross_entropy(
        p * 0.5, t.detach() * 0.5, p.detach() + 1), [(2, 3), (2, 3)]),
    "binary_cross_entropy_none": (lambda m, p, t: m.nn.functional.binary_cross_entropy(
        p * 0.5, t * 0.5, reduction="none"), [(2, 3), (2, 3)]),
    "cross_entropy_ignored": (lambda m, x: m.nn.functional.cross_entropy(x, x.new_tensor([0, 3, 1]).long(),
                                                                         ignore_index=3, reduction="sum"), [(3, 4)]),
}


# the in-place activations keep their result, as PyTorch's nodes (the input is overwritten)
# (celu's alpha exact in float32: PyTorch's in-place celu computes with it rounded to float32)
SAVED.update({name: (call, [(3, 4)]) for name, call in {
    "elu_": lambda m, x: m.nn.functional.elu_(x - 0.75, 0.5),
    "celu_": lambda m, x: m.nn.functional.celu_(x - 0.75, 0.5),
    "selu_": lambda m, x: m.nn.functional.selu_(x - 0.75),
    "leaky_relu_": lambda m, x: m.nn.functional.leaky_relu_(x - 0.75, 0.2),
}.items()})


@pytest.mark.parametrize("label", sorted(SAVED))
def test_saved_tensors_as_pytorch(label, device):
    """The node keeps PyTorch's tensors by PyTorch's names (None where PyTorch keeps none), equal in value; the
    backward frees them (a None stays None) and the gradients agree."""
    call, shapes = SAVED[label]
    ts, es = _pair(device, *shapes)
    want, got = call(torch, *ts), call(ember, *es)
    assert got.grad_fn.name() == want.grad_fn.name()
    sw, sg = _saved(want.grad_fn, torch.Tensor), _saved(got.grad_fn, ember.Tensor)
    assert sw and set(sg) == set(sw)
    for n, w in sw.items():
        assert (sg[n] is None) == (w is None), n
        if w is not None:
            np.testing.assert_allclose(sg[n].detach().cpu().numpy(), w.detach().numpy(), rtol=1e-12, err_msg=n)
    want.sum().backward()
    got.sum().backward()
    for n, w in sw.items():
        assert _freed(got.grad_fn, n) == (w is not None), n
    for e, t in zip(es, ts):
        if t.grad is not None:  # (sgn's gradient is PyTorch's unallocated zero tensor: added to zeros to read)
            np.testing.assert_allclose(e.grad.cpu().numpy(), torch.zeros(t.shape, dtype=t.dtype).add(t.grad).numpy(),
                                       rtol=1e-10, atol=1e-12)


def test_gather_keeps_its_input(device):
    x = ember.tensor(_data(2, 3), requires_grad=True, device=device)
    fn = x.gather(1, ember.tensor([[0, 2]], device=device)).grad_fn
    assert fn._saved_self is x and fn._raw_saved_self is not None
    # sort's and topk's gathers keep no input: an in-place change of it refuses nothing, as in PyTorch
    y = x * 1
    values = y.sort(1).values
    y.add_(1)
    values.sum().backward()
    y = x * 1
    picked = y.gather(1, ember.tensor([[0, 2]], device=device))
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        picked.sum().backward()


@pytest.mark.parametrize("needs", [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)])
def test_lerp_keeps_ends_for_the_weight_only(needs, device):
    """lerp with a tensor weight keeps its ends only for the weight's gradient (an in-place change of an end then
    refuses the backward, else not), as PyTorch's node; the gradients agree."""
    def program(m, dev):
        kw = {"device": dev} if m is ember else {}
        a, b, w = (m.tensor(_data(3, seed=i), requires_grad=bool(n), **kw) for i, n in enumerate(needs))
        a1, b1 = a * 1, b * 1
        y = m.lerp(a1, b1, w)
        b1.add_(1)
        try:
            y.sum().backward()
        except RuntimeError as exc:
            return "raise" if "inplace" in str(exc) else str(exc)
        return [None if t.grad is None else t.grad.tolist() for t in (a, b, w)]
    want, got = program(torch, "cpu"), program(ember, device)
    assert (got == "raise") == (want == "raise")
    if want != "raise":
        for g, w in zip(got, want):
            assert (g is None) == (w is None) and (w is None or np.allclose(g, w, rtol=1e-12))
    x = [ember.tensor(_data(3, seed=i), requires_grad=bool(n), device=device) for i, n in enumerate(needs)]
    assert ember.autograd.gradcheck(lambda *t: ember.lerp(*t), x)


@pytest.mark.parametrize("call", [lambda m, x: m.nn.functional.elu(x, -0.5, inplace=True),
                                  lambda m, x: m.nn.functional.leaky_relu(x, -0.2, inplace=True)])
def test_inplace_activation_negative_slope_refused(call, device):
    """An in-place activation's gradient comes from its result: PyTorch refuses it for a negative slope."""
    for m, kw in ((torch, {}), (ember, {"device": device})):
        x = m.tensor([1.0, -2.0], requires_grad=True, **kw)
        y = call(m, x * 1)
        with pytest.raises(RuntimeError, match="negative slope which is not supported"):
            y.sum().backward()


def test_gradcheck_of_nodes_keeping_more(device):
    x = ember.tensor(_data(3, 4), requires_grad=True, device=device)
    s = ember.tensor(_data(2, 4, seed=1), requires_grad=True, device=device)
    index = ember.tensor([2, 0], device=device)
    assert ember.autograd.gradcheck(lambda t: t.gather(1, ember.tensor([[0, 3], [1, 1], [2, 0]], device=device)),
                                    (x,))
    assert ember.autograd.gradcheck(lambda t, u: t.index_add(0, index, u, alpha=2), (x, s))
    assert ember.autograd.gradcheck(lambda t, u: t.index_copy(0, index, u), (x, s))
    mask = ember.tensor([True, False, True, False], device=device)
    assert ember.autograd.gradcheck(lambda t, u: t.masked_scatter(mask, u), (x, s))
    assert ember.autograd.gradcheck(lambda t, u: ember.dist(t[:2], u, 3), (x, s))
    for inplace in (lambda t: ember.nn.functional.elu_(t - 0.75, 0.5), lambda t: ember.nn.functional.celu_(t - 0.75),
                    lambda t: ember.nn.functional.leaky_relu_(t - 0.75, 0.2)):
        assert ember.autograd.gradcheck(inplace, (x,)) and ember.autograd.gradgradcheck(inplace, (x,))
