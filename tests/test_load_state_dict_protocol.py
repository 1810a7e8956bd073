"""``Module.load_state_dict`` runs PyTorch's protocol: per module, parents first, through ``_load_from_state_dict``
(which libraries override), with load-state-dict pre- and post-hooks and version metadata; each program runs on
ember and on PyTorch and the two must agree."""
import copy
from collections import OrderedDict

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy()


def _renaming_model(lib, log):
    """A model whose block renames its old key ``w`` to ``weight`` in ``_load_from_state_dict``, as libraries
    adapt old checkpoints; every call is logged."""

    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = lib.nn.Parameter(lib.zeros(2))
            self.register_buffer("steps", lib.zeros((), dtype=lib.int64))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            log.append(("load", prefix, sorted(state_dict), local_metadata.get("version")))
            if prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)

    model = lib.nn.Sequential(Block(), lib.nn.Sequential(Block()))
    for name, m in model.named_modules():
        m._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: log.append(("pre", prefix, len(rest))))
        m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: log.append(("pre_m", type(mod).__name__,
                                                                                        prefix)))
        m.register_load_state_dict_post_hook(lambda mod, keys, n=name: log.append(("post", n, list(keys.missing_keys),
                                                                                   list(keys.unexpected_keys))))
    return model


@pytest.mark.parametrize("strict", [True, False])
def test_overrides_and_hooks_run_per_module_as_pytorchs(device, strict):
    logs, results, models = {}, {}, {}
    for lib, dev in ((ember, device), (torch, "cpu")):
        log = logs[lib] = []
        model = models[lib] = _renaming_model(lib, log).to(dev)
        sd = OrderedDict([("0.w", lib.ones(2, device=dev)), ("0.steps", lib.tensor(3, device=dev)),
                          ("1.0.weight", lib.full((2,), 2.0, device=dev)), ("1.0.extra", lib.ones(1, device=dev))])
        sd._metadata = OrderedDict([("", {"version": 1}), ("0", {"version": 7})])
        try:
            results[lib] = tuple(map(list, model.load_state_dict(sd, strict=strict)))
        except RuntimeError as e:
            results[lib] = str(e)
        assert list(sd) == ["0.w", "0.steps", "1.0.weight", "1.0.extra"]  # the caller's dict is left as it was
    assert logs[ember] == logs[torch] and results[ember] == results[torch]
    assert ("load", "0.", ["0.steps", "0.w"], 7) in logs[ember]
    np.testing.assert_array_equal(_np(models[ember][0].weight), _np(models[torch][0].weight))
    np.testing.assert_array_equal(_np(models[ember][1][0].weight), [2.0, 2.0])


def test_errors_and_what_is_copied_match_pytorch(device):
    got = {}
    for lib, dev in ((ember, device), (torch, "cpu")):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2)).to(dev)
        sd = OrderedDict((k, v.clone()) for k, v in model.state_dict().items())
        sd["0.weight"] = lib.zeros(5, 5, device=dev)
        sd["0.bias"] = lib.full((2,), 9.0, device=dev)
        sd["1.weight"] = "not a tensor"
        sd["1.num_batches_tracked"] = lib.tensor([4], device=dev)  # a 0-d buffer takes a one-element 1-d entry
        del sd["1.running_var"]
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(sd)
        msg = str(info.value).replace("torch.Size", "Size").replace("ember.Size", "Size")
        got[lib] = (msg.replace("ember.tensor.Tensor", "TENSOR").replace("torch.Tensor'", "TENSOR'"),
                    _np(model[0].bias).tolist(), int(model[1].num_batches_tracked))
    assert got[ember] == got[torch]
    assert got[ember][1:] == ([9.0, 9.0], 4)  # the entries that fit are copied before the errors raise


def test_assign_gives_the_checkpoints_tensors(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        model = lib.nn.Linear(2, 1).to(dev)
        model.weight.requires_grad_(False)
        w, b = lib.ones(1, 2, device=dev), lib.nn.Parameter(lib.zeros(1, device=dev))
        model.load_state_dict({"weight": w, "bias": b}, assign=True)
        assert isinstance(model.weight, lib.nn.Parameter) and not model.weight.requires_grad
        assert model.bias is b and model.bias.requires_grad
        assert model.weight.data_ptr() == w.data_ptr() or dev != "cpu"


def test_batch_norm_loads_a_checkpoint_older_than_its_counter(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        bn = lib.nn.BatchNorm2d(3).to(dev)
        sd = OrderedDict((k, v) for k, v in bn.state_dict().items() if k != "num_batches_tracked")
        sd._metadata = OrderedDict([("", {"version": 1})])
        assert tuple(bn.load_state_dict(sd)) == ([], [])
        sd._metadata[""]["version"] = 2  # a current checkpoint without its counter: the counter is missing
        assert list(bn.load_state_dict(sd, strict=False).missing_keys) == ["num_batches_tracked"]
    assert ember.nn.BatchNorm2d(3).state_dict()._metadata[""] == {"version": 2}


def test_frozen_batch_norm_loads_a_batch_norm_state_dict(device):
    ops = pytest.importorskip("ember_vision.ops")
    bn = ember.nn.BatchNorm2d(3).to(device)
    bn.running_mean.fill_(0.5)
    frozen = ops.FrozenBatchNorm2d(3).to(device)
    assert type(frozen)._load_from_state_dict is not ember.nn.Module._load_from_state_dict
    assert not frozen._load_state_dict_pre_hooks
    assert tuple(frozen.load_state_dict(bn.state_dict())) == ([], [])  # its num_batches_tracked is dropped
    np.testing.assert_array_equal(_np(frozen.running_mean), [0.5, 0.5, 0.5])


def test_deepcopy_of_a_lazy_module(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        lazy = lib.nn.LazyLinear(3, device=dev, dtype=lib.float64)
        twin = copy.deepcopy(lazy)
        assert type(twin.weight).__name__ == "UninitializedParameter" and twin.weight is not lazy.weight
        assert twin.weight.dtype == lib.float64 and twin.weight.requires_grad
        assert twin(lib.ones(2, 4, device=dev, dtype=lib.float64)).shape == (2, 3)
        assert type(twin.weight).__name__ == "Parameter" and type(lazy.weight).__name__ == "UninitializedParameter"
