"""Type and conversion ops against PyTorch: to/type/float()/..., type_as, can_cast, promote_types,
result_type, finfo, iinfo."""
import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
CASTS = ["float", "double", "half", "long", "int", "short", "char", "byte", "bool"]
LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
          "ByteTensor", "BoolTensor"]
DATA = [[1.5, -2.5, 0.0], [3.0, 255.0, -1.0]]


def needs(device, *names):
    """Skip where the backend has no such dtype (array-API libraries may lack float16)."""
    for n in names:
        try:
            ember.empty(0, dtype=getattr(ember, n), device=device)
        except TypeError as exc:
            pytest.skip(str(exc))


def both(device, dtype="float32"):
    return ember.tensor(DATA, dtype=getattr(ember, dtype), device=device), torch.tensor(DATA,
                                                                                         dtype=getattr(torch, dtype))


def same(e, t):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("name", CASTS)
def test_cast_methods(name, device):
    needs(device, "float16" if name == "half" else "float32")
    e, t = both(device)
    same(getattr(e, name)(), getattr(t, name)())


@pytest.mark.parametrize("src", ["float64", "int64", "bool"])
@pytest.mark.parametrize("dst", NAMES)
def test_to_dtype(src, dst, device):
    needs(device, src, dst)
    e, t = both(device, "float64")
    e, t = e.to(getattr(ember, src)), t.to(getattr(torch, src))
    same(e.to(getattr(ember, dst)), t.to(getattr(torch, dst)))
    same(e.to(dtype=getattr(ember, dst)), t.to(dtype=getattr(torch, dst)))


@pytest.mark.parametrize("legacy", LEGACY)
def test_type_legacy_names(legacy, device):
    needs(device, ember.dtypes.LEGACY[legacy].name)
    e, t = both(device)
    same(e.type(f"torch.{legacy}"), t.type(f"torch.{legacy}"))
    same(e.type(getattr(ember, legacy)), t.type(getattr(torch, legacy)))
    assert e.type(f"torch.{legacy}").type().split(".")[-1] == legacy or device != "cpu"


def test_type_and_type_as(device):
    e, t = both(device)
    assert e.type().split(".")[-1] == t.type().split(".")[-1] or device != "cpu"
    same(e.type(ember.int16), t.type(torch.int16))
    same(e.type_as(ember.ones(1, dtype=ember.int32, device=device)), t.type_as(torch.ones(1, dtype=torch.int32)))
    assert e.to(ember.float32) is e and e.to(e) is e and e.to(ember.float32, copy=True) is not e


def test_cast_is_differentiable(device):
    x = ember.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x.double() * ember.tensor([3.0, 4.0], dtype=ember.float64, device=device)
    y.sum().backward()
    assert x.grad.dtype is ember.float32 and x.grad.tolist() == [3.0, 4.0]
    assert not x.long().requires_grad


@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", NAMES)
def test_promote_types_and_can_cast(a, b):
    ea, eb, ta, tb = getattr(ember, a), getattr(ember, b), getattr(torch, a), getattr(torch, b)
    assert ember.promote_types(ea, eb).name == str(torch.promote_types(ta, tb)).split(".")[-1]
    assert ember.can_cast(ea, eb) == torch.can_cast(ta, tb)


RESULT_TYPE = [
    (lambda m, d: (m.tensor([1], dtype=m.int8, device=d), 300), "int8 tensor with a large int"),
    (lambda m, d: (m.tensor([1], device=d), 2.5), "int tensor with a float"),
    (lambda m, d: (m.tensor([True], device=d), 2), "bool tensor with an int"),
    (lambda m, d: (m.tensor([1], device=d), m.tensor(2.0, dtype=m.float64, device=d)), "0-d float64"),
    (lambda m, d: (m.tensor([1.0], dtype=m.float16, device=d), m.tensor([1], device=d)), "half with long"),
    (lambda m, d: (m.tensor(1.0, device=d), m.tensor([1], dtype=m.int32, device=d)), "0-d float, int32"),
    (lambda m, d: (m.tensor([1], dtype=m.uint8, device=d), m.tensor([1], dtype=m.int8, device=d)), "u8, i8"),
]


@pytest.mark.parametrize("make,why", RESULT_TYPE, ids=[r[1] for r in RESULT_TYPE])
def test_result_type(make, why, device):
    if "half" in why:
        needs(device, "float16")
    assert ember.result_type(*make(ember, device)).name == \
        str(torch.result_type(*make(torch, "cpu"))).split(".")[-1]


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "bfloat16"])
def test_finfo(name):
    e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(e, field) == pytest.approx(getattr(t, field), rel=1e-6), field
    assert ember.finfo().eps == torch.finfo().eps


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    e, t = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
    assert (e.bits, e.min, e.max) == (t.bits, t.min, t.max)


def test_bad_inputs():
    with pytest.raises(TypeError, match="not supported by ember.iinfo"):
        ember.iinfo(ember.bool)
    with pytest.raises(TypeError, match="finfo"):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError):
        ember.ones(2).to("not-a-dtype-or-device", 3.5)
