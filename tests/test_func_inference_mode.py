"""Function transforms called inside ``inference_mode`` record and differentiate their function as PyTorch's
do, on tensors made outside inference mode and inside it; their results are not inference tensors."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

X = np.array([0.3, -1.2, 2.0, 0.7])


def _programs(lib):
    def f(v):
        return (v.sin() * v).sum()

    def g(v):
        return v.exp() * v

    return {
        "grad": lambda x: lib.func.grad(f)(x),
        "grad_and_value": lambda x: lib.func.grad_and_value(f)(x)[0],
        "vjp": lambda x: lib.func.vjp(g, x)[1](lib.ones(4, dtype=x.dtype, device=x.device))[0],
        "jvp": lambda x: lib.func.jvp(g, (x,), (lib.ones(4, dtype=x.dtype, device=x.device),))[1],
        "jacrev": lambda x: lib.func.jacrev(g)(x),
        "hessian": lambda x: lib.func.hessian(f)(x),
        "vmap_grad": lambda x: lib.func.vmap(lib.func.grad(lambda s: s.sin() * s))(x),
    }


@pytest.mark.parametrize("name", list(_programs(ember)))
@pytest.mark.parametrize("made", ["outside", "inside"])
def test_transform_inside_inference_mode_matches_torch(device, torch, name, made):
    e_prog, t_prog = _programs(ember)[name], _programs(torch)[name]
    ex = ember.tensor(X, device=device)
    tx = torch.tensor(X)
    with ember.inference_mode():
        if made == "inside":
            ex = ember.tensor(X, device=device)
        er = e_prog(ex)
    with torch.inference_mode():
        if made == "inside":
            tx = torch.tensor(X)
        tr = t_prog(tx)
    assert_close(er, tr, rtol=1e-10, atol=1e-12)
    assert er.is_inference() == tr.is_inference()
    assert not er.requires_grad
    assert ember.is_inference_mode_enabled() is False


def test_inference_mode_restored_after_a_failing_transform(device):
    x = ember.tensor(X, device=device)
    with ember.inference_mode():
        with pytest.raises(RuntimeError, match="scalar"):
            ember.func.grad(lambda v: v * 2)(x)
        assert ember.is_inference_mode_enabled()
        y = x * 2
    assert y.is_inference()
