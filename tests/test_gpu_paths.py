"""What the CUDA backend relies on, checked where there is no GPU.

The logic that is not CuPy's own runs here on NumPy: 0-d arrays through every backend's host copies (and
``CupyBackend.from_numpy`` over a NumPy stand-in for CuPy), a device's backend before it is resolved, the
running max/min and the scatter product of an array library without ``ufunc.accumulate`` and
``multiply.at`` (a backend over NumPy with CuPy's gaps, end to end against PyTorch), storage offsets of
arrays that expose only ``__cuda_array_interface__``, checkpointed views sharing one device storage, random
draws on their generator's device, array libraries' ``LinAlgError``, float-to-uint8 casts on a library that
saturates, and the array namespace of a device array.
"""
import contextlib
import importlib.util
import io
import os
import sys
import types

import numpy as np
import pytest
from fakegpu import FakeGPU, _Plugin, cpu_default, registered

import ember
from ember.backend import ArrayBackend
from ember.kernels import indexing, pointwise, reduction

cpu_by_default = pytest.fixture(autouse=True)(cpu_default)
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


# --------------------------------------------------------------------------- 0-d arrays through host copies
ZERO_D = [np.array(2.5, dtype=np.float32), np.float64(-1.25), np.array(7, dtype=np.int64), np.array(True)]


def _round_trip(backend, index):
    for a in ZERO_D:
        dev = backend.from_numpy(a, index)
        assert tuple(dev.shape) == (), (backend.name, a)
        if backend.name == "meta":  # shapes only: nothing to copy back
            continue
        back = backend.to_numpy(dev)
        assert back.shape == () and back.dtype == np.asarray(a).dtype and back.item() == np.asarray(a).item()
        copied = backend.from_numpy(a, index, copy=True)
        assert tuple(copied.shape) == ()


def test_zero_d_arrays_stay_zero_d_through_every_backend():
    seen = []
    for name, backend in ember.backend.BACKENDS.items():
        if backend.is_available():
            _round_trip(backend, 0 if backend.has_index() else None)
            seen.append(name)
    assert "cpu" in seen
    with registered(2) as fake:
        _round_trip(fake, 1)


def test_zero_d_tensors_keep_their_shape(device):
    for value in (2.5, 7, True):
        t = ember.tensor(value, device=device)
        assert t.shape == () and t.item() == value and t.cpu().shape == ()
        assert (t + t).shape == () and t.to("cpu").to(device).shape == ()


class _Pinned(np.ndarray):
    """What ``cupy.empty`` returns, over host memory: ``set`` copies a host array in."""

    def set(self, array, stream=None):
        assert array.shape == self.shape, "CuPy's set() refuses a shape change"
        np.copyto(self, array)


class _Device(contextlib.nullcontext):
    def __init__(self, index):
        super().__init__()


def _cupy_stand_in():
    stream = types.SimpleNamespace(synchronize=lambda: None)
    cuda = types.SimpleNamespace(Device=_Device, get_current_stream=lambda: stream)
    return types.SimpleNamespace(cuda=cuda, empty=lambda shape, dtype: np.empty(shape, dtype).view(_Pinned))


def test_cupy_backend_from_numpy_keeps_0d_and_makes_c_order():
    from ember_cuda_cupy.backend import CupyBackend

    backend = object.__new__(CupyBackend)  # the method alone, over a NumPy stand-in for CuPy
    backend.cp = _cupy_stand_in()
    backend.current_device = lambda: 0
    for a in ZERO_D:
        out = CupyBackend.from_numpy(backend, a, None)
        assert out.shape == () and out.item() == np.asarray(a).item()
    t = np.arange(6.0).reshape(2, 3).T  # Fortran order: copied to C order, values kept
    out = CupyBackend.from_numpy(backend, t, 0, non_blocking=True)
    assert out.flags.c_contiguous and np.array_equal(out, t)
    assert CupyBackend.from_numpy(backend, np.zeros((0, 3)), 0).shape == (0, 3)


# --------------------------------------------------------------------------- a device's backend
def test_an_unindexed_device_names_its_backend_before_resolution():
    with registered(2) as fake:
        d = ember.device("fakegpu")
        assert d.index is None and d.kernels is None  # not resolved: no tensor went there
        assert d.backend is fake and not d.backend.host
        r = ember.backend.resolve(d)
        assert r == ember.device("fakegpu", 0) and r.backend is fake and d.kernels is None
    assert ember.device("fakegpu").backend is None  # unregistered again
    assert ember.device("cpu").backend.host


# --------------------------------------------------------------------------- an array library with CuPy's gaps
class _NoAccumulateOrAt:
    """A NumPy ufunc whose ``accumulate`` and ``at`` raise, as CuPy's maximum, minimum and multiply do."""

    def __init__(self, ufunc):
        self._ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return self._ufunc(*args, **kwargs)

    def accumulate(self, *args, **kwargs):
        raise NotImplementedError(f"`cupy_{self._ufunc.__name__}.accumulate` is not supported yet")

    def at(self, *args, **kwargs):
        raise NotImplementedError(f"`cupy_{self._ufunc.__name__}.at` is not supported yet")

    def __getattr__(self, name):
        return getattr(self._ufunc, name)


def _cupy_like():
    xp = types.ModuleType("cupy_like")
    xp.__getattr__ = lambda name: getattr(np, name)
    xp.maximum, xp.minimum, xp.multiply = (_NoAccumulateOrAt(u) for u in (np.maximum, np.minimum, np.multiply))
    return xp


CUPY_LIKE = _cupy_like()


class CupyLike(ArrayBackend):
    name = "cupylike"

    def __init__(self):
        super().__init__(CUPY_LIKE)


@pytest.fixture
def cupylike():
    ember.plugins.register(_Plugin(CupyLike()), name="cupylike")
    try:
        yield "cupylike"
    finally:
        ember.plugins.unregister("cupylike")
        for dev in list(ember.device._cache.values()):
            if dev.type == "cupylike":
                dev.backend = dev.kernels = None


def _samples():
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 3, 5, 8, 9, 33):
        x = np.round(rng.standard_normal((3, n, 4)), 1)  # rounded: ties
        if n > 3:
            x[0, 2, 1] = np.nan
            x[1, n - 1, 3] = np.nan
            x[2, 1:, 0] = x[2, 0, 0]  # a constant run: the last index of the running max moves along it
        yield x
    yield rng.integers(-3, 3, (4, 17))
    yield rng.integers(0, 2, (5, 6)).astype(bool)


def test_scan_by_doubling_is_accumulate():
    for x in _samples():
        for axis in range(x.ndim):
            for op in (np.maximum, np.minimum):
                got = reduction.scan(np, op, x, axis)
                want = op.accumulate(x, axis=axis)
                assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=x.dtype.kind == "f")
                assert not np.shares_memory(got, x)


def test_cumextreme_without_accumulate_matches_numpys():
    ours, numpy_ = reduction.kernels(CUPY_LIKE)["cumextreme"], reduction.kernels(np)["cumextreme"]
    for x in _samples():
        for axis in range(x.ndim):
            for largest in (True, False):
                (v, i), (wv, wi) = ours(x, axis, largest), numpy_(x, axis, largest)
                assert np.array_equal(v, wv, equal_nan=x.dtype.kind == "f") and np.array_equal(i, wi)


def test_segmented_product_is_multiply_at():
    rng = np.random.default_rng(1)
    for n in (0, 1, 2, 7, 40):
        out = rng.standard_normal((6, 4))
        out[0, 0], out[1, 1] = 0.0, np.inf
        rows = rng.integers(0, 6, (n, 4))
        cols = np.broadcast_to(np.arange(4), (n, 4))
        vals = rng.standard_normal((n, 4))
        if n > 3:
            vals[2, 1] = np.nan
        want = out.copy()
        np.multiply.at(want, (rows, cols), vals)
        got = indexing.segmented_product(np, out.copy(), (rows, cols), vals)
        np.testing.assert_allclose(got, want, rtol=1e-13)
    ints = np.full(3, 3, dtype=np.int8)
    idx = np.zeros(9, dtype=np.int64)
    want = ints.copy()
    np.multiply.at(want, (idx,), np.full(9, 3, dtype=np.int8))  # wraps around, as int8 does
    assert np.array_equal(indexing.segmented_product(np, ints.copy(), (idx,), np.full(9, 3, dtype=np.int8)), want)


def test_scatter_reduce_prod_without_multiply_at_matches_numpys():
    rng = np.random.default_rng(2)
    ours, numpy_ = indexing.kernels(CUPY_LIKE)["scatter_reduce"], indexing.kernels(np)["scatter_reduce"]
    for axis in (0, 1):
        x = rng.standard_normal((4, 5))
        index = rng.integers(0, x.shape[axis], (3, 4))
        src = rng.standard_normal((3, 5))
        for include_self in (True, False):
            np.testing.assert_allclose(ours(x, axis, index, src, "prod", include_self),
                                       numpy_(x, axis, index, src, "prod", include_self), rtol=1e-13)


def test_ops_on_a_backend_without_accumulate_and_multiply_at(cupylike, torch):
    x = [[2.0, 1.0, 3.0, 3.0], [float("nan"), 0.5, 4.0, -1.0], [1.0, 1.0, 1.0, 2.0]]
    for name in ("cummax", "cummin"):
        e, t = getattr(ember.tensor(x, device=cupylike), name)(1), getattr(ember.tensor(x), name)(1)
        w = getattr(torch.tensor(x), name)(1)
        np.testing.assert_array_equal(e.values.cpu().numpy(), w.values.numpy())
        assert e.indices.tolist() == w.indices.tolist() == t.indices.tolist()
    a = ember.tensor(x, device=cupylike, dtype=ember.float64, requires_grad=True)
    a.cummax(0).values.sum().backward()
    ref = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ref.cummax(0).values.sum().backward()
    np.testing.assert_array_equal(a.grad.cpu().numpy(), ref.grad.numpy())
    ints = [[1, 2, 2, 3, 2], [5, 5, 1, 1, 0]]
    m, w = ember.tensor(ints, device=cupylike).mode(1), torch.tensor(ints).mode(1)
    assert m.values.tolist() == w.values.tolist() and m.indices.tolist() == w.indices.tolist()
    base, src = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[2.0, 3.0], [4.0, 0.5]]
    idx = [[0, 0], [0, 2]]
    for include_self in (True, False):
        e = ember.tensor(base, device=cupylike).scatter_reduce(0, ember.tensor(idx, device=cupylike),
                                                               ember.tensor(src, device=cupylike), "prod",
                                                               include_self=include_self)
        w = torch.tensor(base).scatter_reduce(0, torch.tensor(idx), torch.tensor(src), "prod",
                                              include_self=include_self)
        np.testing.assert_allclose(e.cpu().numpy(), w.numpy(), rtol=1e-6)


# --------------------------------------------------------------------------- storages of device arrays
class _DeviceArray:
    """An array that, as CuPy's, shows its address only through ``__cuda_array_interface__``."""

    def __init__(self, ptr):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (4,), "typestr": "<f4", "version": 3}


def test_device_arrays_report_their_address():
    from ember.storage import _addressable, _ptr

    a = _DeviceArray(0x7F0000001000)
    assert _addressable(a) and _ptr(a) == 0x7F0000001000
    assert _addressable(np.zeros(2)) and not _addressable(object())


def test_storage_offset_of_a_device_view():
    with registered(2):
        t = ember.arange(12, device="fakegpu:1").reshape(3, 4)
        assert t[1].storage_offset() == 4 and t[:, 2].storage_offset() == 2 and t.storage_offset() == 0


def test_loaded_views_share_one_device_storage():
    with registered(2):
        base = ember.arange(12.0, device="fakegpu:1").reshape(3, 4)
        for where, map_location in (("fakegpu:1", None), ("cpu", "fakegpu:0")):
            buf = io.BytesIO()
            saved = base.to(where)
            ember.save({"base": saved, "row": saved[1], "col": saved[:, 2], "t": saved.t()}, buf)
            buf.seek(0)
            out = ember.load(buf, map_location=map_location)
            assert {str(v.device) for v in out.values()} == {map_location or where}
            assert out["col"].tolist() == [2.0, 6.0, 10.0] and out["t"].shape == (4, 3)
            assert out["row"].stride() == (1,) and out["col"].stride() == (4,) and out["t"].stride() == (1, 4)
            out["base"][1, 2] = -1.0
            assert out["row"][2].item() == out["col"][1].item() == out["t"][2, 1].item() == -1.0


# --------------------------------------------------------------------------- random draws and their generators
def test_samplers_and_datasets_draw_on_their_generators_device():
    from ember.utils.data.distributed import DistributedSampler

    with registered(1), ember.device("fakegpu"):  # a default device that is not the generator's
        parts = [list(DistributedSampler(range(11), num_replicas=2, rank=r, seed=7)) for r in range(2)]
        assert [len(p) for p in parts] == [6, 6] and set(parts[0] + parts[1]) == set(range(11))
        vision = pytest.importorskip("ember_vision")
        img, label = vision.datasets.FakeData(size=2, image_size=(3, 4, 5))[1]
        assert img.size == (5, 4) and 0 <= label < 10


def test_char_lm_batches_come_from_a_cpu_generator_onto_the_data():
    spec = importlib.util.spec_from_file_location("char_lm_example", os.path.join(EXAMPLES, "char_lm.py"))
    example = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("char_lm_example", example)
    spec.loader.exec_module(example)
    with registered(1):
        data = ember.arange(100, device="fakegpu:0")
        gen = ember.Generator().manual_seed(3)
        x, y = example.batches(data, 8, 4, gen)
        assert x.device == data.device and x.shape == (4, 8) and (y - x).eq(1).all().item()


# --------------------------------------------------------------------------- linear algebra errors
@pytest.mark.parametrize("name,call", [
    ("inv", lambda a: ember.linalg.inv(a)),
    ("cholesky", lambda a: ember.linalg.cholesky(a)),
])
def test_an_array_librarys_linalg_error_is_pytorchs(name, call):
    with registered(1) as fake:
        a = ember.zeros(2, 2, device="fakegpu:0")

        def refuse(*args, **kwargs):  # what CuPy raises under cupyx.errstate(linalg="raise")
            raise np.linalg.LinAlgError("Error reported by getrf in cuSOLVER. devInfo = 1.")

        fake.kernels[name] = refuse
        fake.kernels_changed()
        with pytest.raises(ember.linalg.LinAlgError, match=f"linalg.{name}"):
            call(a)
        assert a.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_cupy_linalg_kernels_run_under_raising_errstate(monkeypatch):
    from ember_cuda_cupy import compat

    states = []

    @contextlib.contextmanager
    def errstate(**kwargs):
        states.append(kwargs)
        yield

    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(errstate=errstate))
    shared = {"inv": lambda a: ("inv", a), "solve": lambda a, b: ("solve", a, b), "cholesky": lambda a, u: u}
    table = compat.raising_linalg(None, shared)
    assert set(table) == set(compat.RAISING_LINALG)
    assert table["inv"](1) == ("inv", 1) and table["solve"](1, 2) == ("solve", 1, 2) and table["cholesky"](1, True)
    assert states == [{"linalg": "raise"}] * 3


# --------------------------------------------------------------------------- casts
class _Saturating(np.ndarray):
    """Arrays whose float -> uint8 conversion saturates, as GPUs' does (NumPy on x86 happens to wrap)."""

    def astype(self, dtype, *args, **kwargs):
        if np.dtype(dtype) == np.uint8 and self.dtype.kind == "f":
            return np.clip(np.asarray(self), 0, 255).astype(np.uint8)
        return np.asarray(self).astype(dtype, *args, **kwargs)


def test_float_to_uint8_wraps_through_int64(torch):
    vals = [[-2.7, -0.5, 0.0], [0.4, 255.0, 300.25], [-1.0, -256.5, 1.5]]
    cast = pointwise.kernels(np)["astype"]
    got = cast(np.asarray(vals, dtype=np.float32).view(_Saturating), np.uint8)
    assert got.dtype == np.uint8 and got.tolist() == torch.tensor(vals).to(torch.uint8).tolist()
    assert cast(np.asarray([-3, 260]), np.uint8).tolist() == [253, 4]  # integers wrap as they are


# --------------------------------------------------------------------------- array namespaces
class _Bare:
    """A device array type without ``__array_namespace__`` (CuPy's has none)."""


def test_array_namespace_of_backend_arrays(monkeypatch):
    assert ember.backend.array_namespace(np.zeros(2)) is np
    fake = FakeGPU(1)
    try:
        assert ember.backend.array_namespace(fake.from_numpy(np.zeros(2), 0)) is np
    finally:
        fake.close()
    bare = types.SimpleNamespace(array_type=_Bare, xp=types.SimpleNamespace(name="bare-xp"))
    monkeypatch.setitem(ember.backend.BACKENDS, "bare", bare)
    assert ember.backend.array_namespace(_Bare()) is bare.xp
    with pytest.raises(TypeError, match="array_namespace\\(\\): .*object is not an array of a registered"):
        ember.backend.array_namespace(object())
