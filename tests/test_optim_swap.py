"""``optim.swap_in_optimizer_params_and_state`` against PyTorch."""
import numpy as np
import pytest

import ember


def _np(t):
    return t.detach().cpu().numpy()


# ----------------------------------------------------------------------------------------------------- optim
def test_swap_in_optimizer_params_and_state_matches_pytorch(device, torch):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")

    def run(lib, dev):
        kw = {"device": dev} if dev else {}
        w = lib.ones(2, requires_grad=True, **kw)
        opt = lib.optim.SGD([w], lr=0.5, momentum=0.9)
        w.grad = lib.ones(2, **kw)
        opt.step()
        other = lib.zeros(2, requires_grad=True, **kw)
        other.grad = lib.ones(2, **kw)
        sd = opt.state_dict()
        sd["param_groups"][0]["lr"] = 0.25
        with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, sd):
            assert opt.param_groups[0]["params"][0] is other and opt.param_groups[0]["lr"] == 0.25
            opt.step()
        assert opt.param_groups[0]["params"][0] is w and opt.param_groups[0]["lr"] == 0.5
        return other.detach(), w.detach()

    for e, t in zip(run(ember, device), run(torch, None)):
        np.testing.assert_allclose(_np(e), t.numpy())


def test_swap_in_optimizer_params_and_state_checks():
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)
    with pytest.raises(RuntimeError, match="initialized optimizer state"):
        with ember.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, opt.state_dict()):
            pass
    opt = ember.optim.Adam([w], lr=0.1)
    w.grad = ember.ones(2)
    opt.step()
    sd = opt.state_dict()
    with pytest.raises(RuntimeError, match="keys to exactly match"):
        bad = {"state": sd["state"], "param_groups": [dict(sd["param_groups"][0], extra=1)]}
        with ember.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, bad):
            pass
    with pytest.raises(RuntimeError, match="extra keys"):
        bad = {"state": {**sd["state"], 5: {}}, "param_groups": sd["param_groups"]}
        with ember.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, bad):
            pass
    with pytest.raises(RuntimeError, match="ordering"):
        with ember.optim.swap_in_optimizer_params_and_state(opt, {}, sd):
            pass
