"""Pointwise ops: forward on arrays, backward with ember ops, side by side.

Binary ops broadcast and promote in :func:`ember.dispatch.binary`; the
engine reduces a broadcast gradient back to its input's shape, so no op
here undoes broadcasting by hand.
"""
from __future__ import annotations

from .. import dtypes
from ..autograd.function import Op
from ..dispatch import apply, binary, cast, unary
from ..tensor import Tensor

# --------------------------------------------------------------------------- arithmetic


__all__ = ["abs", "absolute", "add", "div", "divide", "eq", "exp", "ge", "greater", "greater_equal", "gt", "le", "less",
           "less_equal", "log", "lt", "mul", "multiply", "ne", "neg", "negative", "not_equal", "pow", "relu", "sign",
           "sqrt", "sub", "subtract", "true_divide", "where"]


class Add(Op):
    @staticmethod
    def forward(ctx, k, x, y):
        return k["add"](x, y)

    @staticmethod
    def backward(ctx, g):
        return g, g


class AddScaled(Op):
    """``x + alpha * y``."""

    backward_name = "AddBackward0"

    @staticmethod
    def forward(ctx, k, x, y, alpha):
        ctx.alpha = alpha
        return k["add"](x, k["mul"](y, alpha))

    @staticmethod
    def backward(ctx, g):
        return g, g * ctx.alpha


class Sub(Op):
    @staticmethod
    def forward(ctx, k, x, y):
        return k["sub"](x, y)

    @staticmethod
    def backward(ctx, g):
        return g, -g


class Mul(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, y):
        return k["mul"](x, y)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        return g * b, g * a


class Div(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, y):
        return k["div"](x, y)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        gb = None
        if isinstance(b, Tensor) and ctx.next_functions[1][0] is not None:
            gb = -g * a / (b * b)
        return g / b, gb


class Neg(Op):
    @staticmethod
    def forward(ctx, k, x):
        return k["neg"](x)

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, y):
        return k["pow"](x, y)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        ga = gb = None
        if ctx.next_functions[0][0] is not None:
            ga = g * b * a ** (b - 1) if not _is_zero(b) else g * 0
        if isinstance(b, Tensor) and ctx.next_functions[1][0] is not None:
            gb = g * (a ** b) * where(a > 0, a, 1).log() if isinstance(a, Tensor) else g * (a ** b) * _log_scalar(a)
        return ga, gb


def _is_zero(b):
    return not isinstance(b, Tensor) and b == 0


def _log_scalar(a):
    import math

    return math.log(a) if a > 0 else 0.0


class Exp(Op):
    save_output = True

    @staticmethod
    def forward(ctx, k, x):
        return k["exp"](x)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.output


class Log(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x):
        return k["log"](x)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.inputs
        return g / a


class Sqrt(Op):
    save_output = True

    @staticmethod
    def forward(ctx, k, x):
        return k["sqrt"](x)

    @staticmethod
    def backward(ctx, g):
        return g / (2 * ctx.output)


class Abs(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x):
        return k["abs"](x)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.inputs
        return g * a.sign()


class Sign(Op):
    @staticmethod
    def forward(ctx, k, x):
        return k["sign"](x)

    @staticmethod
    def backward(ctx, g):
        return g * 0


class Relu(Op):
    save_output = True

    @staticmethod
    def forward(ctx, k, x):
        return k["relu"](x)

    @staticmethod
    def backward(ctx, g):
        return unary(ThresholdBackward, g, ctx.output._data)


class ThresholdBackward(Op):
    """``g`` where ``out > 0``, else 0: the gradient of relu (and its own gradient)."""

    @staticmethod
    def forward(ctx, k, g, out):
        ctx.out = out
        return k["relu_backward"](g, out)

    @staticmethod
    def backward(ctx, gg):
        return unary(ThresholdBackward, gg, ctx.out)


class Where(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, c, x, y):
        return k["where"](c, x, y)

    @staticmethod
    def backward(ctx, g):
        c = ctx.inputs[0]
        zero = g.new_zeros(())
        return None, where(c, g, zero), where(c, zero, g)


class Cast(Op):
    """A dtype conversion; the gradient converts back."""

    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, k, x, xp_dtype):
        return k["astype"](x, xp_dtype)

    @staticmethod
    def backward(ctx, g):
        return g, None


# --------------------------------------------------------------------------- public functions
def _check(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return x


def _result(r, a, b, op):
    if r is NotImplemented:
        raise TypeError(f"{op}(): unsupported operand types {type(a).__name__} and {type(b).__name__}")
    return r


def add(input, other, *, alpha=1, out=None):  # noqa: A002
    """``input + alpha * other`` with broadcasting and type promotion.

    >>> import ember
    >>> ember.add(ember.tensor([1, 2]), 1.5)
    tensor([2.5000, 3.5000])
    """
    if alpha != 1:
        if not isinstance(input, Tensor) or not isinstance(other, Tensor):
            return add(input, mul(other, alpha), out=out)
        r = _result(binary(AddScaled, input, other, alpha), input, other, "add")
    else:
        r = _result(binary(Add, input, other), input, other, "add")
    return _out(r, out)


def sub(input, other, *, alpha=1, out=None):  # noqa: A002
    """``input - alpha * other``."""
    if isinstance(input, Tensor) and input.dtype is dtypes.bool and isinstance(other, Tensor) \
            and other.dtype is dtypes.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if alpha != 1:
        other = mul(other, alpha)
    return _out(_result(binary(Sub, input, other), input, other, "sub"), out)


def mul(input, other, *, out=None):  # noqa: A002
    """Elementwise product with broadcasting."""
    return _out(_result(binary(Mul, input, other), input, other, "mul"), out)


def div(input, other, *, rounding_mode=None, out=None):  # noqa: A002
    """True division (integers divide to the default float dtype); ``rounding_mode`` 'trunc' or 'floor'."""
    if rounding_mode is not None:
        from . import _more_div

        return _out(_more_div.div_rounding(input, other, rounding_mode), out)
    a_int = not isinstance(input, Tensor) or input.dtype.category < dtypes.FLOAT
    b_int = not isinstance(other, Tensor) or other.dtype.category < dtypes.FLOAT
    if a_int and b_int:
        if isinstance(input, Tensor) and (not isinstance(other, Tensor) or isinstance(other, (int, bool))):
            if isinstance(other, float):
                pass
            else:
                input = cast(input, dtypes.get_default_dtype())
        elif isinstance(other, Tensor) and not isinstance(input, float):
            other = cast(other, dtypes.get_default_dtype())
        if isinstance(input, Tensor) and isinstance(other, Tensor):
            input = cast(input, dtypes.get_default_dtype())
    return _out(_result(binary(Div, input, other), input, other, "div"), out)


true_divide = divide = div
multiply = mul
subtract = sub


def neg(input, *, out=None):  # noqa: A002
    """``-input``."""
    _check(input, "neg")
    if input.dtype is dtypes.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
    return _out(unary(Neg, input), out)


negative = neg


def pow(input, exponent, *, out=None):  # noqa: A001,A002
    """``input ** exponent`` elementwise."""
    return _out(_result(binary(Pow, input, exponent), input, exponent, "pow"), out)


def _float_unary(Cls, name):
    def fn(input, *, out=None):  # noqa: A002
        _check(input, name)
        if input.dtype.category < dtypes.FLOAT:
            input = cast(input, dtypes.get_default_dtype())
        return _out(unary(Cls, input), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``; integer inputs compute in the default float dtype."
    return fn


exp = _float_unary(Exp, "exp")
log = _float_unary(Log, "log")
sqrt = _float_unary(Sqrt, "sqrt")


def abs(input, *, out=None):  # noqa: A001,A002
    """Elementwise absolute value."""
    return _out(unary(Abs, _check(input, "abs")), out)


absolute = abs


def sign(input, *, out=None):  # noqa: A002
    """Elementwise sign (-1, 0 or 1)."""
    return _out(unary(Sign, _check(input, "sign")), out)


def relu(input):  # noqa: A002
    """``max(input, 0)`` elementwise."""
    return unary(Relu, _check(input, "relu"))


def where(condition, input=None, other=None):  # noqa: A002
    """``input`` where ``condition`` holds, else ``other``; with one argument, ``nonzero(as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, Tensor) or condition.dtype is not dtypes.bool:
        raise RuntimeError(f"where(): expected condition to be a bool tensor, got "
                           f"{condition.dtype if isinstance(condition, Tensor) else type(condition).__name__}")
    ref = input if isinstance(input, Tensor) else other
    if not isinstance(input, Tensor):
        input = _scalar_like(input, ref, other)
    if not isinstance(other, Tensor):
        other = _scalar_like(other, ref, input)
    if input.dtype is not other.dtype:
        from ..dispatch import promote

        input, other = promote("where", input, other)
    if condition._dev is not input._dev and condition._data.ndim == 0:
        condition = condition.to(input.device)
    return apply(Where, condition, input, other)


def _scalar_like(v, ref, other):
    from .creation import tensor

    d = ref.dtype if dtypes.scalar_category(v) <= ref.dtype.category else \
        dtypes.default_for_category(dtypes.scalar_category(v))
    return tensor(v, dtype=d, device=ref.device)


def _cmp(Cls, name, kernel):
    class Cmp(Op):
        backward_name = name

        @staticmethod
        def forward(ctx, k, x, y):
            return k[kernel](x, y)

    def fn(input, other, *, out=None):  # noqa: A002
        from ..autograd.grad_mode import no_grad

        with no_grad():
            r = binary(Cmp, input, other)
        return _out(_result(r, input, other, kernel), out)

    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = f"Elementwise ``{kernel}`` comparison; a bool tensor, never differentiable."
    return fn


eq = _cmp(None, "EqBackward0", "eq")
ne = _cmp(None, "NeBackward0", "ne")
lt = _cmp(None, "LtBackward0", "lt")
le = _cmp(None, "LeBackward0", "le")
gt = _cmp(None, "GtBackward0", "gt")
ge = _cmp(None, "GeBackward0", "ge")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _out(r, out):
    if out is None:
        return r
    from .inplace import copy_into_out

    return copy_into_out(out, r)


# --------------------------------------------------------------------------- Tensor methods
def _rsub(self, other):
    return sub(other, self)


def _rdiv(self, other):
    return div(other, self)


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


def _fast(Cls):
    def method(self, other):
        return binary(Cls, self, other)

    return method


METHODS = {
    "__add__": _fast(Add), "__radd__": _fast(Add), "__mul__": _fast(Mul), "__rmul__": _fast(Mul),
    "__sub__": _binop(sub), "__rsub__": _binop(_rsub), "__truediv__": _binop(div), "__rtruediv__": _binop(_rdiv),
    "__div__": _binop(div), "__pow__": _binop(pow), "__rpow__": _binop(_rpow), "__neg__": neg,
    "__abs__": abs, "__eq__": _binop(eq), "__ne__": _binop(ne), "__lt__": _binop(lt), "__le__": _binop(le),
    "__gt__": _binop(gt), "__ge__": _binop(ge),
    "add": add, "sub": sub, "mul": mul, "div": div, "true_divide": div, "divide": div, "multiply": mul,
    "subtract": sub, "neg": neg, "negative": neg, "pow": pow, "exp": exp, "log": log, "sqrt": sqrt, "abs": abs,
    "absolute": abs, "sign": sign, "relu": relu, "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    "greater": gt, "less": lt, "greater_equal": ge, "less_equal": le, "not_equal": ne,
    "where": lambda self, condition, other: where(condition, self, other),
}
