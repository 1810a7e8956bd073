"""Data types and PyTorch's type-promotion rules.

A :class:`dtype` names an element type independently of any array library;
each backend maps it to its own array dtype.  Promotion follows PyTorch:
categories bool < integer < floating < complex; tensors with dimensions
outrank zero-dimensional tensors, which outrank Python scalars, and a
lower-priority operand changes the result only when its category is higher.

>>> import ember
>>> ember.promote_types(ember.int64, ember.float16)
ember.float16
"""
from __future__ import annotations

import numpy as np

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3


# the package name that dtypes, Size and legacy type names print with: "ember", and "torch" while the alias is
# installed (ember.torch_compat), since programs written for PyTorch parse str(dtype) ("torch.float32")
NAMESPACE = ["ember"]


class dtype:
    """An element type (``ember.float32``, ``ember.int64``, ...)."""

    __slots__ = ("name", "np", "category", "itemsize", "is_signed", "legacy")

    def __init__(self, name, np_dtype, category, legacy):
        self.name = name
        self.np = np.dtype(np_dtype) if np_dtype is not None else None
        self.category = category
        self.itemsize = self.np.itemsize if self.np is not None else 2
        self.is_signed = category != BOOL and name != "uint8"
        self.legacy = legacy  # legacy tensor type name, e.g. "FloatTensor"

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOAT

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    def to_real(self) -> "dtype":
        return {complex64: float32, complex128: float64, complex32: float16}.get(self, self)

    def to_complex(self) -> "dtype":
        return {float64: complex128, complex128: complex128, complex32: complex32}.get(self, complex64)

    def __repr__(self):
        return NAMESPACE[0] + "." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name):
    return _NAMES[name]


float16 = half = dtype("float16", np.float16, FLOAT, "HalfTensor")
float32 = float = dtype("float32", np.float32, FLOAT, "FloatTensor")
float64 = double = dtype("float64", np.float64, FLOAT, "DoubleTensor")
try:  # bfloat16 exists where ml_dtypes is installed; NumPy lacks it
    import ml_dtypes as _mld

    bfloat16 = dtype("bfloat16", _mld.bfloat16, FLOAT, "BFloat16Tensor")
except ImportError:  # pragma: no cover - depends on the environment
    bfloat16 = dtype("bfloat16", None, FLOAT, "BFloat16Tensor")
uint8 = dtype("uint8", np.uint8, INT, "ByteTensor")
int8 = dtype("int8", np.int8, INT, "CharTensor")
int16 = short = dtype("int16", np.int16, INT, "ShortTensor")
int32 = int = dtype("int32", np.int32, INT, "IntTensor")
int64 = long = dtype("int64", np.int64, INT, "LongTensor")
bool = dtype("bool", np.bool_, BOOL, "BoolTensor")  # noqa: A001 - PyTorch's name
complex64 = cfloat = dtype("complex64", np.complex64, COMPLEX, "ComplexFloatTensor")
complex128 = cdouble = dtype("complex128", np.complex128, COMPLEX, "ComplexDoubleTensor")
# PyTorch's complex32: named for compatibility; no array library here computes in it, so no tensor has it
complex32 = chalf = dtype("complex32", None, COMPLEX, "ComplexHalfTensor")
complex32.itemsize = 4


def _named(name: str, category: int, itemsize: int, signed: bool) -> dtype:
    """A PyTorch dtype ember knows by name only (no tensor has it yet), as complex32."""
    d = dtype(name, None, category, None)
    d.itemsize, d.is_signed = itemsize, signed
    return d


# PyTorch's wider unsigned and float8 dtypes, named so that code listing dtypes imports; no tensor has them yet
uint16, uint32, uint64 = (_named(f"uint{8 * n}", INT, n, False) for n in (2, 4, 8))
float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz = (
    _named(n, FLOAT, 1, True) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"))
float8_e8m0fnu = _named("float8_e8m0fnu", FLOAT, 1, False)
NAMED_ONLY = (complex32, uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
              float8_e8m0fnu)

ALL = (float16, float32, float64, bfloat16, uint8, int8, int16, int32, int64, bool, complex64, complex128)
_NAMES = {d.name: d for d in ALL}
_NAMES.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64,
              cfloat=complex64, cdouble=complex128, complex32=complex32, chalf=complex32)
_NAMES.update({d.name: d for d in NAMED_ONLY})
FROM_NP = {d.np: d for d in ALL if d.np is not None}
LEGACY = {d.legacy: d for d in ALL}

_default = [float32]


def get_default_dtype() -> dtype:
    """The dtype of floating tensors created from Python floats (``float32`` unless changed)."""
    return _default[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype (``float32`` or ``float64``, as PyTorch allows)."""
    if d not in (float16, float32, float64, bfloat16):
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def as_dtype(d) -> dtype:
    """Turn a dtype, NumPy dtype, Python type or name into an ember dtype."""
    if type(d) is dtype:
        return d
    if d is None:
        return _default[0]
    import builtins

    if d is builtins.float:
        return _default[0]
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool
    if d is builtins.complex:
        return _default[0].to_complex()
    if isinstance(d, str):
        name = d[6:] if d.startswith("torch.") or d.startswith("ember.") else d
        if name in _NAMES:
            return _NAMES[name]
    else:
        try:
            return FROM_NP[np.dtype(d)]
        except (TypeError, KeyError):
            pass
    raise TypeError(f"cannot interpret {d!r} as an ember dtype")


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to (PyTorch's table).

    >>> import ember
    >>> ember.promote_types(ember.uint8, ember.int8)
    ember.int16
    """
    if type1 is type2:
        return type1
    try:
        ca, cb = type1.category, type2.category
    except AttributeError:
        raise TypeError(f"promote_types(): arguments must be ember.dtype, not {type(type1).__name__} and "
                        f"{type(type2).__name__}") from None
    if ca != cb:
        hi, lo = (type1, type2) if type1.category > type2.category else (type2, type1)
        if hi.category == COMPLEX and lo is float64:
            return complex128
        if hi is complex32 and lo in (float32, bfloat16):
            return complex64
        return hi
    if complex32 in (type1, type2):
        other = type2 if type1 is complex32 else type1
        return other if other.itemsize > 4 else complex32
    if bfloat16 in (type1, type2):
        other = type2 if type1 is bfloat16 else type1
        return float32 if other is float16 else other
    return FROM_NP[np.promote_types(type1.np, type2.np)]


import builtins as _b  # noqa: E402

_pybool, _pyint, _pyfloat, _pycomplex = _b.bool, _b.int, _b.float, _b.complex


def scalar_category(x) -> "int":
    if isinstance(x, (_pybool, np.bool_)):
        return BOOL
    if isinstance(x, (_pyint, np.integer)):
        return INT
    if isinstance(x, (_pyfloat, np.floating)):
        return FLOAT
    if isinstance(x, (_pycomplex, np.complexfloating)):
        return COMPLEX
    raise TypeError(f"unsupported scalar of type {type(x).__name__}")


def fill_value(x, d: dtype):
    """A number written into a tensor of dtype ``d`` as a fill value (``fill_``, ``full``, ``masked_fill``,
    ``index_fill_``, ``scatter_``'s ``value``), cast as PyTorch casts it rather than promoted: a float into an
    integer dtype truncates toward zero, into bool tests for nonzero; a number the dtype's range cannot hold
    raises PyTorch's RuntimeError (integers: see :func:`int_value`). Other numbers come back as they are.

    >>> fill_value(-2.7, int64), fill_value(0.5, bool)
    (-2, True)
    """
    if d.category == INT and d.np is not None:
        if isinstance(x, (_pyfloat, np.floating)):
            info = np.iinfo(d.np)
            if not info.min <= x <= info.max:  # NaN and infinities too, as PyTorch refuses them
                raise RuntimeError(f"value cannot be converted to type {d.name} without overflow (got {x})")
            return _pyint(x)
        return int_value(_pyint(x), d) if isinstance(x, (_pyint, np.integer)) and not isinstance(x, _pybool) else x
    if isinstance(x, (_pyfloat, np.floating)) and d.category == BOOL:
        return _pybool(x)
    if d.category == FLOAT and isinstance(x, (_pyint, _pyfloat)):
        return checked_scalar(x, d)  # a finite number beyond the range is refused, as in PyTorch
    return x


def default_for_category(cat: int, like: dtype | None = None) -> dtype:
    if cat == BOOL:
        return bool
    if cat == INT:
        return int64
    if cat == FLOAT:
        return _default[0]
    if like is not None and like is float64:
        return complex128
    return _default[0].to_complex()


def _combine(higher, lower):
    """The dtype of a higher-priority operand group joined by a lower-priority one (c10's combine_categories):
    the lower group only matters through a higher category, and a floating dtype keeps its precision."""
    if higher is None:
        return lower
    if lower is None or higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher is bool or lower.category == FLOAT:
        return promote_types(higher, lower)
    return higher


def _group(ds):
    d = None
    for x in ds:
        d = x if d is None else promote_types(d, x)
    return d


def result_type_of(dims, zerodims, scalars) -> dtype:
    """PyTorch's result type from three priority groups of operands.

    ``dims``/``zerodims`` are dtypes of tensors with/without dimensions,
    ``scalars`` are Python numbers (each counts as its category's default dtype).
    """
    wrapped = _group(default_for_category(scalar_category(s)) for s in scalars) if scalars else None
    r = _combine(_group(dims), _combine(_group(zerodims), wrapped))
    if r is None:
        raise TypeError("result_type() expected tensors or numbers, got no operands")
    return r


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether a same-kind cast is allowed (PyTorch: no float->int, no complex->real, no ->bool).

    >>> import ember
    >>> ember.can_cast(ember.float32, ember.int32)
    False
    """
    if type(from_) is not dtype or type(to) is not dtype:
        raise TypeError(f"can_cast(): arguments must be ember.dtype, not {type(from_).__name__} and "
                        f"{type(to).__name__}")
    return from_.category <= to.category


class finfo:
    """Machine limits of a floating dtype (``bits``, ``eps``, ``max``, ``min``, ``tiny``, ``resolution``)."""

    def __init__(self, type: dtype | None = None):  # noqa: A002 - PyTorch's name
        t = as_dtype(type) if type is not None else _default[0]
        if t.category not in (FLOAT, COMPLEX):
            raise TypeError(f"finfo: expected a floating point or complex dtype, got {t}")
        real = t.to_real()
        self.dtype = real.name
        if real.np is None:  # bfloat16 without ml_dtypes: 8 exponent bits, 7 mantissa bits
            self.bits, self.eps, self.max, self.tiny, self.resolution = 16, 2.0 ** -7, 3.3895313892515355e+38, \
                2.0 ** -126, 0.01
            self.min, self.smallest_normal = -self.max, self.tiny
            return
        i = _mld.finfo(real.np) if real.name == "bfloat16" else np.finfo(real.np)  # NumPy's finfo refuses it
        self.bits = i.bits
        self.eps = _pyfloat(i.eps)
        self.max = _pyfloat(i.max)
        self.min = _pyfloat(i.min)
        self.tiny = self.smallest_normal = _pyfloat(i.tiny)
        self.resolution = 10.0 ** -i.precision

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (``bits``, ``max``, ``min``)."""

    def __init__(self, type: dtype):  # noqa: A002
        t = as_dtype(type)
        if t.category != INT:
            raise TypeError(f"{t} is not supported by ember.iinfo")
        i = np.iinfo(t.np)
        self.dtype = t.name
        self.bits = i.bits
        self.max = _pyint(i.max)
        self.min = _pyint(i.min)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


# --------------------------------------------------------------------------- promotion kinds and the output cast
# PyTorch's elementwise type-promotion kinds (``ELEMENTWISE_TYPE_PROMOTION_KIND``), as an op's declaration names
# them (``Op.promotion``): what the promoted type of the operands becomes for the computation and the result.
PROMOTION_KINDS = {
    "default": "the promoted type of the operands",
    "int_to_float": "the promoted type, bool and integers becoming the default float dtype",
    "always_bool": "computes in the promoted type, the result is bool (comparisons, predicates)",
    "complex_to_float": "the promoted type, the result of a complex one is its real type (abs)",
    "keep": "the input's own type, integers included (rounding: an integer is already its result)",
    "bool_to_long": "the promoted type, bool becoming int64 (square: ``pow(x, 2)``)",
    "float_only": "the promoted type, which must be floating or complex (no integer kernel in PyTorch)",
}


def computation_dtype(kind: str, rt: dtype) -> dtype:
    """The dtype an op of promotion ``kind`` computes in, given its operands' promoted type ``rt``.

    >>> import ember
    >>> computation_dtype("int_to_float", ember.int64), computation_dtype("default", ember.int64)
    (ember.float32, ember.int64)
    """
    if kind == "int_to_float" and rt.category < FLOAT:
        return _default[0]
    if kind == "bool_to_long" and rt is bool:
        return int64
    return rt


def result_dtype(kind: str, rt: dtype) -> dtype:
    """The dtype of the result of an op of promotion ``kind`` whose operands promote to ``rt`` (what the
    meta device and the ONNX exporter infer without running the op).

    >>> import ember
    >>> result_dtype("always_bool", ember.float32), result_dtype("complex_to_float", ember.complex128)
    (ember.bool, ember.float64)
    """
    if kind == "always_bool":
        return bool
    if kind == "complex_to_float":
        return rt.to_real()
    return computation_dtype(kind, rt)


def check_kind(kind: str, op: str, rt: dtype, device_type: str = "cpu") -> None:
    """PyTorch's NotImplementedError for an op of promotion kind "float_only" given bool or integer operands."""
    if kind == "float_only" and rt.category < FLOAT:
        raise NotImplementedError(f'"{op}_{device_type}" not implemented for \'{type_name(rt)}\'')


def type_name(d: dtype) -> str:
    """PyTorch's name of a dtype in its messages ('Long', 'Float', 'Bool', ...)."""
    return d.legacy[:-len("Tensor")]


# The dtypes a PyTorch CPU kernel has code for, named after the dispatch macros that generate them
# (AT_DISPATCH_FLOATING_TYPES, ..._AND2(Half, BFloat16), AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES for LAPACK, ...).
FLOATING_TYPES = frozenset((float32, float64))
REDUCED_FLOATING_TYPES = frozenset((float16, bfloat16))
COMPLEX_TYPES = frozenset((complex64, complex128))
INTEGRAL_TYPES = frozenset((uint8, int8, int16, int32, int64))
LAPACK_TYPES = FLOATING_TYPES | COMPLEX_TYPES
FLOATING_AND_HALF = FLOATING_TYPES | REDUCED_FLOATING_TYPES
ALL_TYPES = INTEGRAL_TYPES | FLOATING_TYPES
ALL_TYPES_AND_BOOL = ALL_TYPES | {bool}          # (the special functions: no half precision, no complex)
REAL_TYPES = ALL_TYPES_AND_BOOL | REDUCED_FLOATING_TYPES  # every dtype but complex


def check_kernel(kernel: str, t, supported: frozenset, empty_ok: bool = True) -> None:
    """PyTorch's NotImplementedError for a tensor ``t`` whose dtype PyTorch's kernel ``kernel`` has no code for
    (``supported``: one of the sets above, or a union of them); ``{device}`` in ``kernel`` is ``t``'s device
    type, as PyTorch names its per-device kernels.  An empty ``t`` passes where ``empty_ok`` (most of PyTorch's
    kernels return before they dispatch on the dtype; its elementwise ones do not).

    >>> import ember
    >>> check_kernel("cdist", ember.ones(2, 2, dtype=ember.float16), FLOATING_TYPES)
    Traceback (most recent call last):
    NotImplementedError: "cdist" not implemented for 'Half'
    """
    if t.dtype not in supported and (t.numel() or not empty_ok):
        name = kernel.format(device=t.device.type) if "{" in kernel else kernel
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(t.dtype)}'")


def check_out_cast(op: str, result: dtype, out: dtype) -> None:
    """The one output-cast rule (in-place forms, ``out=``, exported graphs): a result of a higher category than
    the tensor written into (float into an integer tensor, complex into a real one) raises PyTorch's error.

    >>> import ember
    >>> check_out_cast("add_", ember.float32, ember.int64)
    Traceback (most recent call last):
    RuntimeError: add_: result type Float can't be cast to the desired output type Long
    """
    if result.category > out.category:
        prefix = f"{op}: " if op else ""
        raise RuntimeError(f"{prefix}result type {type_name(result)} can't be cast to the desired output type "
                           f"{type_name(out)}")


# --------------------------------------------------------------------------- scalar operands
SCALARS = (_pyint, _pyfloat, _pybool, _pycomplex, np.number, np.bool_)  # what an op takes as a scalar operand


def _half_scalar(v):
    if isinstance(v, (_pyint, _pyfloat)) and not isinstance(v, _pybool) and abs(v) > 65504 and v == v:
        return _pyfloat("inf") if v > 0 else _pyfloat("-inf")
    return v


def _scalar_fixes():
    """Array dtypes whose Python-scalar operands need PyTorch's treatment before the kernel sees them:
    integers wrap into the range (``int8 * 1000`` computes with ``1000 - 1024``; NumPy would raise), and
    bfloat16 takes the scalar in its own type (its library would widen the result to float32)."""
    fixes = {}
    for d in ALL:
        if d.np is None or d is bool:
            continue
        if d.category == INT:
            info = np.iinfo(d.np)
            fixes[d] = (_pyint(info.min), _pyint(info.max), None)
        elif d is bfloat16:
            fixes[d] = (None, None, d.np.type)
        elif d is float16:  # beyond its range a number is +-inf (NumPy would warn while casting)
            fixes[d] = (None, None, _half_scalar)
    return fixes


SCALAR_FIX = _scalar_fixes()  # ember dtype -> (low, high, cast): see fix_scalar
HALF_TYPES = frozenset(d for d in (float16, bfloat16) if d.np is not None)  # compute with scalars in float32


def rounded(d: dtype, v) -> float:
    """Python number ``v`` rounded to floating dtype ``d`` (beyond its range an infinity), as a Python float."""
    with np.errstate(over="ignore"):
        return _pyfloat(d.np.type(v))


def holds(d: dtype, v) -> bool:
    """Whether floating dtype ``d`` holds the Python number ``v`` exactly.

    >>> holds(float16, 0.5), holds(float16, 0.1), holds(float16, 1e5), holds(float16, float('inf'))
    (True, False, False, True)
    """
    if v - v != 0:  # infinities and NaN
        return True
    if not abs(v) <= finfo(d).max:
        return False
    return _pyfloat(d.np.type(v)) == v


def fix_scalar(v, d: dtype):
    """Python scalar ``v`` as an operand of a tensor of dtype ``d``: wrapped into an integer type's range,
    taken in bfloat16's own type, beyond float16's range an infinity.

    >>> import ember
    >>> fix_scalar(1000, ember.int8)
    -24
    """
    fix = SCALAR_FIX.get(d)
    if fix is None:
        return v
    lo, hi, cast_to = fix
    if cast_to is not None:
        return cast_to(v) if isinstance(v, (_pyint, _pyfloat)) else v
    if type(v) is _pyint and not lo <= v <= hi:
        return (v - lo) % (hi - lo + 1) + lo
    return v


_FLOAT_MAX: dict = {}  # float dtype -> its finfo's max (see checked_scalar)


def checked_scalar(v, d: dtype):
    """Python number ``v`` as a parameter of an op computing in dtype ``d`` (``alpha``, ``pow``'s exponent),
    refused with PyTorch's error when ``d`` cannot hold it: an integer beyond an integer type's range (see
    :func:`int_value`), a finite float beyond a float type's.

    >>> import ember
    >>> checked_scalar(-1, ember.uint8)
    255
    """
    if d.category == FLOAT and d.np is not None and isinstance(v, (_pyint, _pyfloat)) and not isinstance(v, _pybool):
        big = _FLOAT_MAX.get(d)
        if big is None:
            big = _FLOAT_MAX[d] = finfo(d).max
        if abs(v) > big and v - v == 0:  # finite, and too large
            raise RuntimeError(f"value cannot be converted to type {d.name} without overflow (got {v})")
        return v
    return int_value(v, d)


def int_value(v, d: dtype):
    """Python int ``v`` stored in integer dtype ``d`` as PyTorch stores it (``full``, ``where``, ``clamp``):
    refused when it overflows (an unsigned type also takes negatives down to ``-max``), else wrapped.

    >>> import ember
    >>> int_value(-255, ember.uint8)
    1
    """
    if type(v) is not _pyint or d.category != INT or d.np is None:
        return v
    info = np.iinfo(d.np)
    if not (-_pyint(info.max) if info.min == 0 else _pyint(info.min)) <= v <= _pyint(info.max):
        raise RuntimeError(f"value cannot be converted to type {d.name} without overflow (got {v})")
    return fix_scalar(v, d)
