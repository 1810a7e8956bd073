"""Tensor, storage, dtypes, promotion, creation ops and printing against PyTorch."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close, to_numpy


# --------------------------------------------------------------------------- creation
CREATION = [
    ("tensor_floats", lambda m, d: m.tensor([[1.0, 2.0], [3.0, 4.0]], device=d)),
    ("tensor_ints", lambda m, d: m.tensor([1, 2, 3], device=d)),
    ("tensor_bools", lambda m, d: m.tensor([True, False], device=d)),
    ("tensor_mixed", lambda m, d: m.tensor([1, 2.5], device=d)),
    ("tensor_scalar", lambda m, d: m.tensor(3.5, device=d)),
    ("tensor_dtype", lambda m, d: m.tensor([1, 2], dtype=m.float64, device=d)),
    ("zeros", lambda m, d: m.zeros(2, 3, device=d)),
    ("zeros_tuple", lambda m, d: m.zeros((2, 3), dtype=m.int32, device=d)),
    ("ones", lambda m, d: m.ones(4, device=d)),
    ("full_float", lambda m, d: m.full((2, 2), 1.5, device=d)),
    ("full_int", lambda m, d: m.full((2, 2), 7, device=d)),
    ("full_bool", lambda m, d: m.full((2,), True, device=d)),
    ("eye", lambda m, d: m.eye(3, device=d)),
    ("eye_rect", lambda m, d: m.eye(2, 4, device=d)),
    ("arange_int", lambda m, d: m.arange(5, device=d)),
    ("arange_start_step", lambda m, d: m.arange(1, 10, 3, device=d)),
    ("arange_float", lambda m, d: m.arange(0, 1, 0.25, device=d)),
    ("arange_neg", lambda m, d: m.arange(5, 0, -2, device=d)),
    ("linspace", lambda m, d: m.linspace(-1, 1, 5, device=d)),
    ("logspace", lambda m, d: m.logspace(0, 2, 3, device=d)),
    ("zeros_like", lambda m, d: m.zeros_like(m.ones(2, 3, dtype=m.int64, device=d))),
    ("ones_like_dtype", lambda m, d: m.ones_like(m.ones(2, device=d), dtype=m.float64)),
    ("full_like", lambda m, d: m.full_like(m.ones(3, device=d), 2.5)),
    ("empty_shape", lambda m, d: m.empty(2, 0, device=d)),
]


@pytest.mark.parametrize("name,fn", CREATION, ids=[c[0] for c in CREATION])
def test_creation_matches_torch(device, torch, name, fn):
    assert_close(fn(ember, device), fn(torch, "cpu"))


def test_random_creation_shapes_dtypes_and_seed(device):
    ember.manual_seed(3)
    a = ember.rand(3, 4, device=device)
    b = ember.randn(3, 4, dtype=ember.float64, device=device)
    c = ember.randint(2, 9, (100,), device=device)
    p = ember.randperm(10, device=device)
    assert a.shape == (3, 4) and a.dtype is ember.float32
    assert 0 <= a.min().item() if hasattr(a, "min") else True
    assert (to_numpy(a) >= 0).all() and (to_numpy(a) < 1).all()
    assert b.dtype is ember.float64
    assert c.dtype is ember.int64 and to_numpy(c).min() >= 2 and to_numpy(c).max() < 9
    assert sorted(p.tolist()) == list(range(10))
    ember.manual_seed(3)
    assert ember.rand(3, 4, device=device).tolist() == a.tolist()
    g = ember.Generator(device=device).manual_seed(5)
    x = ember.rand(4, generator=g, device=device)
    g.manual_seed(5)
    assert ember.rand(4, generator=g, device=device).tolist() == x.tolist()
    state = g.get_state()
    y = ember.rand(4, generator=g, device=device)
    g.set_state(state)
    assert ember.rand(4, generator=g, device=device).tolist() == y.tolist()


def test_rng_state_roundtrip():
    s = ember.get_rng_state()  # the CPU generator's, as in PyTorch
    a = ember.randn(5, device="cpu")
    ember.set_rng_state(s)
    assert ember.randn(5, device="cpu").tolist() == a.tolist()


def test_out_argument(device):
    out = ember.empty(3, device=device)
    r = ember.arange(3, out=out, dtype=ember.float32, device=device)
    assert r is out and out.tolist() == [0.0, 1.0, 2.0]
    o2 = ember.zeros(3, device=device)
    ember.add(ember.ones(3, device=device), 1, out=o2)
    assert o2.tolist() == [2.0, 2.0, 2.0]


def test_requires_grad_creation(device):
    t = ember.zeros(2, requires_grad=True, device=device)
    assert t.requires_grad and t.is_leaf


def test_range_is_deprecated_and_inclusive():
    with pytest.warns(DeprecationWarning, match="arange"):
        r = ember.range(1, 4)
    assert r.tolist() == [1.0, 2.0, 3.0, 4.0] and r.dtype is ember.float32


def test_legacy_constructors(device):
    t = ember.Tensor(2, 3)
    assert t.shape == (2, 3) and t.dtype is ember.float32
    assert ember.Tensor([1, 2]).dtype is ember.float32
    assert ember.FloatTensor([1, 2]).tolist() == [1.0, 2.0]
    lt = ember.LongTensor([1, 2])
    assert lt.dtype is ember.int64
    assert isinstance(lt, ember.LongTensor) and not isinstance(lt, ember.FloatTensor)
    assert isinstance(lt, ember.Tensor)
    assert ember.Tensor().shape == (0,)
    assert ember.DoubleTensor(ember.Size([2])).shape == (2,)


def test_bad_creation_arguments():
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(-1)
    with pytest.raises(TypeError, match="must be a tuple of ints"):
        ember.ones(2.5)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 5, 0)
    with pytest.raises(TypeError, match="cannot interpret"):
        ember.zeros(2, dtype="nonsense")
    with pytest.raises(RuntimeError, match="from' to be less than 'to'"):
        ember.randint(5, 5, (2,))


# --------------------------------------------------------------------------- storage and views
def test_from_numpy_shares_memory_both_ways():
    a = np.array([1, 2, 3])
    t = ember.from_numpy(a)
    t[0] = -1
    assert a.tolist() == [-1, 2, 3]
    a[1] = 7
    assert t.tolist() == [-1, 7, 3]
    n = t.numpy()
    n[2] = 9
    assert t.tolist() == [-1, 7, 9]
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        ember.from_numpy(np.array(["x"]))


def test_numpy_requires_detach():
    t = ember.ones(2, device="cpu", requires_grad=True)  # numpy() shares a CPU tensor's memory
    with pytest.raises(RuntimeError, match="detach"):
        t.numpy()
    assert t.numpy(force=True).tolist() == [1.0, 1.0]
    assert t.detach().numpy().tolist() == [1.0, 1.0]


VIEWS = [
    ("view", lambda t: t.view(3, 2)),
    ("slice", lambda t: t[1]),
    ("slice_step", lambda t: t[:, ::2]),
    ("t", lambda t: t.t()),
    ("transpose", lambda t: t.transpose(0, 1)),
    ("permute", lambda t: t.permute(1, 0)),
    ("expand", lambda t: t[:1].expand(4, 3)),
    ("detach", lambda t: t.detach()),
    ("unsqueeze", lambda t: t.unsqueeze(0)),
]


def _strided(device):
    """Whether the backend's arrays expose memory layout (strides, data pointers)."""
    return hasattr(ember.ones(1, device=device)._data, "strides")


@pytest.mark.parametrize("name,fn", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_share_storage_and_version(device, name, fn):
    base = ember.arange(6, dtype=ember.float32, device=device).reshape(2, 3)
    v = fn(base)
    if _strided(device):
        assert v.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    with ember.no_grad():
        base.add_(10)
    assert v._version == base._version == 1
    assert float(v.reshape(-1)[0].item()) >= 10


def test_contiguous_copies_only_when_needed(device):
    if not _strided(device):
        pytest.skip("the backend's arrays have no memory layout to be contiguous in")
    t = ember.ones(2, 3, device=device)
    assert t.contiguous() is t
    tt = t.t()
    assert not tt.is_contiguous()
    c = tt.contiguous()
    assert c is not tt and c.is_contiguous() and c.tolist() == tt.tolist()


def test_stride_and_storage_offset(device):
    t = ember.arange(12, device=device).reshape(3, 4)
    if not hasattr(t._data, "strides"):
        pytest.skip(f"the {device} backend's arrays have no strides (views are copies)")
    assert t.stride() == (4, 1) and t.t().stride() == (1, 4)
    assert t[1].storage_offset() == 4
    assert t.storage().size() == 12 and t.untyped_storage().nbytes() == 96
    assert ember.is_storage(t.storage()) and not ember.is_storage(t)
    assert ember.is_tensor(t) and not ember.is_tensor(np.zeros(1))


def test_bad_view_sizes(device):
    t = ember.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="shape '\\[4, 2\\]' is invalid for input of size 6"):
        t.view(4, 2)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.t().view(6)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)
    assert t.shape == (2, 3)


# --------------------------------------------------------------------------- metadata and conversion
def test_size_and_metadata(device):
    t = ember.zeros(2, 3, 4, device=device)
    assert isinstance(t.shape, ember.Size) and isinstance(t.shape, tuple)
    assert repr(t.shape) == "ember.Size([2, 3, 4])"
    assert t.size() == (2, 3, 4) and t.size(-1) == 4 and t.shape[1:] == ember.Size([3, 4])
    assert t.dim() == t.ndim == 3 and t.numel() == 24 and t.element_size() == 4
    assert t.shape.numel() == 24 and len(t) == 2
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.size(3)


def test_item_tolist_and_python_conversions(device):
    t = ember.tensor([[1.5, 2.0]], device=device)
    assert t.tolist() == [[1.5, 2.0]]
    assert ember.tensor(3, device=device).item() == 3 and isinstance(ember.tensor(3).item(), int)
    assert float(ember.tensor([2.5], device=device)) == 2.5 and int(ember.tensor(7)) == 7
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        t.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    assert [1, 2, 3][ember.tensor(1)] == 2


def test_to_and_type_conversions(device):
    t = ember.tensor([1.7, -2.2], device=device)
    assert t.to(ember.int64).tolist() == [1, -2]
    assert t.long().dtype is ember.int64 and t.double().dtype is ember.float64
    assert t.to(device) is t and t.to(t) is t
    assert t.type() == "ember.FloatTensor" if device == "cpu" else True
    assert t.type("ember.DoubleTensor").dtype is ember.float64
    assert t.type(ember.int32).dtype is ember.int32
    assert t.cpu().device == ember.device("cpu")


# --------------------------------------------------------------------------- dtypes and promotion
PROMO = [
    ("int_plus_float_scalar", lambda m, d: m.tensor([1, 2], device=d) + 1.5),
    ("int_div_int", lambda m, d: m.tensor([1, 2], device=d) / m.tensor([2, 4], device=d)),
    ("int32_plus_int64", lambda m, d: m.tensor([1], dtype=m.int32, device=d) + m.tensor([1], device=d)),
    ("uint8_plus_int8", lambda m, d: m.tensor([1], dtype=m.uint8, device=d) + m.tensor([1], dtype=m.int8, device=d)),
    ("float32_plus_float64_0d", lambda m, d: m.ones(2, device=d) + m.tensor(1.0, dtype=m.float64, device=d)),
    ("int_plus_float_0d", lambda m, d: m.tensor([1, 2], device=d) + m.tensor(1.0, dtype=m.float64, device=d)),
    ("int64_plus_float32", lambda m, d: m.tensor([1], device=d) + m.tensor([0.5], device=d)),
    ("bool_plus_bool", lambda m, d: m.tensor([True, False], device=d) + m.tensor([True, True], device=d)),
    ("bool_plus_int", lambda m, d: m.tensor([True, False], device=d) + 2),
    ("float16_scalar", lambda m, d: m.ones(2, dtype=m.float16, device=d) * 2.5),
    ("int32_times_int", lambda m, d: m.tensor([3], dtype=m.int32, device=d) * 4),
    ("float64_0d_plus_int", lambda m, d: m.tensor(2.0, dtype=m.float64, device=d) + m.tensor([1, 2], device=d)),
    ("scalar_minus_tensor", lambda m, d: 10 - m.tensor([1, 2], device=d)),
    ("scalar_div_int_tensor", lambda m, d: 1 / m.tensor([2, 4], device=d)),
    ("pow_int_float", lambda m, d: m.tensor([2, 3], device=d) ** 0.5),
]


@pytest.mark.parametrize("name,fn", PROMO, ids=[p[0] for p in PROMO])
def test_type_promotion_matches_torch(device, torch, name, fn):
    try:
        got = fn(ember, device)
    except TypeError as e:
        if "has no dtype" in str(e):
            pytest.skip(str(e))
        raise
    assert_close(got, fn(torch, "cpu"))


def test_promote_types_table(torch):
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
             "complex128"]
    for a in names:
        for b in names:
            got = ember.promote_types(getattr(ember, a), getattr(ember, b))
            want = torch.promote_types(getattr(torch, a), getattr(torch, b))
            assert got.name == str(want).replace("torch.", ""), (a, b)


def test_result_type_and_default_dtype(torch):
    assert ember.result_type(ember.tensor([1, 2]), 1.0) is ember.float32
    assert ember.result_type(ember.tensor([1.0], dtype=ember.float64), 1) is ember.float64
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1.5]).dtype is ember.float64
        assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        ember.set_default_dtype(ember.int64)
    assert ember.finfo(ember.float32).eps == torch.finfo(torch.float32).eps
    assert ember.iinfo(ember.int16).max == 32767
    assert ember.can_cast(ember.int32, ember.float32) and not ember.can_cast(ember.float32, ember.int32)


def test_inplace_promotion_refused(device):
    t = ember.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        t.add_(1.5)
    assert t.tolist() == [1, 2] and t._version == 0


def test_broadcast_mismatch_error(device, torch):
    with pytest.raises(RuntimeError) as e:
        ember.ones(2, 3, device=device) * ember.ones(4, device=device)
    with pytest.raises(RuntimeError) as t:
        torch.ones(2, 3) * torch.ones(4)
    assert str(e.value) == "mul: " + str(t.value)


# --------------------------------------------------------------------------- devices
def test_default_device_and_override(monkeypatch):
    assert ember.get_default_device() == ember.device("cpu") or ember.cuda.is_available()
    d = ember.device("cpu")
    assert ember.device("cpu") is d and repr(d) == "device(type='cpu')" and str(d) == "cpu"
    ember.set_default_device("cpu")
    try:
        assert ember.ones(1).device == d
        with ember.device("cpu"):
            assert ember.zeros(1).device.type == "cpu"
    finally:
        ember.set_default_device(None)
    with pytest.raises(RuntimeError, match="no ember backend provides device type 'nope'"):
        ember.ones(1, device="nope")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        ember.device("cuda:x")


def test_cuda_unavailable_is_clear():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    assert ember.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="not available|no ember backend provides device type 'cuda'"):
        ember.ones(1, device="cuda")


def test_ember_device_env(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import ember; print(ember.ones(1).device)"],
                         env={**__import__("os").environ, "EMBER_DEVICE": "cpu"}, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "cpu"


# --------------------------------------------------------------------------- printing
PRINTS = [
    ("floats", lambda m: m.tensor([[1.0, 2.5], [3.0, 4.0]])),
    ("ints_floats", lambda m: m.tensor([1.0, 2.0, 3.0])),
    ("ints", lambda m: m.tensor([[1, 20], [300, 4]])),
    ("bools", lambda m: m.tensor([True, False])),
    ("scalar", lambda m: m.tensor(3.14159)),
    ("sci", lambda m: m.tensor([1e-5, 1.0, 1e5])),
    ("neg", lambda m: m.tensor([-1.5, 2.25])),
    ("nan_inf", lambda m: m.tensor([float("nan"), float("inf"), 1.5])),
    ("float64", lambda m: m.tensor([1.0, 2.0], dtype=m.float64)),
    ("int32", lambda m: m.tensor([1, 2], dtype=m.int32)),
    ("empty", lambda m: m.zeros(0)),
    ("empty2d", lambda m: m.zeros(2, 0)),
    ("requires_grad", lambda m: m.ones(2, requires_grad=True)),
    ("grad_fn", lambda m: m.ones(2, requires_grad=True) * 2),
    ("big", lambda m: m.arange(2000).float()),
    ("big2d", lambda m: m.arange(1200).reshape(40, 30)),
    ("wide", lambda m: m.arange(30).float() / 7),
    ("3d", lambda m: m.arange(8).reshape(2, 2, 2)),
]


def with_device(text, dev):
    """PyTorch's repr ``text`` of a CPU tensor as it reads for the same tensor on ``dev``: ``device='...'``
    is the first entry after the data (before ``size=``, ``dtype=``, ``grad_fn=``)."""
    if dev.type == "cpu":
        return text
    end = text.rfind("]") + 1 if "]" in text else min(i for i in (text.find(","), text.rfind(")")) if i > 0)
    return f"{text[:end]}, device='{dev}'{text[end:]}"


def test_with_device_places_the_device_as_pytorch_does():
    cuda = ember.device("cuda", 0)  # only named: nothing is created there
    assert with_device("tensor([1., 2.])", cuda) == "tensor([1., 2.], device='cuda:0')"
    assert with_device("tensor(3.1416)", cuda) == "tensor(3.1416, device='cuda:0')"
    assert with_device("tensor(3, dtype=torch.int32)", cuda) == "tensor(3, device='cuda:0', dtype=torch.int32)"
    assert with_device("tensor([], size=(2, 0))", cuda) == "tensor([], device='cuda:0', size=(2, 0))"
    assert with_device("tensor([2.], grad_fn=<MulBackward0>)", ember.device("cpu")) == \
        "tensor([2.], grad_fn=<MulBackward0>)"


@pytest.mark.parametrize("name,fn", PRINTS, ids=[p[0] for p in PRINTS])
def test_repr_matches_torch(torch, name, fn, device):
    with ember.device(device):
        e = fn(ember)
    assert repr(e).replace("ember.", "torch.") == with_device(repr(fn(torch)), e.device)


def test_set_printoptions(torch):
    try:
        ember.set_printoptions(precision=2)
        torch.set_printoptions(precision=2)
        assert repr(ember.tensor([1.23456, 2.0], device="cpu")) == repr(torch.tensor([1.23456, 2.0]))
        ember.set_printoptions(profile="default")
        assert repr(ember.tensor([1.23456], device="cpu")) == "tensor([1.2346])"
    finally:
        ember.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


def test_pickle_and_deepcopy_roundtrip(device):
    import copy
    import pickle

    t = ember.tensor([[1.0, 2.0]], device=device, requires_grad=True)
    u = pickle.loads(pickle.dumps(t))
    assert u.tolist() == t.tolist() and u.requires_grad and u.device == t.device
    c = copy.deepcopy(t)
    assert c.tolist() == t.tolist() and c.data_ptr() != t.data_ptr()
