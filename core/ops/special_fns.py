"""Special functions: the gamma family, Bessel functions, orthogonal polynomials and their kin.

``ember.special`` shows all of them; those PyTorch also has at top level (``lgamma``, ``digamma``,
``polygamma``, ``mvlgamma``, ``i0``, ``igamma``/``igammac``, ``sinc``) are ``ember.*`` and Tensor
methods too, with their in-place forms.  Gradients exist exactly where PyTorch has them: the
Bessel functions of ``torch.special`` (``bessel_j0``, ``modified_bessel_i0``, ...), ``airy_ai`` and
the polynomial families carry none there, so they carry none here.  The kernels are in
:mod:`ember.kernels.special`.
"""
from __future__ import annotations

import math

from .. import dtypes
from ..autograd.function import composite_node, keep_saved, rename_node
from ..dispatch import binary, cast, result_type, unary
from ..writes import out_or
from ..registry import NAMESPACES, _type_name, binary_result, check_tensor, export, inplace_form, op_class, unary_op
from ..tensor import Tensor
from .creation import arange, full
from .pointwise import SPECIAL, exp, log, name_overload, where

ONLY = ("special",)        # torch.special only
TOP = ("torch", "Tensor")  # ember.* and Tensor methods


def _safe(x, bad):
    """``x`` with 1 where ``bad``: a denominator whose masked entries must not make NaN gradients."""
    return where(bad, x.new_ones(()), x)


# --------------------------------------------------------------------------- the gamma family
def _polygamma_vjp(ctx, g):
    (x,) = ctx.inputs
    return g * unary(Polygamma, x, ctx.n + 1)


Polygamma = op_class("Polygamma", "polygamma", saves="input", vjp=_polygamma_vjp, params=("n",), tags=("pointwise",))
Polygamma.saved_args = {"n": "n"}

Lgamma, lgamma = unary_op("lgamma", lambda g, x, y: g * digamma(x))
export(lgamma, "gammaln", to=ONLY)
Digamma, digamma = unary_op("digamma", lambda g, x, y: g * unary(Polygamma, x, 1), to=SPECIAL,
                            kernel_dtypes=("digamma", dtypes.REAL_TYPES))
export(digamma, "psi", to=ONLY)


def _float_input(input, name):  # noqa: A002
    check_tensor(input, name)
    return input if input.dtype.category >= dtypes.FLOAT else cast(input, dtypes.get_default_dtype())


@export(to=("torch", "special"))
def polygamma(n, input, *, out=None):  # noqa: A002
    """The ``n``-th derivative of :func:`digamma` (``n >= 0``); integers compute in the default float dtype.

    >>> import ember
    >>> ember.polygamma(1, ember.tensor([1.0]))
    tensor([1.6449])
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _float_input(input, "polygamma")
    return out_or(composite_node(digamma(x), "PolygammaBackward0") if n == 0 else unary(Polygamma, x, n), out)


@export(name="polygamma", to=("Tensor",))
def _polygamma_method(self, n):
    return polygamma(n, self)


_polygamma_inplace = inplace_form(_polygamma_method, "polygamma")


@export(name="polygamma_", to=("Tensor",))
def _polygamma_(self, n):
    """In-place :func:`polygamma`; returns self.  Its node is PyTorch's in-place overload's, PolygammaBackward1."""
    r = _polygamma_inplace(self, n)
    fn = r._fn
    if fn is not None and type(fn).__name__ == "PolygammaBackward0":  # (a view's history is its base's copy)
        (composite_node if getattr(fn, "composite", False) else rename_node)(r, "PolygammaBackward1")
    return r


@export(to=TOP, inplace=True)
def mvlgamma(input, p, *, out=None):  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``:
    ``sum(lgamma(input - j / 2) for j < p) + p (p - 1) / 4 log(pi)`` (defined for ``input > (p - 1) / 2``;
    PyTorch no longer checks, and neither does this).

    >>> import ember
    >>> ember.mvlgamma(ember.tensor([2.5]), 2)
    tensor([0.8570])
    """
    check_tensor(input, "mvlgamma")
    if input.dtype is dtypes.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float_input(input, "mvlgamma")
    offsets = arange(p, dtype=x.dtype, device=x._dev) * -0.5
    r = lgamma(x.unsqueeze(-1) + offsets).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    return out_or(keep_saved(composite_node(r, "MvlgammaBackward0"), input), out)  # (PyTorch's node keeps input)


export(mvlgamma, "multigammaln", to=ONLY)


# --------------------------------------------------------------------------- incomplete gamma and zeta
def _refuse_grad(ctx, which, message):
    """PyTorch has no gradient for this input: refuse where one is asked for."""
    if ctx.next_functions[which][0] is not None:
        raise RuntimeError(message)


def _gammainc_vjp(ctx, g):
    a, x = ctx.inputs
    _refuse_grad(ctx, 0, "the derivative for 'igamma: input' is not implemented.")
    return None, g * exp((a - 1) * log(x) - x - lgamma(a))


def _gammaincc_vjp(ctx, g):
    a, x = ctx.inputs
    _refuse_grad(ctx, 0, "the derivative for 'igammac: input' is not implemented.")
    return None, -g * exp((a - 1) * log(x) - x - lgamma(a))


def _zeta_vjp(ctx, g):
    s, q = ctx.inputs
    _refuse_grad(ctx, 0, "the derivative for 'zeta' is not implemented.")
    return None, -g * s * zeta(s + 1, q)


Gammainc = op_class("Gammainc", "gammainc", saves="input", vjp=_gammainc_vjp, backward_name="IgammaBackward0",
                    arity=2, tags=("pointwise",))
Gammaincc = op_class("Gammaincc", "gammaincc", saves="input", vjp=_gammaincc_vjp, backward_name="IgammacBackward0",
                     arity=2, tags=("pointwise",))


def _float_operands(name, a, b, tensors=False, kernel_name=None, supported=dtypes.REAL_TYPES):
    """The two operands as tensors of one floating dtype (integers compute in the default float dtype).

    ``tensors``: both must be tensors of a floating result type, as PyTorch's incomplete gamma wants
    (its error names the kernel, ``kernel_name``); ``supported``: the result types PyTorch's kernel computes.
    """
    for arg, v, pos in (("input", a, 1), ("other", b, 2)):
        if not isinstance(v, Tensor) and (tensors or not isinstance(v, (int, float, bool, complex))):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name}(): expected at least one Tensor operand, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    rt = result_type(a, b)
    ref = a if isinstance(a, Tensor) else b
    if rt not in supported:
        raise NotImplementedError(f'"{kernel_name or name}_{ref.device.type}" not implemented for '
                                  f'\'{_type_name(rt)}\'')
    if rt.category < dtypes.FLOAT:
        if tensors:
            raise NotImplementedError(f'"{kernel_name or name}_{a.device.type}" not implemented for '
                                      f'\'{_type_name(rt)}\'')
        rt = dtypes.get_default_dtype()
    return tuple(cast(v, rt) if isinstance(v, Tensor) else full((), v, dtype=rt, device=ref._dev) for v in (a, b))


# the node PyTorch's torch.special function leaves, numbered by overload
_SPECIAL_NODES = {"zeta": "SpecialZetaBackward", "xlog1py": "SpecialXlog1PyBackward"}


def _binary_float(Cls, name, *, tensors=False, to=ONLY, inplace=False, doc="", supported=dtypes.REAL_TYPES):
    """A two-operand special function over floating operands (broadcasting), exported under ``name``;
    ``supported``: the result types PyTorch's kernel computes."""
    kernel_name = {"gammainc": "igamma", "gammaincc": "igammac"}.get(name, name)

    node = _SPECIAL_NODES.get(name)

    def fn(input, other, *, out=None):  # noqa: A002
        a, b = _float_operands(name, input, other, tensors, kernel_name, supported)
        r = binary_result(binary(Cls, a, b), a, b, name)
        if node is not None:  # PyTorch's overloads: a number for input (1) or other (2)
            r = name_overload(r, node, input, other)
        return out_or(r, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return export(fn, name, to=to, inplace=inplace)


gammainc = _binary_float(Gammainc, "gammainc", tensors=True, doc="""The regularized lower incomplete gamma
    function ``P(input, other)``; both tensors of a floating type (gradient for ``other`` only).

    >>> import ember
    >>> ember.special.gammainc(ember.tensor([1.0]), ember.tensor([1.0]))
    tensor([0.6321])
    """)
gammaincc = _binary_float(Gammaincc, "gammaincc", tensors=True, doc="""The regularized upper incomplete gamma
    function ``Q(input, other) = 1 - P(input, other)``.

    >>> import ember
    >>> ember.special.gammaincc(ember.tensor([1.0]), ember.tensor([1.0]))
    tensor([0.3679])
    """)
export(gammainc, "igamma", to=TOP, inplace=True)
export(gammaincc, "igammac", to=TOP, inplace=True)
Zeta = op_class("Zeta", "zeta", saves="input", vjp=_zeta_vjp, arity=2, tags=("pointwise",))
zeta = _binary_float(Zeta, "zeta", supported=dtypes.ALL_TYPES_AND_BOOL, doc="""The Hurwitz zeta function
    ``sum((k + other) ** -input for k >= 0)``
    (either operand may be a number; gradient for ``other`` only).

    >>> import ember
    >>> ember.special.zeta(ember.tensor([2.0]), 1.0)
    tensor([1.6449])
    """)


def _xlog1py_vjp(ctx, g):
    a, b = ctx.inputs
    ga = gb = None
    if ctx.next_functions[0][0] is not None:
        ga = xlog1py(g, b).masked_fill((a == 0).logical_and(b <= -1), 0)  # as PyTorch
    if ctx.next_functions[1][0] is not None:
        gb = g * a / (b + 1)
    return ga, gb


Xlog1py = op_class("Xlog1py", "xlog1py", saves="input", vjp=_xlog1py_vjp, arity=2, tags=("pointwise",))
xlog1py = _binary_float(Xlog1py, "xlog1py", doc="""``input * log1p(other)``, 0 where ``input`` is 0 (unless
    ``other`` is NaN).

    >>> import ember
    >>> ember.special.xlog1py(ember.tensor([0.0, 2.0]), ember.tensor([-1.0, 0.0]))
    tensor([0., 0.])
    """)


# --------------------------------------------------------------------------- orthogonal polynomials
# No gradient in PyTorch (for either operand); ``n`` is truncated to an integer, degree < 0 gives 0.
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
               "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")


def _polynomial(name):
    Cls = op_class(name, arity=2, tags=("pointwise",))

    def fn(input, n, *, out=None):  # noqa: A002
        x, m = _float_operands(name, input, n, supported=dtypes.ALL_TYPES_AND_BOOL)
        return out_or(binary(Cls, x.detach(), m.detach()), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{name}(input, n)``: the polynomial of degree ``n`` (elementwise, broadcasting) at ``input``; "
                  "not differentiable, as in PyTorch.")
    return export(fn, to=ONLY)


for _name in POLYNOMIALS:
    _polynomial(_name)


# --------------------------------------------------------------------------- Bessel functions and kin
def _i1_backward(ctx, g):
    x, y = ctx.inputs[0], ctx.output
    zero = x == 0
    return g * where(zero, x.new_full((), 0.5), i0(x) - y / _safe(x, zero))


def _i1e_backward(ctx, g):
    x, y = ctx.inputs[0], ctx.output
    zero = x == 0
    return g * where(zero, x.new_full((), 0.5), i0e(x) - y * (x.sign() + 1 / _safe(x, zero)))


def _sinc_vjp(g, x, y):
    zero = x == 0
    s = _safe(x, zero) * math.pi
    return g * where(zero, x.new_zeros(()), (s * s.cos() - s.sin()) / (s * _safe(x, zero)))


I0, i0 = unary_op("i0", lambda g, x, y: g * i1(x), to=SPECIAL)
def _i0e_backward(ctx, g):
    x, y = ctx.inputs[0], ctx.output  # (PyTorch keeps both: its formula reads the result)
    return g * (i1e(x) - x.sign() * y)


I0e, i0e = unary_op("i0e", backward=_i0e_backward, saves="both", to=ONLY, inplace=False,
                    kernel_dtypes=("i0e_{device}", dtypes.REAL_TYPES), backward_name="SpecialI0EBackward0")
I1, i1 = unary_op("i1", backward=_i1_backward, saves="both", to=ONLY, inplace=False,
                  kernel_dtypes=("i1_{device}", dtypes.REAL_TYPES), backward_name="SpecialI1Backward0")
I1e, i1e = unary_op("i1e", backward=_i1e_backward, saves="both", to=ONLY, inplace=False,
                    kernel_dtypes=("i1e_{device}", dtypes.REAL_TYPES), backward_name="SpecialI1EBackward0")
Sinc, sinc = unary_op("sinc", _sinc_vjp, to=SPECIAL)
Entr, entr = unary_op("entr", lambda g, x, y: g * -(1 + x.log()), to=ONLY, inplace=False,
                      kernel_dtypes=("entr_{device}", dtypes.REAL_TYPES), backward_name="SpecialEntrBackward0")


def _erfcx_backward(ctx, g):
    x, y = ctx.inputs[0], ctx.output
    return g * (2 * x * y - 1.1283791670955126)  # 2 / sqrt(pi)


def _log_ndtr_backward(ctx, g):  # d/dx log(ndtr(x)) = exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi)
    x, y = ctx.inputs[0], ctx.output
    return g * 0.3989422804014327 * (-(y + x * x / 2)).exp()


Erfcx, erfcx = unary_op("erfcx", backward=_erfcx_backward, saves="both", to=ONLY, inplace=False,
                        kernel_dtypes=("erfcx_{device}", dtypes.ALL_TYPES_AND_BOOL),
                        backward_name="SpecialErfcxBackward0")
LogNdtr, log_ndtr = unary_op("log_ndtr", backward=_log_ndtr_backward, saves="both", to=ONLY, inplace=False,
                             kernel_dtypes=("log_ndtr_{device}", dtypes.ALL_TYPES_AND_BOOL),
                             backward_name="SpecialLogNdtrBackward0")

# torch.special's Bessel family: no gradient
for _name, _kernel in (("bessel_j0", None), ("bessel_j1", None), ("bessel_y0", None), ("bessel_y1", None),
                       ("modified_bessel_i0", "i0"), ("modified_bessel_i1", "i1"), ("modified_bessel_k0", "k0"),
                       ("modified_bessel_k1", "k1"), ("scaled_modified_bessel_k0", "k0e"),
                       ("scaled_modified_bessel_k1", "k1e"), ("spherical_bessel_j0", None), ("airy_ai", None)):
    unary_op(_name, kernel=_kernel, saves="none", to=ONLY, inplace=False,
             kernel_dtypes=(_name + "_{device}", dtypes.ALL_TYPES_AND_BOOL),
             doc=f"``{_name}`` elementwise (integers compute in the default float dtype); not differentiable, as "
                 "in PyTorch.")


# --------------------------------------------------------------------------- in-place forms at top level
# PyTorch shows these in-place forms as ``torch.name_`` too: the Tensor methods the registry derived
TORCH_INPLACE = (
    "abs", "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "asin", "asinh", "atan",
    "atanh", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "cos", "cosh", "deg2rad", "erf", "erfc", "exp2", "exp",
    "expm1", "fix", "floor", "frac", "gcd", "i0", "lcm", "ldexp", "log10", "log1p", "log2", "log", "logit",
    "nan_to_num", "neg", "negative", "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid", "sin", "sinc", "sinh",
    "sqrt", "square", "tan", "tanh", "trunc", "xlogy")
for _name in TORCH_INPLACE:
    export(NAMESPACES["Tensor"][_name + "_"], _name + "_", to=("torch",))
del _name, _kernel
