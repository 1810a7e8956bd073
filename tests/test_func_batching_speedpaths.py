"""The speed paths under the function transforms, against PyTorch and torch.func: the matmul kernel's one-GEMM
forms for an operand shared by a stack (a Jacobian's rows through a weight, per-sample weight gradients),
tanh's and sigmoid's double backward computing only the gradients wanted, and Jacobian blocks laid out from
the stacked rows without recording ops when no outer transform needs their graph."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

# (a, b) shapes: one matrix (stack dimensions of size 1) times a stack of vectors, a stack times one matrix,
# stacked outer products with one side's stack broadcast
MATMUL_SHAPES = [
    ((1, 1, 6, 5), (4, 3, 5, 1)), ((1, 6, 5), (4, 5, 1)), ((6, 5), (2, 4, 5, 1)), ((2, 1, 6, 5), (1, 2, 5, 1)),
    ((4, 3, 6, 5), (1, 1, 5, 2)), ((4, 3, 6, 5), (3, 5, 2)), ((4, 3, 6, 5), (1, 5, 1)),
    ((3, 6, 1), (4, 3, 1, 5)), ((4, 3, 20, 1), (1, 3, 1, 20)), ((10, 16, 32, 1), (1, 16, 1, 32)),
]


def _pair(torch, device, shape, rng, dtype="float64"):
    a = rng.standard_normal(shape).astype(dtype)
    return ember.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_of_one_matrix_and_a_stack(device, torch, sa, sb):
    rng = np.random.default_rng(0)
    dtype = "float32" if np.prod(sa) * np.prod(sb) > 1e5 else "float64"
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {}
    ea, ta = _pair(torch, device, sa, rng, dtype)
    eb, tb = _pair(torch, device, sb, rng, dtype)
    e, t = ea @ eb, ta @ tb
    assert tuple(e.shape) == tuple(t.shape)
    assert_close(e, t.detach().numpy(), **tol)
    (e * e).sum().backward()
    (t * t).sum().backward()
    assert_close(ea.grad, ta.grad.numpy(), **tol)
    assert_close(eb.grad, tb.grad.numpy(), **tol)


def test_matmul_with_a_matrix_repeated_by_zero_strides(device, torch):
    # a weight expanded over a batch (what vmap lifts a parameter to) on either side, and empty stacks
    rng = np.random.default_rng(1)
    w, v, m = rng.standard_normal((6, 5)), rng.standard_normal((7, 5, 1)), rng.standard_normal((7, 3, 6))
    ew, tw = ember.tensor(w, device=device, requires_grad=True), torch.tensor(w, requires_grad=True)
    ev, tv = ember.tensor(v, device=device), torch.tensor(v)
    em, tm = ember.tensor(m, device=device), torch.tensor(m)
    pairs = ((ew.expand(7, 6, 5) @ ev, tw.expand(7, 6, 5) @ tv), (em @ ew.expand(7, 6, 5), tm @ tw.expand(7, 6, 5)))
    for e, t in pairs:
        assert_close(e, t.detach().numpy())
        assert e.is_contiguous()
        e.sum().backward()
        t.sum().backward()
        assert_close(ew.grad, tw.grad.numpy())
    z = ember.zeros(0, 6, 5, device=device) @ ember.zeros(5, 1, device=device).expand(0, 5, 1)
    assert tuple(z.shape) == (0, 6, 1)
    z = ember.zeros(6, 5, device=device).expand(0, 6, 5) @ ember.zeros(0, 5, 1, device=device)
    assert tuple(z.shape) == (0, 6, 1)


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
@pytest.mark.parametrize("cotangent_requires_grad", [False, True])
def test_double_backward_of_tanh_and_sigmoid(device, torch, name, cotangent_requires_grad):
    # the gradient of the first backward with respect to the output, and to the cotangent where it needs one
    rng = np.random.default_rng(2)
    x, v, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    ex, tx = ember.tensor(x, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
    ev = ember.tensor(v, device=device, requires_grad=cotangent_requires_grad)
    tv = torch.tensor(v, requires_grad=cotangent_requires_grad)
    eg, = ember.autograd.grad(getattr(ember, name)(ex), ex, ev, create_graph=True)
    tg, = torch.autograd.grad(getattr(torch, name)(tx), tx, tv, create_graph=True)
    assert_close(eg, tg.detach().numpy())
    ins_e, ins_t = ([ex, ev], [tx, tv]) if cotangent_requires_grad else ([ex], [tx])
    e_second = ember.autograd.grad((eg * ember.tensor(w, device=device)).sum(), ins_e)
    t_second = torch.autograd.grad((tg * torch.tensor(w)).sum(), ins_t)
    for e, t in zip(e_second, t_second):
        assert_close(e, t.numpy())
    assert ember.autograd.gradgradcheck(getattr(ember, name), (ex,))


def _layer(lib, device, rng, n_in=7, n_out=5):
    W = (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype("float32")
    b = rng.standard_normal(n_out).astype("float32")
    x = rng.standard_normal(n_in).astype("float32")
    kw = {"device": device} if lib is ember else {}
    return lib.tensor(W, **kw), lib.tensor(b, **kw), lib.tensor(x, **kw)


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_second_order_transforms_of_a_layer(device, torch, act):
    # hessian, jacrev(jacrev), jacfwd(jacrev) of act(W x + b) and a gradient through a Jacobian, as torch.func
    results = []
    for lib in (ember, torch):
        W, b, x = _layer(lib, device, np.random.default_rng(3))
        fn = getattr(lib, act)

        def f(x, W=W, b=b, fn=fn):
            return fn(W @ x + b)
        F = lib.func
        results.append([F.hessian(f)(x), F.jacrev(F.jacrev(f))(x), F.jacfwd(F.jacrev(f))(x),
                        F.grad(lambda x, f=f, F=F: (F.jacrev(f)(x) ** 2).sum())(x)])
    for e, t in zip(*results):
        assert tuple(e.shape) == tuple(t.shape)
        assert_close(e, t.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_empirical_ntk_blocks(device, torch):
    # vmap(jacrev(functional_call)) of a small MLP: each parameter's Jacobian block, laid out as torch.func's
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((5, 6)).astype("float32")
    blocks, nets = [], []
    for lib in (ember, torch):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))
        if lib is torch:  # (ember's weights copied)
            with torch.no_grad():
                for p, q in zip(nets[0].parameters(), net.parameters()):
                    q.copy_(torch.tensor(p.detach().cpu().numpy()))
        else:
            net = net.to(device)
        nets.append(net)
        params = {k: v.detach() for k, v in net.named_parameters()}
        x = lib.tensor(xs, device=device) if lib is ember else lib.tensor(xs)

        def single(p, x, net=net, lib=lib):
            return lib.func.functional_call(net, p, (x.unsqueeze(0),)).squeeze(0)
        blocks.append(lib.func.vmap(lib.func.jacrev(single), (None, 0))(params, x))
    e, t = blocks
    assert set(e) == set(t)
    for k in t:
        assert tuple(e[k].shape) == tuple(t[k].shape)
        assert_close(e[k], t[k].detach().numpy(), rtol=1e-4, atol=1e-5)


def test_vectorized_autograd_functional_and_batched_grads(device, torch):
    # autograd.functional.jacobian/hessian(vectorize=True) and grad(is_grads_batched=True) take the same path
    results = []
    for lib in (ember, torch):
        W, b, x = _layer(lib, device, np.random.default_rng(5))
        af = lib.autograd.functional
        xr = x.clone().requires_grad_()
        y = lib.tanh(W @ xr + b)
        basis = lib.eye(5, device=device) if lib is ember else lib.eye(5)
        results.append([af.jacobian(lambda x, W=W, b=b, lib=lib: lib.tanh(W @ x + b), x, vectorize=True),
                        af.hessian(lambda x, W=W, b=b, lib=lib: lib.tanh(W @ x + b).sum(), x, vectorize=True),
                        lib.autograd.grad(y, xr, basis, is_grads_batched=True)[0]])
    for e, t in zip(*results):
        assert tuple(e.shape) == tuple(t.shape)
        assert_close(e, t.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("piece", [7, 150])
def test_jacobians_of_a_large_basis_run_in_pieces(device, torch, monkeypatch, piece):
    # a basis of more than _PIECE elements runs in vmapped pieces of identity rows (as chunk_size does), with
    # the values and the graph (a gradient through the pieces) of one pass
    from ember.func import transforms
    monkeypatch.setattr(transforms, "_PIECE", piece)
    results = []
    for lib in (ember, torch):
        W, b, x = _layer(lib, device, np.random.default_rng(6))
        F = lib.func

        def f(x, W=W, b=b, lib=lib):
            return lib.tanh(W @ x + b)
        results.append([F.jacrev(F.jacrev(f))(x), F.jacfwd(F.jacrev(f))(x), F.jacrev(f, chunk_size=2)(x),
                        F.grad(lambda x, f=f, F=F: (F.jacrev(f)(x) ** 2).sum())(x)])
    for e, t in zip(*results):
        assert tuple(e.shape) == tuple(t.shape)
        assert_close(e, t.detach().numpy(), rtol=1e-4, atol=1e-5)


# (logical shapes of a and b, in_dims): vectors, matrices and stacks, batched on one side or both
VMAP_MATMUL = [
    (((4,), (4, 3)), (0, None)), (((4,), (4, 3)), (None, 0)), (((2, 3, 4), (4, 5)), (None, 0)),
    (((3, 4), (2, 4, 5)), (0, None)), (((3, 4), (4,)), (0, None)), (((3, 4), (4,)), (None, 0)),
    (((4,), (4,)), (0, 0)), (((2, 3, 4), (2, 4, 5)), (0, 0)), (((4,), (2, 4, 5)), (0, None)),
]


@pytest.mark.parametrize("shapes,in_dims", VMAP_MATMUL)
def test_vmapped_matmul_with_an_operand_unbatched(device, torch, shapes, in_dims):
    # the unbatched operand meets the batched one's physical tensor through matmul's own broadcasting
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal(((6,) + s) if d is not None else s) for s, d in zip(shapes, in_dims)]
    e_args = [ember.tensor(a, device=device, requires_grad=True) for a in arrays]
    t_args = [torch.tensor(a, requires_grad=True) for a in arrays]
    e = ember.vmap(ember.matmul, in_dims=in_dims)(*e_args)
    t = torch.vmap(torch.matmul, in_dims=in_dims)(*t_args)
    assert tuple(e.shape) == tuple(t.shape)
    assert_close(e, t.detach().numpy())
    (e.sin()).sum().backward()
    (t.sin()).sum().backward()
    for ea, ta in zip(e_args, t_args):
        assert_close(ea.grad, ta.grad.numpy())
