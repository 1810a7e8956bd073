"""Gaps transformers 5.24 (with accelerate) showed under the alias (see docs/ecosystem.md), each checked against
PyTorch: the distributed platform it imports when ``torch.distributed.is_available()``, pytree's flatten functions,
flex attention's names, CUDA graph names, and the scheduler's view of a wrapping optimizer's ``step``."""
import dataclasses
import subprocess
import sys
import warnings

import pytest

_COLLECTIVES_SCRIPT = """
import socket, sys, warnings
import {lib} as torch
import {lib}.distributed as dist
import {lib}.distributed._functional_collectives as fc
from {lib}.distributed.algorithms.join import Join, Joinable, JoinHook
warnings.simplefilter("ignore")
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]; sock.close()
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{{port}}", rank=0, world_size=1)
W = dist.group.WORLD
x = torch.arange(12.).reshape(2, 6)
out = [dist.get_process_group_ranks(W)]
out.append(fc.wait_tensor(fc.all_reduce(x, "avg", W)).tolist())
out.append(fc.all_gather_single(x, 1, [0]).tolist())
out.append(fc.reduce_scatter_single(x, "sum", 1, W).tolist())
out.append(tuple(fc.all_gather_tensor(x, 0, W).shape))
out.append(fc.broadcast(x, 0, W).tolist())
out.append(fc.all_to_all_single(x, None, None, W).tolist())
y = torch.empty(2, 6)
dist.all_to_all_single(y, x * 2, [2], [2]); out.append(y.tolist())
for bad in (lambda: fc.all_reduce(x, "sum", None), lambda: dist.all_to_all_single(y, x, [1], [2])):
    try:
        bad(); out.append("no error")
    except (ValueError, RuntimeError) as e:
        out.append(type(e).__name__)
w = x.clone().requires_grad_()
g = fc.all_gather_single_autograd(w, 0, W); (g * torch.arange(6.)).sum().backward(); out.append(w.grad.tolist())
w.grad = None
r = fc.reduce_scatter_single_autograd(w, "sum", 0, W); (r * 3).sum().backward(); out.append(w.grad.tolist())
w.grad = None
a = fc.all_to_all_single_autograd(w, [2], [2], W); (a * a).sum().backward(); out.append(w.grad.tolist())

class Hook(JoinHook):
    def __init__(self, log): self.log = log
    def main_hook(self): self.log.append("main")
    def post_hook(self, is_last_joiner): self.log.append(("post", is_last_joiner))

class Counter(Joinable):
    def __init__(self):
        super().__init__(); self.log = []
    def join_hook(self, **kwargs): self.log.append(sorted(kwargs)); return Hook(self.log)
    @property
    def join_device(self): return torch.device("cpu")
    @property
    def join_process_group(self): return W

c = Counter()
with Join([c], flag=1):
    for _ in range(3):
        Join.notify_join_context(c)
out.append(c.log)
out.append(Join.notify_join_context(c) is None)  # outside an enabled join: nothing
try:
    Join([])
except ValueError as e:
    out.append(str(e))
dist.destroy_process_group()
print(out)
"""


@pytest.mark.slow
def test_functional_collectives_and_join_match_pytorch():
    """transformers imports ``_functional_collectives`` (``wait_tensor``, ``all_to_all_single_autograd``),
    ``dist.all_to_all_single`` and ``get_process_group_ranks``; accelerate imports ``algorithms.join``. One process,
    the same calls on ember and on PyTorch (gloo): values, gradients, errors and the join's hook calls (about 20 s:
    slow; the two-rank test below covers the family by default)."""
    pytest.importorskip("torch")
    runs = {lib: subprocess.run([sys.executable, "-c", _COLLECTIVES_SCRIPT.format(lib=lib)], capture_output=True,
                                text=True, timeout=180) for lib in ("torch", "ember")}
    for lib, proc in runs.items():
        assert proc.returncode == 0, f"{lib}: {proc.stderr[-3000:]}"
    assert runs["ember"].stdout == runs["torch"].stdout
    assert "[[], ('post', True)]" in runs["ember"].stdout.replace("['flag']", "[]")


_UNEVEN_SCRIPT = """
import sys
import ember, ember.distributed as dist
import ember.distributed._functional_collectives as fc
from ember.distributed.algorithms.join import Join, Joinable, JoinHook
dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
# all_to_all_single with uneven parts: rank r sends r + 1 rows to every rank, each row [10 * r + dst]
send = ember.tensor([[10.0 * rank + dst] for dst in range(n) for _ in range(rank + 1)])
recv = ember.empty(sum(r + 1 for r in range(n)), 1)
dist.all_to_all_single(recv, send, [r + 1 for r in range(n)], [rank + 1] * n)
W = dist.group.WORLD
gathered = fc.all_gather_single(ember.tensor([[float(rank)]]), 1, W).tolist()
scattered = fc.reduce_scatter_single(ember.arange(4.0).reshape(2, 2) + rank, "sum", 0, W).tolist()

class Shadow(JoinHook):
    def __init__(self, owner): self.owner = owner
    def main_hook(self):
        self.owner.shadowed += 1
        dist.all_reduce(ember.zeros(1))  # stands in for this rank in the others' gradient all-reduce
    def post_hook(self, is_last_joiner): self.owner.last = is_last_joiner

class Model(Joinable):
    def __init__(self):
        super().__init__(); self.shadowed, self.last, self.sums = 0, None, []
    def join_hook(self, **kwargs): return Shadow(self)
    @property
    def join_device(self): return ember.device("cpu")
    @property
    def join_process_group(self): return dist.group.WORLD

m = Model()
with Join([m]):
    for _ in range(2 + 2 * rank):  # rank 0 runs out of inputs first
        Join.notify_join_context(m)
        t = ember.ones(1); dist.all_reduce(t); m.sums.append(t.item())
with open(sys.argv[1] + str(rank), "w") as f:
    print(rank, recv.flatten().tolist(), gathered, scattered, m.shadowed, m.last, m.sums, file=f)
"""


def test_uneven_all_to_all_and_join_on_two_ranks(tmp_path):
    """Two ranks: ``all_to_all_single`` with uneven splits delivers each rank's rows in rank order; under ``Join``
    the rank with fewer inputs shadows the other's all-reduces until it finishes, and only the last rank is told it
    joined last (PyTorch's documented protocol)."""
    pytest.importorskip("mpi4py")
    script = tmp_path / "uneven.py"
    script.write_text(_UNEVEN_SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc", "2", "--timeout", "60",
                           str(script), str(tmp_path / "rank")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    lines = [(tmp_path / f"rank{r}").read_text().strip() for r in range(2)]
    # rank 0 shadows rank 1's last two rounds; rank 1 joins last
    assert lines[0] == "0 [0.0, 10.0, 10.0] [[0.0, 1.0]] [[1.0, 3.0]] 2 False [2.0, 2.0]"
    assert lines[1] == "1 [1.0, 11.0, 11.0] [[0.0, 1.0]] [[5.0, 7.0]] 0 True [2.0, 2.0, 1.0, 1.0]"


def test_pytree_flatten_functions_match_pytorch():
    """transformers registers its ``ModelOutput`` with ``flatten_with_keys_fn=_dict_flatten_with_keys``."""
    torch = pytest.importorskip("torch")
    import collections

    import ember.utils._pytree as ours

    theirs = torch.utils._pytree
    d = {"b": 1, "a": [2, 3]}
    for name, arg in [("_dict_flatten", d), ("_dict_flatten_with_keys", d), ("_list_flatten_with_keys", [4, 5]),
                      ("_tuple_flatten_with_keys", (6,)), ("_list_flatten", [1]), ("_tuple_flatten", (1, 2))]:
        got, want = getattr(ours, name)(arg), getattr(theirs, name)(arg)
        assert repr(got) == repr(want), name
    for name, args in [("_dict_unflatten", ([1, 2], ["x", "y"])), ("_list_unflatten", ([1], None)),
                       ("_tuple_unflatten", ([1, 2], None))]:
        assert getattr(ours, name)(*args) == getattr(theirs, name)(*args)

    def paths(lib):
        class Output(collections.OrderedDict):
            pass

        lib.register_pytree_node(Output, lib._dict_flatten, lambda v, c: Output(zip(c, v)),
                                 flatten_with_keys_fn=lib._dict_flatten_with_keys)
        try:
            leaves, spec = lib.tree_flatten_with_path(Output(logits=1, past=(2, 3)))
            return [(lib.keystr(k), v) for k, v in leaves], lib.tree_unflatten([0, 1, 2], spec)
        finally:
            lib.SUPPORTED_NODES.pop(Output)

    (ours_paths, ours_tree), (their_paths, their_tree) = paths(ours), paths(theirs)
    assert ours_paths == their_paths == [("['logits']", 1), ("['past'][0]", 2), ("['past'][1]", 3)]
    assert list(ours_tree.items()) == list(their_tree.items()) == [("logits", 0), ("past", (1, 2))]


def _fields(cls):
    return [(f.name, f.default) for f in dataclasses.fields(cls)]


def test_fsdp_settings_match_pytorch():
    """transformers and accelerate import FSDP's settings and types at import (``fully_shard``, ``FSDPModule``,
    the policies, ``FullyShardedDataParallel``): the settings are PyTorch's; sharding raises NotImplementedError."""
    pytest.importorskip("torch")
    import torch.distributed._composable.fsdp
    import torch.distributed.fsdp

    import ember
    import ember.distributed._composable.fsdp as comp
    import ember.distributed.fsdp as ours
    from ember.distributed.fsdp import api, fully_sharded_data_parallel

    theirs = torch.distributed.fsdp
    for name in ["ShardingStrategy", "BackwardPrefetch", "StateDictType", "OptimStateKeyType"]:
        assert [(m.name, m.value) for m in getattr(ours, name)] == [(m.name, m.value) for m in getattr(theirs, name)]
    for name in ["MixedPrecisionPolicy", "CPUOffloadPolicy", "OffloadPolicy", "CPUOffload", "FullStateDictConfig",
                 "ShardedStateDictConfig", "FullOptimStateDictConfig", "LocalOptimStateDictConfig",
                 "DataParallelMeshDims"]:
        assert _fields(getattr(ours, name)) == _fields(getattr(theirs, name)), name
    assert [n for n, _ in _fields(ours.MixedPrecision)] == [n for n, _ in _fields(theirs.MixedPrecision)]
    assert ours.MixedPrecision()._module_classes_to_ignore == (ember.nn.modules.batchnorm._BatchNorm,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.MixedPrecisionPolicy().param_dtype = ember.float16
    assert all(getattr(comp, n) is getattr(ours, n) for n in comp.__all__)
    assert {n for n in dir(torch.distributed._composable.fsdp) if not n.startswith("_")} == set(comp.__all__)
    assert comp.fully_shard is ours.fully_shard and api.MixedPrecision is ours.MixedPrecision
    assert fully_sharded_data_parallel.FullyShardedDataParallel is ours.FullyShardedDataParallel
    model = ember.nn.Linear(2, 2)
    assert not isinstance(model, (ours.FSDPModule, ours.FullyShardedDataParallel))
    for call in (lambda: ours.fully_shard(model), lambda: ours.FullyShardedDataParallel(model),
                 lambda: ours.register_fsdp_forward_method(model, "generate")):
        with pytest.raises(NotImplementedError, match="ember has no working"):
            call()


def test_not_built_platform_parts_raise():
    """Sharded checkpoints, flex attention and CUDA graphs are importable (transformers imports them at import)
    and raise NotImplementedError when used."""
    pytest.importorskip("torch")
    import ember
    import ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint.hf_storage import HuggingFaceStorageReader, HuggingFaceStorageWriter
    from ember.nn.attention import flex_attention as fa

    q = ember.zeros(1, 1, 2, 4)
    for call in (lambda: dcp.save({}), lambda: dcp.load({}), HuggingFaceStorageReader, HuggingFaceStorageWriter,
                 fa.BlockMask, lambda: fa.flex_attention(q, q, q),
                 lambda: fa.create_block_mask(None, 1, 1, 2, 2), lambda: fa.create_mask(None, 1, 1, 2, 2),
                 ember.cuda.CUDAGraph, lambda: ember.cuda.graph(None)):
        with pytest.raises(NotImplementedError, match="ember has no"):
            call()
    assert ember.cuda.is_current_stream_capturing() is False
    with ember.cuda.StreamContext(None) as s:
        assert s is None


def test_strided_shard_matches_pytorch():
    pytest.importorskip("torch")
    from torch.distributed.tensor.placement_types import _StridedShard as Theirs

    from ember.distributed.tensor import Shard
    from ember.distributed.tensor.placement_types import _StridedShard as Ours

    for ours, theirs in [(Ours(0, split_factor=2), Theirs(0, split_factor=2)), (Ours(1, sf=3), Theirs(1, sf=3))]:
        assert (repr(ours), str(ours), ours.is_shard()) == (repr(theirs), str(theirs), theirs.is_shard())
    assert Ours(0, split_factor=2) == Ours(0, sf=2) != Ours(0, sf=3)
    assert Ours(0, sf=1) != Shard(0)


def _masks(lib):
    from importlib import import_module

    fa = import_module(f"{lib.__name__}.nn.attention.flex_attention")
    causal = lambda b, h, q, kv: q >= kv  # noqa: E731
    even = lambda b, h, q, kv: kv % 2 == 0  # noqa: E731
    b, h, q, kv = lib.tensor(0), lib.tensor(0), lib.arange(4)[:, None], lib.arange(4)[None, :]
    return [fa.and_masks(causal, even)(b, h, q, kv).tolist(), fa.or_masks(causal, even)(b, h, q, kv).tolist(),
            fa.and_masks()(b, h, q, kv).tolist(), fa.noop_mask(b, h, q, kv).tolist(), fa.AuxRequest._fields,
            fa.AuxRequest(), fa.AuxOutput._fields, fa._DEFAULT_SPARSE_BLOCK_SIZE]


def test_flex_attention_masks_match_pytorch():
    torch = pytest.importorskip("torch")
    import ember

    assert _masks(ember) == _masks(torch)


def _index_mode(lib):
    from importlib import import_module

    mode = import_module(f"{lib.__name__}._dynamo._trace_wrapped_higher_order_op").TransformGetItemToIndex
    x = lib.arange(12).reshape(3, 4)
    with mode():
        plain = [x[lib.tensor(1), 2].tolist(), x[lib.tensor(2)].tolist(), x[1].tolist()]
        batched = lib.vmap(lambda i, j: x[i, j])(lib.tensor([0, 2, 1]), lib.tensor([3, 0, 1]))
    return plain, batched.tolist()


def test_transform_getitem_to_index_matches_pytorch():
    """transformers' vmap mask builder indexes with batched 0-d tensors inside ``TransformGetItemToIndex``."""
    torch = pytest.importorskip("torch")
    import ember

    assert _index_mode(ember) == _index_mode(torch) == ([6, [8, 9, 10, 11], [4, 5, 6, 7]], [3, 8, 5])


def _scheduler_warnings(lib):
    class Wrapper(lib.optim.Optimizer):  # accelerate's AcceleratedOptimizer: its own step, not the base one
        def __init__(self, inner):
            self.inner = inner
            self.param_groups, self.defaults, self.state = inner.param_groups, inner.defaults, inner.state

        def step(self, closure=None):
            self.inner.step(closure)

    w = lib.zeros(1, requires_grad=True)
    out = []
    for first in ("optimizer", "scheduler"):
        opt = Wrapper(lib.optim.SGD([w], lr=0.1))
        sched = lib.optim.lr_scheduler.StepLR(opt, 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for step in ((opt.step, sched.step) if first == "optimizer" else (sched.step, opt.step)):
                step()
        out.append([str(c.message)[:40] for c in caught])
    return out, lib.optim.lr_scheduler.StepLR(opt, 1).optimizer.step._wrapped_by_lr_sched


def test_scheduler_sees_a_wrapping_optimizers_step():
    """accelerate's optimizer overrides ``step`` without the base class's; the scheduler wraps whatever ``step``
    its optimizer has, as PyTorch does, so stepping in the right order draws no warning."""
    torch = pytest.importorskip("torch")
    import ember

    ours = _scheduler_warnings(ember)
    assert ours == _scheduler_warnings(torch)
    assert ours[0][0] == [] and ours[0][1] == ["Detected call of `lr_scheduler.step()` b"]


def test_small_import_names():
    """``torch._dynamo.assume_constant_result`` (a decorator at transformers' import) and
    ``InterpolationMode.NEAREST_EXACT`` (its image utilities' table)."""
    torch = pytest.importorskip("torch")
    import ember

    def f():
        return 3

    for lib in (ember, torch):
        g = lib._dynamo.assume_constant_result(f)
        assert g is f and g._dynamo_marked_constant is True
        del f._dynamo_marked_constant
    vision = pytest.importorskip("ember_vision")
    import numpy as np
    from PIL import Image

    from ember_vision.transforms import functional as F

    mode = F.InterpolationMode.NEAREST_EXACT
    assert mode.value == "nearest-exact"
    img = Image.fromarray(np.arange(48, dtype=np.uint8).reshape(6, 8))
    assert np.array_equal(np.asarray(F.resize(img, [3, 5], mode)), np.asarray(img.resize((5, 3), Image.NEAREST)))
    t = ember.arange(48, dtype=ember.uint8).reshape(1, 6, 8)
    near = torch.nn.functional.interpolate(torch.arange(48.).reshape(1, 1, 6, 8), size=(3, 5), mode="nearest-exact")
    assert F.resize(t, [3, 5], mode, antialias=False).flatten().tolist() == near.flatten().int().tolist()
    assert vision is not None


def _reopened_events(lib, log_dir):
    import glob
    from importlib import import_module

    writer = import_module(f"{lib.__name__}.utils.tensorboard").SummaryWriter(log_dir=str(log_dir))
    writer.add_scalar("loss", 1.0, 0)
    writer.close()
    writer.add_scalar("loss", 0.5, 1)  # a logger reused by a second Trainer after the first one closed it
    writer.close()
    return len(glob.glob(str(log_dir / "events.out.tfevents.*")))


def test_summary_writer_reopens_after_close(tmp_path):
    """Lightning's ``TensorBoardLogger`` keeps its writer across ``fit`` calls and the first one closes it; PyTorch's
    writer starts a new event file on the next write (checkpointing's ``test_checkpoint_repeated_strategy_extended``
    failed on ember's refusal)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    import ember

    assert _reopened_events(ember, tmp_path / "ember") == _reopened_events(torch, tmp_path / "torch") == 2
