"""Creation ops: ``tensor``, ``zeros``, ``arange``, ``rand``, ...

All take ``dtype``, ``device``, ``requires_grad`` and ``out`` as PyTorch's do.
"""
from __future__ import annotations

import math
import os
import warnings
from builtins import range as builtins_range

import numpy as np

from .. import dtypes
from ..kernels import quiet
from ..backend import device as _device, resolve, set_default_device
from ..interception import HANDLERS, PASS, dispatch_kind, intercepted
from ..state import INFERENCE_ON, is_inference
from ..random import native
from ..registry import export
from ..layouts import EMPTY_OF, check_memory_format, dense_in_format, strided, suggested_format
from ..tensor import Tensor
from .interop import from_dlpack

TORCH = ("torch",)
_INTS = (int, np.integer)
_new = object.__new__


def _size_arg(dims, size, op):
    """The shape from ``zeros(2, 3)``, ``zeros((2, 3))`` or PyTorch's keyword form ``zeros(size=(2, 3))``."""
    if size is None:
        if not dims:  # (a 0-d tensor is zeros(()), as in PyTorch)
            raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
        return dims
    if dims:
        raise TypeError(f"{op}() received an invalid combination of arguments: the shape given both positionally "
                        f"and as size=")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return (size,)


def _size(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if type(s) is not int or s < 0:
            break
    else:  # plain non-negative ints: the usual case
        return size if type(size) is tuple else tuple(size)
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s.item())
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


@dispatch_kind
def create(op, dev, requires_grad, out, kernel, *args):
    """A fresh tensor on ``dev`` from ``kernel(*args)``: the one point where every factory makes its array.

    ``kernel`` is a kernel name, a composite ``fn(kernels, *args)`` of this module, or None for an array
    already on ``dev`` (``args[0]``: host data copied there, or shared memory).  The result is written into
    ``out`` when one is given (its device and dtype were chosen by the caller), else returned, requiring grad
    when asked.  A dispatch kind like every op's (see :class:`ember.interception.intercept`): the handler sees
    ``kind`` this function and ``Op`` the factory's name.
    """
    if HANDLERS:
        r = intercepted(create, op, (dev, requires_grad, out, kernel, *args))
        if r is not PASS:
            return r
    k = dev.kernels
    if type(kernel) is str:
        arr = k[kernel](*args)
    else:
        arr = args[0] if kernel is None else kernel(k, *args)
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if type(arr) is not dev.atype:
            arr = dev.backend.as_array(arr)
        out._data = arr if out._data.shape != arr.shape or out._dev is not dev else out._data
        if out._data is not arr:
            k["copy_"](out._data, k["astype"](arr, out._data.dtype))
        out._bump()
        return out
    t = _new(Tensor)  # _wrap(arr, dev), inline: every factory passes here
    t._data = arr if type(arr) is dev.atype else dev.backend.as_array(arr)
    t._dev, t._rg, t._fn = dev, False, None
    if INFERENCE_ON and is_inference():
        t._inference = True
    if requires_grad:
        t.requires_grad_(True)
    return t


# composites: recipes of several kernels that create runs like one kernel
def _steps(k, n, step, start, wide, nd):
    """``start + step * i`` for ``i < n``, computed in array dtype ``wide`` and converted to ``nd``."""
    return k["astype"](k["arange"](0, n, 1, wide) * step + start, nd)


def _linear(k, start, end, steps, wide, nd):
    return k["astype"](k["linspace"](start, end, steps, wide), nd)


def _powers(k, xp, base, start, end, steps, wide, nd):
    lin = k["linspace"](start, end, steps, wide)
    return k["astype"](xp.asarray(base, dtype=lin.dtype) ** lin, nd)


def _dev_dtype(device, dtype, out=None):
    """The device, dtype and array dtype of a new tensor (``out``'s unless given)."""
    if out is not None:
        dev, d = out._dev, (dtypes.as_dtype(dtype) if dtype is not None else out.dtype)
    else:
        dev, d = resolve(device), (dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype())
    return dev, d, dev.backend.array_dtype(d)


def _infer_dtype(data):
    """PyTorch's dtype for nested Python data: bool, int64, default float or complex."""
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, np.ndarray):
        return dtypes.FROM_NP.get(data.dtype, None) or dtypes.float64
    if isinstance(data, np.generic):
        return dtypes.FROM_NP[np.dtype(type(data))]
    cat = _number_category(data)
    if cat is not None:
        return dtypes.default_for_category(cat)
    cat = -1
    typed = set()  # dtypes of typed elements (tensors, NumPy scalars and arrays): they promote as PyTorch's do
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, Tensor):
            typed.add(x.dtype)
        elif isinstance(x, (np.ndarray, np.generic)):
            d = dtypes.FROM_NP.get(x.dtype)
            if d is None:
                stack.extend(x.tolist() if x.ndim else [x.item()])
            else:
                typed.add(d)
        else:
            cat = max(cat, dtypes.scalar_category(x))
    if not typed:
        return dtypes.get_default_dtype() if cat == -1 else dtypes.default_for_category(cat)
    dims = list(typed) + ([dtypes.default_for_category(cat)] if cat != -1 else [])
    return dtypes.result_type_of(dims, [], [])


def _number_category(data):
    """The dtype category of a Python number, or of a flat list of them (their types say it); else None."""
    cat = _PY_CATEGORY.get(type(data))
    if cat is None and type(data) is list and data:
        kinds = set(map(type, data))
        if kinds <= _NUMBERS:
            cat = max(map(_PY_CATEGORY.__getitem__, kinds))
    return cat


def _to_host(data):
    if isinstance(data, Tensor):
        return data._dev.backend.to_numpy(data.detach()._data)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return [_to_host(x) for x in data]
    return data


# --------------------------------------------------------------------------- reading Python data
_NUMBERS = frozenset((float, int, bool, complex))
_PY_CATEGORY = {bool: dtypes.BOOL, int: dtypes.INT, float: dtypes.FLOAT, complex: dtypes.COMPLEX}
_LEAVES = (float, int, bool, complex, np.generic, Tensor)


def _is_sequence(x) -> bool:
    """PyTorch's sequence protocol (``PySequence_Check``): a type with ``__getitem__`` that is not a mapping."""
    t = type(x)
    return t is list or t is tuple or (hasattr(t, "__getitem__") and not isinstance(x, (dict, Tensor, np.generic)))


def _shape_of(data, op):
    """The shape read down the first elements, as PyTorch reads it (a tensor element is one number)."""
    shape, x = [], data
    while True:
        if isinstance(x, np.ndarray):
            return shape + list(x.shape)
        if isinstance(x, str):
            raise ValueError(f"{op}(): too many dimensions 'str' (expected numbers, not text)")
        if not _is_sequence(x):
            return shape
        n = len(x)
        shape.append(n)
        if n == 0:
            return shape
        x = x[0]


def _check_leaf(x, op):
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{op}(): new(): invalid data type '{type(x).__name__}' (expected numbers)")
    if not isinstance(x, _LEAVES):
        raise RuntimeError(f"{op}(): Could not infer dtype of {type(x).__name__} (expected a number, a sequence "
                           f"of numbers, a NumPy array or a tensor)")
    if isinstance(x, Tensor) and x.numel() != 1:
        raise ValueError(f"{op}(): only one element tensors can be converted to Python scalars (got a tensor of "
                         f"shape {list(x.shape)} inside the data)")


def _read(x, shape, d, op):
    """``x`` at depth ``d`` as nested lists of numbers, one-element tensors and arrays of ``shape[d:]``."""
    if d == len(shape):
        if _is_sequence(x) or isinstance(x, np.ndarray):
            raise TypeError(f"{op}(): expected a number at dimension {d}, got {type(x).__name__}")
        _check_leaf(x, op)
        return x._dev.backend.to_numpy(x.detach()._data).reshape(()) if isinstance(x, Tensor) else x
    if isinstance(x, np.ndarray):
        if list(x.shape) != shape[d:]:
            raise ValueError(f"{op}(): expected sequence of length {shape[d]} at dim {d} (got an array of shape "
                             f"{list(x.shape)})")
        return x
    if not _is_sequence(x) or isinstance(x, (str, bytes)):
        _check_leaf(x, op)
        raise TypeError(f"{op}(): not a sequence: expected a sequence of length {shape[d]} at dim {d}, got "
                        f"{type(x).__name__}")
    n = len(x)
    if n != shape[d]:
        raise ValueError(f"{op}(): expected sequence of length {shape[d]} at dim {d} (got {n})")
    items = x if type(x) is list or type(x) is tuple else [x[i] for i in builtins_range(n)]
    if d + 1 == len(shape):
        for e in items:
            if type(e) not in _NUMBERS:
                break
        else:  # numbers only: the usual innermost list
            return items
    return [_read(e, shape, d + 1, op) for e in items]


def _python_data(data, op):
    """``data`` (a number, a NumPy array or scalar, or a sequence of them at any depth by PyTorch's sequence
    protocol: lists, tuples, ``range``, ``deque``, ``array.array``, any type with ``__len__`` and ``__getitem__``,
    one-element tensors as items) as what NumPy reads: nested lists, numbers, arrays.  Refuses what PyTorch
    refuses, with its exception types: text, mappings, sets, iterators, ragged nests."""
    if isinstance(data, (np.ndarray, *_LEAVES)):
        return data
    if isinstance(data, (str, bytes)):
        raise TypeError(f"{op}(): new(): invalid data type '{type(data).__name__}' (expected numbers)")
    if not _is_sequence(data):
        _check_leaf(data, op)
    return _read(data, _shape_of(data, op), 0, op)


_quiet_array = quiet(np.array)


@export(to=TORCH)
def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays, tensors).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]])
    tensor([[1, 2],
            [3, 4]])
    """
    cat = _number_category(data)
    if cat is not None:  # a number or a flat list of numbers (an observation, a reward): NumPy reads it as it is
        d = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_for_category(cat)
        dev = resolve(device)
    else:
        if isinstance(data, Tensor):
            warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                          "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                          "ember.tensor(sourceTensor).", UserWarning, stacklevel=2)
        data = _python_data(data, "tensor")
        d = dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
        dev = resolve(device if device is not None else (data.device if isinstance(data, Tensor) else None))
        data = _to_host(data)
    try:
        host = _quiet_array(data, dtype=d.np)
    except (ValueError, TypeError) as e:
        raise ValueError(f"tensor(): could not convert data of type {type(data).__name__} to a {d} tensor: {e}") \
            from None
    t = create("tensor", dev, requires_grad, None, None, dev.backend.from_numpy(host, dev.index, copy=False))
    if pin_memory:
        t = t.pin_memory()
    return t


@export(to=TORCH)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory when it already is one (or a NumPy array) of that dtype and device."""
    if isinstance(data, Tensor):
        t = data
        if dtype is not None:
            t = t.to(dtypes.as_dtype(dtype))
        if device is not None:
            t = t.to(device)
        return t
    if isinstance(data, np.ndarray) and (device is None or resolve(device).type == "cpu"):
        t = from_numpy(data) if data.dtype in dtypes.FROM_NP else tensor(data)
        return t if dtype is None else t.to(dtypes.as_dtype(dtype))
    if hasattr(data, "__dlpack__") and not isinstance(data, (list, tuple)):
        return as_tensor(from_dlpack(data), dtype, device)
    return tensor(data, dtype=dtype, device=device)


@export(to=TORCH)
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """Like :func:`as_tensor`; ``copy=True`` always copies."""
    t = as_tensor(obj, dtype=dtype, device=device) if not copy else tensor(_to_host(obj), dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


@export(to=TORCH)
def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``ndarray``: writes through either show in both.

    >>> import numpy as np, ember
    >>> a = np.array([1, 2, 3])
    >>> t = ember.from_numpy(a)
    >>> t[0] = -1
    >>> a
    array([-1,  2,  3])
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype not in dtypes.FROM_NP:
        raise TypeError(f"can't convert np.ndarray of type {ndarray.dtype}. The only supported types are: "
                        "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, "
                        "and bool.")
    if min(ndarray.strides, default=0) < 0:
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a copy "
                         "of your array  with array.copy().) ")
    return create("from_numpy", resolve(_CPU), False, None, None, ndarray)  # (a device: no string to parse)


_CPU = _device("cpu")


def _filled(op, size, value, dtype, device, requires_grad, out=None):
    size = _size(size, op)
    dev, _, nd = _dev_dtype(device, dtype, out)
    return create(op, dev, requires_grad, out, "full", size, value, nd)


def _strided_only(layout, op: str) -> None:
    """Refuse a sparse ``layout`` where PyTorch makes only strided tensors (its exception types: ``ones``/``full``
    RuntimeError, the rest NotImplementedError); ``zeros``, ``empty`` and ``zeros_like`` make sparse ones."""
    if layout is None or layout is strided:
        return
    if op in ("ones", "full"):
        raise RuntimeError(f"{op}: full(...) is not implemented for sparse layout ({layout})")
    raise NotImplementedError(f"{op}: layout {layout} is not supported; only zeros, empty and zeros_like make a "
                              "sparse tensor")


def _sparse_zeros(layout, size, dtype, device, requires_grad, op: str) -> Tensor:
    """A tensor of the sparse ``layout`` and ``size`` storing no entries (all zeros), as PyTorch's
    ``zeros``/``empty``/``zeros_like`` with a sparse ``layout`` give."""
    size = _size(size if isinstance(size, tuple) else tuple(size), op)
    make = EMPTY_OF.get(layout)
    if make is None:
        raise NotImplementedError(f"{op}: layout {layout} is not supported (strided and the sparse layouts "
                                  f"{', '.join(str(k) for k in EMPTY_OF)} are)")
    return make(size, dtype, device, requires_grad, op)


@export(to=TORCH)
def zeros(*dims, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False) -> Tensor:
    """A tensor of zeros: ``ember.zeros(2, 3)``."""
    if layout is not None and layout is not strided:
        return _sparse_zeros(layout, _size_arg(dims, size, "zeros"), dtype, device, requires_grad, "zeros")
    return _filled("zeros", _size_arg(dims, size, "zeros"), 0, dtype, device, requires_grad, out)


@export(to=TORCH)
def ones(*dims, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False) -> Tensor:
    """A tensor of ones: ``ember.ones(2, 3)``."""
    _strided_only(layout, "ones")
    return _filled("ones", _size_arg(dims, size, "ones"), 1, dtype, device, requires_grad, out)


@export(to=TORCH)
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value``; dtype inferred from the value as PyTorch does."""
    _strided_only(layout, "full")
    if dtype is None and out is None:
        dtype = dtypes.default_for_category(dtypes.scalar_category(
            fill_value.item() if isinstance(fill_value, Tensor) else fill_value))
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is not None and type(fill_value) in (int, float):
        try:
            fill_value = dtypes.fill_value(fill_value, dtypes.as_dtype(dtype))
        except RuntimeError as exc:
            raise RuntimeError(f"full: {exc}") from None
    return _filled("full", (size,) if not isinstance(size, int) else (size,), fill_value, dtype, device,
                   requires_grad, out)


@export(to=TORCH)
def empty(*dims, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None) -> Tensor:
    """An uninitialised tensor."""
    if layout is not None and layout is not strided:
        return _sparse_zeros(layout, _size_arg(dims, size, "empty"), dtype, device, requires_grad, "empty")
    size = _size(_size_arg(dims, size, "empty"), "empty")
    check_memory_format(memory_format, len(size), "empty")
    dev, _, nd = _dev_dtype(device, dtype, out)
    t = create("empty", dev, requires_grad, out, "empty", size, nd)
    return t if memory_format is None or out is not None else _formatted(t, t, memory_format)


def _formatted(r, like, memory_format):
    """Fresh tensor ``r`` (shaped like ``like``) laid out in ``memory_format``; by default (None or
    ``preserve_format``) in ``like``'s channels-last order where ``like`` has one, as PyTorch's ``*_like`` are."""
    fmt = suggested_format(like, memory_format)
    if fmt is not None:
        r._data = dense_in_format(r._dev.kernels, r._data, fmt)
    return r


def _like(fn, t, dtype, device, requires_grad, *extra):
    return fn(*extra, t.shape, dtype=dtype if dtype is not None else t.dtype,
              device=device if device is not None else t.device, requires_grad=requires_grad) if not extra else \
        fn(t.shape, *extra, dtype=dtype if dtype is not None else t.dtype,
           device=device if device is not None else t.device, requires_grad=requires_grad)


@export(to=TORCH)
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):  # noqa: A002
    if layout is not None and layout is not strided:
        return _sparse_zeros(layout, input.shape, dtype if dtype is not None else input.dtype,
                             device if device is not None else input.device, requires_grad, "zeros_like")
    check_memory_format(memory_format, input.ndim, "zeros_like")
    return _formatted(_like(zeros, input, dtype, device, requires_grad), input, memory_format)


@export(to=TORCH)
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):  # noqa: A002
    _strided_only(layout, "ones_like")
    check_memory_format(memory_format, input.ndim, "ones_like")
    return _formatted(_like(ones, input, dtype, device, requires_grad), input, memory_format)


@export(to=TORCH)
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):  # noqa: A002
    _strided_only(layout, "empty_like")
    check_memory_format(memory_format, input.ndim, "empty_like")
    return _formatted(_like(empty, input, dtype, device, requires_grad), input, memory_format)


@export(to=TORCH)
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: A002
              memory_format=None):
    _strided_only(layout, "full_like")
    check_memory_format(memory_format, input.ndim, "full_like")
    return _formatted(full(input.shape, fill_value, dtype=dtype if dtype is not None else input.dtype,
                           device=device if device is not None else input.device, requires_grad=requires_grad),
                      input, memory_format)


@export(to=TORCH)
def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (``n`` x ``m``)."""
    _strided_only(layout, "eye")
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n and m must be non-negative, got n={n}, m={m}")
    dev, _, nd = _dev_dtype(device, dtype, out)
    return create("eye", dev, requires_grad, out, "eye", n, m, nd)


@export(to=TORCH)
def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """Values from ``start`` up to (not including) ``end`` by ``step``.

    >>> import ember
    >>> ember.arange(5)
    tensor([0, 1, 2, 3, 4])
    """
    _strided_only(layout, "arange")
    if end is None:
        start, end = 0, start
    lo, hi, by = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if by == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (hi - lo) * by < 0:
        raise RuntimeError(f"arange(): upper bound and larger bound inconsistent with step sign "
                           f"(start={lo}, end={hi}, step={by})")
    if dtype is None and out is None:
        ints = isinstance(lo, _INTS) and isinstance(hi, _INTS) and isinstance(by, _INTS)
        dtype = dtypes.int64 if ints else dtypes.get_default_dtype()
    dev, d, nd = _dev_dtype(device, dtype, out)
    n = max(0, math.ceil((hi - lo) / by))
    wide = dev.backend.array_dtype(dtypes.float64 if d.category >= 2 else dtypes.int64)
    return create("arange", dev, requires_grad, out, _steps, n, by, lo, wide, nd)


@export(to=TORCH)
def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False) -> Tensor:
    """Deprecated: like :func:`arange` but includes ``end`` and defaults to the float dtype."""
    _strided_only(layout, "range")
    warnings.warn("ember.range is deprecated and will be removed; use ember.arange, which produces values in "
                  "[start, end)", DeprecationWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    dev, _, nd = _dev_dtype(device, dtype, out)
    n = int(math.floor((end - start) / step)) + 1
    return create("range", dev, requires_grad, out, _steps, n, step, start, dev.backend.array_dtype(dtypes.float64),
                  nd)


@export(to=TORCH)
def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    _strided_only(layout, "linspace")
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    dev, _, nd = _dev_dtype(device, dtype, out)
    start, end = [v.item() if isinstance(v, Tensor) else v for v in (start, end)]
    return create("linspace", dev, requires_grad, out, _linear, start, end, steps,
                  dev.backend.array_dtype(dtypes.float64), nd)


@export(to=TORCH)
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """``steps`` values from ``base**start`` to ``base**end``, log-evenly spaced."""
    _strided_only(layout, "logspace")
    dev, _, nd = _dev_dtype(device, dtype, out)
    return create("logspace", dev, requires_grad, out, _powers, dev.backend.xp, base, start, end, steps,
                  dev.backend.array_dtype(dtypes.float64), nd)


def complex_draw(k, kernel, generator, shape, nd, real, *params):
    """A complex sample of ``shape``: ``k[kernel]`` draws its (real, imaginary) pairs in real array dtype ``real``
    (as PyTorch samples a complex tensor: its real view, of shape ``shape + (2,)``)."""
    parts = k[kernel](generator, (*shape, 2), real, *params)
    return k["astype"](k["make_complex"](parts[..., 0], parts[..., 1], shape), nd)


_FLOAT_SAMPLERS = {"uniform": "check_uniform_bounds", "normal": "normal_kernel_cpu"}  # PyTorch's kernel names


def _random(op, kernel, size, generator, dtype, device, requires_grad, out, *args):
    size = _size(size, op)
    dev, d, nd = _dev_dtype(device, dtype, out)
    if kernel in _FLOAT_SAMPLERS and d.category < dtypes.FLOAT:  # PyTorch has no integer or bool kernel for these
        raise NotImplementedError(f"{op}: \"{_FLOAT_SAMPLERS[kernel]}\" not implemented for '{dtypes.type_name(d)}'")
    if d.is_complex:  # each part from N(0, 1/2) for randn, so that E|z|^2 = 1; each from U[0, 1) for rand
        args = (0.0, 1 / math.sqrt(2)) if kernel == "normal" else args
        return create(op, dev, requires_grad, out, complex_draw, kernel, native(generator, dev), size, nd,
                      dev.backend.array_dtype(d.to_real()), *args)
    return create(op, dev, requires_grad, out, kernel, native(generator, dev), size, nd, *args)


@export(to=TORCH)
def rand(*dims, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False) -> Tensor:
    """Uniform samples on [0, 1)."""
    _strided_only(layout, "rand")
    return _random("rand", "uniform", _size_arg(dims, size, "rand"), generator, dtype, device, requires_grad, out)


@export(to=TORCH)
def randn(*dims, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False) -> Tensor:
    """Standard normal samples."""
    _strided_only(layout, "randn")
    return _random("randn", "normal", _size_arg(dims, size, "randn"), generator, dtype, device, requires_grad, out)


@export(to=TORCH)
def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False) -> Tensor:
    """Integers uniform on [low, high): ``randint(10, (3,))`` or ``randint(2, 10, (3,))``."""
    _strided_only(layout, "randint")
    if size is None:
        if isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint(): missing required argument 'size'")
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(f"randint(): random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _random("randint", "randint", size, generator, dtype or dtypes.int64, device, requires_grad, out,
                   low, high)


def _check_randperm_fits(n, d):
    """Refuse, before any draw, an ``n`` whose values ``0 .. n-1`` the dtype cannot hold, as PyTorch does:
    an integer dtype up to its maximum + 1, float16 up to 2049 (bfloat16 and wider floats unchecked)."""
    if d == dtypes.float16 and n > 2049:
        raise RuntimeError(f"randperm(): n cannot be greater than 2049 for Half type, got n={n}")
    if d.is_floating_point or d.is_complex or d == dtypes.bool:
        return
    if n > dtypes.iinfo(d).max + 1:
        raise RuntimeError(f"randperm(): value cannot be converted to type {str(d).split('.')[-1]}_t "
                           f"without overflow: n={n} needs values up to {n - 1}")


@export(to=TORCH)
def randperm(n, *, generator=None, out=None, dtype=dtypes.int64, layout=None, device=None, requires_grad=False,
             pin_memory=False) -> Tensor:
    """A random permutation of ``0 .. n-1``."""
    _strided_only(layout, "randperm")
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    dev, d, nd = _dev_dtype(device, dtype or dtypes.int64, out)
    _check_randperm_fits(n, d)
    t = create("randperm", dev, requires_grad, out, "permutation", native(generator, dev), n, nd)
    return t.pin_memory() if pin_memory else t


@export(to=TORCH)
def rand_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: A002
              memory_format=None):
    """Uniform draws on ``[0, 1)`` of ``input``'s shape (and its dtype and device unless given)."""
    _strided_only(layout, "rand_like")
    return _formatted(_random_like(rand, input, generator, dtype, device, requires_grad), input, memory_format)


@export(to=TORCH)
def randn_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: A002
               memory_format=None):
    """Standard normal draws of ``input``'s shape (and its dtype and device unless given)."""
    _strided_only(layout, "randn_like")
    return _formatted(_random_like(randn, input, generator, dtype, device, requires_grad), input, memory_format)


def _random_like(fn, t, generator, dtype, device, requires_grad):
    return fn(t.shape, generator=generator, dtype=dtype if dtype is not None else t.dtype,
              device=device if device is not None else t.device, requires_grad=requires_grad)


# --------------------------------------------------------------------------- legacy constructors
def legacy_new(cls, dtype, args, kwargs):
    """``Tensor(2, 3)``, ``FloatTensor([1, 2])``, ``LongTensor(size)``: the pre-0.4 constructors."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"{cls.__name__}(): unexpected keyword arguments {sorted(kwargs)}")
    if not args:
        t = empty(0, dtype=dtype, device=device)
    elif len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0].detach().to(dtype)
    elif all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        t = zeros(*args, dtype=dtype, device=device)
    elif len(args) == 1 and isinstance(args[0], tuple) and all(isinstance(a, int) for a in args[0]) \
            and type(args[0]).__name__ == "Size":
        t = zeros(tuple(args[0]), dtype=dtype, device=device)
    elif len(args) == 1:
        t = tensor(args[0], dtype=dtype, device=device)
    else:
        raise TypeError(f"{cls.__name__}(): expected sizes (ints) or data, got {args}")
    if cls is not Tensor:
        return cls._from_tensor(t) if hasattr(cls, "_from_tensor") else t
    return t


class _LegacyTensorType(type):
    """Metaclass making ``isinstance(t, ember.FloatTensor)`` check the dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls._legacy_dtype and obj.device.type == cls._legacy_device

    def __call__(cls, *args, **kwargs):
        kwargs.setdefault("device", cls._legacy_device)  # ember.FloatTensor is a CPU type whatever the default
        return legacy_new(Tensor, cls._legacy_dtype, args, kwargs)


def legacy_type(d: dtypes.dtype, device_type: str = "cpu"):
    """The legacy tensor type for a dtype, e.g. ``ember.FloatTensor``."""
    return _LegacyTensorType(d.legacy, (), {"_legacy_dtype": d, "_legacy_device": device_type,
                                           "__doc__": f"Legacy constructor of {d} tensors on {device_type}."})


LEGACY_TYPES = {d.legacy: legacy_type(d) for d in dtypes.ALL if d.np is not None}


def _tensor_new(cls, *args, **kwargs):
    """Legacy constructor: ``Tensor(2, 3)`` (uninitialised), ``Tensor([1, 2])``, ``Tensor(size)``."""
    return legacy_new(cls, dtypes.get_default_dtype(), args, kwargs)


export(staticmethod(_tensor_new), "__new__", to=("Tensor",))


# --------------------------------------------------------------------------- triangles, strides, buffers
def _tri_indices(op, lower, row, col, offset, dtype, device):
    for name, v in (("row", row), ("col", col)):
        if not isinstance(v, _INTS) or isinstance(v, bool):
            raise TypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}")
        if v < 0:
            raise RuntimeError(f"{op}: {name} must be non-negative, got {v}")
    d = dtypes.int64 if dtype is None else dtypes.as_dtype(dtype)
    if d not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"\"{op}\" not implemented for '{d.legacy[:-6]}'")
    dev = resolve(device)
    return create(op, dev, False, None, "tri_indices", int(row), int(col), int(offset), dev.backend.array_dtype(d),
                  lower)


@export(to=TORCH)
def tril_indices(row, col, offset=0, *, dtype=dtypes.int64, device=None, layout=None, pin_memory=False) -> Tensor:
    """The ``(2, n)`` coordinates of the lower triangle of a ``row`` x ``col`` matrix (``offset``: diagonal).

    >>> import ember
    >>> ember.tril_indices(3, 3)
    tensor([[0, 1, 1, 2, 2, 2],
            [0, 0, 1, 0, 1, 2]])
    """
    _strided_only(layout, "tril_indices")
    return _tri_indices("tril_indices", True, row, col, offset, dtype, device)


@export(to=TORCH)
def triu_indices(row, col, offset=0, *, dtype=dtypes.int64, device=None, layout=None, pin_memory=False) -> Tensor:
    """The ``(2, n)`` coordinates of the upper triangle of a ``row`` x ``col`` matrix (``offset``: diagonal).

    >>> import ember
    >>> ember.triu_indices(2, 3, 1)
    tensor([[0, 0, 1],
            [1, 2, 2]])
    """
    _strided_only(layout, "triu_indices")
    return _tri_indices("triu_indices", False, row, col, offset, dtype, device)


@export(to=TORCH)
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """An uninitialised tensor of ``size`` laid out with ``stride`` (in elements) in a storage of its own.

    >>> import ember
    >>> ember.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    _strided_only(layout, "empty_strided")
    size, stride = _size((size,), "empty_strided"), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape ({len(stride)} vs {len(size)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"empty_strided: negative strides are not supported, got {list(stride)}")
    n = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    base = empty(n, dtype=dtype, device=device)
    t = base.as_strided(size, stride) if all(size) else base.reshape(size) if not n and math.prod(size) == 0 \
        else base
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t


@export(to=TORCH)
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False) -> Tensor:
    """An uninitialised tensor of ``size`` whose dimensions lie in memory in the order ``physical_layout``.

    >>> import ember
    >>> ember.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    (12, 1, 3)
    """
    _strided_only(layout, "empty_permuted")
    size, order = _size((size,), "empty_permuted"), tuple(int(d) for d in physical_layout)
    if len(order) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    if sorted(order) != list(builtins_range(len(size))):
        raise RuntimeError(f"Dimension {order} is not a permutation of the dimensions of size {list(size)} "
                           f"(empty_permuted)")
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    t = empty(tuple(size[d] for d in order), dtype=dtype, device=device).permute(inverse)
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                       pin_memory=False):
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device, requires_grad=requires_grad)


_new_empty_strided.__name__ = _new_empty_strided.__qualname__ = "new_empty_strided"
export(_new_empty_strided, "new_empty_strided", to=("Tensor",))


@export(to=TORCH)
def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A 0-d tensor holding the number ``s``, in the default float dtype unless ``dtype`` says otherwise.

    >>> import ember
    >>> ember.scalar_tensor(3)
    tensor(3.)
    """
    if isinstance(s, Tensor):
        s = s.item()
    if not isinstance(s, (int, float, complex, bool, np.number, np.bool_)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    return full((), s, dtype=dtypes.get_default_dtype() if dtype is None else dtype, device=device,
                requires_grad=requires_grad)


@export(to=TORCH)
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    """A 1-D CPU tensor sharing memory with an object of the buffer protocol (``bytes``, ``bytearray``, ...).

    >>> import ember
    >>> ember.frombuffer(bytearray(b"\\x01\\x02"), dtype=ember.uint8)
    tensor([1, 2], dtype=ember.uint8)
    """
    d = dtypes.as_dtype(dtype)
    if d.np is None:
        raise TypeError(f"frombuffer: dtype {d} cannot be read from a buffer")
    mem = memoryview(buffer)
    length = mem.nbytes
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} "
                         f"bytes) minus 1")
    item = np.dtype(d.np).itemsize
    if count < 0 and (length - offset) % item:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a multiple "
                         f"of element size ({item})")
    if count > 0 and count * item > length - offset:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({length} bytes)")
    if mem.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to a "
                      "tensor. This type of warning will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=2)
    arr = np.frombuffer(buffer, dtype=d.np, count=count, offset=offset)
    t = create("frombuffer", resolve("cpu"), False, None, None, arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _tensor_new_method(self, *args, **kwargs):
    """Legacy ``x.new(...)``: ``x.new(2, 3)`` (sizes), ``x.new(data)``, ``x.new()`` (empty), in ``x``'s dtype and
    on ``x``'s device."""
    dtype = kwargs.pop("dtype", None)
    kwargs.setdefault("device", self.device)
    return legacy_new(Tensor, self.dtype if dtype is None else dtypes.as_dtype(dtype), args, kwargs)


_tensor_new_method.__name__ = _tensor_new_method.__qualname__ = "new"
export(_tensor_new_method, "new", to=("Tensor",))


@export(to=TORCH)
def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False) -> Tensor:
    """A 1-D tensor of ``size`` elements read from a file; ``shared=True`` maps the file, so that writes to the
    tensor reach it (and the file must hold at least ``size`` elements either way).

    >>> import ember, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.bin")
    >>> ember.arange(4, dtype=ember.float32).numpy().tofile(path)
    >>> ember.from_file(path, size=4, dtype=ember.float32)
    tensor([0., 1., 2., 3.])
    """
    d = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if d.np is None:
        raise TypeError(f"from_file: dtype {d} cannot be read from a file")
    item = np.dtype(d.np).itemsize
    have = os.path.getsize(filename)
    if have < size * item:
        raise RuntimeError(f"unable to read {size * item} bytes from file {filename}: it holds {have} bytes "
                           f"(from_file, size={size}, dtype={d})")
    if shared:
        arr = np.memmap(filename, dtype=d.np, mode="r+", shape=(size,)) if size else np.zeros(0, d.np)
        arr = np.ndarray(arr.shape, arr.dtype, buffer=arr) if size else arr
    else:
        arr = np.fromfile(filename, dtype=d.np, count=size)
    t = create("from_file", resolve("cpu"), False, None, None, arr)
    if device is not None and resolve(device) is not t._dev:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


@export(to=TORCH)
def set_default_tensor_type(t) -> None:
    """Deprecated: set the default floating-point dtype (and device, for ``'torch.cuda.*Tensor'``) from a legacy
    tensor type or its name, e.g. ``ember.DoubleTensor`` or ``"torch.DoubleTensor"``."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if isinstance(t, str):
        cuda = ".cuda." in t
        d = next((lt._legacy_dtype for name, lt in LEGACY_TYPES.items() if t.rsplit(".", 1)[-1] == name), None)
    else:
        cuda = getattr(t, "_legacy_device", "cpu") == "cuda"
        d = getattr(t, "_legacy_dtype", None)
    if d is None or d.category != dtypes.FLOAT:
        raise TypeError(f"only floating-point types are supported as the default type (got {t})")
    dtypes.set_default_dtype(d)
    if cuda:
        set_default_device("cuda")
