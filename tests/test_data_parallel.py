"""nn.DataParallel against the single-device run, on the three-device test backend (``fakegpu``) and,
with two or more GPUs, on cuda: scatter along ``dim``, replicas in threads, gather on
``output_device``, gradients accumulated into the original module."""
import copy

import numpy as np
import pytest
from fakegpu import KINDS, cpu_default, multi_device, registered

import ember
import ember.nn as nn
from ember.nn.parallel import DataParallel, gather, scatter

kind = pytest.fixture(params=KINDS)(multi_device)
cpu_by_default = pytest.fixture(autouse=True)(cpu_default)


def host(t):
    return t.detach().cpu().numpy()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 3)
        self.shared = self.fc1  # one module reachable twice: replicated once

    def forward(self, x, scale=1.0):
        return self.fc2(self.bn(self.fc1(x)).relu()) * scale


def _pair(kind):
    ember.manual_seed(0)
    ref = Net().double()
    par = copy.deepcopy(ref).to(f"{kind}:0")
    return ref, par


@pytest.mark.parametrize("devices,batch", [([0, 1, 2], 8), ([1, 0], 6), ([0, 1, 2], 4)])
def test_outputs_and_gradients_equal_single_device_run(kind, devices, batch):
    ref, par = _pair(kind)
    par.to(f"{kind}:{devices[0]}")
    dp = DataParallel(par, device_ids=devices)
    x = ember.randn(batch, 5, dtype=ember.float64)
    out = dp(x.to(f"{kind}:{devices[0]}"), scale=2.0)
    assert out.device == ember.device(kind, devices[0]) and out.shape == (batch, 3)
    # BatchNorm normalises per replica (as in PyTorch), so compare against the same per-chunk run
    chunks = x.chunk(len(devices))
    expected = ember.cat([ref(c, scale=2.0) for c in chunks])
    np.testing.assert_allclose(host(out), host(expected), rtol=1e-10, atol=1e-12)
    (out ** 2).sum().backward()
    (expected ** 2).sum().backward()
    for (name, p), q in zip(par.named_parameters(), ref.parameters()):
        assert p.grad is not None and p.grad.device == p.device, name
        np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=1e-10, atol=1e-12, err_msg=name)


def test_batchnorm_statistics_of_the_first_device_are_kept(kind):
    _, par = _pair(kind)
    dp = DataParallel(par, device_ids=[0, 1])
    x = ember.randn(6, 5, dtype=ember.float64, device=f"{kind}:0")
    before = host(par.bn.running_mean)
    dp(x)
    first = par.bn.running_mean
    assert first.device == ember.device(kind, 0)
    np.testing.assert_allclose(host(first), 0.9 * before + 0.1 * host(par.fc1(x[:3]).mean(0)), rtol=1e-10)


def test_one_device_is_transparent(kind):
    ref, par = _pair(kind)
    dp = DataParallel(par, device_ids=[0])
    x = ember.randn(4, 5, dtype=ember.float64)
    out = dp(x)  # inputs on the CPU are moved to the device
    assert out.device == ember.device(kind, 0)
    np.testing.assert_allclose(host(out), host(ref(x)), rtol=1e-12)
    out.sum().backward()
    assert par.fc1.weight.grad is not None


def test_module_attribute_and_state_dict_prefix(kind):
    _, par = _pair(kind)
    dp = DataParallel(par, device_ids=[0, 1, 2])
    assert dp.module is par
    keys = list(dp.state_dict())
    assert keys and all(k.startswith("module.") for k in keys)
    assert [k[len("module."):] for k in keys] == list(par.state_dict())
    assert dp.device_ids == [0, 1, 2] and dp.output_device == ember.device(kind, 0)
    fresh = DataParallel(Net().double().to(f"{kind}:0"), device_ids=[0, 1])
    fresh.load_state_dict(dp.state_dict())
    np.testing.assert_array_equal(host(fresh.module.fc2.weight), host(par.fc2.weight))


def test_output_device_and_dim(kind):
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.tensor([2.0], dtype=ember.float64))

        def forward(self, x):
            assert x.shape[1] <= 2  # the batch was split along dim 1
            return {"y": x * self.w, "n": (x.sum(0, keepdim=True),)}

    m = Scale().to(f"{kind}:0")
    dp = DataParallel(m, device_ids=[0, 1, 2], output_device=2, dim=1)
    x = ember.arange(12.0, dtype=ember.float64).reshape(2, 6)
    out = dp(x.to(f"{kind}:0"))
    assert out["y"].device == ember.device(kind, 2) and out["n"][0].device == ember.device(kind, 2)
    np.testing.assert_array_equal(host(out["y"]), host(x) * 2)
    np.testing.assert_array_equal(host(out["n"][0]), host(x).sum(0, keepdims=True))
    out["y"].sum().backward()
    np.testing.assert_array_equal(host(m.w.grad), [host(x).sum()])


def test_replicas_run_on_their_own_devices_in_threads(kind):
    import threading

    seen = {}

    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            seen[x.get_device()] = (threading.current_thread() is threading.main_thread(), self.lin.weight.get_device(),
                                    ember.zeros(1, device=kind).get_device())
            return self.lin(x)

    dp = DataParallel(Probe().to(f"{kind}:0"), device_ids=[0, 1, 2])
    dp(ember.ones(6, 2, device=f"{kind}:0"))
    assert sorted(seen) == [0, 1, 2]
    assert all(w == i and cur == i for i, (_, w, cur) in seen.items())
    assert not any(main for main, _, _ in seen.values())  # each replica in a worker thread


def test_module_on_the_wrong_device_and_errors_in_replicas(kind):
    par = Net().to(f"{kind}:1")
    with pytest.raises(RuntimeError, match=f"parameters and buffers on device {kind}:0"):
        DataParallel(par, device_ids=[0, 1])(ember.ones(4, 5))

    class Boom(nn.Module):
        def forward(self, x):
            if x.get_device() == 1:
                raise ValueError("bad input")
            return x

    with pytest.raises(ValueError, match=f"replica on device {kind}:1: bad input"), ember.device(kind):
        # a module without parameters runs on the accelerator in use: the default device's (a GPU may be present)
        DataParallel(Boom(), device_ids=[0, 1])(ember.ones(4, 2, device=f"{kind}:0"))


def test_scatter_and_gather_helpers(kind):
    devs = [ember.device(kind, i) for i in range(3)]
    x = ember.arange(10.0)
    parts = scatter((x, "tag", {"k": x}), devs)
    assert len(parts) == 3 and [p[0].shape[0] for p in parts] == [4, 4, 2]
    assert [p[0].get_device() for p in parts] == [0, 1, 2] and parts[2][1] == "tag"
    assert parts[1][2]["k"].get_device() == 1
    back = gather([p[0] for p in parts], ember.device("cpu"))
    np.testing.assert_array_equal(back.numpy(), np.arange(10.0))
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        g = gather([p[0].sum() for p in parts], devs[0])
    assert g.shape == (3,)


def test_without_an_accelerator_it_calls_the_module():
    if ember.accelerator.current_accelerator() is not None:
        pytest.skip("an accelerator is present")
    m = nn.Linear(3, 2)
    dp = DataParallel(m)
    assert dp.device_ids == []
    x = ember.ones(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), m(x).detach().numpy())


def test_registered_fixture_is_removed_after_use():
    with registered(2), ember.device("fakegpu"):  # the accelerator in use (a GPU may be present too)
        assert ember.accelerator.device_count() == 2
    assert "fakegpu" not in ember.plugins.REGISTRY.backends
