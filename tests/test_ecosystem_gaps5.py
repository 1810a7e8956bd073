"""Gaps the libraries' own test suites found (Lightning's ddp_spawn tests), each checked against PyTorch."""
import logging

import pytest

pytest.importorskip("mpi4py")

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
from ember.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook as ember_hook  # noqa: E402


class _Bucket:
    def __init__(self, last):
        self.last = last

    def is_last(self):
        return self.last


def test_post_local_sgd_state_counts_steps_as_pytorch():
    """Lightning's DDP strategy imports the state and checks its settings against it."""
    pytest.importorskip("torch")
    from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook as torch_hook

    states = [m.PostLocalSGDState(None, None, 2, post_local_gradient_allreduce=False) for m in (ember_hook, torch_hook)]
    slots = ("process_group", "subgroup", "start_localSGD_iter", "post_local_gradient_allreduce", "iter")
    assert ember_hook.PostLocalSGDState.__slots__ == tuple(torch_hook.PostLocalSGDState.__slots__)
    for last in (False, True, True, False, True):
        for s in states:
            s.maybe_increase_iter(_Bucket(last))
        assert [getattr(states[0], k) for k in slots] == [getattr(states[1], k) for k in slots]
    assert states[0].iter == 3


def test_post_local_sgd_hook_says_it_cannot_run():
    with pytest.raises(NotImplementedError, match="post_localSGD_hook: .*register_comm_hook"):
        ember_hook.post_localSGD_hook(ember_hook.PostLocalSGDState(None, None, 1), _Bucket(True))


def test_post_local_sgd_state_logs_its_start(caplog):
    with caplog.at_level(logging.INFO, logger=ember_hook.__name__):
        ember_hook.PostLocalSGDState(None, None, 4)
    assert "Local SGD will be started after 4 iterations" in caplog.text


def _ddp_facts(lib, **kwargs):
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 1, bias=False))
    ddp = lib.nn.parallel.DistributedDataParallel(model, **kwargs)
    data = ddp._get_ddp_logging_data()
    return ddp.static_graph, ddp.gradient_as_bucket_view, ddp.bucket_bytes_cap, data


def test_ddp_settings_and_logging_data_as_pytorch():
    """Lightning's DDP teardown reads ``static_graph`` and ``_get_ddp_logging_data()``: ember's keys hold PyTorch's
    values on a one-process group."""
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    kwargs = dict(static_graph=True, gradient_as_bucket_view=True, bucket_cap_mb=1)
    tdist.init_process_group("gloo", rank=0, world_size=1, store=tdist.HashStore())
    try:
        *want_attrs, want = _ddp_facts(torch, **kwargs)
    finally:
        tdist.destroy_process_group()
    dist.init_process_group("gloo")
    try:
        *got_attrs, got = _ddp_facts(ember, **kwargs)
    finally:
        dist.destroy_process_group()
    assert got_attrs == want_attrs == [True, True, 2 ** 20]
    assert {k: want[k] for k in got} == got
    assert set(got) >= {"module_name", "world_size", "rank", "backend_name", "bucket_cap_bytes",
                        "find_unused_parameters", "num_parameter_tensors", "total_parameter_size_bytes"}
