"""The empirical-NTK path: vmap(jacrev(functional_call)) of an MLP and the einsum that contracts the Jacobians,
with PyTorch's results."""
import numpy as np
import pytest

import ember
from ember.kernels.linalg import _blas_pair

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("equation,shapes", [
    ("Naf,Mbf->NMab", [(6, 5, 1100), (4, 5, 1100)]),  # the NTK's contraction: large enough for one GEMM
    ("bij,bjk->bik", [(4, 40, 30), (4, 30, 50)]),
    ("ii,ij->j", [(200, 200), (200, 200)]),  # a repeated label beside the contracted one
    ("ij,ij->", [(3, 4), (3, 4)]),  # small: the plain loop
    ("kb,bkj->jb", [(60, 5), (5, 60, 200)]),  # a batch label, no free one in the first operand, permuted
    ("bij,bjk->bik", [(1, 40, 30), (4, 30, 50)]),  # a broadcast batch label: NumPy's path
    ("ijx,jk->ik", [(40, 30, 3), (30, 50)]),  # a label summed from one operand alone: NumPy's path
])
def test_einsum_two_operands_matches_pytorch(device, equation, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    got = ember.einsum(equation, *[ember.tensor(a, device=device) for a in arrays])
    want = torch.einsum(equation, *[torch.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_einsum_of_strided_operands_matches_pytorch(device):
    rng = np.random.default_rng(1)
    u, v = rng.standard_normal((10, 6, 700)), rng.standard_normal((10, 4, 700))
    got = ember.einsum("Naf,Mbf->NMab", *[ember.tensor(a, device=device).transpose(0, 1) for a in (u, v)])
    want = torch.einsum("Naf,Mbf->NMab", *[torch.tensor(a).transpose(0, 1) for a in (u, v)])
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("perm_a,perm_b", [((0, 1, 2), (0, 1, 2)), ((2, 0, 1), (1, 2, 0)), ((1, 2, 0), (2, 1, 0))])
def test_einsum_follows_any_operand_layout(device, perm_a, perm_b):
    rng = np.random.default_rng(2)
    u, v = rng.standard_normal((7, 5, 300)), rng.standard_normal((6, 5, 300))
    # the same logical operands, laid out in memory in the order perm_a / perm_b
    eu, ev = (ember.tensor(x.transpose(p).copy(), device=device).permute(*np.argsort(p).tolist())
              for x, p in ((u, perm_a), (v, perm_b)))
    got = ember.einsum("Naf,Mbf->NMab", eu, ev)
    np.testing.assert_allclose(got.cpu().numpy(), np.einsum("Naf,Mbf->NMab", u, v), rtol=1e-10, atol=1e-10)


def test_einsum_gradients_match_pytorch(device):
    rng = np.random.default_rng(3)
    u, v, g = rng.standard_normal((6, 5, 300)), rng.standard_normal((4, 5, 300)), rng.standard_normal((6, 4, 5, 5))
    eu, ev = (ember.tensor(x, device=device, requires_grad=True) for x in (u, v))
    tu, tv = (torch.tensor(x, requires_grad=True) for x in (u, v))
    ember.einsum("Naf,Mbf->NMab", eu, ev).backward(ember.tensor(g, device=device))
    torch.einsum("Naf,Mbf->NMab", tu, tv).backward(torch.tensor(g))
    for e, t in ((eu, tu), (ev, tv)):
        np.testing.assert_allclose(e.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_ntk_matches_pytorch(device):
    x = np.random.default_rng(4).standard_normal((4, 8))  # (the first weight's einsum, 4*4*4*4*256, takes the GEMM)
    results = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(8, 32), lib.nn.Tanh(), lib.nn.Linear(32, 4)).double().to(dev)
        if results:  # PyTorch's net takes ember's weights
            with torch.no_grad():
                for p, (_, q) in zip(net.parameters(), results[0][1]):
                    p.copy_(torch.tensor(q))
        params = {k: v.detach() for k, v in net.named_parameters()}
        single = lambda p, xi, net=net, lib=lib: lib.func.functional_call(net, p, (xi.unsqueeze(0),)).squeeze(0)
        jac = lib.func.vmap(lib.func.jacrev(single), (None, 0))(params, lib.tensor(x, device=dev))
        flat = [j.flatten(2) for j in jac.values()]
        ntk = lib.stack([lib.einsum("Naf,Mbf->NMab", j, j) for j in flat]).sum(0)
        results.append((ntk.detach().cpu().numpy(), [(k, v.detach().cpu().numpy()) for k, v in params.items()]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10, atol=1e-10)


def test_blas_pair_takes_only_large_contractions():
    big, small = np.zeros((6, 5, 1100)), np.zeros((3, 4))
    assert _blas_pair("Naf,Mbf->NMab", (big, big))
    assert not _blas_pair("ij,ij->", (small, small))  # too small to pay for the path search
    assert not _blas_pair("Naf,Mbf->NMabf", (big, big))  # nothing contracted: no GEMM to gain
    assert not _blas_pair("ij,jk,kl->il", (small, small, small))  # three operands: optimized already
