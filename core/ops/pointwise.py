"""Pointwise ops: forward on arrays, backward with ember ops, side by side.

Binary ops broadcast and promote in :func:`ember.dispatch.binary`; the
engine reduces a broadcast gradient back to its input's shape, so no op
here undoes broadcasting by hand.
"""
from __future__ import annotations

import cmath
import math
import sys

import numpy as np
from collections import namedtuple
from builtins import max as _builtin_max
from sys import getrefcount as _refcount

from .. import dtypes
from ..autograd.function import (Op, SavedOf, composite_node, keep_args, keep_saved, number_operand, optional,
                                 rename_node)
from ..autograd.grad_mode import STATE, no_grad
from ..dispatch import (apply, binary, broadcast_error, cast, device_error, on_arrays, promote, result_type,
                        unary)
from ..dtypes import int_value, SCALARS as _SCALARS
from ..writes import check_inplace, out_or
from ..registry import (NAMESPACES, _type_name, binary_op, binary_result, check_tensor, export, inplace_form, op_class,
                        unary_op)
from .. import dispatch
from ..tensor import Tensor, _vowner, _wrap
from .creation import full


# --------------------------------------------------------------------------- arithmetic


def _add_vjp(ctx, g):
    return g, g


# autocast policy of the functions PyTorch runs in float32 under CUDA autocast (a wide range of values)
FP32_ON_CUDA = {"cuda": "fp32"}


def _cj(v):
    """``conj(v)`` for a complex tensor or number, else ``v`` (None, an input not saved, stays None): complex
    vjps are ``g * conj(f'(z))``."""
    if isinstance(v, Tensor):
        return v.conj() if v.dtype.category == dtypes.COMPLEX else v
    return v if v is None else v.conjugate()  # a number (ints and floats are their own conjugates)


Add = op_class("Add", "add", vjp=_add_vjp, arity=2, tags=("pointwise",), onnx="Add")
# (the nodes of lerp, addcmul/addcdiv and addmm's family that ember composes with a last add keep their op's
# numbers through keep_args)
Add.saved_args = {"alpha": lambda n: 1 if type(n).__name__ == "AddBackward0" else None}


class AddScaled(Op):
    """``x + alpha * y``."""

    tags = ("pointwise",)
    backward_name = "AddBackward0"
    saved_args = {"alpha": "alpha"}

    @staticmethod
    def forward(ctx, k, x, y, alpha):
        ctx.alpha = alpha
        return k["add"](x, k["mul"](y, alpha))

    @staticmethod
    def backward(ctx, g):
        return g, g * _cj(ctx.alpha)


def _sub_vjp(ctx, g):
    if on_arrays(g):  # no graph is being built: the negation on the array
        return g, _wrap(g._dev.kernels["neg"](g._data), g._dev)
    return g, -g


Sub = op_class("Sub", "sub", vjp=_sub_vjp, arity=2, tags=("pointwise",), onnx="Sub")
Sub.saved_args = {"alpha": lambda n: 1}  # (sub keeps another alpha through keep_args)


def _mul_vjp(ctx, g):
    a, b = ctx.inputs
    nf = ctx._next  # an operand without a gradient edge (a scalar, a constant) gets no product
    x = g._data.dtype
    if (x is _F32.np or x is _F64.np) and on_arrays(g, a, b):  # (the common case, without the dtype property)
        dt = _F32 if x is _F32.np else _F64
        return (_times(g, dt, b) if nf[0] is not None else None,
                _times(g, dt, a) if nf[1] is not None else None)
    dt = g.dtype
    if dt.category == dtypes.COMPLEX:
        a, b = _cj(a), _cj(b)
    elif on_arrays(g, a, b):  # no graph is being built: tensor factors multiply on their arrays
        return (_times(g, dt, b) if nf[0] is not None else None,
                _times(g, dt, a) if nf[1] is not None else None)
    return g * b if nf[0] is not None else None, g * a if nf[1] is not None else None


def _same_arrays(g, *values):
    """Whether every one of ``values`` is a Tensor (or None: not kept) of ``g``'s array dtype."""
    dt = g._data.dtype
    return all(v is None or isinstance(v, Tensor) and v._data.dtype is dt for v in values)


def _times(g, dt, v):
    """``g * v`` (``dt``: ``g``'s dtype) by the kernel itself for a tensor ``v`` of ``g``'s dtype, or a Python float
    or int with a float32 or float64 ``g`` (which the op hands the kernel as it is), else by the op (promotion,
    half precision)."""
    if isinstance(v, Tensor):
        if v._data.dtype is g._data.dtype:
            return _wrap(g._dev.kernels["mul"](g._data, v._data), g._dev)
    elif (type(v) is float or type(v) is int) and (dt is _F32 or dt is _F64):
        return _wrap(g._dev.kernels["mul"](g._data, v), g._dev)
    return g * v


_F32, _F64 = dtypes.float32, dtypes.float64


# each factor is kept for the other's gradient only
Mul = op_class("Mul", "mul", saves="input", vjp=_mul_vjp, arity=2, tags=("pointwise",), onnx="Mul",
               save_for=((1,), (0,)))


def _div_vjp(ctx, g):
    a, b = ctx.inputs
    if g.dtype.category == dtypes.COMPLEX:
        a, b = _cj(a), _cj(b)
    elif _same_arrays(g, a, b) and on_arrays(g, a, b):  # no graph is being built: the formula on arrays
        k, dev, nf = g._dev.kernels, g._dev, ctx._next
        x, y = g._data, b._data
        ga = _wrap(k["div"](x, y), dev) if nf[0] is not None else None
        gb = _wrap(k["div"](k["mul"](k["neg"](x), a._data), k["mul"](y, y)), dev) if nf[1] is not None else None
        return ga, gb
    gb = None
    if isinstance(b, Tensor) and ctx._next[1] is not None:
        gb = -g * a / (b * b)
    return g / b, gb


Div = op_class("Div", "div", saves="input", vjp=_div_vjp, arity=2,  # the dividend: for the divisor's gradient only
               tags=("pointwise",), promotion="int_to_float", onnx="Div", save_for=((1,), (0, 1)))
Mul.scalar_in_float32 = Div.scalar_in_float32 = True  # a half tensor meets a Python number in float32, as in PyTorch


class DivRounding(Op):
    """Division rounded toward zero ('trunc') or down ('floor'); zero gradient almost everywhere.  As PyTorch's
    node, it keeps the divisor, and the dividend when the divisor needs a gradient."""

    tags = ("pointwise",)
    backward_name = "DivBackward2"  # (PyTorch's node of div with a rounding mode, a tensor or a number divisor)
    save_inputs = True
    save_for = ((1,), None, (), ())
    saved_names = ("self", "other")
    saved_args = {"rounding_mode": "mode"}

    @staticmethod
    def forward(ctx, k, x, y, mode, integral):
        ctx.mode = mode
        if integral:
            return k["int_div_" + mode](x, y)
        return k["div_floor"](x, y) if mode == "floor" else k["trunc"](k["div"](x, y))

    @staticmethod
    def backward(ctx, g):
        ctx.check_saved()
        return _no_slope(g), _no_slope(g)


def _pow_vjp(ctx, g):
    a, b = ctx.inputs
    if g.dtype.category == dtypes.COMPLEX:
        return _pow_vjp_complex(ctx, g, a, b)
    ga = gb = None
    if ctx.next_functions[0][0] is not None:
        ga = g * b * a ** (b - 1) if not _is_zero(b) else _no_slope(g)
        if isinstance(b, Tensor):  # (PyTorch's: a zero exponent has no slope, whatever the incoming gradient)
            ga = where(b == 0, ga.new_zeros(()), ga)
    if isinstance(b, Tensor) and ctx.next_functions[1][0] is not None:
        # PyTorch's: a ** b * log(a) (NaN below 0, -inf at 0 for b < 0), and 0 where a is 0 and b is not negative
        slope = (a ** b) * (a.log() if isinstance(a, Tensor) else _log_scalar(a))
        if not isinstance(a, Tensor) and a == 0:
            slope = where(b >= 0, slope.new_zeros(()), slope)
        elif isinstance(a, Tensor):
            slope = where((a == 0).logical_and(b >= 0), slope.new_zeros(()), slope)
        gb = g * slope
    return ga, gb


def _pow_vjp_complex(ctx, g, a, b):
    ga = gb = None
    if ctx.next_functions[0][0] is not None:
        ga = g * _cj(b * a ** (b - 1))
    if isinstance(b, Tensor) and ctx.next_functions[1][0] is not None:
        gb = g * _cj(a ** b * (a.log() if isinstance(a, Tensor) else cmath.log(a)))
    return ga, gb


Pow = op_class("Pow", "pow", saves="input", vjp=_pow_vjp, arity=2, tags=("pointwise",), onnx="Pow",
               autocast=FP32_ON_CUDA, saved_names=("self", "exponent"))
def recomputed(fn, node_names=None):
    """A ``saved_args`` entry: the output PyTorch's node keeps (``_saved_result``) where ember's does not (its
    backward reads the inputs only), made when read as ``fn`` of the node's saved inputs; for the nodes named in
    ``node_names`` only (all when None).  It counts as a saved tensor: reading it after the backward raises."""
    def read(node):
        if node_names is not None and type(node).__name__ not in node_names:
            return None
        with no_grad():
            return fn(*node.inputs)
    return read


Pow.saved_args = {"exponent": number_operand(1, "PowBackward0"), "self": number_operand(0, "PowBackward2"),
                  "result": recomputed(lambda a, b: pow(a, b), ("PowBackward1", "PowBackward2"))}


def _is_zero(b):
    # (PyTorch's Scalar False is not equal to 0: x ** False takes the formula, NaN at x == 0)
    return not isinstance(b, (Tensor, bool)) and b == 0


def _log_scalar(a):
    return math.log(a) if a > 0 else -math.inf if a == 0 else math.nan


# ``g`` where ``out > 0``, else 0: the gradient of relu (and its own gradient).
def _relu_grad_vjp(ctx, gg):
    return unary(ReluGrad, gg, ctx.out)


ReluGrad = op_class("ReluGrad", "relu_backward", vjp=_relu_grad_vjp, backward_name="ThresholdBackwardBackward0",
                    params=("out",), tags=("pointwise",))


# tanh's and sigmoid's gradients from their outputs ``y`` as one op each (PyTorch's tanh_backward and
# sigmoid_backward): one kernel call per node in a backward pass, and their own gradients for double backward
# (each gradient only where its input needs one: under a Jacobian transform ``g`` is the constant basis; the
# factors of ``y``'s gradient are multiplied at ``g``'s size before the product with ``gg``, which a vmapped
# backward stacks over every basis vector)
def _tanh_grad_vjp(ctx, gg):
    g, y = ctx.inputs
    nf = ctx._next
    return (binary(TanhGrad, gg, y) if nf[0] is not None else None,
            gg * (g * y * -2) if nf[1] is not None else None)


def _sigmoid_grad_vjp(ctx, gg):
    g, y = ctx.inputs
    nf = ctx._next
    return (binary(SigmoidGrad, gg, y) if nf[0] is not None else None,
            gg * (g * (1 - 2 * y)) if nf[1] is not None else None)


TanhGrad = op_class("TanhGrad", "tanh_backward", saves="input", vjp=_tanh_grad_vjp, arity=2, tags=("pointwise",),
                    backward_name="TanhBackwardBackward0")
SigmoidGrad = op_class("SigmoidGrad", "sigmoid_backward", saves="input", vjp=_sigmoid_grad_vjp, arity=2,
                       tags=("pointwise",), backward_name="SigmoidBackwardBackward0")


def _real_grad(Grad, formula):
    """A saved-output backward: the fused ``Grad(g, y)`` for real dtypes (its kernel on the arrays when no graph
    is being built), ``g * conj(formula(y))`` for complex."""
    kernel = Grad.kernel_name

    def backward(ctx, g):
        if on_arrays(g):
            y = ctx.output_data()  # (version-checked)
            x = g._data.dtype
            if x is y.dtype and (x is _F32.np or x is _F64.np or g.dtype.category == dtypes.FLOAT):
                return _wrap(g._dev.kernels[kernel](g._data, y), g._dev)
        y = ctx.output
        if y.dtype.category == dtypes.COMPLEX:
            return g * _cj(formula(y))
        return binary(Grad, g, y)
    return backward


def _where_vjp(ctx, g):
    c = ctx.inputs[0]
    zero = g.new_zeros(())
    return None, where(c, g, zero), where(c, zero, g)


Where = op_class("Where", "where", saves="input", vjp=_where_vjp, arity=3, tags=("pointwise",),
                 save_for=(None, (), ()), saved_names=("condition",))  # only the condition


# A dtype conversion; the gradient converts back.
def _cast_vjp(ctx, g):
    if g.dtype.category == dtypes.COMPLEX and "complex" not in str(ctx._shapes[0][1]):
        return g.real  # a real input's gradient is the real part of a complex one
    return g


Cast = op_class("Cast", "astype", vjp=_cast_vjp, backward_name="ToCopyBackward0", arity=2, tags=("pointwise",))


# --------------------------------------------------------------------------- public functions
@export(inplace=False)
def add(input, other, *, alpha=1, out=None):  # noqa: A002
    """``input + alpha * other`` with broadcasting and type promotion.

    >>> import ember
    >>> ember.add(ember.tensor([1, 2]), 1.5)
    tensor([2.5000, 3.5000])
    """
    if alpha != 1 or type(alpha) is bool:
        alpha = _alpha("add", alpha, input, other)
        if not isinstance(other, Tensor) and not isinstance(alpha, Tensor):  # two numbers: scaled in Python
            a = alpha.item() if hasattr(alpha, "item") else alpha
            return add(input, (other and a) if isinstance(a, bool) else other * a, out=out)
        if not isinstance(input, Tensor) or not isinstance(other, Tensor):
            return add(input, mul(other, alpha), out=out)
        r = binary_result(binary(AddScaled, input, other, alpha), input, other, "add")
    else:
        r = binary_result(binary(Add, input, other), input, other, "add")
    return out_or(r, out)


@export(aliases=("subtract",))
def sub(input, other, *, alpha=1, out=None):  # noqa: A002
    """``input - alpha * other``."""
    if any(isinstance(v, (bool, np.bool_)) or isinstance(v, Tensor) and v.dtype is dtypes.bool for v in (input, other)):
        _bool_sub_error(input, other)
    scaled = alpha != 1 or type(alpha) is bool
    if scaled:
        other = scaled_other("sub", input, other, alpha)
    r = binary_result(binary(Sub, input, other), input, other, "sub")
    if scaled and isinstance(r._fn, Sub):
        keep_args(r, alpha=alpha)
    return out_or(r, out)


def scaled_other(op, input, other, alpha):
    """``alpha * other`` as PyTorch's add/sub kernels take it: ``alpha`` checked and rounded to the result dtype
    and ``other`` scaled in that dtype (an integer ``other`` times 0.5 is not float32; a float16 ``other`` added to
    a bfloat16 ``input`` is scaled in float32)."""
    a = _alpha(op, alpha, input, other)
    if isinstance(a, np.generic) and not isinstance(a, np.number):  # (bfloat16's own scalar: a Python number)
        a = a.item()
    return mul(other.to(result_type(input, other)), a) if isinstance(other, Tensor) else other * a


def _alpha(op, alpha, input, other):
    """``alpha`` checked against the result dtype as PyTorch checks it, and wrapped into an integer one."""
    if isinstance(alpha, Tensor):
        return alpha
    rt = result_type(input, other)
    if rt.category <= dtypes.INT and isinstance(alpha, (float, np.floating)):
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a floating point number.")
    if isinstance(alpha, (bool, np.bool_)) and rt is not dtypes.bool:
        raise RuntimeError(f"{op}: Boolean alpha only supported for Boolean results.")
    if rt is dtypes.bool:
        return bool(alpha)  # (a bool sum is a logical or, as in PyTorch)
    return dtypes.fix_scalar(dtypes.checked_scalar(alpha, rt), rt)


def _bool_sub_error(a, b):
    """PyTorch refuses subtraction with a bool tensor operand."""
    if all(isinstance(v, bool) or isinstance(v, Tensor) and v.dtype is dtypes.bool for v in (a, b)):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                       "invert a mask, use the `~` or `logical_not()` operator instead.")


@export(aliases=("multiply",))
def mul(input, other, *, out=None):  # noqa: A002
    """Elementwise product with broadcasting."""
    return out_or(binary_result(binary(Mul, input, other), input, other, "mul"), out)


@export(aliases=("divide", "true_divide"))
def div(input, other, *, rounding_mode=None, out=None):  # noqa: A002
    """True division (integers divide to the default float dtype); ``rounding_mode`` 'trunc' or 'floor'."""
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                             f"'{rounding_mode}'")
        integral = all(v.dtype.category <= dtypes.INT if isinstance(v, Tensor) else not isinstance(v, float)
                       for v in (input, other))
        if integral and result_type(input, other) is dtypes.bool:  # a Python bool operand counts, as in PyTorch
            raise NotImplementedError(f"div: \"div_{rounding_mode}_cpu\" not implemented for 'Bool'")
        if integral:
            _int_zero_check("div", other, input)
        return out_or(binary_result(binary(DivRounding, input, other, rounding_mode, integral), input, other, "div"),
                      out)
    a_int = not isinstance(input, Tensor) or input.dtype.category < dtypes.FLOAT
    b_int = not isinstance(other, Tensor) or other.dtype.category < dtypes.FLOAT
    if a_int and b_int:
        if isinstance(input, Tensor) and (not isinstance(other, Tensor) or isinstance(other, (int, bool))):
            if not isinstance(other, float):
                input = cast(input, dtypes.get_default_dtype())
        elif isinstance(other, Tensor) and not isinstance(input, float):
            other = cast(other, dtypes.get_default_dtype())
        if isinstance(input, Tensor) and isinstance(other, Tensor):
            input = cast(input, dtypes.get_default_dtype())
    return out_or(binary_result(binary(Div, input, other), input, other, "div"), out)


@export(inplace=True)
def pow(input, exponent, *, out=None):  # noqa: A001,A002
    """``input ** exponent`` elementwise."""
    if isinstance(input, Tensor) and input.dtype is dtypes.bool and type(exponent) is bool:
        # PyTorch's bool ** Python bool: x ** True is x, x ** False is True (any other bool power is refused)
        return out_or(input.clone() if exponent else full(input.shape, True, device=input._dev), out)
    if result_type(input, exponent) is dtypes.bool:
        raise NotImplementedError("pow: \"pow\" not implemented for 'Bool'")
    if isinstance(input, Tensor) and input.dtype.category == dtypes.INT and type(exponent) is int:
        if exponent < 0:
            raise RuntimeError("pow: Integers to negative integer powers are not allowed.")
        int_value(exponent, input.dtype)  # an exponent beyond the dtype's range is refused, as in PyTorch
    if isinstance(input, Tensor) and input.dtype in dtypes.HALF_TYPES and isinstance(exponent, (int, float)):
        dtypes.checked_scalar(exponent, input.dtype)  # (a float32 or float64 one computes to inf instead)
    r = binary(Pow, input, exponent)
    if isinstance(exponent, Tensor):  # PyTorch's nodes: PowBackward0 for a number exponent, 1 and 2 for tensors
        rename_node(r, "PowBackward1" if isinstance(input, Tensor) else "PowBackward2")
    return out_or(binary_result(r, input, exponent, "pow"), out)


@export(to=("torch",))
def where(condition, input=None, other=None, *, out=None):  # noqa: A002
    """``input`` where ``condition`` holds, else ``other`` (written into ``out`` when given); with one argument,
    ``nonzero(as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, Tensor) or condition.dtype is not dtypes.bool:
        raise RuntimeError(f"where(): expected condition to be a bool tensor, got "
                           f"{condition.dtype if isinstance(condition, Tensor) else type(condition).__name__}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):  # two numbers: their result type
        d = result_type(input, other)
        input, other = (_full(v, d, condition) for v in (input, other))
    ref = input if isinstance(input, Tensor) else other
    if not isinstance(input, Tensor):
        input = _scalar_like(input, ref, other)
    if not isinstance(other, Tensor):
        other = _scalar_like(other, ref, input)
    if input.dtype is not other.dtype:
        input, other = promote("where", input, other)
    if condition._dev is not input._dev and condition.dim() == 0:
        condition = condition.to(input.device)
    return out_or(apply(Where, condition, input, other), out)


@export(name="where", to=("Tensor",), inplace=True)
def _where_method(self, condition, other):
    return where(condition, self, other)


def _full(v, d, like):
    """A 0-d tensor holding number ``v`` in dtype ``d`` on ``like``'s device."""
    return full((), int_value(v, d), dtype=d, device=like._dev)


def _scalar_like(v, ref, other):
    d = ref.dtype if dtypes.scalar_category(v) <= ref.dtype.category else \
        dtypes.default_for_category(dtypes.scalar_category(v))
    return _full(v, d, ref)


# --------------------------------------------------------------------------- Tensor operators
def _rsub(self, other):
    return rename_node(sub(other, self), "RsubBackward0" if isinstance(other, Tensor) else "RsubBackward1")


def _sub(self, other):
    """``self - other``: two tensors of one non-bool dtype go straight to the op (``sub``'s checks pass them)."""
    if isinstance(other, Tensor) and (d := self._data.dtype) is other._data.dtype and \
            (d is _F32.np or d is _F64.np or self.dtype is not dtypes.bool):  # (float32/64 by identity first)
        return binary(Sub, self, other)
    return sub(self, other)


def _rdiv(self, other):
    # ``number / tensor`` is ``tensor.reciprocal() * number`` in PyTorch (its rounding, and MulBackward0)
    return mul(reciprocal(self), other)


def _rpow(self, other):
    return pow(other, self)


def _binop(fn):
    def method(self, other):
        try:
            return fn(self, other)
        except TypeError:
            if isinstance(other, (Tensor, int, float, bool, complex)):
                raise
            return NotImplemented

    method.__name__ = fn.__name__
    return method


# A temporary that nothing else holds, e.g. ``a * b`` in ``a * b + c``, can take the next result in place
# (NumPy does the same): saves allocating and faulting in a large buffer.  The references a temporary has
# inside the method are the interpreter's stack slot, ``self`` and getrefcount's argument; its array's are the
# tensor's slot, ``arr`` and getrefcount's argument.
# The counts hold for CPython up to 3.13; from 3.14 the interpreter may borrow references on its stack, so a
# named tensor could look like a temporary there: elision stays off.
_ELIDE_MIN = 1 << 16 if (sys.implementation.name == "cpython" and sys.version_info < (3, 14)) else float("inf")


def _elidable(t, other, min_category):
    if t._rg or t._base is not None or t._fn is not None or dispatch.HANDLERS:  # intercepted ops are never elided
        return False
    arr = t._data
    if _refcount(arr) != 3 or getattr(arr, "base", None) is not None or arr.size < _ELIDE_MIN:
        return False
    cat = t.dtype.category
    if cat < min_category:
        return False
    if isinstance(other, Tensor):
        o = other._data
        if other._rg or other._dev is not t._dev or o.dtype != arr.dtype:
            return False
        if o.shape == arr.shape:
            return True
        return o.ndim <= arr.ndim and all(a == b or a == 1 for a, b in zip(o.shape[::-1], arr.shape[::-1]))
    return type(other) is int and cat >= dtypes.INT or type(other) is float and cat >= dtypes.FLOAT


def _fast(Cls):
    def method(self, other):
        return binary(Cls, self, other)

    return method


def _eliding(fallback, into, min_category=dtypes.INT):
    """``fallback(self, other)``, computed into ``self``'s array when ``self`` is an unshared temporary.

    ``fallback`` is a function, or an Op class applied through ``binary`` (one call frame less).
    """
    if isinstance(fallback, type):
        Cls = fallback

        def method(self, other):
            if _refcount(self) == 3 and _elidable(self, other, min_category):
                y = other._data if isinstance(other, Tensor) else other
                return _wrap(self._dev.kernels[into](self._data, y), self._dev)
            return binary(Cls, self, other)
    else:
        def method(self, other):
            if _refcount(self) == 3 and _elidable(self, other, min_category):
                y = other._data if isinstance(other, Tensor) else other
                return _wrap(self._dev.kernels[into](self._data, y), self._dev)
            return fallback(self, other)

    return method


def _swap(fn):
    def method(self, other):
        return fn(other, self)

    return method


def _methods(table):
    for name, fn in table.items():
        export(fn, name, to=("Tensor",))


# --------------------------------------------------------------------------- unary math: one row per op
SPECIAL = ("torch", "Tensor", "special")  # also in ember.special
# Each row: the kernel name, what backward needs (the input x or the output y), and the vector-Jacobian
# product written with ember ops (so it differentiates again); integer inputs compute in the default float
# dtype unless the row says otherwise.
def _refuse_bool_neg(x):
    if x.dtype is dtypes.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")


def _real_sign(x):
    if x.dtype.category == dtypes.COMPLEX:
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead.")


def _sign_of_integer(x):
    return x.clone() if x.dtype is dtypes.bool else unary(Sign, x)  # a bool tensor is its own sign


def _relu_backward(ctx, g):
    y = ctx.output_data()
    if on_arrays(g) and g._data.dtype is y.dtype:  # no graph is being built: the kernel on the arrays
        return _wrap(g._dev.kernels["relu_backward"](g._data, y), g._dev)
    return unary(ReluGrad, g, y)


def _same(x):
    return x.clone()


Exp, exp = unary_op("exp", lambda g, x, y: g * _cj(y), saves="output", onnx="Exp", autocast=FP32_ON_CUDA)
# d/dx 2**x = 2**x ln 2
Exp2, exp2 = unary_op("exp2", lambda g, x, y: g * y * 0.6931471805599453, saves="output", to=SPECIAL)
Log, log = unary_op("log", lambda g, x, y: g / _cj(x), onnx="Log", autocast=FP32_ON_CUDA)
Sqrt, sqrt = unary_op("sqrt", lambda g, x, y: g / (2 * _cj(y)), saves="output", onnx="Sqrt")
Neg, neg = unary_op("neg", lambda g, x, y: -g, saves="none", promotion="default", check=_refuse_bool_neg,
                    aliases=("negative",), doc="``-input``.", onnx="Neg")
_NOT_BOOL = dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES  # (rounding: no bool, no complex)


def _abs_vjp(g, x, y):
    if x.dtype.category == dtypes.COMPLEX:  # g * z / |z| (0 at 0), written so that it differentiates again
        r = abs(x)
        return g * where(r == 0, x.new_zeros(()), x / where(r == 0, r.new_ones(()), r))
    return g * x.sign()


Abs, abs = unary_op("abs", _abs_vjp, promotion="complex_to_float", aliases=("absolute",),  # noqa: A001
                    doc="Elementwise absolute value.", onnx="Abs",
                    kernel_dtypes=("abs_{device}", _NOT_BOOL | dtypes.COMPLEX_TYPES))
_abs_written = NAMESPACES["Tensor"]["abs_"]


def _abs_(input):  # noqa: A002
    """In-place :func:`abs`; returns self.  A complex tensor is refused, as PyTorch does (its result is real)."""
    if input.dtype.category == dtypes.COMPLEX:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _abs_written(input)


_abs_.__name__ = _abs_.__qualname__ = "abs_"
export(_abs_, "abs_", to=("torch", "Tensor"), aliases=("absolute_",))
def _no_slope(g, *_):
    """A zero gradient of ``g``'s shape and dtype, as PyTorch's ``zeros_like(grad)``: ``g * 0`` would turn an
    infinite or NaN incoming gradient into NaN."""
    return g.new_zeros(g.shape)


Sign, sign = unary_op("sign", _no_slope, saves="none", promotion="keep", integer=_sign_of_integer,
                      check=_real_sign,
                      doc="Elementwise sign (-1, 0 or 1; a bool tensor is its own sign).", onnx="Sign")
Relu, relu = unary_op("relu", saves="output", promotion="default", backward=_relu_backward, out=False,
                      doc="``max(input, 0)``.", onnx="Relu")
_RELU_COMPUTES = set()  # the array dtypes relu has computed: each is checked once, on its first call


def _relu_forward(ctx, k, x):
    dt = x.dtype
    if dt is _F32.np or dt is _F64.np:  # (NumPy's float32/float64: checked by identity, without the set)
        return k["relu"](x)
    d = (type(dt), dt)  # (by type first: one array library's dtype is never compared with another's)
    if d not in _RELU_COMPUTES:  # PyTorch's relu is clamp_min, which has no bool or complex code
        name = str(d[1]).rsplit(".", 1)[-1]  # (the dtype's name in any array library: "bool", "complex64")
        if name == "bool":
            raise RuntimeError("Boolean inputs not supported for relu")
        if name.startswith("complex"):
            raise NotImplementedError("clamp is not supported for complex types")
        _RELU_COMPUTES.add(d)
    return k["relu"](x)


_relu_forward.dtype_check_only = True  # (ember.compile's fusion calls the kernel alone: its dtype guards check)
Relu.forward = staticmethod(_relu_forward)
Tanh, tanh = unary_op("tanh", saves="output", backward=_real_grad(TanhGrad, lambda y: 1 - y * y), onnx="Tanh")
Sigmoid, sigmoid = unary_op("sigmoid", saves="output", backward=_real_grad(SigmoidGrad, lambda y: y * (1 - y)),
                            onnx="Sigmoid")
export(sigmoid, "expit", to=("special",))
Sin, sin = unary_op("sin", lambda g, x, y: g * _cj(x.cos()), onnx="Sin")
Cos, cos = unary_op("cos", lambda g, x, y: -g * _cj(x.sin()), onnx="Cos")
Tan, tan = unary_op("tan", lambda g, x, y: g * (1 + y * y), saves="output", onnx="Tan", autocast=FP32_ON_CUDA)
Asin, asin = unary_op("asin", lambda g, x, y: g * (1 - x * x).rsqrt(), aliases=("arcsin",),
                      onnx="Asin", autocast=FP32_ON_CUDA)
Acos, acos = unary_op("acos", lambda g, x, y: -g * (1 - x * x).rsqrt(), aliases=("arccos",),
                      onnx="Acos", autocast=FP32_ON_CUDA)
Atan, atan = unary_op("atan", lambda g, x, y: g / (1 + x * x), aliases=("arctan",), onnx="Atan")
Sinh, sinh = unary_op("sinh", lambda g, x, y: g * x.cosh(), onnx="Sinh", autocast=FP32_ON_CUDA)
Cosh, cosh = unary_op("cosh", lambda g, x, y: g * x.sinh(), onnx="Cosh", autocast=FP32_ON_CUDA)
Asinh, asinh = unary_op("asinh", lambda g, x, y: g * (x * x + 1).rsqrt(), aliases=("arcsinh",), onnx="Asinh")
Acosh, acosh = unary_op("acosh", lambda g, x, y: g * (x * x - 1).rsqrt(), aliases=("arccosh",), onnx="Acosh")
Atanh, atanh = unary_op("atanh", lambda g, x, y: g / (1 - x * x), aliases=("arctanh",), onnx="Atanh")
Expm1, expm1 = unary_op("expm1", lambda g, x, y: g * (y + 1), saves="output", to=SPECIAL, autocast=FP32_ON_CUDA)
Log1p, log1p = unary_op("log1p", lambda g, x, y: g / (x + 1), to=SPECIAL, autocast=FP32_ON_CUDA)
Log2, log2 = unary_op("log2", lambda g, x, y: g / (x * 0.6931471805599453), autocast=FP32_ON_CUDA)
Log10, log10 = unary_op("log10", lambda g, x, y: g / (x * 2.302585092994046), autocast=FP32_ON_CUDA)
Rsqrt, rsqrt = unary_op("rsqrt", lambda g, x, y: -0.5 * g * _cj(y * y * y), saves="output", autocast=FP32_ON_CUDA)
Erf, erf = unary_op("erf", lambda g, x, y: g * 1.1283791670955126 * (-(x * x)).exp(), to=SPECIAL, onnx="Erf",
                    kernel_dtypes=("erf_vml_{device}", dtypes.REAL_TYPES))
Erfc, erfc = unary_op("erfc", lambda g, x, y: g * -1.1283791670955126 * (-(x * x)).exp(), to=SPECIAL,
                      kernel_dtypes=("erfc_vml_{device}", dtypes.REAL_TYPES))
# sqrt(pi) / 2 * exp(erfinv(x) ** 2)
Erfinv, erfinv = unary_op("erfinv", lambda g, x, y: g * 0.8862269254527580 * (erfinv(x) ** 2).exp(), to=SPECIAL,
                          autocast=FP32_ON_CUDA)  # (keeps its input, as PyTorch's node)
Reciprocal, reciprocal = unary_op("reciprocal", lambda g, x, y: -g * _cj(y * y), saves="output",
                                  onnx="Reciprocal", autocast=FP32_ON_CUDA)
Square, square = unary_op("square", lambda g, x, y: g * _cj(2 * x), promotion="bool_to_long",  # (pow's order)
                          backward_name="PowBackward0", integer=lambda x: pow(x, 2))
Square.saved_args = {"exponent": lambda n: 2}  # (PyTorch's square is pow(x, 2))
Floor, floor = unary_op("floor", _no_slope, saves="none", promotion="keep", integer=_same, onnx="Floor",
                        kernel_dtypes=("floor_vml_{device}", _NOT_BOOL))
Ceil, ceil = unary_op("ceil", _no_slope, saves="none", promotion="keep", integer=_same, onnx="Ceil",
                      kernel_dtypes=("ceil_vml_{device}", _NOT_BOOL))
Round, _round_even = unary_op("round", _no_slope, saves="none",
                              promotion="keep", integer=_same, to=(), inplace=False, onnx="Round",
                              kernel_dtypes=("round_vml_{device}", dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES))
Trunc, trunc = unary_op("trunc", _no_slope, saves="none", promotion="keep", integer=_same, aliases=("fix",),
                        kernel_dtypes=("trunc_vml_{device}", _NOT_BOOL))
Frac, frac = unary_op("frac", lambda g, x, y: g, saves="none", promotion="keep", integer=lambda x: x * 0,
                      kernel_dtypes=("frac_{device}", dtypes.FLOATING_AND_HALF))
def _real_only(name):
    def check(x):
        if x.dtype.category == dtypes.COMPLEX:
            raise RuntimeError(f"{name} is not supported for complex tensors.")
    return check


Deg2rad, deg2rad = unary_op("deg2rad", lambda g, x, y: g * 0.017453292519943295, saves="none",
                            check=_real_only("deg2rad"))
Rad2deg, rad2deg = unary_op("rad2deg", lambda g, x, y: g * 57.29577951308232, saves="none",
                            check=_real_only("rad2deg"))
def _sgn_vjp(g, x, y):
    if x.dtype.category != dtypes.COMPLEX:
        return _no_slope(g)
    # s = z / |z|: ds = dz / |z| - s Re(conj(s) dz) / |z|, so the gradient is (g - s Re(conj(s) g)) / |z| (0 at 0)
    r = abs(x)
    zero = r == 0
    r = where(zero, r.new_ones(()), r)
    s = x / r
    return where(zero, x.new_zeros(()), (g - s * (s.conj() * g).real) / r)


# the sign of a real number; its own kernel row so complex numbers can take x / |x| (sign's kernel does)
Sgn, sgn = unary_op("sgn", _sgn_vjp, kernel="sign",
                    promotion="keep", integer=_sign_of_integer,
                    doc="Elementwise sign (``sign`` for real numbers; a bool tensor is its own sign).")
Sgn.saved_args = {"result": recomputed(sgn)}


@export(to=SPECIAL, inplace=True)
def round(input, *, decimals=0, out=None):  # noqa: A001,A002
    """Round half to even; with ``decimals``, to that many decimal places (negative: tens, hundreds, ...).

    >>> import ember
    >>> ember.round(ember.tensor([1.2345, 1250.0]), decimals=2).tolist()[1]
    1250.0
    """
    if decimals == 0:
        return _round_even(input, out=out)
    check_tensor(input, "round")
    if input.dtype.category < dtypes.FLOAT:
        raise NotImplementedError(f'round: "round" with decimals not implemented for {input.dtype}')
    dtypes.check_kernel("round_{device}", input, dtypes.REAL_TYPES)
    scale = 10.0 ** (decimals if decimals > 0 else -decimals)
    r = _round_even(input * scale) / scale if decimals > 0 else _round_even(input / scale) * scale
    return out_or(composite_node(r, "RoundBackward1"), out)


@export(to=("special",))
def ndtr(input, *, out=None):  # noqa: A002
    """The standard normal distribution function, ``(1 + erf(x / sqrt(2))) / 2``.

    >>> import ember
    >>> ember.special.ndtr(ember.tensor([0.0]))
    tensor([0.5000])
    """
    return out_or(erfc(check_tensor(input, "ndtr") * -0.7071067811865476) * 0.5, out)


@export(to=("special",))
def ndtri(input, *, out=None):  # noqa: A002
    """The inverse of :func:`ndtr`: ``sqrt(2) * erfinv(2 p - 1)``.

    >>> import ember
    >>> ember.special.ndtri(ember.tensor([0.5]))
    tensor([0.])
    """
    return out_or(erfinv(check_tensor(input, "ndtri") * 2 - 1) * 1.4142135623730951, out)


# --------------------------------------------------------------------------- comparisons: bool results, no gradient
def _compared(name, ordered=True):
    """PyTorch's refusals for a comparison: a number as ``input`` (it has no overload taking one there), and
    complex operands to an ordering (complex numbers have no order)."""
    def check(*operands):
        if not isinstance(operands[0], Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(operands[0]).__name__}")
        for v in operands if ordered else ():
            if isinstance(v, Tensor) and v.dtype.category == dtypes.COMPLEX:
                raise NotImplementedError(f'"{name}_{v.device.type}" not implemented for \'{_type_name(v.dtype)}\'')
            if isinstance(v, complex):
                raise NotImplementedError(f'"{name}": complex numbers are not ordered (got {v})')

    return check


Eq, eq = binary_op("eq", doc="Elementwise ``==``; a bool tensor, never differentiable.", onnx="Equal",
                   check=_compared("eq", ordered=False), promotion="always_bool")
Ne, ne = binary_op("ne", aliases=("not_equal",), doc="Elementwise ``!=``; a bool tensor.",
                   check=_compared("ne", ordered=False), promotion="always_bool")


Lt, lt = binary_op("lt", aliases=("less",), doc="Elementwise ``<``; a bool tensor.",
                   check=_compared("lt"), onnx="Less", promotion="always_bool")
Le, le = binary_op("le", aliases=("less_equal",), doc="Elementwise ``<=``; a bool tensor.",
                   check=_compared("le"), onnx="LessOrEqual", promotion="always_bool")
Gt, gt = binary_op("gt", aliases=("greater",), doc="Elementwise ``>``; a bool tensor.",
                   check=_compared("gt"), onnx="Greater", promotion="always_bool")
Ge, ge = binary_op("ge", aliases=("greater_equal",), doc="Elementwise ``>=``; a bool tensor.",
                   check=_compared("ge"), onnx="GreaterOrEqual", promotion="always_bool")


# --------------------------------------------------------------------------- binary math
def _pick_vjp(g, a_loses, b_loses, tie):
    """maximum/minimum's gradients, as PyTorch's formula: half to each at a tie, else all of ``g`` to each operand
    that does not lose (both, at a NaN), and exact zeros to a loser (not ``g * 0``: NaN where ``g`` is inf)."""
    share = where(tie, g / 2, g)
    zero = g.new_zeros(())
    return where(a_loses, zero, share), where(b_loses, zero, share)


def _minimum_vjp(ctx, g):
    a, b = ctx.inputs
    return _pick_vjp(g, a > b, a < b, a == b)


Minimum = op_class("Minimum", "minimum", saves="input", vjp=_minimum_vjp, arity=2, tags=("pointwise",), onnx="Min")


def _maximum_vjp(ctx, g):
    a, b = ctx.inputs
    return _pick_vjp(g, a < b, a > b, a == b)


Maximum = op_class("Maximum", "maximum", saves="input", vjp=_maximum_vjp, arity=2, tags=("pointwise",), onnx="Max")


def _atan2_vjp(ctx, g):
    a, b = ctx.inputs
    d = a * a + b * b
    return g * b / d, -g * a / d


Atan2 = op_class("Atan2", "atan2", saves="input", vjp=_atan2_vjp, arity=2,
                 tags=("pointwise",), promotion="int_to_float")


def _clamp_vjp(ctx, g):
    x, lo, hi = ctx.inputs
    below, above = x < lo, x > hi
    return g * (below.logical_or(above)).logical_not(), g * below, g * above


Clamp = op_class("Clamp", "clamp", saves="input", vjp=_clamp_vjp, arity=3, tags=("pointwise",))
Clamp.saved_names = ("self", "min", "max")


# Clamp a floating tensor to number bounds (no bound tensors to build, nothing to broadcast).
def _clamp_scalar_vjp(ctx, g):
    (x,) = ctx.inputs
    if dispatch.HANDLERS:  # vmap, forward-mode AD and tracers see the formula's own ops
        return where((x >= ctx.lo).logical_and(x <= ctx.hi), g, g.new_zeros(()))
    return apply(ClampScalarGrad, g, x, ctx.lo, ctx.hi)


ClampScalar = op_class("ClampScalar", "clamp", saves="input", vjp=_clamp_scalar_vjp, backward_name="ClampBackward1",
                       params=("lo", "hi"), tags=("pointwise",))
def _clamp_bound(node, v, absent):
    """A number bound as PyTorch's node keeps it: an absent one reads None on clamp's own node (ClampBackward1),
    where clamp_min's and clamp_max's nodes keep only their one bound."""
    if v != absent:
        return v
    return optional(None) if type(node).__name__ == "ClampBackward1" else None


ClampScalar.saved_args = {"min": lambda n: _clamp_bound(n, n.lo, -math.inf),
                          "max": lambda n: _clamp_bound(n, n.hi, math.inf)}


def _clamp_scalar_grad_vjp(ctx, gg):
    return apply(ClampScalarGrad, gg, ctx.inputs[1], ctx.lo, ctx.hi), None  # (zero almost everywhere in x)


# clamp's gradient as one op (one kernel call per node): g where lo <= x <= hi, else 0
ClampScalarGrad = op_class("ClampScalarGrad", "clamp_backward", saves="input", vjp=_clamp_scalar_grad_vjp, arity=4,
                           params=("lo", "hi"), tags=("pointwise",), save_for=((), (0,)),
                           backward_name="WhereBackward0")  # (PyTorch computes it with where)


def _lerp_vjp(ctx, g):
    a, b, w = ctx.inputs
    gw = g * (b - a) if ctx.next_functions[2][0] is not None else None  # (the ends are kept for it only)
    return g * (1 - w), g * w, gw


# PyTorch's node keeps the weight, and the ends for the weight's gradient only
Lerp = op_class("Lerp", "lerp", saves="input", vjp=_lerp_vjp, arity=3, tags=("pointwise",),
                saved_names=("self", "end", "weight"), save_for=((2,), (2,), None))


def _fmod_vjp(ctx, g):
    a, b = ctx.inputs
    gb = -g * (a / b).trunc() if isinstance(b, Tensor) else None
    return g, gb


Fmod = op_class("Fmod", "fmod", saves="input", vjp=_fmod_vjp, arity=2, tags=("pointwise",), save_for=((1,), (1,)))


def _remainder_vjp(ctx, g):
    a, b = ctx.inputs
    gb = -g * div(a, b, rounding_mode="floor") if isinstance(b, Tensor) else None  # (PyTorch's floor division)
    return g, gb


Remainder = op_class("Remainder", "remainder", saves="input", vjp=_remainder_vjp, arity=2, tags=("pointwise",),
                      save_for=((1,), (1,)))  # the operands for the divisor's gradient only


def _masked_fill_vjp(ctx, g):
    saved = ctx.inputs
    mask = saved[1]
    if len(saved) == 3:  # the fill value is a tensor that needs a gradient too
        return g.masked_fill(mask, 0), None, (g * mask).sum()
    return g.masked_fill(mask, 0), None


MaskedFill = op_class("MaskedFill", "masked_fill", saves="input", vjp=_masked_fill_vjp, arity=3, tags=("pointwise",),
                       save_for=((), None, ()), saved_names=(None, "mask"))  # only the mask


def _nan_to_num_vjp(ctx, g):
    x = ctx.inputs[0]
    return g * x.isfinite()


NanToNum = op_class("NanToNum", "nan_to_num", saves="input", vjp=_nan_to_num_vjp, arity=4, tags=("pointwise",),
                    promotion="keep")  # an integer input is its own result (nan_to_num returns a copy)


def _no_complex(name, *operands):
    if any(isinstance(v, Tensor) and v.dtype.category == dtypes.COMPLEX for v in operands):
        raise RuntimeError(f"{name} not implemented for complex tensors.")


@export(inplace=True)
def minimum(input, other, *, out=None):  # noqa: A002
    """Elementwise minimum with broadcasting and type promotion (two tensors, as PyTorch's)."""
    _two_tensors("minimum", input, other)
    _no_complex("minimum", input, other)
    return out_or(binary_result(binary(Minimum, input, other), input, other, "minimum"), out)


@export(inplace=True)
def maximum(input, other, *, out=None):  # noqa: A002
    """Elementwise maximum with broadcasting and type promotion (two tensors, as PyTorch's)."""
    _two_tensors("maximum", input, other)
    _no_complex("maximum", input, other)
    return out_or(binary_result(binary(Maximum, input, other), input, other, "maximum"), out)


@export(aliases=("arctan2",), inplace=True)
def atan2(input, other, *, out=None):  # noqa: A002
    """Elementwise ``atan(input / other)`` in the right quadrant (integers in the promoted float type); two
    tensors, as PyTorch's."""
    _two_tensors("atan2", input, other)
    if isinstance(input, Tensor) and input.dtype.category < dtypes.FLOAT:
        input = _computing(Atan2, input, other)
    return out_or(binary(Atan2, input, other), out)


def _computing(Op, input, other):
    """Tensor ``input`` in the dtype ``Op`` computes in with ``other`` (its declared promotion kind applied to
    the operands' promoted type): where an integer input becomes floating (``atan2``, ``copysign``)."""
    return cast(input, dtypes.computation_dtype(Op.promotion, result_type(input, other)))


def _integral(v):
    return v.dtype.category <= dtypes.INT if isinstance(v, Tensor) else not isinstance(v, (float, complex))


def _no_bool(op, input, other):
    """PyTorch has no bool kernel for ``op``: two bool operands raise NotImplementedError."""
    if all(isinstance(v, (bool, np.bool_)) or isinstance(v, Tensor) and v.dtype is dtypes.bool for v in (input, other)):
        raise NotImplementedError(f"{op}: \"{op}_cpu\" not implemented for 'Bool'")


def _int_zero_check(op, divisor, dividend=None):
    """PyTorch raises on integer division by zero, where the array library would give 0 with a warning.

    A Python divisor counts as the value it takes in the dividend's dtype (256 is 0 for a uint8 tensor); an empty
    dividend divides nothing (its broadcast result is empty too)."""
    if isinstance(dividend, Tensor) and not dividend.numel():
        return
    if isinstance(dividend, Tensor) and type(divisor) is int:
        divisor = dtypes.fix_scalar(divisor, dividend.dtype)
    if (divisor == 0) if not isinstance(divisor, Tensor) else bool((divisor == 0).any()):
        raise RuntimeError(f"{op}: ZeroDivisionError (integer division by zero)")


def _overload_node(r, op, other):
    """``r``, its node named as PyTorch's overload of ``op`` (fmod, remainder): ``<op>Backward1`` for a tensor
    ``other`` (keeping both operands), ``<op>Backward0`` for a number (keeping nothing: its gradient is ``g``)."""
    if isinstance(other, Tensor):
        return rename_node(r, op + "Backward1")
    return rename_node(r, op + "Backward0", ())


@export(inplace=True)
def fmod(input, other, *, out=None):  # noqa: A002
    """C-style remainder (sign of the dividend)."""
    check_tensor(input, "fmod")  # (PyTorch's fmod has no overload taking a number as input)
    _no_bool("fmod", input, other)
    if _integral(input) and _integral(other):
        _int_zero_check("fmod", other, input)
    return out_or(binary_result(_overload_node(binary(Fmod, input, other), "Fmod", other), input, other, "fmod"), out)


@export(inplace=True)
def remainder(input, other, *, out=None):  # noqa: A002
    """Python-style remainder (sign of the divisor).

    >>> import ember
    >>> ember.remainder(ember.tensor([-3, 3]), 2)
    tensor([1, 1])
    """
    _no_bool("remainder", input, other)
    if _integral(input) and _integral(other):
        _int_zero_check("remainder", other, input)
    r = binary(Remainder, input, other)
    if isinstance(input, Tensor):
        r = _overload_node(r, "Remainder", other)
    return out_or(binary_result(r, input, other, "remainder"), out)


@export(inplace=True)
def floor_divide(input, other, *, out=None):  # noqa: A002
    """``floor(input / other)``, integer for integer inputs."""
    return div(input, other, rounding_mode="floor", out=out)


@export(aliases=("clip",), inplace=True)
def clamp(input, min=None, max=None, *, out=None):  # noqa: A001,A002
    """Limit values to ``[min, max]`` (either may be None; tensors broadcast)."""
    check_tensor(input, "clamp")
    if input.dtype.category == dtypes.COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) != isinstance(max, Tensor) and min is not None and max is not None:
        raise TypeError(f"clamp(): min and max must both be Tensors or both numbers, got "
                        f"{type(min).__name__} and {type(max).__name__}")  # (PyTorch has no mixed overload)
    args = [input, min, max]
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) > 1 and any(t.dtype is not input.dtype for t in tensors):
        rt = result_type(*tensors)
        args = [cast(a, rt) if isinstance(a, Tensor) else a for a in args]
    else:
        cat = _builtin_max([dtypes.scalar_category(a) for a in (min, max) if a is not None and
                            not isinstance(a, Tensor)] + [input.dtype.category])
        if cat > input.dtype.category:
            args[0] = cast(input, dtypes.default_for_category(cat))
    x = args[0]
    if x.dtype is dtypes.bool:
        kernel = "\"clamp" if any(isinstance(a, Tensor) for a in args[1:]) else "clamp: \"clamp_scalar"
        raise NotImplementedError(f"{kernel}_{x.device.type}\" not implemented for 'Bool'")
    if x.dtype.category == dtypes.FLOAT and not isinstance(args[1], Tensor) and not isinstance(args[2], Tensor):
        lo, hi = (None if v is None else dtypes.checked_scalar(v, x.dtype) for v in args[1:])  # PyTorch's range check
        return out_or(unary(ClampScalar, x, -float("inf") if lo is None else lo, float("inf") if hi is None else hi),
                    out)
    for i, extreme in ((1, -float("inf")), (2, float("inf"))):
        b = args[i]
        if isinstance(b, Tensor):
            if b._dev is not x._dev:
                raise device_error("clamp", x, b)
        else:
            if b is None:
                if x.dtype.category >= dtypes.FLOAT:
                    b = extreme
                elif x.dtype is dtypes.bool:
                    b = i == 2
                else:
                    b = dtypes.iinfo(x.dtype).min if i == 1 else dtypes.iinfo(x.dtype).max
            args[i] = _full(b, x.dtype, x)
    return out_or(apply(Clamp, *args), out)


def _both_bool(input, bound) -> bool:
    """Whether ``clamp_min``/``clamp_max`` has a bool tensor and a bool tensor bound: PyTorch computes those (its
    Tensor overloads run the maximum/minimum kernels, which have bool code), while ``clamp`` refuses bool."""
    return isinstance(bound, Tensor) and input.dtype is dtypes.bool and bound.dtype is dtypes.bool


@export(inplace=True)
def clamp_min(input, min):  # noqa: A002
    if _both_bool(input, min):
        return maximum(input, min)
    r = clamp(input, min=min)
    return r if isinstance(min, Tensor) else rename_node(r, "ClampMinBackward0")  # PyTorch's node of the overload


@export(inplace=True)
def clamp_max(input, max):  # noqa: A002
    if _both_bool(input, max):
        return minimum(input, max)
    r = clamp(input, max=max)
    return r if isinstance(max, Tensor) else rename_node(r, "ClampMaxBackward0")


@export(inplace=True)
def lerp(input, end, weight, *, out=None):  # noqa: A002
    """``input + weight * (end - input)``; ``end`` (and a weight tensor of one or more dimensions) must have
    ``input``'s dtype, as in PyTorch.

    >>> import ember
    >>> ember.lerp(ember.tensor([0.0, 2.0]), ember.tensor([4.0, 4.0]), 0.5)
    tensor([2., 3.])
    """
    if not (isinstance(input, Tensor) and isinstance(end, Tensor)):
        raise TypeError(f"lerp(): input and end must be Tensors (the weight may be a number), got "
                        f"{type(input).__name__} and {type(end).__name__}")
    for name, v in (("end", end), ("weight", weight)):
        if isinstance(input, Tensor) and isinstance(v, Tensor) and v.dtype is not input.dtype \
                and (name == "end" or v.dim() > 0):
            raise RuntimeError(f"lerp: expected dtype {input.dtype.name} for `{name}` but got dtype {v.dtype.name}")
    if isinstance(input, Tensor) and input.dtype.category < dtypes.FLOAT:
        kind = "tensor" if isinstance(weight, Tensor) else "scalar"
        raise NotImplementedError(f"lerp: \"lerp_kernel_{kind}\" not implemented for '{_type_name(input.dtype)}'")
    if input.dtype in dtypes.REDUCED_FLOATING_TYPES:  # in float32, rounded once, as PyTorch's kernel
        w = cast(weight, dtypes.float32) if isinstance(weight, Tensor) else weight
        return out_or(lerp(cast(input, dtypes.float32), cast(end, dtypes.float32), w).to(input.dtype), out)
    if not isinstance(weight, Tensor):  # PyTorch's two-sided formula, from the nearer end (exact at weight 1)
        near = math.hypot(weight.real, weight.imag) < 0.5  # (|weight|, a complex one too)
        r = input + weight * (end - input) if near else end - (end - input) * (1 - weight)
        return out_or(keep_args(rename_node(r, "LerpBackward0"), weight=weight), out)
    weight = cast(weight, input.dtype)  # a 0-d weight of another dtype computes in input's
    return out_or(rename_node(apply(Lerp, input, end, weight), "LerpBackward1"), out)


@export(inplace=True)
def masked_fill(input, mask, value):  # noqa: A002
    """``value`` where ``mask`` is True, else ``input`` (the mask broadcasts)."""
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        if not value._rg:
            value = value.item()
    if mask._dev is not input._dev:
        raise device_error("masked_fill", input, mask)
    err = broadcast_error([tuple(input.shape), tuple(mask.shape)])
    if err:
        raise RuntimeError(f"masked_fill: mask of shape {list(mask.shape)} does not broadcast to the input's shape "
                           f"{list(input.shape)}")
    shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    if shape != tuple(input.shape):  # the input broadcasts too, as in PyTorch (not in the in-place form)
        input = input.expand(shape)
    if not isinstance(value, Tensor):
        value = dtypes.fill_value(value, input.dtype)
    return apply(MaskedFill, input, mask, value)


@export(inplace=True)
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):  # noqa: A002
    """Replace NaN and infinities with finite numbers (the dtype's extremes by default)."""
    if input.dtype.category < dtypes.FLOAT:
        return out_or(input.clone(), out)
    return out_or(unary(NanToNum, input, nan, posinf, neginf), out)


def _predicate(kernel, onnx=None, takes_out=False, real=False):
    """An elementwise bool predicate; ``takes_out``: with PyTorch's ``out=`` (signbit, isneginf, isposinf);
    ``real``: complex input refused (isneginf, isposinf)."""
    Cls = op_class(kernel, tags=("pointwise",), promotion="always_bool", onnx=onnx)

    def fn(input):  # noqa: A002
        check_tensor(input, kernel)
        if real and input.dtype.category == dtypes.COMPLEX:
            raise RuntimeError(f"{kernel} does not support complex inputs.")
        with no_grad():
            return unary(Cls, input)

    def fn_out(input, *, out=None):  # noqa: A002
        return out_or(fn(input), out)

    shown = fn_out if takes_out else fn
    shown.__name__ = shown.__qualname__ = kernel
    shown.__doc__ = f"Elementwise ``{kernel}``: a bool tensor."
    return export(shown)


isnan = _predicate("isnan", onnx="IsNaN")
isinf = _predicate("isinf")
isfinite = _predicate("isfinite")


def _logical(kernel, n, onnx):
    Cls = op_class(kernel, tags=("pointwise",), promotion="always_bool", onnx=onnx)

    def fn(input, other=None, *, out=None):  # noqa: A002
        check_tensor(input, kernel)
        with no_grad():
            args = [cast(input, dtypes.bool)]
            if n == 2:
                if not isinstance(other, Tensor):
                    raise TypeError(f"{kernel}(): argument 'other' (position 2) must be Tensor, not "
                                    f"{type(other).__name__}")
                if other._dev is not input._dev and other.dim() != 0:
                    raise device_error(kernel, input, other)
                args.append(cast(other.to(input.device), dtypes.bool))
            return out_or(apply(Cls, *args), out)

    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = f"Elementwise ``{kernel}`` (truth values of any dtype); a bool tensor."
    return export(fn, inplace=True)


logical_and = _logical("logical_and", 2, "And")
logical_or = _logical("logical_or", 2, "Or")
logical_xor = _logical("logical_xor", 2, "Xor")
logical_not = _logical("logical_not", 1, "Not")


def _integer_operands(name):
    def check(input, other):
        for v in (input, other):
            if isinstance(v, Tensor) and v.dtype.category > dtypes.INT:
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_type_name(v.dtype)}'")
            if isinstance(v, float):  # the float promotes the result to Float, which has no kernel
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Float'")

    return check


_, bitwise_and = binary_op("bitwise_and", check=_integer_operands("bitwise_and"),
                           doc="Elementwise bitwise AND of integer or bool tensors.", onnx="BitwiseAnd")
_, bitwise_or = binary_op("bitwise_or", check=_integer_operands("bitwise_or"),
                          doc="Elementwise bitwise OR of integer or bool tensors.", onnx="BitwiseOr")
_, bitwise_xor = binary_op("bitwise_xor", check=_integer_operands("bitwise_xor"),
                           doc="Elementwise bitwise XOR of integer or bool tensors.", onnx="BitwiseXor")
_, bitwise_left_shift = binary_op("bitwise_left_shift", check=_integer_operands("bitwise_left_shift"),
                                  backward_name="LshiftBackward0",
                                  doc="Elementwise ``input << other`` of integer tensors.")
_, bitwise_right_shift = binary_op("bitwise_right_shift", check=_integer_operands("bitwise_right_shift"),
                                   backward_name="RshiftBackward0",
                                   doc="Elementwise ``input >> other`` of integer tensors.")
BitwiseNot = op_class("bitwise_not", tags=("pointwise",), onnx="BitwiseNot")


@export(inplace=True)
def bitwise_not(input, *, out=None):  # noqa: A002
    """Bitwise NOT (logical NOT for bool tensors)."""
    if input.dtype.category > dtypes.INT:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{_type_name(input.dtype)}'")
    with no_grad():
        return out_or(unary(BitwiseNot, input), out)


def _invert(self):
    if self.dtype.category > dtypes.INT:
        raise TypeError(f"bitwise_not: not supported for {self.dtype} tensors")
    return bitwise_not(self)


_methods({
    "__add__": _eliding(Add, "add_into"), "__radd__": _fast(Add),
    "__mul__": _eliding(Mul, "mul_into"), "__rmul__": _fast(Mul),
    "__sub__": _eliding(_binop(_sub), "sub_into"), "__rsub__": _binop(_rsub),
    "__truediv__": _eliding(_binop(div), "div_into", dtypes.FLOAT), "__rtruediv__": _binop(_rdiv),
    "__div__": _binop(div), "__pow__": _binop(pow), "__rpow__": _binop(_rpow), "__neg__": neg,
    "__abs__": abs, "__eq__": _binop(eq), "__ne__": _binop(ne), "__lt__": _binop(lt), "__le__": _binop(le),
    "__gt__": _binop(gt), "__ge__": _binop(ge),
    "__and__": _binop(bitwise_and), "__rand__": _binop(_swap(bitwise_and)), "__or__": _binop(bitwise_or),
    "__ror__": _binop(_swap(bitwise_or)), "__xor__": _binop(bitwise_xor), "__rxor__": _binop(_swap(bitwise_xor)),
    "__invert__": _invert, "__lshift__": _binop(bitwise_left_shift), "__rshift__": _binop(bitwise_right_shift),
    "__floordiv__": _binop(floor_divide), "__rfloordiv__": _binop(_swap(floor_divide)),
    "__mod__": _binop(remainder), "__rmod__": _binop(_swap(remainder)),
})


# --------------------------------------------------------------------------- special binary functions
def _xlogy_vjp(ctx, g):
    a, b = ctx.inputs
    ga = gb = None
    if ctx.next_functions[0][0] is not None:
        ga = xlogy(g, b).masked_fill((a == 0).logical_and(b <= 0), 0)  # as PyTorch: 0 at x == 0, y <= 0
    if ctx.next_functions[1][0] is not None:
        gb = g * a / b
    return ga, gb


def name_overload(r, node: str, input, other):  # noqa: A002
    """``r`` with the node of PyTorch's overload of a binary op ``node`` (``"XlogyBackward"``): ``0`` for two
    tensors, ``1`` for a number ``input``, ``2`` for a number ``other``; the number overloads keep only their
    tensor operand (the number is an argument as given, not a saved tensor: it stays readable after backward)."""
    overload = 1 if not isinstance(input, Tensor) else 2 if not isinstance(other, Tensor) else 0
    r = rename_node(r, f"{node}{overload}", {1: (None, "other"), 2: ("self", None)}.get(overload))
    if overload:
        keep_args(r, **({"self": input} if overload == 1 else {"other": other}))
    return r


Xlogy = op_class("Xlogy", "xlogy", saves="input", vjp=_xlogy_vjp, arity=2,
                 tags=("pointwise",), promotion="int_to_float")


class LogAddExp(Op):
    """``log(exp(x) + exp(y))``; the subclass below is the same in base 2."""

    backward_name = "LogaddexpBackward0"

    tags = ("pointwise",)
    promotion = "float_only"
    save_inputs = True
    kernel = "logaddexp"

    @staticmethod
    def power(t):
        return t.exp()

    @staticmethod
    def forward(ctx, k, x, y):
        return k[type(ctx).kernel](x, y)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        power = type(ctx).power
        return g / (1 + power(b - a)), g / (1 + power(a - b))


class LogAddExp2(LogAddExp):
    backward_name = "Logaddexp2Backward0"
    kernel = "logaddexp2"

    @staticmethod
    def power(t):
        return 2 ** t


def _hypot_vjp(ctx, g):
    a, b = ctx.inputs
    return g * a / ctx.output, g * b / ctx.output


Hypot = op_class("Hypot", "hypot", saves="both", vjp=_hypot_vjp, arity=2, tags=("pointwise",), promotion="float_only")


@export(to=SPECIAL, inplace=True)
def xlogy(input, other, *, out=None):  # noqa: A002
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); integers compute in the
    default float dtype.

    >>> import ember
    >>> ember.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, 1.0]))
    tensor([0., 0.])
    """
    given = input, other  # (PyTorch's node depends on which operands were numbers)
    if isinstance(input, Tensor) or isinstance(other, Tensor):
        rt = result_type(input, other)
        if rt.category == dtypes.COMPLEX:  # (PyTorch's kernel has no complex code)
            dev = (input if isinstance(input, Tensor) else other).device.type
            raise NotImplementedError(f"\"xlogy_{dev}\" not implemented for '{_type_name(rt)}'")
        d = dtypes.computation_dtype(Xlogy.promotion, rt)
        if d is not rt:  # integer operands compute in the default float dtype
            input, other = (cast(v, d) if isinstance(v, Tensor) else float(v) for v in (input, other))
        # a number operand as a 0-d tensor of the other's dtype: the kernel's log of it keeps that dtype
        ref = input if isinstance(input, Tensor) else other
        input, other = (_scalar_like(v, ref, ref) if isinstance(v, _SCALARS) else v for v in (input, other))
    r = binary_result(binary(Xlogy, input, other), input, other, "xlogy")
    numbers = not all(isinstance(v, Tensor) for v in given)  # (two tensors: the op's own XlogyBackward0)
    return out_or(name_overload(r, "XlogyBackward", *given) if numbers else r, out)


def _float_tensors(Cls, name):
    """A binary op on two tensors of a floating result type (PyTorch has no integer kernel for it)."""

    def fn(input, other, *, out=None):  # noqa: A002
        for arg, v, pos in (("input", input, 1), ("other", other, 2)):
            if not isinstance(v, Tensor):
                raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")
        dtypes.check_kind(Cls.promotion, name, result_type(input, other), input.device.type)
        return out_or(binary(Cls, input, other), out)

    fn.__name__ = fn.__qualname__ = name
    return export(fn, inplace=name in ("hypot", "nextafter"))


logaddexp = _float_tensors(LogAddExp, "logaddexp")
logaddexp.__doc__ = """``log(exp(input) + exp(other))`` without overflow.

    >>> import ember
    >>> ember.logaddexp(ember.tensor([1000.0]), ember.tensor([0.0]))
    tensor([1000.])
    """
logaddexp2 = _float_tensors(LogAddExp2, "logaddexp2")
logaddexp2.__doc__ = """``log2(2 ** input + 2 ** other)`` without overflow.

    >>> import ember
    >>> ember.logaddexp2(ember.tensor([3.0]), ember.tensor([3.0]))
    tensor([4.])
    """
hypot = _float_tensors(Hypot, "hypot")
hypot.__doc__ = """``sqrt(input ** 2 + other ** 2)`` without overflow.

    >>> import ember
    >>> ember.hypot(ember.tensor([3.0]), ember.tensor([4.0]))
    tensor([5.])
    """


@export(to=SPECIAL, inplace=True)
def logit(input, eps=None, *, out=None):  # noqa: A002
    """``log(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]`` (zero gradient outside).

    >>> import ember
    >>> ember.logit(ember.tensor([0.5, 0.0]), eps=0.25)
    tensor([ 0.0000, -1.0986])
    """
    check_tensor(input, "logit")
    dtypes.check_kernel("logit_{device}", input, dtypes.REAL_TYPES, empty_ok=False)  # (an elementwise kernel)
    if input.dtype.category < dtypes.FLOAT:
        input = cast(input, dtypes.get_default_dtype())
    z = input if eps is None else clamp(input, eps, 1 - eps)
    return out_or(composite_node(log(z / (1 - z)), "LogitBackward0"), out)


def _addc(name, input, tensor1, tensor2, value):
    """Check the operands of addcmul/addcdiv; the ``value`` to use (an integer for integer results)."""
    for arg, v, pos in (("input", input, 1), ("tensor1", tensor1, 2), ("tensor2", tensor2, 3)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")
    rt = result_type(input, tensor1, tensor2)
    if rt is dtypes.bool:
        raise NotImplementedError(f'"{name}_{input.device.type}_out" not implemented for \'Bool\'')
    if name == "addcdiv" and all(t.dtype.category <= dtypes.INT for t in (tensor1, tensor2)):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                           "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    return rt, int(value) if rt.category < dtypes.FLOAT else value  # PyTorch converts value to the result type


def _addc_pair(name, combine):
    """``name(input, tensor1, tensor2, *, value=1, out=None)``: ``input + combine(value * tensor1, tensor2)``,
    and its in-place method (one in-place add of the combined term)."""
    node = name.capitalize() + "Backward0"  # the node PyTorch's fused op leaves

    def term_of(input, tensor1, tensor2, value):  # noqa: A002
        rt, value = _addc(name, input, tensor1, tensor2, value)
        term = combine(tensor1 if value == 1 else tensor1.to(rt), tensor2)
        return rt, term if value == 1 else term * value, term  # value * (tensor1 op tensor2) in rt, as PyTorch's

    def kept(r, tensor1, tensor2):  # what PyTorch's node keeps: each operand the other's gradient reads
        return keep_saved(r, tensor1 if tensor2.requires_grad else None,  # (addcdiv's divisor for both)
                          tensor2 if tensor1.requires_grad or name == "addcdiv" and tensor2.requires_grad else None)

    def fn(input, tensor1, tensor2, *, value=1, out=None):  # noqa: A002
        _, term, pair = term_of(input, tensor1, tensor2, value)
        # (the operands PyTorch's node saves: those the node combining them keeps, by PyTorch's names)
        saved = {} if pair._fn is None else {"tensor1": SavedOf(pair._fn, 0), "tensor2": SavedOf(pair._fn, 1)}
        return out_or(kept(keep_args(rename_node(add(input, term), node), value=value, **saved), tensor1, tensor2),
                      out)

    def method(self, tensor1, tensor2, *, value=1):
        check_inplace(self, name + "_")
        if self._rg and STATE.enabled:  # operands sharing self's storage: their values before the write
            tensor1, tensor2 = (t.clone() if isinstance(t, Tensor) and _vowner(t) is _vowner(self) else t
                                for t in (tensor1, tensor2))
        rt, term, _ = term_of(self, tensor1, tensor2, value)
        dtypes.check_out_cast(name + "_", rt, self.dtype)
        if term.dim() > self.dim() or any(t not in (1, s) for t, s in zip(reversed(term.shape), reversed(self.shape))):
            raise RuntimeError(f"{name}_: output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(term.shape)}")
        return kept(composite_node(self.add_(term), node), tensor1, tensor2)

    fn.__name__ = fn.__qualname__ = name
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place ``{name}``; returns self."
    export(method, name + "_", to=("Tensor",))
    return export(fn), method


addcmul, addcmul_ = _addc_pair("addcmul", mul)
addcmul.__doc__ = """``input + value * tensor1 * tensor2`` (broadcasting).

    >>> import ember
    >>> ember.addcmul(ember.tensor([1.0]), ember.tensor([2.0]), ember.tensor([3.0]), value=0.5)
    tensor([4.])
    """
addcdiv, addcdiv_ = _addc_pair("addcdiv", div)
addcdiv.__doc__ = """``input + value * tensor1 / tensor2`` (broadcasting; not both of tensor1 and tensor2 integral).

    >>> import ember
    >>> ember.addcdiv(ember.tensor([1.0]), ember.tensor([2.0]), ember.tensor([4.0]), value=2)
    tensor([2.])
    """


# --------------------------------------------------------------------------- more pointwise math
@export(inplace=False)
def positive(input):  # noqa: A002
    """``input`` itself (PyTorch's unary ``+``); refused for bool tensors."""
    check_tensor(input, "positive")
    if input.dtype is dtypes.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@export(to=("torch",))
def rsub(input, other, *, alpha=1):  # noqa: A002
    """``other - alpha * input``.

    >>> import ember
    >>> ember.rsub(ember.tensor([1.0]), 3, alpha=2)
    tensor([1.])
    """
    check_tensor(input, "rsub")
    r = sub(other, input, alpha=alpha)
    return rename_node(r, "RsubBackward0" if isinstance(other, Tensor) else "RsubBackward1")


signbit = _predicate("signbit", takes_out=True)
isneginf = _predicate("isneginf", takes_out=True, real=True)
isposinf = _predicate("isposinf", takes_out=True, real=True)
isreal = _predicate("isreal")


def _fmax_vjp(ctx, g):
    a, b = ctx.inputs
    first = (a >= b).logical_or(b.isnan())  # ties and a NaN other: the gradient goes to input
    return g.masked_fill(first.logical_not(), 0), g.masked_fill(first, 0)


def _fmin_vjp(ctx, g):
    a, b = ctx.inputs
    first = (a <= b).logical_or(b.isnan())
    return g.masked_fill(first.logical_not(), 0), g.masked_fill(first, 0)


Fmax = op_class("Fmax", "fmax", saves="input", vjp=_fmax_vjp, arity=2, tags=("pointwise",))
Fmin = op_class("Fmin", "fmin", saves="input", vjp=_fmin_vjp, arity=2, tags=("pointwise",))


def _two_tensors(name, a, b):
    for arg, v, pos in (("input", a, 1), ("other", b, 2)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")


@export(inplace=False)
def fmax(input, other, *, out=None):  # noqa: A002
    """Elementwise maximum ignoring NaN: the other value where one is NaN (NaN only where both are).

    >>> import ember
    >>> ember.fmax(ember.tensor([1.0, float("nan")]), ember.tensor([float("nan"), 2.0]))
    tensor([1., 2.])
    """
    _two_tensors("fmax", input, other)
    _real_operands("fmax", input, other)
    return out_or(binary(Fmax, input, other), out)


def _real_operands(name, a, b):
    if a.dtype.category == dtypes.COMPLEX or b.dtype.category == dtypes.COMPLEX:
        raise RuntimeError(f"{name} not implemented for complex tensors.")


@export(inplace=False)
def fmin(input, other, *, out=None):  # noqa: A002
    """Elementwise minimum ignoring NaN: the other value where one is NaN (NaN only where both are).

    >>> import ember
    >>> ember.fmin(ember.tensor([1.0, float("nan")]), ember.tensor([float("nan"), 2.0]))
    tensor([1., 2.])
    """
    _two_tensors("fmin", input, other)
    _real_operands("fmin", input, other)
    return out_or(binary(Fmin, input, other), out)


def _copysign_vjp(ctx, g):
    a, b = ctx.inputs
    ga = gb = None
    if ctx.next_functions[0][0] is not None:
        zero = a == 0
        ratio = where(zero, a.new_zeros(()), ctx.output / where(zero, a.new_ones(()), a))  # +-1, 0 at a == 0
        ga = g * ratio
    if ctx.next_functions[1][0] is not None:
        gb = _no_slope(g)
    return ga, gb


Copysign = op_class("Copysign", "copysign", saves="both", vjp=_copysign_vjp, arity=2,
                    tags=("pointwise",), promotion="int_to_float", save_for=((0,), ()), saved_names=("self",))


@export(inplace=True)
def copysign(input, other, *, out=None):  # noqa: A002
    """The magnitude of ``input`` with the sign of ``other``; integers compute in the default float dtype.

    >>> import ember
    >>> ember.copysign(ember.tensor([1.0, -2.0]), -1)
    tensor([-1., -2.])
    """
    check_tensor(input, "copysign")
    if not isinstance(other, (Tensor, int, float, bool, complex)):
        raise TypeError(f"copysign(): argument 'other' (position 2) must be Tensor or Number, not "
                        f"{type(other).__name__}")
    input = _computing(Copysign, input, other)
    dtypes.check_kernel("copysign_{device}", input, dtypes.FLOATING_AND_HALF, empty_ok=False)  # (complex operands)
    if not isinstance(other, Tensor):  # (PyTorch's overload of a number leaves its own node)
        return out_or(rename_node(binary(Copysign, input, _full(float(other), input.dtype, input)),
                                  "CopysignBackward1"), out)
    return out_or(binary(Copysign, input, other), out)


class _NoDerivative(Op):
    """An op PyTorch records without a derivative formula: its result requires grad, its node is PyTorch's
    ``NotImplemented`` and a backward through it raises."""

    def name(self) -> str:
        return "torch::autograd::NotImplemented"

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.op_name} is not implemented")


Heaviside = op_class("heaviside", arity=2, tags=("pointwise",), base=_NoDerivative, backward_name="NotImplemented")


@export(inplace=True)
def heaviside(input, values, *, out=None):  # noqa: A002
    """The Heaviside step: 0 where ``input < 0``, ``values`` where it is 0, 1 where it is > 0 (no derivative).

    >>> import ember
    >>> ember.heaviside(ember.tensor([-1.0, 0.0, 2.0]), ember.tensor([0.5]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    for arg, v, pos in (("input", input, 1), ("values", values, 2)):
        if not isinstance(v, Tensor):
            raise TypeError(f"heaviside(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    if input.dtype.category == dtypes.COMPLEX or values.dtype.category == dtypes.COMPLEX:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if input.dtype is not values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes "
                           f"({input.dtype} and {values.dtype}).")
    return out_or(binary(Heaviside, input, values), out)


def _integral_tensors(name):
    def check(input, other):
        _two_tensors(name, input, other)
        rt = result_type(input, other)
        if rt.category != dtypes.INT:
            raise NotImplementedError(f'"{name}_{input.device.type}" not implemented for \'{_type_name(rt)}\'')

    return check


_, gcd = binary_op("gcd", check=_integral_tensors("gcd"),
                   doc="Elementwise greatest common divisor of integer tensors (non-negative).")
_, lcm = binary_op("lcm", check=_integral_tensors("lcm"),
                   doc="Elementwise least common multiple of integer tensors (non-negative).")


class Frexp(Op):
    """Mantissa in [0.5, 1) and int32 exponent: ``input = mantissa * 2 ** exponent``."""

    tags = ("pointwise",)
    nondiff_outputs = (1,)
    saved_args = {"exponent": lambda n: _wrap(n.exponent, n._out_meta[1][2])}  # (as PyTorch's node: the output)
    _saved = ()  # (see Getitem: the exponent counts as saved, freed by the backward)

    @staticmethod
    def forward(ctx, k, x):
        m, e = k["frexp"](x)
        ctx.scale = k["astype"](k["exp2"](k["neg"](k["astype"](e, x.dtype))), x.dtype)  # 2 ** -exponent
        ctx.exponent = e
        return m, e

    @staticmethod
    def backward(ctx, g, _ge):
        return g * _wrap(ctx.scale, g._dev)


FrexpResult = namedtuple("frexp", ["mantissa", "exponent"])


@export(inplace=False)
def frexp(input, *, out=None):  # noqa: A002
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``; a floating input only.

    >>> import ember
    >>> ember.frexp(ember.tensor([3.0])).exponent
    tensor([2], dtype=ember.int32)
    """
    check_tensor(input, "frexp")
    if input.dtype.category != dtypes.FLOAT:
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype}")
    m, e = unary(Frexp, input)
    if out is not None:
        out_or(m, out[0])
        out_or(e, out[1])
        return FrexpResult(*out)
    return FrexpResult(m, e)


@export(inplace=True)
def ldexp(input, other, *, out=None):  # noqa: A002
    """``input * 2 ** other``; integers compute in the default float dtype.

    >>> import ember
    >>> ember.ldexp(ember.tensor([1.0]), ember.tensor([3]))
    tensor([8.])
    """
    _two_tensors("ldexp", input, other)
    r = mul(input, pow(2.0, other))
    if input.is_floating_point() and r.dtype != input.dtype and not (other.is_floating_point() or other.is_complex()):
        r = r.to(input.dtype)  # integer exponents: float16/bfloat16 stay so (computed in float32, one rounding)
    return out_or(composite_node(r, "LdexpBackward0"), out)


@export(inplace=False)
def float_power(input, exponent, *, out=None):  # noqa: A002
    """``input ** exponent`` computed in float64 (either may be a number).

    >>> import ember
    >>> ember.float_power(ember.tensor([2]), 2)
    tensor([4.], dtype=ember.float64)
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(f"float_power(): expected a Tensor operand, got {type(input).__name__} and "
                        f"{type(exponent).__name__}")
    d = _float_power_dtype(input, exponent)
    num = complex if d is dtypes.complex128 else float
    a, b = (cast(v, d) if isinstance(v, Tensor) else num(v) for v in (input, exponent))
    return out_or(pow(a, b), out)


def _float_power_dtype(*operands):
    """float_power's dtype: complex128 where an operand is complex, float64 otherwise."""
    complex_in = any(v.dtype.category == dtypes.COMPLEX if isinstance(v, Tensor) else isinstance(v, complex)
                     for v in operands)
    return dtypes.complex128 if complex_in else dtypes.float64


def _float_power_into(input, exponent):  # noqa: A002
    d = _float_power_dtype(input, exponent)
    if input.dtype is not d:
        raise RuntimeError(f"the base given to float_power_ has dtype {_type_name(input.dtype)} but the "
                           f"operation's result requires dtype {_type_name(d)}")
    return float_power(input, exponent)


def _nextafter_vjp(ctx, g):
    ctx.check_saved()
    return g, _no_slope(g)  # as PyTorch: the step itself has no slope


Nextafter = op_class("Nextafter", "nextafter", saves="input", save_for=((0,), (0,)), vjp=_nextafter_vjp, arity=2,
                     tags=("pointwise",), promotion="float_only")  # (keeps both operands, as PyTorch's node)
nextafter = _float_tensors(Nextafter, "nextafter")
nextafter.__doc__ = """The next representable floating value after ``input`` toward ``other``.

    >>> import ember
    >>> bool(ember.nextafter(ember.tensor([1.0]), ember.tensor([2.0])) > 1)
    True
    """
# in-place forms of the aliases whose base has a hand-written one (``div_``, ``mul_``, ``sub_`` in ops.inplace),
# and the in-place operators
for _name, _fn in (("divide", div), ("true_divide", div), ("multiply", mul), ("subtract", sub),
                   ("float_power", _float_power_into)):
    export(inplace_form(_fn, _name), _name + "_", to=("Tensor",))
_methods({"__i" + op[2:]: NAMESPACES["Tensor"][base + "_"] for op, base in (
    ("__pow__", "pow"), ("__floordiv__", "floor_divide"), ("__mod__", "remainder"), ("__and__", "bitwise_and"),
    ("__or__", "bitwise_or"), ("__xor__", "bitwise_xor"))})
