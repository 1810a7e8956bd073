"""The CUDA backend's convolutions through NVIDIA's cuDNN frontend, checked where there is no GPU.

``ember_cuda_cupy.cudnn.Convolutions`` runs here over NumPy (standing in for CuPy) and a stand-in
frontend whose graphs compute what cuDNN's documented operations compute (cross-correlation with
pre/post padding, stride and dilation; groups from the image's and the filter's channel counts),
through PyTorch.  That checks the geometry each kernel hands cuDNN, the plan cache, the switches of
``ember.backends.cudnn`` and every fallback.  Where the real frontend is installed, the graphs are also
built with it, as far as it goes without a GPU, and its own shape inference is held against PyTorch's.
"""
import types
import warnings

import numpy as np
import pytest

import ember
from ember.kernels import library

cudnn_module = pytest.importorskip("ember_cuda_cupy.cudnn")


# --------------------------------------------------------------------------- stand-ins
class _Tensor:
    def __init__(self, graph, name, dim=None, stride=None):
        self.graph, self.name, self.dim, self.stride, self.output = graph, name, dim, stride, False

    def set_output(self, on):
        self.output = on
        return self

    def set_dim(self, dim):
        self.dim = list(dim)
        return self

    def set_stride(self, stride):
        self.stride = list(stride)
        return self

    def set_data_type(self, dt):
        return self


class _Graph:
    """Records the operations; ``execute`` computes them with PyTorch (float64 for the comparison)."""

    def __init__(self, fe, **kwargs):
        self.fe, self.ops, self.notes, self.kwargs = fe, [], [], kwargs
        fe.graphs.append(self)

    def tensor(self, name, dim, stride, data_type):
        return _Tensor(self, name, list(dim), list(stride))

    def _op(self, kind, ins, attrs):
        out = _Tensor(self, f"{kind}.out")
        self.ops.append((kind, ins, attrs, out))
        return out

    def conv_fprop(self, image, weight, **attrs):
        return self._op("fprop", (image, weight), attrs)

    def conv_dgrad(self, loss, filter, **attrs):  # noqa: A002 - the frontend's name
        return self._op("dgrad", (loss, filter), attrs)

    def conv_wgrad(self, image, loss, **attrs):
        return self._op("wgrad", (image, loss), attrs)

    def bias(self, input, bias, compute_data_type=None):  # noqa: A002 - the frontend's name
        return self._op("bias", (input, bias), {})

    def validate(self):
        if self.fe.fail_build:
            raise RuntimeError("no engine supports this graph")

    def build_operation_graph(self):
        pass

    def create_execution_plans(self, modes):
        self.modes = modes

    def deselect_numeric_notes(self, notes):
        self.notes.extend(notes)

    def check_support(self):
        pass

    def build_plans(self):
        self.fe.builds += 1

    def get_workspace_size(self):
        return 16

    def execute(self, feeds, workspace, handle):
        import torch

        assert handle is self.fe.handle and workspace.dtype == np.uint8
        values = {id(t): torch.from_numpy(np.asarray(a, dtype=np.float64).reshape(t.dim))
                  for t, a in feeds.items() if not t.output}
        for kind, ins, attrs, out in self.ops:
            a, b = (values[id(t)] for t in ins)
            pads = list(zip(attrs.get("pre_padding", []), attrs.get("post_padding", [])))
            flat = [p for lo, hi in reversed(pads) for p in (lo, hi)]
            st, dil = attrs.get("stride"), attrs.get("dilation")
            if kind == "bias":
                values[id(out)] = a + b
            elif kind == "fprop":
                values[id(out)] = torch.nn.functional.conv2d(torch.nn.functional.pad(a, flat), b, stride=st,
                                                             dilation=dil, groups=a.shape[1] // b.shape[1]) \
                    if a.ndim == 4 else torch.nn.functional.conv3d(torch.nn.functional.pad(a, flat), b, stride=st,
                                                                   dilation=dil, groups=a.shape[1] // b.shape[1])
            else:  # the gradients of the padded forward, cropped back
                dx_dim = out.dim if kind == "dgrad" else list(a.shape)
                w_dim = list(b.shape) if kind == "dgrad" else out.dim
                groups = dx_dim[1] // w_dim[1]
                x = torch.zeros(dx_dim, dtype=torch.float64, requires_grad=True) if kind == "dgrad" else a.clone()
                w = b.clone() if kind == "dgrad" else torch.zeros(w_dim, dtype=torch.float64, requires_grad=True)
                x.requires_grad_(kind == "dgrad")
                conv = torch.nn.functional.conv2d if len(dx_dim) == 4 else torch.nn.functional.conv3d
                y = conv(torch.nn.functional.pad(x, flat), w, stride=st, dilation=dil, groups=groups)
                dy = b if kind == "wgrad" else a
                assert list(y.shape) == list(dy.shape), (kind, y.shape, dy.shape)
                (grad,) = torch.autograd.grad(y, x if kind == "dgrad" else w, dy)
                values[id(out)] = grad
        for t, a in feeds.items():
            if t.output:
                result = values[id(t)].numpy()
                if self.fe.wrong:
                    result = result + 1
                a[...] = result.reshape(a.shape)


def _frontend():
    fe = types.SimpleNamespace(graphs=[], builds=0, fail_build=False, wrong=False, handle=object())
    fe.pygraph = lambda **kwargs: _Graph(fe, **kwargs)
    fe.data_type = types.SimpleNamespace(HALF="HALF", FLOAT="FLOAT", DOUBLE="DOUBLE")
    fe.heur_mode = types.SimpleNamespace(A="A", FALLBACK="FALLBACK")
    fe.numerical_note = types.SimpleNamespace(TENSOR_CORE="TENSOR_CORE", NONDETERMINISTIC="NONDETERMINISTIC")
    fe.create_handle = lambda: fe.handle
    fe.set_stream = lambda handle, stream: None
    return fe


def _numpy_as_cupy():
    stream = types.SimpleNamespace(ptr=0)
    runtime = types.SimpleNamespace(getDevice=lambda: 0)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime, get_current_stream=lambda: stream),
                                 empty=np.empty, ascontiguousarray=np.ascontiguousarray, abs=np.abs, uint8=np.uint8)


@pytest.fixture
def convs():
    shared = library(np)
    return cudnn_module.Convolutions(_numpy_as_cupy(), _frontend(), shared), shared


GEOMETRIES = [  # (x shape, w shape, stride, padding pairs, dilation, groups, bias)
    ((2, 4, 9, 8), (6, 4, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True),
    ((2, 4, 9, 8), (6, 2, 3, 2), (2, 1), ((1, 0), (0, 2)), (1, 2), 2, False),
    ((1, 3, 11), (4, 3, 3), (2,), ((2, 1),), (2,), 1, True),
    ((2, 2, 5, 6, 4), (4, 1, 3, 2, 2), (1, 2, 1), ((1, 1), (0, 0), (1, 0)), (1, 1, 2), 2, True),
]


def _arrays(xs, ws, bias, dtype=np.float64):
    rng = np.random.default_rng(0)
    return (rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype),
            rng.standard_normal(ws[0]).astype(dtype) if bias else None)


# --------------------------------------------------------------------------- the three kernels
@pytest.mark.parametrize("geom", GEOMETRIES, ids=["3x3-bias", "strided-asym-groups", "1d", "3d-groups"])
def test_each_kernel_matches_the_shared_one(convs, geom):
    c, shared = convs
    xs, ws, st, pad, dil, groups, bias = geom
    x, w, b = _arrays(xs, ws, bias)
    y, cols = c.conv_forward(x, w, b, st, pad, dil, groups)
    ref, _ = shared["conv_forward"](x, w, b, st, pad, dil, groups)
    assert cols is None and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-10)
    g = np.random.default_rng(1).standard_normal(y.shape)
    np.testing.assert_allclose(c.conv_input_grad(g, w, xs, st, pad, dil, groups),
                               shared["conv_input_grad"](g, w, xs, st, pad, dil, groups), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(c.conv_weight_grad(x, g, ws, st, pad, dil, groups),
                               shared["conv_weight_grad"](x, g, ws, st, pad, dil, groups), rtol=1e-10, atol=1e-10)
    fe = c.fe
    assert fe.builds == 3 and all(p.checked for p in c.plans.values())
    fprop = fe.graphs[0].ops[0]
    assert fprop[0] == "fprop" and [o[0] for o in fe.graphs[0].ops] == ["fprop"] + ["bias"] * bias
    spatial = len(xs) - 2
    lift = 1 if spatial == 1 else 0  # 1-d runs as 2-d with a unit height
    assert fprop[2]["pre_padding"] == [0] * lift + [lo for lo, _ in pad]
    assert fprop[2]["post_padding"] == [0] * lift + [hi for _, hi in pad]
    assert fprop[2]["stride"] == [1] * lift + list(st) and fprop[2]["dilation"] == [1] * lift + list(dil)


def test_plans_are_built_once_per_case(convs):
    c, _ = convs
    x, w, b = _arrays((2, 3, 8, 8), (4, 3, 3, 3), True)
    geom = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    first, _ = c.conv_forward(x, w, b, *geom)
    again, _ = c.conv_forward(x + 1, w, b, *geom)
    assert c.fe.builds == 1 and len(c.plans) == 1
    assert not np.allclose(first, again)
    c.conv_forward(x[:1], w, b, *geom)  # another batch size: another plan
    c.conv_forward(x, w, None, *geom)  # no bias: another graph
    assert c.fe.builds == 3 and len(c.plans) == 3


def test_the_switches_of_ember_backends_cudnn(convs, monkeypatch):
    c, shared = convs
    flags = ember.backends.cudnn
    x, w, _ = _arrays((1, 2, 6, 6), (3, 2, 3, 3), False, np.float32)
    geom = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    monkeypatch.setattr(flags, "allow_tf32", True)
    monkeypatch.setattr(flags, "deterministic", False)
    c.conv_forward(x, w, None, *geom)
    assert c.fe.graphs[-1].notes == []
    monkeypatch.setattr(flags, "allow_tf32", False)
    c.conv_forward(x, w, None, *geom)
    assert c.fe.graphs[-1].notes == ["TENSOR_CORE"]
    monkeypatch.setattr(flags, "deterministic", True)
    c.conv_forward(x.astype(np.float64), w.astype(np.float64), None, *geom)
    assert c.fe.graphs[-1].notes == ["NONDETERMINISTIC"]  # float64 has no TF32 to refuse
    builds = c.fe.builds
    monkeypatch.setattr(flags, "enabled", False)
    y, cols = c.conv_forward(x, w, None, *geom)
    assert c.fe.builds == builds and cols is not None  # the shared kernel ran (it returns its columns)
    np.testing.assert_allclose(y, shared["conv_forward"](x, w, None, *geom)[0])


def test_dtypes_cudnn_does_not_take_use_the_shared_kernels_quietly(convs):
    c, shared = convs
    geom = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    xi, wi = np.ones((1, 2, 4, 4), np.int64), np.ones((3, 2, 2, 2), np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, w in ((xi, wi), (np.ones((1, 2, 4, 4)), np.ones((3, 2, 2, 2), np.float32))):
            y, _ = c.conv_forward(x, w, None, *geom)
            assert y.shape == shared["conv_forward"](x, w, None, *geom)[0].shape
    assert c.fe.builds == 0


def test_a_plan_that_fails_to_build_falls_back_with_one_warning(convs):
    c, shared = convs
    c.fe.fail_build = True
    x, w, b = _arrays((2, 3, 7, 7), (4, 3, 3, 3), True)
    geom = ((2, 2), ((1, 1), (1, 1)), (1, 1), 1)
    with pytest.warns(RuntimeWarning, match=r"conv_forward on cuda \(\(2, 3, 7, 7\), \(4, 3, 3, 3\), \(4,\), "
                                            r"float64\): cuDNN could not plan it \(RuntimeError: no engine"):
        y, _ = c.conv_forward(x, w, b, *geom)
    np.testing.assert_array_equal(y, shared["conv_forward"](x, w, b, *geom)[0])
    graphs = len(c.fe.graphs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once only, and the case is not planned again
        c.conv_forward(x, w, b, *geom)
    assert len(c.fe.graphs) == graphs


def test_a_wrong_first_result_is_never_returned(convs):
    c, shared = convs
    c.fe.wrong = True
    x, w, _ = _arrays((1, 2, 5, 5), (2, 2, 3, 3), False)
    g = np.ones((1, 2, 3, 3))
    geom = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    with pytest.warns(RuntimeWarning, match="conv_input_grad on cuda .* differs from the shared kernel's"):
        gx = c.conv_input_grad(g, w, x.shape, *geom)
    np.testing.assert_allclose(gx, shared["conv_input_grad"](g, w, x.shape, *geom))
    assert list(c.plans.values()) == [None]
    c.fe.wrong = False
    np.testing.assert_allclose(c.conv_input_grad(g, w, x.shape, *geom), gx)  # still the shared kernel
    assert c.fe.builds == 1


def test_the_backend_says_how_it_runs_convolutions(monkeypatch):
    monkeypatch.setattr(cudnn_module, "frontend", lambda: None)
    monkeypatch.setattr(cudnn_module, "_cudnn", lambda cp: None)
    assert "no cuDNN" in cudnn_module.describe(None) and "nvidia-cudnn-frontend" in cudnn_module.describe(None)
    assert cudnn_module.kernels(None, {}) == {}
    monkeypatch.setattr(cudnn_module, "frontend", _frontend)
    table = cudnn_module.kernels(_numpy_as_cupy(), library(np))
    assert set(table) == {"conv_forward", "conv_input_grad", "conv_weight_grad"}


# --------------------------------------------------------------------------- the real frontend's graphs
def _conv_out(xs, ws, st, pad, dil):
    return [xs[0], ws[0]] + [(s + lo + hi - d * (k - 1) - 1) // t + 1
                             for s, k, t, (lo, hi), d in zip(xs[2:], ws[2:], st, pad, dil)]


@pytest.mark.parametrize("geom", [g for g in GEOMETRIES if len(g[0]) > 3], ids=["3x3-bias", "strided", "3d"])
def test_the_frontends_own_shape_inference_agrees(geom, torch):
    fe = cudnn_module.frontend()
    if fe is None:
        pytest.skip("nvidia-cudnn-frontend is not installed")
    xs, ws, st, pad, dil, groups, bias = geom
    c = cudnn_module.Convolutions(_numpy_as_cupy(), fe, library(np))
    x, w, b = _arrays(xs, ws, bias, np.float32)
    out = _conv_out(xs, ws, st, pad, dil)
    g, tensors = c.graph("conv_forward", (x, w, b), tuple(out), (st, pad, dil))
    info = g.inspect()
    conv = next(t for name, t in info["tensors"].items() if name.startswith("conv_fprop"))
    expect = torch.nn.functional.conv2d if len(xs) == 4 else torch.nn.functional.conv3d
    flat = [p for lo, hi in reversed(pad) for p in (lo, hi)]
    ref = expect(torch.nn.functional.pad(torch.zeros(xs), flat), torch.zeros(ws), stride=st, dilation=dil,
                 groups=groups)
    assert conv["dim"] == list(ref.shape) == out
    assert [info["tensors"][n]["dim"] for n in ("X", "W")] == [list(xs), list(ws)]
    assert len(tensors) == 3 + bias and tensors[-1].get_dim() == out
    for kind, ops in (("conv_input_grad", (np.zeros(out, np.float32), w)), ("conv_weight_grad", (x, np.zeros(out)))):
        g, tensors = c.graph(kind, ops, xs if kind == "conv_input_grad" else ws, (st, pad, dil))
        assert tensors[-1].get_dim() == list(xs if kind == "conv_input_grad" else ws)
