"""Layer norm's bad input: weight or bias not of normalized_shape raise PyTorch's RuntimeError, naming the
parameter and both shapes, and leave the input and its gradient as they were."""
import numpy as np
import pytest

import ember

X = (np.arange(8.0).reshape(2, 4) / 3).astype(np.float32)


@pytest.mark.parametrize("name,shape", [("weight", (3,)), ("bias", (2, 2)), ("weight", (1, 4)), ("bias", (8,))])
def test_parameter_of_another_shape_raises_like_torch(device, torch, name, shape):
    args = {"weight": None, "bias": None}
    args[name] = ember.ones(*shape, device=device)
    x = ember.tensor(X, device=device, requires_grad=True)
    x.sum().backward()
    grad_before = x.grad.clone()
    targs = {"weight": None, "bias": None}
    targs[name] = torch.ones(*shape)
    with pytest.raises(RuntimeError) as ref:
        torch.nn.functional.layer_norm(torch.tensor(X), (4,), **targs)
    with pytest.raises(RuntimeError) as err:
        ember.nn.functional.layer_norm(x, (4,), **args)
    assert str(err.value) == str(ref.value)
    np.testing.assert_array_equal(x.detach().cpu().numpy(), X)
    assert ember.equal(x.grad, grad_before)
