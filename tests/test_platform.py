"""The platform surface libraries build on: version identity, module behaviour under the alias, torchvision,
pytree, compiler names, constants and small names, and the behaviours libraries rely on, each against PyTorch."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember


def under_alias(code, cwd=None):
    """Run ``code`` in a fresh process where ``import torch`` is ember; its stdout lines."""
    prog = "import ember.torch_compat as _tc\n_tc.install()\n" + textwrap.dedent(code)
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


# ------------------------------------------------------------------------------------------- version identity
def test_version_compares_as_pytorchs(torch):
    from ember.version import TorchVersion, __version__

    assert __version__ == "2.13.0" and isinstance(__version__, str)
    ref = torch.torch_version.TorchVersion("2.13.0")
    for other in [(2, 0), (2, 13), (2, 13, 0), (2, 14), "2.2", "2.13", "2.13.0", "2.13.1", "2.13.0rc1", "10.0",
                  "3.0.dev0", "2.13.0.post1"]:
        for op in ("__lt__", "__le__", "__eq__", "__ge__", "__gt__"):
            assert getattr(__version__, op)(other) == getattr(ref, op)(other), (other, op)
    assert TorchVersion("2.1.0+cu121") < "2.13" and TorchVersion("2.13.0a0") < (2, 13)
    assert {__version__: 1}["2.13.0"] == 1  # hashes as its text
    import ember.version as v

    assert (v.debug, v.hip) == (False, None) and isinstance(v.git_version, str)
    assert ember.__version__ == "0.1.0"  # ember's own release number outside the alias


def test_alias_reports_pytorchs_version_and_metadata():
    out = under_alias("""
        import importlib.metadata as md, torch, torch.version, torchvision
        print(torch.__version__, type(torch.__version__).__name__, torch.version.__version__, torch.version.cuda)
        print(md.version("torch"), md.version("torchvision"), torchvision.__version__)
        print(md.distribution("torch").metadata["Name"], torch.__version__ >= (2, 1), torch.__version__ < "2.2")
        import ember
        print(ember.__version__)
        """)
    assert out == ["2.13.0 TorchVersion 2.13.0 None", "2.13.0 0.28.0 0.28.0", "torch True False", "0.1.0"]


# --------------------------------------------------------------------------------------- the alias as a module
def test_alias_modules_show_members_and_survive_monkeypatch():
    out = under_alias("""
        import torch, torch.distributions, ember, pytest
        d = torch.distributions
        print("Normal" in vars(d), d.__dict__["Normal"] is d.Normal, "Tensor" in vars(torch))
        mp = pytest.MonkeyPatch()
        fake = object()
        mp.setattr(torch, "cuda", fake)
        mp.setattr(torch, "ones", fake)
        mp.setattr(torch.nn, "Linear", fake)
        print(torch.cuda is fake, ember.cuda is fake, torch.ones is fake, ember.nn.Linear is fake)
        mp.undo()
        import ember.cuda
        print(ember.cuda is sys.modules["ember.cuda"], torch.cuda.is_available is ember.cuda.is_available,
              torch.ones is ember.ones, torch.nn.Linear is ember.nn.Linear)
        """.replace("import torch,", "import sys, torch,"))
    assert out == ["True True True", "True True True True", "True True True True"]


def test_torchvision_resolves_to_ember_vision():
    out = under_alias("""
        import sys, torchvision, torchvision.transforms as T
        from torchvision import models, datasets
        import ember_vision
        print(T.Compose is ember_vision.transforms.Compose, models.resnet18 is ember_vision.models.resnet18,
              datasets is torchvision.datasets)
        for get in (lambda: torchvision.no_such_name, lambda: torchvision.models.no_such_model):
            try:
                get()
            except AttributeError as e:
                print(e)
        try:
            import torchvision.no_such_module
        except ModuleNotFoundError as e:
            print(e)
        print(any(getattr(m, "__file__", None) and "site-packages/torchvision" in m.__file__
                  for m in list(sys.modules.values())))
        """)
    assert out == ["True True True", "ember has no torchvision.no_such_name yet",
                   "ember has no torchvision.models.no_such_model yet", "ember has no torchvision.no_such_module yet",
                   "False"]


# ------------------------------------------------------------------------------------------ the pytest plugin
def test_pytest_plugin_leaves_other_projects_device_fixture_alone(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.fixture(params=["mine-a", "mine-b"])
        def device(request):
            return request.param
        """))
    (tmp_path / "test_theirs.py").write_text("def test_device(device):\n    print('DEVICE', device)\n")
    sub = tmp_path / "plain"
    sub.mkdir()
    (sub / "test_nofixture.py").write_text("def test_device(device):\n    pass\n")

    def pytest_run(*args, cwd):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-q", *args],
                              capture_output=True, text=True, timeout=120, cwd=cwd)

    p = pytest_run("test_theirs.py", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("DEVICE mine-") == 2 and "DEVICE cpu" not in p.stdout
    p = pytest_run("test_nofixture.py", cwd=sub)  # ember does not invent a device fixture for another project
    assert p.returncode != 0 and "fixture 'device' not found" in p.stdout
    p = pytest_run("test_nofixture.py", "--ember-backend", "cpu", "--no-ember-kit", cwd=sub)  # asked for: it acts
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout


# ------------------------------------------------------------------------------------------------------ pytree
def _pytree_cases():
    import collections

    point = collections.namedtuple("Point", "x y")
    return [None, 1, (1, 2), [1, (2, None)], {"b": 1, "a": [2, 3]}, point(1, [2]),
            collections.OrderedDict(a=1, b=(2,)), collections.defaultdict(int, {"a": 1}),
            collections.deque([1, 2], maxlen=3), ((), [], {}), [ember.Size([2, 3])]]


@pytest.mark.parametrize("tree", _pytree_cases(), ids=lambda t: type(t).__name__)
def test_pytree_flatten_matches_pytorch(torch, tree):
    from ember.utils import _pytree as ours

    theirs = pytest.importorskip("torch.utils._pytree")
    ref_tree = [torch.Size(x) if isinstance(x, ember.Size) else x for x in tree] if isinstance(tree, list) else tree
    leaves, spec = ours.tree_flatten(tree)
    ref_leaves, ref_spec = theirs.tree_flatten(ref_tree)
    assert leaves == ref_leaves
    assert (spec.num_leaves, spec.num_nodes, spec.is_leaf()) == (ref_spec.num_leaves, ref_spec.num_nodes,
                                                                 ref_spec.is_leaf())
    if not isinstance(tree, list) or not any(isinstance(x, ember.Size) for x in tree):
        assert repr(spec) == repr(ref_spec)
    back = ours.tree_unflatten(leaves, spec)
    assert back == tree and type(back) is type(tree)


def test_pytree_functions_match_pytorch(torch):
    from ember.utils import _pytree as ours

    theirs = pytest.importorskip("torch.utils._pytree")
    tree = {"a": (1, 2.0, "s"), "b": [3, None]}
    deeper = ((1, [2]), (10, [[20]]))  # a deeper second tree: its subtrees are passed whole
    assert ours.tree_map(lambda x, y: (x, y), *deeper) == theirs.tree_map(lambda x, y: (x, y), *deeper) == \
        ((1, 10), [(2, [20])])
    assert ours.tree_map(lambda x, y: x + y, (1, [2]), (10, [20])) == theirs.tree_map(
        lambda x, y: x + y, (1, [2]), (10, [20]))
    assert ours.tree_map_only(int, lambda x: x * 2, tree) == theirs.tree_map_only(int, lambda x: x * 2, tree)
    assert ours.tree_map_only((int, float), str, tree) == theirs.tree_map_only((int, float), str, tree)
    assert ours.tree_leaves(tree) == theirs.tree_leaves(tree)
    assert ours.tree_leaves([1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple)) == [1, (2, 3)]
    for pred in (lambda x: x is not None, lambda x: isinstance(x, int)):
        assert ours.tree_all(pred, tree) == theirs.tree_all(pred, tree)
        assert ours.tree_any(pred, tree) == theirs.tree_any(pred, tree)
    assert ours.tree_all_only(int, lambda x: x > 0, tree) and not ours.tree_any_only(str, lambda x: x == "t", tree)
    assert ours.tree_structure((1, 2)) == ours.tree_structure((3, 4)) != ours.tree_structure([3, 4])
    assert ours.tree_structure({"a": 1}).flatten_up_to({"a": [1]}) == [[1]]
    for mod in (ours, theirs):  # the same exception types for a structure mismatch
        with pytest.raises(ValueError, match="Node type mismatch"):
            mod.tree_map(lambda x, y: x + y, (1, [2]), (10, 20))
        with pytest.raises(ValueError, match="has length 1"):
            mod.tree_unflatten([1], mod.tree_structure((1, 2)))
    assert isinstance(ours.LeafSpec(), ours.TreeSpec) and ours.LeafSpec().is_leaf()
    assert set(theirs.SUPPORTED_NODES) >= set(ours.SUPPORTED_NODES) - {ember.Size}


def test_pytree_key_paths_match_pytorch(torch):
    import collections

    from ember.utils import _pytree as ours

    theirs = pytest.importorskip("torch.utils._pytree")
    point = collections.namedtuple("Point", "x y")
    tree = {"a": [1, (2, point(3, 4))], "b": collections.OrderedDict(c=5), "d": collections.deque([6])}
    mine, ref = ours.tree_flatten_with_path(tree)[0], theirs.tree_flatten_with_path(tree)[0]
    assert [ours.keystr(kp) for kp, _ in mine] == [theirs.keystr(kp) for kp, _ in ref]
    assert [x for _, x in mine] == [x for _, x in ref]
    assert [repr(k) for kp, _ in mine for k in kp] == [repr(k) for kp, _ in ref for k in kp]
    assert all(ours.key_get(tree, kp) == x for kp, x in mine)
    assert ours.tree_map_with_path(lambda kp, x, y: (ours.keystr(kp), x + y), tree, tree) == \
        theirs.tree_map_with_path(lambda kp, x, y: (theirs.keystr(kp), x + y), tree, tree)
    assert ours.tree_leaves_with_path([7]) == [((ours.SequenceKey(0),), 7)]
    for x in (1, [1], [], point(1, 2), None):
        assert ours.tree_is_leaf(x) == theirs.tree_is_leaf(x)
    for x in (point, point(1, 2), (1,), tuple):
        assert ours.is_namedtuple(x) == theirs.is_namedtuple(x)
    seen = []
    ours.tree_map_only_(int, seen.append, (1, "a", [2]))
    assert seen == [1, 2]


def test_pytree_has_every_public_name_and_serializes_as_pytorch(torch):
    import collections

    from ember.utils import _pytree as ours

    theirs = pytest.importorskip("torch.utils._pytree")
    assert [n for n in theirs.__all__ if not hasattr(ours, n)] == []
    for tree in [{"a": [1, (2, None)]}, collections.OrderedDict(a=1), collections.defaultdict(int, {"a": 1}),
                 collections.deque([1], maxlen=2), None, ()]:
        text = ours.treespec_dumps(ours.tree_structure(tree))
        assert text == theirs.treespec_dumps(theirs.tree_structure(tree))
        assert ours.treespec_loads(text) == ours.tree_structure(tree)
    point = collections.namedtuple("Point", "x y")
    for mod in (ours, theirs):
        with pytest.raises(NotImplementedError, match="namedtuple"):
            mod.treespec_dumps(mod.tree_structure(point(1, 2)))
        with pytest.raises(ValueError, match="protocol"):
            mod.treespec_loads('[7, {"type": null, "context": null, "children_spec": []}]')


def test_registered_pytree_node_is_mapped_by_func_transforms(device):
    from ember.utils import _pytree

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    _pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c))
    try:
        with pytest.raises(ValueError, match="already registered"):
            _pytree.register_pytree_node(Pair, lambda p: ([], None), lambda c, _: Pair(*c))
        x = ember.arange(6.0, device=device).reshape(3, 2)
        out = ember.func.vmap(lambda p: p.a * p.b.sum())(Pair(x, x * 2))
        assert ember.equal(out, x * (x * 2).sum(1, keepdim=True))
        g = ember.func.grad(lambda p: (p.a * p.b).sum())(Pair(x[0], x[1]))
        assert isinstance(g, Pair) and ember.equal(g.a, x[1]) and ember.equal(g.b, x[0])
    finally:
        del _pytree.SUPPORTED_NODES[Pair]


# ------------------------------------------------------------------------------------------ compiler, _dynamo
def test_compile_returns_optimized_module_as_pytorch(torch, device):
    ref = torch.compile(torch.nn.Linear(2, 3))
    net = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.ReLU()).to(device)
    net.tag = "mine"
    c = ember.compile(net)
    assert type(c).__name__ == type(ref).__name__ == "OptimizedModule" and isinstance(c, ember._dynamo.OptimizedModule)
    assert c._orig_mod is net and c.tag == "mine"  # attribute reads fall through to the original
    assert list(c.state_dict()) == ["_orig_mod.0.weight", "_orig_mod.0.bias"]
    assert list(ref.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    x = ember.randn(4, 2, device=device)
    assert ember.equal(c(x), net(x))
    c.eval()
    assert not net.training
    assert ember.compile(net, disable=True) is net
    fn = ember.compile(lambda t: t * 2)
    assert ember.equal(fn(x), x * 2)


def test_compiler_and_dynamo_names():
    import ember._dynamo as dynamo
    import ember.compiler as compiler

    def f(x):
        return x + 1

    assert not compiler.is_compiling() and not dynamo.is_compiling() and not compiler.is_dynamo_compiling()
    for off in (compiler.disable(f), compiler.disable()(f), dynamo.disable(f, recursive=False)):
        assert off.__wrapped__ is f and off(1) == 2 and ember.compile(off) is off
    assert compiler.allow_in_graph(f) is f and dynamo.allow_in_graph(f) is f
    assert dynamo.mark_static_address(ember.ones(2)) is None and dynamo.reset() is None
    with pytest.raises(TypeError, match="mark_static_address"):
        dynamo.mark_static_address(3)
    with dynamo.config.patch(cache_size_limit=64, verbose=True):
        assert (dynamo.config.cache_size_limit, dynamo.config.verbose) == (64, True)

    @dynamo.config.patch("suppress_errors", True)
    def read():
        return dynamo.config.suppress_errors

    assert read() is True and dynamo.config.suppress_errors is False
    assert dynamo.config.cache_size_limit == 8 and dynamo.config.get_config_copy()["optimize_ddp"] is True
    with pytest.raises(AttributeError, match="no_such_setting"):
        dynamo.config.patch(no_such_setting=1)
    x = ember.ones(2, 3)
    assert dynamo.mark_dynamic(x, 0) is None and dynamo.maybe_mark_dynamic(x, 1) is None
    assert dynamo.mark_static(x) is None and dynamo.graph_break() is None
    with pytest.raises(TypeError, match="mark_dynamic"):
        dynamo.mark_dynamic([1], 0)
    assert dynamo.disallow_in_graph(f) is f and dynamo.optimize("inductor")(f).__wrapped__ is f
    assert "inductor" in compiler.list_backends() and compiler.nested_compile_region(f) is f
    assert compiler.cudagraph_mark_step_begin() is None
    assert isinstance(compiler.compile(ember.nn.ReLU()), dynamo.OptimizedModule)

    class Probe(ember.nn.Module):
        def forward(self, x):
            self.seen = compiler.is_exporting()
            return x * 2

    probe = Probe()
    ember.export.export(probe, (ember.ones(2),))
    assert probe.seen and not compiler.is_exporting()
    probe(ember.ones(2))
    assert not probe.seen
    stance = dynamo.eval_frame._STANCE
    with compiler.set_stance("force_eager"):
        assert stance[0] == "force_eager"
    assert stance[0] == "default"


# ----------------------------------------------------------------------------------- constants and small names
def test_constants_and_dtype_names_as_pytorch(torch):
    for name in ("inf", "nan", "pi", "e"):
        mine, ref = getattr(ember, name), getattr(torch, name)
        assert (mine == ref) or (mine != mine and ref != ref)
    assert ember.newaxis is torch.newaxis is None
    x = ember.arange(3.0)
    assert x[ember.newaxis].shape == (1, 3)
    for name in ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                 "float8_e8m0fnu"):
        mine, ref = getattr(ember, name), getattr(torch, name)
        assert (mine.itemsize, mine.is_floating_point, mine.is_signed) == (ref.itemsize, ref.is_floating_point,
                                                                           ref.is_signed), name
        assert repr(mine) == f"ember.{name}"
    with pytest.raises(NotImplementedError, match="no uint16 tensors yet"):
        ember.zeros(2, dtype=ember.uint16)
    import pickle

    assert pickle.loads(pickle.dumps(ember.float8_e5m2)) is ember.float8_e5m2


def test_assert_as_pytorch(torch):
    for mod in (ember, torch):
        mod._assert(True, "fine")
        with pytest.raises(AssertionError, match="went wrong"):
            mod._assert(False, "went wrong")


def test_fork_rng_restores_the_generators(torch):
    for mod in (ember, torch):
        mod.manual_seed(3)
        with mod.random.fork_rng():
            inside = mod.rand(4)
        assert mod.equal(inside, mod.rand(4))
        with mod.random.fork_rng(enabled=False):
            a = mod.rand(2)
        assert not mod.equal(a, mod.rand(2))


def test_hub_serialization_and_model_zoo_names(tmp_path, monkeypatch, torch):
    import ember.hub as hub

    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    assert hub._get_torch_home() == str(tmp_path / "home") and hub.get_dir() == str(tmp_path / "home" / "hub")
    assert hub.HASH_REGEX.pattern == torch.hub.HASH_REGEX.pattern
    assert hub.HASH_REGEX.search("resnet18-f37072fd.pth").group(1) == "f37072fd"
    from ember.utils import model_zoo

    assert model_zoo.load_url is hub.load_state_dict_from_url
    assert "Callable" in str(ember.serialization.MAP_LOCATION)


def test_load_map_location_function_returning_none_keeps_default(tmp_path, torch):
    path = tmp_path / "ckpt.pt"
    ember.save({"w": ember.arange(3.0)}, path)
    seen = []

    def fn(storage, location):
        seen.append(location)

    out = ember.load(path, map_location=fn)
    assert seen == ["cpu"] and out["w"].device.type == "cpu" and out["w"].tolist() == [0.0, 1.0, 2.0]
    torch.save({"w": torch.arange(3.0)}, tmp_path / "ref.pt")
    assert torch.load(tmp_path / "ref.pt", map_location=lambda s, loc: None)["w"].tolist() == [0.0, 1.0, 2.0]
    assert ember.load(path, map_location=lambda t, loc: t * 2)["w"].tolist() == [0.0, 2.0, 4.0]


def test_untyped_storage_from_file(tmp_path, torch):
    path = tmp_path / "bytes.bin"
    path.write_bytes(bytes([5, 6, 7, 8]))
    mine, ref = ember.UntypedStorage.from_file(str(path), False, 4), torch.UntypedStorage.from_file(str(path),
                                                                                                     False, 4)
    assert mine.tolist() == ref.tolist() == [5, 6, 7, 8] and mine.nbytes() == ref.nbytes() == 4
    assert ember.UntypedStorage.from_file(str(path), True, 4).tolist() == [5, 6, 7, 8]
    with pytest.raises(RuntimeError, match="bytes.bin"):
        ember.UntypedStorage.from_file(str(path), False, 16)


def test_jit_names():
    from ember.jit.annotations import BroadcastingList2

    def f(x):
        return x

    assert ember.jit._script_if_tracing(f) is f and ember.jit._overload_method(f) is f
    assert BroadcastingList2[int] == list[int] or BroadcastingList2[int].__origin__ is list


# ---------------------------------------------------------------------------------------- data and distributed
def test_datasets_and_samplers_are_generic(torch):
    from ember.utils.data import Dataset, IterableDataset, Sampler

    for cls in (Dataset, IterableDataset, Sampler):
        assert cls[int].__origin__ is cls

    class Squares(Dataset[int]):
        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return 4

    assert list(ember.utils.data.DataLoader(Squares(), batch_size=2))[1].tolist() == [4, 9]


def test_dataloader_internals_by_pytorchs_names():
    from ember.utils.data import DataLoader, TensorDataset
    from ember.utils.data.dataloader import _BaseDataLoaderIter

    loader = DataLoader(TensorDataset(ember.arange(4)), batch_size=2)
    it = iter(loader)
    assert isinstance(it, _BaseDataLoaderIter) and iter(it) is it and len(it) == 2
    import ember.utils.data._utils.collate as collate

    assert collate.default_collate is ember.utils.data.default_collate
    assert ember.utils.data._utils.worker.get_worker_info() is None


def test_distributed_names(torch):
    import ember.distributed as dist
    from ember.distributed.tensor import DTensor, Partial, Replicate, Shard

    import torch.distributed as tdist
    from torch.distributed import tensor as tt

    for name in ("MPI", "nccl", "Gloo", "something"):
        assert dist.Backend(name) == tdist.Backend(name)
    assert dist.Backend.MPI == tdist.Backend.MPI and dist.Backend.UNDEFINED == tdist.Backend.UNDEFINED
    for mine, ref in ((Shard(1), tt.Shard(1)), (Replicate(), tt.Replicate()), (Partial(), tt.Partial())):
        assert (repr(mine), str(mine)) == (repr(ref), str(ref))
        assert (mine.is_shard(), mine.is_replicate(), mine.is_partial()) == (ref.is_shard(), ref.is_replicate(),
                                                                               ref.is_partial())
    assert Shard(0) == Shard(0) != Shard(1) and len({Replicate(), Replicate()}) == 1
    assert issubclass(DTensor, ember.Tensor) and not isinstance(ember.ones(1), DTensor)


# ------------------------------------------------------------------------------- behaviours libraries rely on
def _int_fills(m):
    z = lambda dt=m.int64: m.zeros(3, dtype=dt)  # noqa: E731
    idx = m.tensor([0, 2])
    mask = m.tensor([True, False, True])
    return [z().fill_(0.0), z().fill_(-2.7), z(m.bool).fill_(0.5), z().scatter_(0, idx, 1.0),
            z().scatter_(0, idx, -1.5), z().scatter(0, idx, value=2.5), z(m.int32).index_fill_(0, idx, 2.5),
            z(m.int32).index_fill(0, idx, -0.5), z().masked_fill_(mask, 3.7), z().masked_fill(mask, -3.7)]


def test_float_scalar_into_integer_tensor_casts_as_pytorch(torch):
    for mine, ref in zip(_int_fills(ember), _int_fills(torch)):
        assert mine.tolist() == ref.tolist() and str(mine.dtype)[6:] == str(ref.dtype)[6:]


def test_stack_of_expanded_and_transposed_inputs_is_contiguous(torch):
    for m in (ember, torch):
        parts = [m.ones(3, 1).expand(3, 4), m.arange(12.0).reshape(4, 3).t()]
        out = m.stack(parts, 1)
        assert out.is_contiguous() and out.stride() == (8, 4, 1)
    assert ember.stack([ember.arange(12.0).reshape(4, 3).t()] * 2).tolist() == \
        torch.stack([torch.arange(12.0).reshape(4, 3).t()] * 2).tolist()


def test_masked_fill_broadcasts_self(torch):
    mask = [[True, False, True], [False, False, True]]
    x = ember.arange(3.0, requires_grad=True)
    y = x.masked_fill(ember.tensor(mask), -1.0)
    tx = torch.arange(3.0, requires_grad=True)
    ty = tx.masked_fill(torch.tensor(mask), -1.0)
    assert y.tolist() == ty.tolist()
    y.sum().backward()
    ty.sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()
    for m in (ember, torch):  # the in-place form cannot grow self
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            m.ones(3).masked_fill_(m.tensor(mask), 0.0)


def test_format_of_zero_dim_tensor(torch):
    for spec in ("", ".2f", ">5", "e"):
        for v in (0, 2.5, -3):
            if spec in (".2f", "e") and isinstance(v, int):
                continue
            assert format(ember.tensor(v), spec) == format(torch.tensor(v), spec)
    assert f"{ember.tensor(7)}" == "7" and format(ember.ones(2), "") == repr(ember.ones(2))


def test_numpy_ufuncs_on_tensors_return_tensors(torch):
    import warnings

    t, r = ember.tensor([1.0, -2.0]), torch.tensor([1.0, -2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyTorch's own __array_wrap__ lacks NumPy 2's args
        cases = [(np.exp(t), np.exp(r)), (np.greater(t, 0), np.greater(r, 0)), (np.add(np.ones(2), t),
                                                                                  np.add(np.ones(2), r)),
                 (np.sqrt(ember.tensor(4.0)), np.sqrt(torch.tensor(4.0)))]
    for mine, ref in cases:
        assert isinstance(mine, ember.Tensor) and mine.tolist() == pytest.approx(ref.tolist())
        assert str(mine.dtype)[6:] == str(ref.dtype)[6:] and mine.shape == tuple(ref.shape)


def test_module_apply_calls_children_overrides_and_replicate(torch):
    for m in (ember, torch):
        class Tracked(m.nn.Linear):
            calls = []

            def _apply(self, fn, recurse=True):
                self.calls.append(fn)
                return super()._apply(fn, recurse)

        net = m.nn.Sequential(m.nn.Sequential(Tracked(2, 2)), m.nn.ReLU())
        net.double()
        net.to(m.float32)
        assert len(Tracked.calls) == 2 and net[0][0].weight.dtype == m.float32
        r = net._replicate_for_data_parallel()
        assert type(r) is type(net) and r is not net and r[0] is net[0] and r._is_replica
        assert len(r._parameters) == 0 and r._modules is not net._modules and r._buffers is not net._buffers


def test_linear_reads_the_current_weight(torch):
    for m in (ember, torch):
        lin = m.nn.Linear(3, 2)
        lin.weight = m.nn.Parameter(m.ones(5, 4))
        lin.bias = None
        assert tuple(lin(m.ones(1, 4)).shape) == (1, 5)
        with pytest.raises(RuntimeError):
            lin(m.ones(1, 3))


def test_sdpa_grouped_query_attention(torch):
    q, k, v = np.random.randn(2, 6, 3, 4), np.random.randn(2, 2, 3, 4), np.random.randn(2, 2, 3, 4)
    for causal in (False, True):
        mine = ember.nn.functional.scaled_dot_product_attention(*map(ember.tensor, (q, k, v)), is_causal=causal,
                                                                enable_gqa=True)
        ref = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), is_causal=causal,
                                                               enable_gqa=True)
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="must divide the number of heads"):
            m.nn.functional.scaled_dot_product_attention(m.ones(1, 3, 2, 4), m.ones(1, 2, 2, 4), m.ones(1, 2, 2, 4),
                                                         enable_gqa=True)


def test_ops_load_library(tmp_path, torch):
    import glob
    import os

    with pytest.raises(OSError, match="No such file"):
        ember.ops.load_library(tmp_path / "missing.so")
    built_on_libtorch = glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorchbind_test.so"))
    if built_on_libtorch:
        with pytest.raises(RuntimeError, match="libtorch.*ember.library"):
            ember.ops.load_library(built_on_libtorch[0])
        assert os.path.realpath(built_on_libtorch[0]) not in ember.ops.loaded_libraries
    plain = np._core._multiarray_umath.__file__  # a shared library with no libtorch in it
    ember.ops.load_library(plain)
    assert os.path.realpath(plain) in ember.ops.loaded_libraries


def test_c_extension_functions_libraries_call(torch):
    from ember._c_functions import _get_tracing_state, _log_api_usage_once, _nn

    import ember._C._nn

    assert ember._C._log_api_usage_once is _log_api_usage_once and ember._C._nn is _nn is ember._C._nn
    assert ember._C._get_tracing_state is _get_tracing_state
    assert _log_api_usage_once("torchmetrics.metric.Accuracy") is None
    with pytest.raises(TypeError, match="event"):
        _log_api_usage_once(3)
    cases = [(("cpu", "float64"), {"non_blocking": True}), (("tensor16",), {}), ((), {"dtype": "int32"}),
             (("cpu",), {"memory_format": "channels_last"})]
    for args, kwargs in cases:
        def conv(m, x):
            if x == "tensor16":
                return m.ones(1, dtype=m.float16)
            if x in ("float64", "int32"):
                return getattr(m, x)
            return getattr(m, x) if x == "channels_last" else x
        mine = _nn._parse_to(*[conv(ember, a) for a in args], **{k: conv(ember, v) for k, v in kwargs.items()})
        ref = torch._C._nn._parse_to(*[conv(torch, a) for a in args], **{k: conv(torch, v) for k, v in kwargs.items()})
        assert [str(x).replace("torch.", "") for x in ref] == [str(x).replace("ember.", "") for x in mine]
    assert _get_tracing_state() is None is torch._C._get_tracing_state()
    seen = []

    def f(x):
        seen.append(_get_tracing_state())
        return x * 2

    ember.jit.trace(f, (ember.ones(2),))
    assert seen and all(seen)
