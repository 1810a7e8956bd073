"""What transformers 4.48's import and model tests needed from the platform, each against PyTorch: the tensor-parallel
plan types, ``fx._compatibility``, ``fx._symbolic_trace.is_fx_tracing`` and ``fx.proxy.ParameterProxy``."""
import pytest

import ember

torch = pytest.importorskip("torch")


def test_tensor_parallel_styles_hold_pytorch_settings():
    import torch.distributed.tensor.parallel as theirs

    import ember.distributed.tensor.parallel as ours

    assert set(ours.__all__) == set(theirs.__all__)
    for name, kwargs in [("ColwiseParallel", {}), ("RowwiseParallel", {}), ("SequenceParallel", {"sequence_dim": 0}),
                         ("ColwiseParallel", {"use_local_output": False}), ("PrepareModuleInput", {})]:
        a, b = getattr(ours, name)(**kwargs), getattr(theirs, name)(**kwargs)
        assert isinstance(a, ours.ParallelStyle)
        for attr in ("input_layouts", "output_layouts", "desired_input_layouts", "use_local_output",
                     "sequence_sharding", "input_kwarg_layouts", "desired_output_layouts"):
            assert repr(getattr(a, attr, None)) == repr(getattr(b, attr, None)), (name, attr)
    with pytest.raises(NotImplementedError, match="parallelize_module"):
        ours.parallelize_module(ember.nn.Linear(2, 2), None, ours.ColwiseParallel())


@pytest.mark.parametrize("lib", ["ember", "torch"])
def test_fx_tracing_flag_compatibility_and_parameter_proxy(lib):
    m = ember if lib == "ember" else torch
    fx = m.fx
    from importlib import import_module

    compatibility = import_module(f"{lib}.fx._compatibility").compatibility
    is_fx_tracing = import_module(f"{lib}.fx._symbolic_trace").is_fx_tracing
    ParameterProxy = import_module(f"{lib}.fx.proxy").ParameterProxy

    @compatibility(is_backward_compatible=True)
    def kept():
        """Doc."""

    assert kept.__doc__.startswith("Doc.") and "guaranteed" in kept.__doc__
    seen = []

    class Net(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = m.nn.Parameter(m.ones(3, 2))

        def forward(self, x):
            seen.append(is_fx_tracing())
            return x @ self.w

    class ShapeTracer(fx.Tracer):
        def getattr(self, attr, attr_val, parameter_proxy_cache):
            if isinstance(attr_val, m.nn.Parameter):
                return self.create_proxy("get_attr", attr, (), {},
                                         proxy_factory_fn=lambda node: ParameterProxy(self, node, attr, attr_val))
            return super().getattr(attr, attr_val, parameter_proxy_cache)

    tracer = ShapeTracer()
    graph = tracer.trace(Net())
    assert seen == [True] and not is_fx_tracing()
    assert [n.op for n in graph.nodes] == ["placeholder", "get_attr", "call_function", "output"]
    proxy = ParameterProxy(tracer, next(n for n in graph.nodes if n.op == "get_attr"), "w", Net().w)
    assert (tuple(proxy.shape), tuple(proxy.size()), proxy.dim(), proxy.ndim, proxy.numel(),
            proxy.nelement()) == ((3, 2), (3, 2), 2, 2, 6, 6)


def test_list_of_slices_indexes_as_a_tuple(device):
    """transformers' batching-equivalence test indexes with a list of slices: PyTorch reads a short list holding a
    slice, None, ``...``, a tensor or a sequence as a tuple of indices, with a deprecation warning."""
    x, y = ember.arange(24.0, device=device).reshape(2, 3, 4), torch.arange(24.0).reshape(2, 3, 4)
    for index in ([slice(0, 1), slice(0, 2)], [[0, 1], [1, 0]], [None, 0], [0, [1, 2]], [Ellipsis, 1]):
        with pytest.warns(UserWarning, match="non-tuple sequence"):
            a = x[index]
        with pytest.warns(UserWarning, match="non-tuple sequence"):
            b = y[index]
        assert a.shape == b.shape and a.cpu().tolist() == b.tolist()
    assert x[[0, 1]].shape == y[[0, 1]].shape  # a plain list of ints stays one advanced index


def test_ecosystem_version_option_checks_its_arguments(capsys):
    """``python -m ember.ecosystem LIB --version V`` runs one library at another release: it takes one library, and
    neither ``--deps`` without it nor ``--write`` with it (the table records the pinned releases)."""
    from ember.ecosystem import LIBRARIES
    from ember.ecosystem.__main__ import main

    pinned = dict(LIBRARIES)
    for argv, message in [(["einops", "skorch", "--version", "1"], "exactly one LIBRARY"),
                          (["einops", "--deps", "x"], "--deps goes with --version"),
                          (["einops", "--version", "1", "--write", "t.md"], "pinned releases only")]:
        with pytest.raises(SystemExit):
            main(argv)
        assert message in capsys.readouterr().err
    assert LIBRARIES == pinned


@pytest.mark.parametrize("lib", ["ember", "torch"])
def test_tracer_placeholders_and_concrete_args_as_pytorch(lib):
    """transformers' HFTracer installs its metadata on each input in ``create_proxy("placeholder", ...)``, and gives
    ``concrete_args`` for every parameter by its plain name, ``kwargs`` included: a ``**kwargs`` input is named
    ``**kwargs`` and stays an input, and names a function does not take are ignored."""
    m = ember if lib == "ember" else torch
    seen = []

    class Recording(m.fx.Tracer):
        def create_proxy(self, kind, target, args, kwargs, *rest, **kw):
            seen.append((kind, target)) if kind == "placeholder" else None
            return super().create_proxy(kind, target, args, kwargs, *rest, **kw)

    def f(x, y=2, **kwargs):
        return x + y

    graph = Recording().trace(f, concrete_args={"y": 3, "kwargs": int, "unknown": 1})
    assert {("placeholder", "x"), ("placeholder", "**kwargs")} <= set(seen)
    assert {"x", "**kwargs"} <= {n.target for n in graph.nodes if n.op == "placeholder"}
    assert "unknown" not in {n.target for n in graph.nodes}


def test_torchscript_registries_clear_as_in_pytorch():
    """transformers' fx tests clear TorchScript's class registries after each trace; ember compiles no TorchScript
    classes, so clearing leaves them empty as in PyTorch, and the IR types are names only."""
    for m in (ember, torch):
        m._C._jit_clear_class_registry()
        m.jit._recursive.concrete_type_store = m.jit._recursive.ConcreteTypeStore()
        m.jit._state._clear_class_state()
        assert m.jit._recursive.concrete_type_store.type_store == {} and not m.jit._state._script_classes
    assert {"Graph", "Value", "Node"} <= set(dir(ember._C))
    with pytest.raises(NotImplementedError, match="torch._C.Graph"):
        ember._C.Graph()


def test_squeeze_method_takes_several_dims_as_varargs(device):
    """transformers' speculative sampling (assisted decoding) calls ``q.squeeze(0, 1)``."""
    x = ember.zeros(1, 1, 3, 1, device=device)
    t = torch.zeros(1, 1, 3, 1)
    for args, kw in [((0, 1), {}), ((0, 2, 3), {}), (((0, 3),), {}), ((), {}), ((1,), {}), ((), {"dim": (0, 1)})]:
        assert tuple(x.squeeze(*args, **kw).shape) == tuple(t.squeeze(*args, **kw).shape), (args, kw)
    with pytest.raises(TypeError):
        x.squeeze(0, dim=1)
    with pytest.raises(TypeError):
        t.squeeze(0, dim=1)


def test_topk_results_are_contiguous(device):
    """transformers' contrastive search views ``topk``'s indices flat (``top_k_ids.view(-1, 1)``)."""
    x = ember.tensor([[3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0], [6.0, 5.0, 3.0, 5.5, 8.0, 9.5, 7.0]], device=device)
    t = torch.tensor(x.tolist())
    for dim in (-1, 0):
        ours, theirs = ember.topk(x, 2, dim=dim), torch.topk(t, 2, dim=dim)
        assert ours.values.is_contiguous() and ours.indices.is_contiguous()
        assert ours.indices.view(-1, 1).tolist() == theirs.indices.view(-1, 1).tolist()
        assert ours.values.view(-1).tolist() == theirs.values.view(-1).tolist()
