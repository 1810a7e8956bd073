"""The varargs methods in every form PyTorch's argument parser takes and refuses: ``x.view(4, 4)``,
``x.view((4, 4))``, ``x.view(size=(4, 4))``, ``x.view(dtype=...)`` and the same for ``reshape``, ``expand``,
``permute``, ``repeat``, ``tile``, ``flip``, ``broadcast_to``, ``resize_``, ``sum_to_size``, ``new_*`` and the
factories, plus the named two-argument forms (``transpose(dim0=, dim1=)``, ``swapaxes(axis0=, axis1=)``).
Each call runs in ember and in PyTorch; the outcome (shape, dtype and values, or the exception type) must
agree, and a refused call leaves its input untouched."""
from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")

I32 = "int32"  # stands for the library's int32 dtype in a call


def _x(lib):
    return lib.arange(16.0).reshape(4, 4)


# (method, positional arguments, keyword arguments): methods of a 4x4 float32 tensor
METHOD_CALLS = [
    ("view", (4, 4), {}), ("view", ((2, 8),), {}), ("view", ([16],), {}), ("view", (), {"size": (4, 4)}),
    ("view", (), {"size": [16]}), ("view", (I32,), {}), ("view", (), {"dtype": I32}), ("view", (), {}),
    ("view", (), {"shape": (4, 4)}), ("view", (), {"size": 16}), ("view", (4,), {"size": (4,)}),
    ("view", (16,), {"dtype": I32}), ("view", (), {"size": (16,), "dtype": I32}),
    ("reshape", (2, 8), {}), ("reshape", (), {"shape": (2, 8)}), ("reshape", (), {"size": (2, 8)}),
    ("reshape", (), {"shape": 16}), ("reshape", (), {}), ("reshape", (16,), {"shape": (16,)}),
    ("reshape", (16,), {"bar": 1}),
    ("expand", (2, 4, 4), {}), ("expand", (), {"size": (2, 4, 4)}), ("expand", ((2, 4, 4),), {"implicit": True}),
    ("expand", (), {"sizes": (2, 4, 4)}), ("expand", (), {}),
    ("permute", (1, 0), {}), ("permute", ((1, 0),), {}), ("permute", (), {"dims": (1, 0)}),
    ("permute", (), {"dims": 1}), ("permute", (1, 0), {"dims": (1, 0)}), ("permute", (), {}),
    ("repeat", (1, 2), {}), ("repeat", (), {"repeats": (1, 2)}), ("repeat", (), {"sizes": (1, 2)}),
    ("repeat", (), {"repeats": 2}), ("repeat", (), {}),
    ("tile", (1, 2), {}), ("tile", (2,), {}), ("tile", ((1, 2),), {}), ("tile", (), {"dims": (2, 1)}),
    ("tile", (), {"dims": 2}), ("tile", (), {}),
    ("flip", (0, 1), {}), ("flip", (0,), {}), ("flip", ((0, 1),), {}), ("flip", (), {"dims": (1,)}),
    ("flip", (), {"dims": 0}), ("flip", (), {}),
    ("broadcast_to", (2, 4, 4), {}), ("broadcast_to", ((2, 4, 4),), {}), ("broadcast_to", (), {"size": (2, 4, 4)}),
    ("broadcast_to", (), {"shape": (2, 4, 4)}),
    ("sum_to_size", (1, 4), {}), ("sum_to_size", ((4, 1),), {}), ("sum_to_size", (), {"size": (1, 4)}),
    ("new_zeros", (2, 3), {}), ("new_zeros", (), {"size": (2, 3)}), ("new_ones", ((2, 3),), {"dtype": I32}),
    ("new_empty", (), {"size": (2,)}), ("new_zeros", (2,), {"size": (2,)}), ("new_zeros", (), {"size": 2}),
    ("new_zeros", (), {}), ("new_ones", (2,), {"foo": 1}), ("new_zeros", ((),), {}),
    ("transpose", (), {"dim0": 0, "dim1": 1}), ("transpose", (0,), {"dim1": 1}), ("transpose", (), {"dim0": 0}),
    ("swapaxes", (), {"axis0": 0, "axis1": 1}), ("swapdims", (), {"dim0": 1, "dim1": 0}),
    ("swapaxes", (), {"dim0": 0, "dim1": 1}),
]
# (function, positional arguments, keyword arguments); "X" stands for the 4x4 tensor
TORCH_CALLS = [
    ("zeros", (2, 3), {}), ("zeros", ((2, 3),), {}), ("zeros", (), {"size": (2, 3)}), ("zeros", (), {"size": 2}),
    ("zeros", (2,), {"size": (2, 3)}), ("zeros", (), {"shape": (2, 3)}), ("ones", (), {"size": [2]}),
    ("empty", (), {"size": (2, 3)}), ("rand", (), {"size": (2, 3)}), ("randn", ((2, 3),), {}),
    ("ones", (2, 3), {"dtype": I32}),
    ("reshape", ("X",), {"shape": (16,)}), ("permute", ("X",), {"dims": (1, 0)}),
    ("broadcast_to", ("X",), {"size": (2, 4, 4)}), ("tile", ("X",), {"dims": (1, 2)}),
    ("flip", ("X",), {"dims": (0,)}), ("transpose", ("X",), {"dim0": 0, "dim1": 1}),
    ("swapaxes", ("X",), {"axis0": 0, "axis1": 1}), ("swapdims", ("X",), {"dim0": 0, "dim1": 1}),
]


def _resolve(lib, value, x):
    return lib.int32 if value == I32 else x if value == "X" else value


def _outcome(lib, where, name, args, kw, device=None):
    """What the call gives: ("ok", shape, dtype, values) or the exception's type name; the input after it."""
    x = _x(lib) if device is None else _x(lib).to(device)
    before = x.clone()
    args = tuple(_resolve(lib, a, x) for a in args)
    kw = {k: _resolve(lib, v, x) for k, v in kw.items()}
    try:
        r = getattr(x, name)(*args, **kw) if where == "method" else getattr(lib, name)(*args, **kw)
    except Exception as e:  # noqa: BLE001 - the exception's type is the outcome compared
        return type(e).__name__, bool((x == before).all()) and x.shape == before.shape
    values = None if name.startswith(("new_empty", "empty", "rand")) else r.cpu().tolist()
    return ("ok", tuple(r.shape), str(r.dtype).rpartition(".")[2], values), True


def _reinterprets(device):
    try:
        ember.zeros(2, device=device).view(ember.int32)
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize("name,args,kw", METHOD_CALLS, ids=lambda v: repr(v))
def test_method_forms_as_pytorch(name, args, kw, device):
    expected, _ = _outcome(torch, "method", name, args, kw)
    if expected[0] == "ok" and name == "view" and I32 in (*args, kw.get("dtype")) and not _reinterprets(device):
        pytest.skip("this backend's arrays cannot be reinterpreted as another dtype")
    got, untouched = _outcome(ember, "method", name, args, kw, device)
    assert got == expected
    assert untouched, f"{name} changed its input before refusing the call"


@pytest.mark.parametrize("name,args,kw", TORCH_CALLS, ids=lambda v: repr(v))
def test_function_forms_as_pytorch(name, args, kw):
    assert _outcome(ember, "torch", name, args, kw)[0] == _outcome(torch, "torch", name, args, kw)[0]


@pytest.mark.parametrize("kw", [{"size": (2, 8)}, {"size": (2, 8), "memory_format": "contiguous"}])
def test_resize_keyword(kw, device):
    for lib in (torch, ember):
        x = _x(lib) if lib is torch else _x(lib).to(device)
        if "memory_format" in kw:
            kw = {**kw, "memory_format": lib.contiguous_format}
        assert tuple(x.resize_(**kw).shape) == (2, 8)
    with pytest.raises(TypeError, match="resize_"):
        _x(ember).to(device).resize_(2, 8, size=(2, 8))


def test_refusals_name_the_op_and_argument():
    x = _x(ember)
    with pytest.raises(TypeError, match=r"view\(\) got multiple values for argument 'size'"):
        x.view(4, size=(4,))
    with pytest.raises(TypeError, match=r"permute\(\): argument 'dims' must be tuple of ints, not int"):
        x.permute(dims=1)
    with pytest.raises(TypeError, match=r"reshape\(\) missing 1 required positional argument: 'shape'"):
        x.reshape()
    with pytest.raises(TypeError, match=r"tile\(\) got an unexpected keyword argument 'sizes'"):
        x.tile(sizes=(2,))


@pytest.mark.parametrize("ns,name,kw", [
    ("", "relu_", {}), ("", "selu_", {}), ("", "celu_", {"alpha": 0.5}),
    ("", "threshold_", {"threshold": 0.5, "value": 9.0}),
    ("nn.functional", "elu_", {"alpha": 0.3}), ("nn.functional", "leaky_relu_", {"negative_slope": 0.2}),
    ("nn.functional", "hardtanh_", {"min_val": -0.5, "max_val": 0.5}), ("nn.functional", "relu_", {})])
def test_inplace_functions_take_input_by_name(ns, name, kw, device):
    results = []
    for lib in (torch, ember):
        mod = lib.nn.functional if ns else lib
        x = lib.tensor([-1.5, -0.25, 0.75, 2.0])
        x = x if lib is torch else x.to(device)
        r = getattr(mod, name)(input=x, **kw)
        assert r is x
        results.append(x.cpu().tolist())
    assert results[0] == pytest.approx(results[1])
