"""Reductions: ``sum``, ``mean`` (the full set with dims, keepdim and dtype), extremes and their indices,
products, variance, ``logsumexp``, cumulative ops, truth and counting reductions, norms, NaN-ignoring
reductions, ``diff``, ``histc`` and ``bincount``."""
from __future__ import annotations

import math
import warnings
from builtins import max as _builtin_max
from builtins import range as builtins_range
from collections import namedtuple

from .. import dtypes
from ..arguments import sequence_arg
from ..autograd.function import Op, SavedOf, composite_node, keep_args, keep_saved, named_node, optional, rename_node
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..dispatch import apply, cast, on_arrays, unary, view_op
from ..writes import out_or, outs_or
from ..registry import check_tensor, export, op_class
from ..tensor import Tensor, _wrap, _wrap_dim
from .creation import eye, ones
from .creation import linspace as _linspace
from .pointwise import _type_name, maximum, minimum, where
from .linalg import NormSqrt, matmul, matrix_norm, tensordot, vector_norm
from .nn import _kernel_grads
from .shape import Expand, _shape_arg, cat


def dims_arg(dim, ndim, op):
    """``dim`` (None, int or sequence) as a sorted tuple of non-negative axes, or None for all."""
    if dim is None:
        return None
    if ndim == 0:  # a 0-d tensor takes dim 0 or -1 (its one element): the reduction over everything
        for d in (dim if isinstance(dim, (list, tuple)) else (dim,)):
            _wrap_dim(d, 0, op)
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        axes = tuple(sorted(_wrap_dim(d, ndim, op) for d in dim))
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"{op}(): dim {list(dim)} appears multiple times in the list of dims")
        return axes
    return (_wrap_dim(dim, ndim, op),)


def _restore(g, in_shape, axes, keepdim):
    """Broadcast a reduced gradient back to ``in_shape``."""
    if axes is None:
        return view_op(Expand, g, in_shape) if in_shape else g
    if not keepdim:
        shape = list(in_shape)
        for a in axes:
            shape[a] = 1
        g = g.reshape(shape)
    return g.expand(in_shape)


def _nansum(node):
    return type(node).__name__ == "NansumBackward0"  # (nansum: this node under its name, keeping its input instead)


class Sum(Op):
    tags = ("reduction",)
    # (the overload with a dim keeps it, None where it was not given: keepdim without a dim, nansum)
    saved_args = {"dim": lambda n: optional(n.axes) if n.axes is not None or n.keepdim or _nansum(n) else None,
                  "keepdim": lambda n: n.keepdim if n.axes is not None or n.keepdim or _nansum(n) else None,
                  "self_sym_sizes": lambda n: None if _nansum(n) else n.in_shape,
                  "self": lambda n: n.__dict__.get("nan_input")}  # (nansum's input: see nansum)

    @staticmethod
    def forward(ctx, k, x, axes, keepdim, dtype):
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        return k["sum"](x, axes, keepdim, dtype)

    @staticmethod
    def backward(ctx, g):
        return _restore(g, ctx.in_shape, ctx.axes, ctx.keepdim)


_SumDim = named_node(Sum, "SumBackward1")  # Sum's node as PyTorch names the overload with dims, made so from the start


def mean_of_nothing(k, x, axes=None, keepdim=False, dtype=None):
    """The mean of array ``x`` over ``axes`` holding no elements: NaN, of the sum's shape and dtype, without the array
    library's warning."""
    s = k["sum"](x, axes, keepdim, dtype)
    return k["astype"](k["div"](s, float("nan")), s.dtype)  # (a number beside bfloat16 would widen it)


class Mean(Op):
    tags = ("reduction",)
    saved_args = dict(Sum.saved_args, self_sym_numel=lambda n: math.prod(n.in_shape))

    @staticmethod
    def forward(ctx, k, x, axes, keepdim, dtype):
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        n = 1
        for a in (range(x.ndim) if axes is None else axes):
            n *= x.shape[a]
        ctx.n = n
        if n == 0:
            return mean_of_nothing(k, x, axes, keepdim, dtype)
        return k["mean"](x, axes, keepdim, dtype)

    @staticmethod
    def backward(ctx, g):
        return _restore(g / ctx.n, ctx.in_shape, ctx.axes, ctx.keepdim)


def _summed_dims(node):
    """The dims PyTorch's sum_to_size sums (keeping them): the leading ones ``shape`` lacks, and those it has as 1."""
    lead = len(node.in_shape) - len(node.shape)
    return tuple(range(lead)) + tuple(i for i in range(lead, len(node.in_shape))
                                      if node.shape[i - lead] == 1 and node.in_shape[i] != 1)


class SumTo(Op):
    backward_name = "SumBackward1"
    saved_args = {"dim": _summed_dims, "keepdim": lambda n: True, "self_sym_sizes": "in_shape"}

    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape, ctx.shape = x.shape, shape
        return k["sum_to"](x, shape)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.in_shape)


@export(to=("Tensor",))
def sum_to_size(self, *size, **kw):
    """Sum broadcast dimensions away so the result has ``size`` (varargs, a sequence or ``size=``)."""
    if kw or not size:
        size = sequence_arg(size, kw, "sum_to_size", "size")
    size = _shape_arg(size, "sum_to_size")
    if tuple(self.shape) == size:
        return self
    d = _sum_dtype(self, None)  # (integers and bool sum in int64, as sum does)
    return unary(SumTo, self if d is None else cast(self, d), size)


def _sum_dtype(t, dtype):
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    if t.dtype.category <= dtypes.INT:
        return dtypes.int64
    return None


@export
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A001,A002
    """Sum of all elements, or over ``dim`` (int or tuple).

    >>> import ember
    >>> ember.tensor([[1., 2.], [3., 4.]]).sum(0)
    tensor([4., 6.])
    """
    if dim is None and not keepdim and dtype is None and out is None and isinstance(input, Tensor) \
            and (input._rg or input.dtype.category >= dtypes.FLOAT):  # only float and complex tensors need grad
        return unary(Sum, input, None, False, None)
    if type(input) is not Tensor:
        check_tensor(input, "sum")
    axes = dims_arg(dim, input.dim(), "sum")
    d = _sum_dtype(input, dtype)
    if d is not None:
        input = cast(input, d)
    # (PyTorch's node of the sum.dim_IntList overload: SumBackward1, keepdim names it too)
    r = unary(_SumDim if dim is not None or keepdim else Sum, input, axes, keepdim,
              None if d is None else input._data.dtype)  # int32 sums stay int32
    return out_or(r, out)


@export
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """Mean of all elements, or over ``dim``; needs a floating (or complex) dtype."""
    if dtype is not None:
        input = cast(input, dtypes.as_dtype(dtype))
    if input.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {input.dtype.name.capitalize()}")
    axes = dims_arg(dim, input.dim(), "mean")
    r = unary(Mean, input, axes, keepdim, None)
    return out_or(r if dim is None and not keepdim else rename_node(r, "MeanBackward1"), out)


# --------------------------------------------------------------------------- more reductions


def _rt(name, fields=("values", "indices")):
    return namedtuple(name, fields)


class return_types:  # noqa: N801 - PyTorch's name
    """Named tuples returned by reductions that give values and indices."""

    max = _rt("max")
    min = _rt("min")
    sort = _rt("sort")
    topk = _rt("topk")
    median = _rt("median")
    nanmedian = _rt("nanmedian")
    mode = _rt("mode")
    kthvalue = _rt("kthvalue")
    cummax = _rt("cummax")
    cummin = _rt("cummin")
    aminmax = _rt("aminmax", ("min", "max"))
    histogram = _rt("histogram", ("hist", "bin_edges"))
    histogramdd = _rt("histogramdd", ("hist", "bin_edges"))


export(return_types, "return_types", to=("torch",))


def _amax_arg(read):
    """An amax/amin argument, none for max() and min() of every element (PyTorch's MaxBackward1 keeps none)."""
    return lambda n: None if type(n).__name__ in ("MaxBackward1", "MinBackward1") else read(n)


class Amax(Op):
    tags = ("reduction",)
    saved_args = {"dim": _amax_arg(lambda n: () if n.axes is None else n.axes),
                  "keepdim": _amax_arg(lambda n: n.keepdim)}
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(ctx, k, x, axes, keepdim, kernel):
        ctx.axes, ctx.keepdim = axes, keepdim
        return k[kernel](x, axes, keepdim)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.inputs
        y = ctx.output.detach()
        if ctx.axes is not None and not ctx.keepdim:
            y, g = _unsqueeze_axes(y, ctx.axes), _unsqueeze_axes(g, ctx.axes)
        mask = (x == y)
        count = mask.sum(ctx.axes, keepdim=True) if ctx.axes is not None else mask.sum()
        return g * mask / count


def _unsqueeze_axes(t, axes):
    for a in sorted(axes):
        t = t.unsqueeze(a)
    return t


class Amin(Amax):
    backward_name = "AminBackward0"


@export
def amax(input, dim=(), keepdim=False, *, out=None):  # noqa: A002
    """Maximum over ``dim`` (all dims when empty); the gradient is shared evenly between ties."""
    return out_or(_minmax_reduce(Amax, "amax", input, dim, keepdim), out)


@export
def amin(input, dim=(), keepdim=False, *, out=None):  # noqa: A002
    """Minimum over ``dim`` (all dims when empty)."""
    return out_or(_minmax_reduce(Amin, "amin", input, dim, keepdim), out)


def _unordered(op, input):
    """PyTorch refuses complex input to an op that orders values."""
    if input.dtype.category == dtypes.COMPLEX:
        raise RuntimeError(f"{op}(): does not support complex input (got {input.dtype})")


# PyTorch's kernels of the reductions to the extreme values, none of which has complex code
_EXTREME_KERNELS = {"amax": "max_values_{device}", "amin": "min_values_{device}", "max": "max_all", "min": "min_all",
                    "aminmax": "aminmax_{device}"}


def _minmax_reduce(Cls, kernel, input, dim, keepdim, name=None):
    dtypes.check_kernel(_EXTREME_KERNELS[name or kernel], input, dtypes.REAL_TYPES)
    axes = dims_arg(dim, input.dim(), kernel) if dim not in ((), None) else None
    if input.numel() == 0 and axes is not None:
        for a in axes:
            if input.shape[a] == 0:
                raise IndexError(f"{kernel}(): Expected reduction dim {a} to have non-zero size.")
    elif input.numel() == 0:
        raise RuntimeError(f"{name or kernel}(): Expected reduction dim to be specified for input.numel() == 0. "
                           f"Specify the reduction dim with the 'dim' argument.")
    return unary(Cls, input, axes, keepdim, kernel)


class MaxDim(Op):
    """Values and indices along one dimension; the gradient flows to the chosen index."""

    tags = ("reduction",)

    nondiff_outputs = (1,)
    backward_name = "MaxBackward0"
    saved_args = {"dim": "dim", "keepdim": "keepdim", "self_sym_sizes": "shape",
                  "indices": lambda n: _wrap(n.idx, n._out_meta[1][2])}  # (made when read; freed by the backward)
    _saved = ()  # (the indices count as a saved tensor)

    @staticmethod
    def forward(ctx, k, x, dim, keepdim, kernel):
        idx = k["arg" + kernel](x, dim, keepdim)
        vals = k["a" + kernel](x, dim, keepdim)  # the values at idx (NaN first too): one reduction, no gather
        ctx.shape, ctx.dim, ctx.keepdim, ctx.idx = x.shape, dim, keepdim, idx
        return vals, idx

    @staticmethod
    def backward(ctx, g, _gi):
        k, kept = g._dev.kernels, tuple(1 if d == ctx.dim else n for d, n in enumerate(ctx.shape))
        idx = k["reshape"](ctx.idx, kept)
        if on_arrays(g):  # no graph is being built: the scatter on arrays
            zeros = k["full"](ctx.shape, 0, g._data.dtype)  # (one index per slice: a scatter adds nothing twice)
            return _wrap(k["scatter"](zeros, ctx.dim, idx, k["reshape"](g._data, kept)), g._dev)
        if not ctx.keepdim:
            g = g.unsqueeze(ctx.dim)
        return g.new_zeros(ctx.shape).scatter_add(ctx.dim, _wrap(idx, g._dev), g)


class MinDim(MaxDim):
    backward_name = "MinBackward0"


def _max_min(kernel, Red, DimOp, rt, elementwise):
    def fn(input, dim=None, keepdim=False, *, out=None):  # noqa: A002
        if isinstance(dim, Tensor):  # the elementwise two-tensor form
            return elementwise(input, dim, out=out)
        if dim is None:  # PyTorch's node of max()/min() over everything
            r = _minmax_reduce(Red, "a" + kernel, input, None, False, kernel)
            return out_or(rename_node(r, kernel.capitalize() + "Backward1"), out)
        d = _wrap_dim(dim, input.dim(), kernel)
        _unordered(kernel, input)
        shape = input._data.shape
        if not shape:
            return outs_or(rt(input.clone(), input.new_zeros((), dtype=dtypes.int64)), out)
        if shape[d] == 0:
            raise IndexError(f"{kernel}(): Expected reduction dim {d} to have non-zero size.")
        return outs_or(rt(*unary(DimOp, input, d, keepdim, kernel)), out)

    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = (f"``{kernel}(input)``: the {kernel}imum element; ``{kernel}(input, dim, keepdim)``: a named tuple "
                  f"(values, indices); ``{kernel}(input, other)``: elementwise.")
    return export(fn)


max = _max_min("max", Amax, MaxDim, return_types.max, maximum)  # noqa: A001
min = _max_min("min", Amin, MinDim, return_types.min, minimum)  # noqa: A001


def _nondiff(Cls, input, *params):  # noqa: A002
    """``unary(Cls, input, *params)`` for an op whose result carries no gradient (indices, counts, truth)."""
    if input._rg:
        with no_grad():
            return unary(Cls, input, *params)
    return unary(Cls, input, *params)


class Argmax(Op):
    """Indices of the largest values along ``dim`` (of the flattened input when None); not differentiable."""

    tags = ("reduction",)

    @staticmethod
    def forward(ctx, k, x, dim, keepdim, kernel):
        if dim is not None:
            return k[kernel](x, dim, keepdim)
        r = k[kernel](k["reshape"](x, (-1,)), 0, False)
        return k["reshape"](r, (1,) * x.ndim) if keepdim else r


class Argmin(Argmax):
    pass


def _arg(kernel, Cls):
    def fn(input, dim=None, keepdim=False):  # noqa: A002
        _unordered(kernel, input)
        if input.dtype is dtypes.bool:
            raise RuntimeError(f"{kernel}(): does not support bool input")
        if dim is None:
            if input.numel() == 0:
                raise IndexError(f"{kernel}(): Expected reduction dim to be specified for input.numel() == 0.")
        else:
            dim = _wrap_dim(dim, input.dim(), kernel)
            if input.dim() and input.shape[dim] == 0:
                raise IndexError(f"{kernel}(): Expected reduction dim {dim} to have non-zero size.")
        return _nondiff(Cls, input, dim, keepdim, kernel)

    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = f"Indices of the {kernel[3:]}imum values (flattened when ``dim`` is None); not differentiable."
    return export(fn)


argmax = _arg("argmax", Argmax)
argmin = _arg("argmin", Argmin)


def _prod_vjp(ctx, g):
    (x,) = ctx.inputs
    y = ctx.output
    if ctx.axis is not None and not ctx.keepdim:
        y, g = y.unsqueeze(ctx.axis), g.unsqueeze(ctx.axis)
    zero = x == 0
    if not bool(zero.any()):
        return g * y / x
    # with zeros: the product of the other elements, computed by exclusive cumulative products
    dim = ctx.axis if ctx.axis is not None else 0
    flat = x if ctx.axis is not None else x.reshape(-1)
    n = flat.shape[dim]
    ones = flat.narrow(dim, 0, 1) * 0 + 1
    left = cat([ones, flat.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    right = cat([flat.narrow(dim, 1, n - 1), ones], dim).flip(dim).cumprod(dim).flip(dim)
    others = left * right
    if ctx.axis is None:
        others = others.reshape(x.shape)
    return g * others


Prod = op_class("Prod", "prod", saves="both", vjp=_prod_vjp, params=("axis", "keepdim"), tags=("reduction",))
Prod.saved_args = {"dim": "axis", "keepdim": lambda n: n.keepdim if n.axis is not None else None}


@export
def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """Product of all elements, or along ``dim``."""
    d = _sum_dtype(input, dtype)
    if d is not None:
        input = cast(input, d)
    axis = None if dim is None else _wrap_dim(dim, input.dim(), "prod")
    r = unary(Prod, input, axis, keepdim)
    return r if dim is None else rename_node(r, "ProdBackward1")


class Var(Op):
    tags = ("reduction",)
    # (PyTorch's var() and std() of every element with the default correction keep none: _saved_correction None)
    saved_args = {"dim": lambda n: optional(n.axes), "keepdim": "keepdim",
                  "correction": lambda n: optional(None) if n.axes is None and n.correction == 1 else
                  int(n.correction) if float(n.correction).is_integer() else n.correction}
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, axes, correction, keepdim):
        ctx.axes, ctx.correction, ctx.keepdim = axes, correction, keepdim
        n = 1
        for a in (range(x.ndim) if axes is None else axes):
            n *= x.shape[a]
        ctx.n = n
        return k["var"](x, axes, correction, keepdim)

    @staticmethod
    def backward(ctx, g):
        return _var_grad(ctx, g)


def _var_grad(ctx, g):
    (x,) = ctx.inputs
    if ctx.axes is not None and not ctx.keepdim:
        g = _unsqueeze_axes(g, ctx.axes)
    mu = x.mean(ctx.axes, keepdim=True) if ctx.axes is not None else x.mean()
    return g * 2 * (x - mu) / _builtin_max(ctx.n - ctx.correction, 0)


class Std(Var):
    """``sqrt(var)``; its gradient is 0 where the deviation is 0 (a constant), as PyTorch's."""

    save_output = True

    @staticmethod
    def forward(ctx, k, x, axes, correction, keepdim):
        return k["sqrt"](Var.forward(ctx, k, x, axes, correction, keepdim))

    @staticmethod
    def backward(ctx, g):
        y = ctx.output
        return _var_grad(ctx, (g / (2 * y)).masked_fill(y == 0, 0))


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased in (None, True) else 0


@export
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):  # noqa: A002
    """Variance over ``dim`` with Bessel's ``correction`` (default 1; ``unbiased=False`` means 0)."""
    if isinstance(dim, bool) and unbiased is None:
        dim, unbiased = None, dim
    if input.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"std and var only support floating point and complex dtypes, got {input.dtype}")
    axes = dims_arg(dim, input.dim(), "var")
    return out_or(unary(Var, input, axes, _correction(unbiased, correction), keepdim), out)


@export
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):  # noqa: A002
    """Standard deviation: ``var(...).sqrt()`` (gradient 0 where it is 0)."""
    if isinstance(dim, bool) and unbiased is None:
        dim, unbiased = None, dim
    if input.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"std and var only support floating point and complex dtypes, got {input.dtype}")
    if input.is_complex():
        return out_or(var(input, dim, unbiased, keepdim, correction=correction).sqrt(), out)
    axes = dims_arg(dim, input.dim(), "std")
    return out_or(unary(Std, input, axes, _correction(unbiased, correction), keepdim), out)


@export(to=("torch",))
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    return tuple(composite_node(r, "VarMeanBackward0") for r in  # PyTorch's one node of both
                 (var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)))


@export(to=("torch",))
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    return tuple(composite_node(r, "StdMeanBackward0") for r in  # PyTorch's one node of both
                 (std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)))


def _log_sum_exp_vjp(ctx, g):
    (x,) = ctx.inputs
    if on_arrays(g, x) and g._data.dtype == x._data.dtype:  # no graph is being built: the formula on arrays
        return _wrap(g._dev.kernels["logsumexp_backward"](g._data, x._data, ctx.output_data(), ctx.axes,
                                                          ctx.keepdim), g._dev)
    if _kernel_grads() and g.dtype is x.dtype:
        return apply(LogSumExpGrad, g, x, ctx.output, ctx.axes, ctx.keepdim)
    y = ctx.output
    if not ctx.keepdim:
        y, g = _unsqueeze_axes(y, ctx.axes), _unsqueeze_axes(g, ctx.axes)
    return g * (x - y).exp()


LogSumExp = op_class("LogSumExp", "logsumexp", saves="both", vjp=_log_sum_exp_vjp, params=("axes", "keepdim"),
                     tags=("reduction",), promotion="int_to_float", backward_name="LogsumexpBackward0")
LogSumExp.saved_args = {"dim": "axes", "keepdim": "keepdim"}
# logsumexp's gradient as one op, for a backward that is recorded but never differentiated (see _kernel_grads)
LogSumExpGrad = op_class("LogSumExpGrad", "logsumexp_backward", params=("axes", "keepdim"), arity=5,
                         backward_name="LogsumexpBackwardBackward0")


@export(to=("torch", "Tensor", "special"))
def logsumexp(input, dim, keepdim=False, *, out=None):  # noqa: A002
    """``log(sum(exp(input), dim))``, computed stably."""
    if input.dtype.category < dtypes.FLOAT:  # its promotion kind: integers compute in the default float dtype
        input = cast(input, dtypes.computation_dtype(LogSumExp.promotion, input.dtype))
    axes = dims_arg(dim, input.dim(), "logsumexp")
    if axes is None:
        axes = tuple(range(input.dim()))
    return out_or(unary(LogSumExp, input, axes, keepdim), out)


def _cumsum_vjp(ctx, g):
    return g.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim)


Cumsum = op_class("Cumsum", "cumsum", vjp=_cumsum_vjp, params=("dim",))
Cumsum.saved_args = {"dim": "dim"}


@export(inplace=True)
def cumsum(input, dim, *, dtype=None, out=None):  # noqa: A002
    """Cumulative sum along ``dim``."""
    d = _sum_dtype(input, dtype)
    if d is not None:
        input = cast(input, d)
    if input.dim() == 0:
        return out_or(input.clone(), out)
    return out_or(unary(Cumsum, input, _wrap_dim(dim, input.dim(), "cumsum")), out)


# Prefix products; the gradient handles zeros exactly (the product of the other factors).
def _cumprod_vjp(ctx, g):
    (x,), y, d = ctx.inputs, ctx.output, ctx.dim
    if x.is_complex():  # (complex vjps take the conjugate derivative)
        x, y = x.conj(), y.conj()
    is_zero = x == 0
    if not bool(is_zero.any()):
        return (g * y).flip(d).cumsum(d).flip(d) / x
    if not is_grad_enabled():
        return _cumprod_vjp_zeros(g, x, y, d, is_zero)
    # d y_j / d x_i = prod_{k <= j, k != i} x_k: row i of an (n, n) table of prefix products with x_i
    # replaced by 1, summed against g_j for j >= i
    xl, gl = x.movedim(d, -1), g.movedim(d, -1)
    n = xl.shape[-1]
    diag = eye(n, dtype=dtypes.bool, device=x.device)
    rows = xl.unsqueeze(-2).expand(xl.shape[:-1] + (n, n)).masked_fill(diag, 1).cumprod(-1)
    later = ones(n, n, dtype=dtypes.bool, device=x.device).triu()
    return (rows * gl.unsqueeze(-2)).masked_fill(~later, 0).sum(-1).movedim(-1, d)


def _cumprod_vjp_zeros(g, x, y, d, is_zero):
    """PyTorch's O(n) cumprod gradient of an input holding zeros (its first-order path, whose inf/NaN pattern this
    follows): before the first zero the reversed cumulative sum of ``g * y`` over ``x``; at the first zero the
    products of the entries up to the second zero against ``g``, times the product before it; 0 after."""
    zeros = is_zero.cumsum(d)
    before, one = zeros == 0, zeros == 1  # (before the first zero; from it up to the second)
    out = (g * y).masked_fill(~before, 0).flip(d).cumsum(d).flip(d) / x.masked_fill(~before, 1)
    out = out.masked_fill(~before, 0)
    first = one.to(dtypes.uint8).max(d, keepdim=True).indices
    at_first = is_zero & one  # (the count of zeros first reaches 1 at the first zero)
    between = one & ~is_zero
    v = (x.masked_fill(~between, 1).cumprod(d) * g.masked_fill(~one, 0)).sum(d, keepdim=True)
    v = v * y.gather(d, (first - 1).clamp(min=0)).masked_fill(first == 0, 1)
    return where(at_first, v, out)


Cumprod = op_class("Cumprod", "cumprod", saves="both", vjp=_cumprod_vjp, params=("dim",))
Cumprod.saved_args = Cumsum.saved_args


@export(inplace=True)
def cumprod(input, dim, *, dtype=None, out=None):  # noqa: A002
    """Cumulative product along ``dim``.

    >>> import ember
    >>> ember.tensor([1., 2., 3.]).cumprod(0)
    tensor([1., 2., 6.])
    """
    d = _sum_dtype(input, dtype)
    if d is not None:
        input = cast(input, d)
    if input.dim() == 0:
        return out_or(input.clone(), out)
    return out_or(unary(Cumprod, input, _wrap_dim(dim, input.dim(), "cumprod")), out)


class CumExtreme(Op):
    """Running max/min with indices; the gradient goes to the element each running value came from."""

    nondiff_outputs = (1,)
    backward_name = "CummaxBackward0"
    saved_args = {"dim": "dim", "indices": lambda n: _wrap(n.idx, n._out_meta[1][2])}
    save_inputs = True  # (as PyTorch's node: an in-place change of the input refuses the backward)
    saved_names = ("self",)


    @staticmethod
    def forward(ctx, k, x, dim, largest):
        vals, idx = k["cumextreme"](x, dim, largest)
        ctx.dim, ctx.shape, ctx.idx = dim, x.shape, idx
        return vals, idx

    @staticmethod
    def backward(ctx, g, _gi):
        ctx.check_saved()
        return g.new_zeros(ctx.shape).scatter_add(ctx.dim, _wrap(ctx.idx, g._dev).long(), g)


def _cum_extreme(name, largest, rt):
    def fn(input, dim, *, out=None):  # noqa: A002
        dtypes.check_kernel(name + "_{device}", input, dtypes.REAL_TYPES)
        if input.dim() == 0:
            values = keep_saved(composite_node(input.clone(), name.capitalize() + "Backward0"), input)
            return outs_or(rt(values, input.new_zeros((), dtype=dtypes.int64)), out)
        d = _wrap_dim(dim, input.dim(), name)
        vals, idx = apply(CumExtreme, input, d, largest)
        return outs_or(rt(vals, cast(idx, dtypes.int64)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Running {name[3:]}imum along ``dim``: a named tuple (values, indices), each index where its "
                  f"value was last reached.\n\n    >>> import ember\n"
                  f"    >>> ember.{name}(ember.tensor([2, 3, 1]), 0).values\n"
                  f"    tensor([{'2, 3, 3' if largest else '2, 2, 1'}])\n")
    return export(fn)


cummax = _cum_extreme("cummax", True, return_types.cummax)
cummin = _cum_extreme("cummin", False, return_types.cummin)


@export
def aminmax(input, *, dim=None, keepdim=False, out=None):  # noqa: A002
    """``(amin, amax)`` over ``dim`` (everything when None) as a named tuple (min, max).

    >>> import ember
    >>> ember.aminmax(ember.tensor([3., -1., 2.]))
    aminmax(min=tensor(-1.), max=tensor(3.))
    """
    d = () if dim is None else dim
    dtypes.check_kernel(_EXTREME_KERNELS["aminmax"], input, dtypes.REAL_TYPES, empty_ok=False)
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is not None and input.dim() and input.shape[_wrap_dim(dim, input.dim(), "aminmax")] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {_wrap_dim(dim, input.dim(), 'aminmax')} to have "
                         f"non-zero size.")
    lo, hi = (composite_node(r, "AminmaxBackward0") for r in (amin(input, d, keepdim), amax(input, d, keepdim)))
    return outs_or(return_types.aminmax(lo, hi), out)  # (PyTorch's one node of both)


def _bool_reduce(kernel):
    Cls = op_class(kernel, tags=("reduction",))

    def fn(input, dim=None, keepdim=False, *, out=None):  # noqa: A002
        axes = dims_arg(dim, input.dim(), kernel)
        r = _nondiff(Cls, input, axes, keepdim)
        if input.dtype is dtypes.uint8:
            r = r.to(dtypes.uint8)
        return out_or(r, out)

    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = f"Whether {'all' if kernel == 'all' else 'any'} elements (over ``dim``) are true."
    return export(fn)


all = _bool_reduce("all")  # noqa: A001
any = _bool_reduce("any")  # noqa: A001
CountNonzero = op_class("count_nonzero", tags=("reduction",))


@export
def count_nonzero(input, dim=None):  # noqa: A002
    """Number of non-zero elements (over ``dim``)."""
    axes = dims_arg(dim, input.dim(), "count_nonzero")
    return cast(_nondiff(CountNonzero, input, axes), dtypes.int64)


@export(to=("torch",))
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """Vector p-norm (or Frobenius/nuclear matrix norm) composed of ember ops.

    >>> import ember
    >>> ember.norm(ember.tensor([3.0, 4.0]))
    tensor(5.)
    """
    return out_or(_norm(input, p, dim, keepdim, dtype), out)


@export(name="norm", to=("Tensor",))
def _norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    """This tensor's vector p-norm (or Frobenius/nuclear matrix norm): :func:`ember.norm` without ``out``."""
    if dtype is not None:
        input = cast(input, dtypes.as_dtype(dtype))
    if input.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{input.dtype.name.capitalize()} instead.")
    if p == "nuc":
        return matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim)
    if p == "fro" or p is None:
        p = 2
    return vector_norm(input, p, dim, keepdim)


# --------------------------------------------------------------------------- NaN-ignoring reductions, diff, counting
# NaN replaced by 0; the gradient is ``g * (x == x)`` as in PyTorch's nansum (NaN where ``g`` is infinite)
NanZeroed = op_class("nan_zeroed", "nan_to_num", saves="input", backward_name="NansumBackward0",
                     vjp=lambda ctx, g: g * ctx.inputs[0].isnan().logical_not(), tags=("pointwise",))


@export
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """``sum`` treating NaN as zero (its gradient is zero there).

    >>> import ember
    >>> ember.nansum(ember.tensor([1.0, float("nan"), 2.0]))
    tensor(3.)
    """
    if input.dtype.category == dtypes.COMPLEX:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    floating = input.dtype.category >= dtypes.FLOAT
    zeroed = unary(NanZeroed, input, 0.0, math.inf, -math.inf) if floating else input
    r = rename_node(sum(zeroed, dim, keepdim, dtype=dtype, out=out), "NansumBackward0")
    fn = r._fn
    if floating and zeroed._fn is not None and isinstance(fn, Sum):  # PyTorch's node keeps the input: as the
        fn.nan_input = SavedOf(zeroed._fn, 0)                      # NaN-zeroing node keeps it
        fn._saved = ()  # (a saved tensor: the backward releases the node)
    return r


@export
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The mean of the non-NaN elements (NaN where there are none).

    >>> import ember
    >>> ember.nanmean(ember.tensor([[1.0, float("nan")], [2.0, 4.0]]), 1)
    tensor([1., 3.])
    """
    if dtype is not None:
        input = cast(input, dtypes.as_dtype(dtype))
    if input.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_type_name(input.dtype)}")
    count = input.isnan().logical_not().sum(dim, keepdim)
    return out_or(nansum(input, dim, keepdim) / count, out)


@export
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):  # noqa: A002
    """The ``n``-th forward difference along ``dim`` (``out[i] = x[i + 1] - x[i]``, logical xor for bool),
    after joining ``prepend`` and ``append`` to ``input`` along ``dim``.

    >>> import ember
    >>> ember.diff(ember.tensor([1, 4, 9, 16]), n=2)
    tensor([2, 2])
    """
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"diff: order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.dim(), "diff")
    parts = [input]
    for arg, pos, t in (("prepend", 3, prepend), ("append", 4, append)):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"diff(): argument '{arg}' (position {pos + 1}) must be Tensor, not {type(t).__name__}")
        if t.dim() != input.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        for i, (a, b) in enumerate(zip(input.shape, t.shape)):
            if i != d and a != b:
                raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match that of input "
                                   f"except along the differencing dimension; input.size({i}) = {a}, but got "
                                   f"tensor.size({i}) = {b}")
        parts.insert(0 if arg == "prepend" else len(parts), t)
    if n == 0:  # PyTorch's copy of the input alone (prepend and append are left out): its node is copy_'s
        return out_or(input.new_empty(input.shape).copy_(input), out)
    x = cat(parts, d) if len(parts) > 1 else input.clone()
    head, tail = (slice(None),) * d + (slice(1, None),), (slice(None),) * d + (slice(None, -1),)
    for _ in range(n):
        if x.shape[d] == 0:
            break
        x = x[head].logical_xor(x[tail]) if x.dtype is dtypes.bool else x[head] - x[tail]
    return out_or(x, out)


Histc = op_class("histc")
Bincount = op_class("bincount", tags=("data-dependent",))


@export
def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A001,A002
    """Counts of the elements in ``bins`` equal-width bins over ``[min, max]`` (the data's range when
    ``min == max``); elements outside, and NaN, are not counted.  Not differentiable.

    >>> import ember
    >>> ember.histc(ember.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """
    if input.dtype.category != dtypes.FLOAT:
        raise NotImplementedError(f'"histc_{input.device.type}" not implemented for \'{_type_name(input.dtype)}\'')
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins}")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel() > 0:
        lo, hi = (float(v) for v in aminmax(input.detach()))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    if lo >= hi:
        raise RuntimeError(f"torch.histc: max must be larger than min, got min {lo} and max {hi}")
    return out_or(_nondiff(Histc, input, int(bins), lo, hi), out)


@export
def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each value 0, 1, ... occurs in a 1-d non-negative integer tensor (summing ``weights``
    instead of ones when given); at least ``minlength`` bins.  Not differentiable.

    >>> import ember
    >>> ember.bincount(ember.tensor([1, 3, 1]))
    tensor([0, 2, 0, 1])
    """
    if input.dtype.category != dtypes.INT:
        raise NotImplementedError(f'"bincount_{input.device.type}" not implemented for '
                                  f'\'{_type_name(input.dtype)}\'')
    if input.dim() != 1 or (input.numel() and int(input.min()) < 0):
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs (got shape {list(input.shape)})")
    if minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
    w = None
    if weights is not None:
        if weights.dim() != 1 or weights.shape[0] != input.shape[0]:
            raise RuntimeError(f"bincount: weights should be 1-d and have the same length as input (got "
                               f"{list(weights.shape)} for input {list(input.shape)})")
        w = cast(weights.detach(), dtypes.float64)
    r = apply(Bincount, input, w, int(minlength))  # a weights tensor on another device: the device error
    if weights is None:
        return cast(r, dtypes.int64)
    return cast(r, weights.dtype if weights.dtype in (dtypes.float32, dtypes.float64) else dtypes.float64)



# --------------------------------------------------------------------------- scans, distances, statistics
def _logcumsumexp_vjp(ctx, g):
    # d out_i / d x_j = exp(x_j - out_i) for j <= i: summed in log space, positive and negative g apart
    x, y, d = ctx.inputs[0], ctx.output, ctx.dim
    if g.numel() == 0:
        return g
    half = x.dtype in (dtypes.float16, dtypes.bfloat16)
    if half:  # in float32, rounded once (the difference of two exps cancels: half-precision steps lose it)
        x, y, g = cast(x, dtypes.float32), cast(y, dtypes.float32), cast(g, dtypes.float32)
    low = -1e30  # finite: no NaN from -inf - -inf, nor in its gradient
    lg = g.abs().where(g != 0, 1).log() - y

    def rev(t):
        return unary(LogCumSumExp, t.flip(d), d).flip(d)

    r = (rev(lg.where(g > 0, low)) + x).exp() - (rev(lg.where(g < 0, low)) + x).exp()
    return cast(r, ctx.inputs[0].dtype) if half else r


LogCumSumExp = op_class("LogCumSumExp", "logcumsumexp", saves="both", vjp=_logcumsumexp_vjp,
                        params=("dim",), promotion="int_to_float", backward_name="LogcumsumexpBackward0")
LogCumSumExp.saved_args = Cumsum.saved_args



@export
def logcumsumexp(input, dim, *, out=None):  # noqa: A002
    """``log(cumsum(exp(input)))`` along ``dim``, computed without overflow.

    >>> import ember
    >>> ember.logcumsumexp(ember.tensor([0., 0., 0.]), 0)
    tensor([0.0000, 0.6931, 1.0986])
    """
    check_tensor(input, "logcumsumexp")
    dtypes.check_kernel("logcumsumexp_out_{device}", input, dtypes.FLOATING_AND_HALF | dtypes.COMPLEX_TYPES,
                        empty_ok=False)
    if input.dim() == 0:
        _wrap_dim(dim, 1, "logcumsumexp")
        return out_or(keep_saved(composite_node(input.clone(), "LogcumsumexpBackward0"), input), out)

    return out_or(unary(LogCumSumExp, input, _wrap_dim(dim, input.dim(), "logcumsumexp")), out)


def _need_float(t, op, what="input"):
    if t.dtype.category != dtypes.FLOAT:
        raise RuntimeError(f"{op} only supports floating-point dtypes, {what} got: {_type_name(t.dtype)}")


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


@export(to=("torch",))
def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distance between each row of ``x1`` (``[..., P, M]``) and each of ``x2`` (``[..., R, M]``).

    For ``p=2`` with more than 25 rows on a side (or ``compute_mode='use_mm_for_euclid_dist'``) it uses
    ``|a|^2 + |b|^2 - 2ab`` through a matrix product, as PyTorch does.

    >>> import ember
    >>> ember.cdist(ember.tensor([[0., 0.]]), ember.tensor([[3., 4.], [1., 0.]]))
    tensor([[5., 1.]])
    """
    check_tensor(x1, "cdist")
    check_tensor(x2, "cdist")
    if x1.dim() < 2 or x2.dim() < 2:
        which, t = ("X1", x1) if x1.dim() < 2 else ("X2", x2)
        raise RuntimeError(f"cdist only supports at least 2D tensors, {which} got: {t.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    _need_float(x1, "cdist", "X1")
    _need_float(x2, "cdist", "X2")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"cdist: X1 and X2 must have the same dtype, got {x1.dtype} and {x2.dtype}")
    mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == _CDIST_MODES[0] and (x1.shape[-2] > 25 or x2.shape[-2] > 25)))
    if not mm:  # (the matrix-product form computes half precision too)
        dtypes.check_kernel("cdist", x1, dtypes.FLOATING_TYPES)
    if mm:
        sq1 = (x1 * x1).sum(-1, keepdim=True)
        sq2 = (x2 * x2).sum(-1, keepdim=True)
        d2 = (matmul(x1, x2.mT) * -2 + sq1 + sq2.mT).clamp_min(0)
        d = unary(NormSqrt, d2)
        # PyTorch's last node: the distances (their batch dims flattened to one) viewed as the result's shape
        flat = d.reshape((math.prod(d.shape[:-2]),) + tuple(d.shape[-2:])) if d.dim() > 2 else d
        return keep_saved(flat.view(d.shape), x1, x2)
    return keep_saved(composite_node(vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1), "CdistBackward0"), x1,
                      x2)


@export
def dist(input, other, p=2):  # noqa: A002
    """The ``p``-norm of ``input - other`` (broadcast), over all elements.

    >>> import ember
    >>> ember.dist(ember.tensor([3., 0.]), ember.tensor([0., 4.]))
    tensor(5.)
    """
    check_tensor(input, "dist")
    if not isinstance(other, Tensor):
        raise TypeError(f"dist(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    diff = input - other  # (PyTorch's promotion: uint8 beside float64 computes)
    if diff.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_type_name(diff.dtype)} instead.")
    r = rename_node(vector_norm(diff, float(p)), "DistBackward0", (None, None))
    fn = r._fn
    if fn is None:
        return r
    # PyTorch's node keeps both operands (held here until the graph goes; read after the backward they raise) and
    # its result: vector_norm's node made it when read, or keeps it as its output
    result = fn.__dict__.get("_args", {}).get("result") or (SavedOf(fn, "result") if fn.save_output else None)
    keep_args(r, p=p, self=input, other=other, result=result)  # (_saved_p as given)
    if fn._saved is None:
        fn._saved = ()  # (saved tensors: the backward releases the node)
    if type(fn).__dict__.get("release") is not _release_dist:
        type(fn).release = _release_dist  # (the class is dist's own, named DistBackward0)
    return keep_saved(r, input, other)


def _release_dist(node):
    """Free what dist's node keeps, its two operands too (``_saved_self``, ``_saved_other``): the backward frees
    them, as PyTorch's, where they had lived as long as the graph."""
    node.__dict__["_args"] = {**node.__dict__["_args"], "self": _freed, "other": _freed}
    super(type(node), node).release()


def _freed():
    raise RuntimeError("freed")  # (read after the release: the node reports PyTorch's error)


def _weights_arg(w, name, n, integral):
    if w is None:
        return None
    check_tensor(w, "cov")
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.dim()} "
                           f"dimensions")
    if integral and w.dtype.category != dtypes.INT:
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} with "
                           f"{_type_name(w.dtype)} dtype")
    if not integral and w.dtype.category != dtypes.FLOAT:
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got {name} with "
                           f"{_type_name(w.dtype)} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {n}")
    if w.numel() and bool((w < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


@export
def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in the rows of ``input`` (observations in the columns).

    >>> import ember
    >>> ember.cov(ember.tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    check_tensor(input, "cov")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    if input.dtype is dtypes.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if x.dtype.category < dtypes.FLOAT:
        x = cast(x, dtypes.get_default_dtype())
    n = x.shape[1]
    fw = _weights_arg(fweights, "fweights", n, True)
    aw = _weights_arg(aweights, "aweights", n, False)
    w = fw if aw is None else aw if fw is None else fw * aw
    if w is None:
        w_sum = float(n)
        avg = x.mean(1, keepdim=True)
        norm = w_sum - correction
    else:
        w = cast(w.detach() if fw is not None and aw is None else w, x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1, keepdim=True) / w_sum
        if correction == 0:
            norm = w_sum
        elif aw is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aw).sum() / w_sum
    if (float(norm) if isinstance(norm, Tensor) else norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm.clamp_min(0) if isinstance(norm, Tensor) else _builtin_max(norm, 0)
    xm = x - avg
    c = matmul(xm if w is None else xm * w, xm.mT.conj() if xm.is_complex() else xm.mT) / norm
    return c.squeeze()


@export
def corrcoef(input):  # noqa: A002
    """Pearson correlation coefficients of the variables in the rows of ``input``.

    >>> import ember
    >>> ember.corrcoef(ember.tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    check_tensor(input, "corrcoef")
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    sd = c.diagonal().sqrt()
    c = c / sd.unsqueeze(1) / sd.unsqueeze(0)
    return c if c.is_complex() else c.clamp(-1, 1)


def _trapezoid_args(y, x, dx, dim, op):
    check_tensor(y, op)
    if x is not None and dx is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: give x or dx, not both")
    if y.dim() == 0:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [-1, 0], but got {dim})")
    d = _wrap_dim(dim, y.dim(), op)
    if y.dtype.category < dtypes.FLOAT:
        y = cast(y, dtypes.get_default_dtype())
    if x is None:
        return y, d, 1.0 if dx is None else dx
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'x' must be Tensor, not {type(x).__name__}")
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point (x has {x.shape[0]}, "
                               f"y has {y.shape[d]} along dim {d})")
        step = x[1:] - x[:-1]
        step = step.reshape((-1,) + (1,) * (y.dim() - d - 1))
    else:
        xd = _wrap_dim(dim, x.dim(), op) if x.dim() else 0
        step = x.diff(dim=xd) if x.dim() else x
    return y, d, step


@export(to=("torch",), aliases=("trapz",))
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: sample points ``x`` (a tensor) or a constant spacing ``dx``.

    >>> import ember
    >>> ember.trapezoid(ember.tensor([1., 2., 3.]))
    tensor(4.)
    """
    y, d, step = _trapezoid_args(y, x, dx, dim, "trapezoid")
    if y.shape[d] == 0:
        return y.sum(d) * 0
    lo, hi = y.narrow(d, 0, y.shape[d] - 1), y.narrow(d, 1, y.shape[d] - 1)
    if isinstance(step, Tensor):
        return _by_number(((lo + hi) * step).sum(d), "Div", 2.0)
    return _by_number((lo + hi).sum(d) * 0.5, "Mul", step)


def _by_number(t, op: str, number):
    """``t * number`` (``op`` "Mul") or ``t / number`` ("Div") as PyTorch's composites compute it: the Scalar
    overload's node (``MulBackward1``, ``DivBackward1``), which keeps the number as its argument."""
    r = t * number if op == "Mul" else t / number
    return keep_args(rename_node(r, f"{op}Backward1", (None, None)), other=float(number))


@export(to=("torch",))
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along ``dim`` (one element fewer than ``y`` there).

    >>> import ember
    >>> ember.cumulative_trapezoid(ember.tensor([1., 2., 3.]))
    tensor([1.5000, 4.0000])
    """
    y, d, step = _trapezoid_args(y, x, dx, dim, "cumulative_trapezoid")
    n = y.shape[d]
    if n == 0:
        return y.clone()
    lo, hi = y.narrow(d, 0, n - 1), y.narrow(d, 1, n - 1)
    if isinstance(step, Tensor):
        return _by_number(((lo + hi) * step).cumsum(d), "Div", 2.0)
    return _by_number(lo + hi, "Mul", step / 2).cumsum(dim)  # (PyTorch's cumsum keeps dim as given here)


Histogram = op_class("Histogram", "histogram", arity=4)


@export
def histogram(input, bins, *, range=None, weight=None, density=False, out=None):  # noqa: A001,A002
    """Counts of ``input`` in ``bins`` (a number of equal bins over ``range``, else the data's range; or a
    tensor of increasing edges), weighted by ``weight``; returns ``(hist, bin_edges)``.  Not differentiable.

    >>> import ember
    >>> ember.histogram(ember.tensor([1., 2., 1.]), 2).hist
    tensor([2., 1.])
    """
    check_tensor(input, "histogram")
    if isinstance(bins, Tensor) or range is not None or not input.numel():  # (half: only given edges or range)
        dtypes.check_kernel("histogram_{device}", input, dtypes.FLOATING_AND_HALF, empty_ok=False)
    else:
        dtypes.check_kernel("histogramdd", input, dtypes.FLOATING_TYPES)
    if weight is not None and (not isinstance(weight, Tensor) or tuple(weight.shape) != tuple(input.shape)):
        raise RuntimeError(f"torch.histogram: if weight tensor is provided it should have the same shape as the "
                           f"input tensor (got {list(getattr(weight, 'shape', []))} for input {list(input.shape)})")
    if isinstance(bins, Tensor):
        if bins.dim() != 1:
            raise RuntimeError(f"torch.histogram: bins tensor should have one dimension, but got {bins.dim()}")
        if bins.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, but "
                               f"got input {_type_name(input.dtype)} and bins {_type_name(bins.dtype)}")
        if bins.numel() < 1:
            raise RuntimeError("torch.histogram: bins tensor should have at least 1 element, but got 0")
        edges = bins.detach()
    else:
        nb = int(bins)
        if nb <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {nb} for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif input.numel():
            lo, hi = (float(v) for v in aminmax(input.detach()))
        else:
            lo, hi = 0.0, 0.0
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): max must be larger than min, but got min {lo} max {hi}")
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogram(): range of [{lo}, {hi}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _linspace(lo, hi, nb + 1, dtype=input.dtype, device=input.device)
    w = None if weight is None else cast(weight.detach(), input.dtype)
    with no_grad():
        hist = apply(Histogram, input, edges, w, bool(density))
    r = return_types.histogram(hist, edges.clone() if isinstance(bins, Tensor) else edges)
    if out is not None:
        for o, v in zip(out, r):
            out_or(v, o)
        return return_types.histogram(*out)
    return r


def _renorm_args(input, p, dim, maxnorm):
    check_tensor(input, "renorm")
    if input.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"renorm: expected a floating point or complex type, got {_type_name(input.dtype)}")
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported (p = {p})")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    return _wrap_dim(dim, input.dim(), "renorm")


@export(inplace=True)
def renorm(input, p, dim, maxnorm, *, out=None):  # noqa: A002
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``.

    >>> import ember
    >>> ember.renorm(ember.tensor([[3., 4.], [0.3, 0.4]]), 2, 0, 1.0)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    d = _renorm_args(input, p, dim, maxnorm)
    others = tuple(i for i in builtins_range(input.dim()) if i != d)
    norms = vector_norm(input, p, others, True)
    factor = (maxnorm / (norms + 1e-7)).where(norms > maxnorm, 1.0)
    return out_or(composite_node(input * factor, "RenormBackward0"), out)


@export
def inner(input, other, *, out=None):  # noqa: A002
    """The inner product over the last dimension of both (a product when one is 0-d).

    >>> import ember
    >>> ember.inner(ember.tensor([1., 2.]), ember.tensor([[1., 0.], [0., 1.]]))
    tensor([1., 2.])
    """
    check_tensor(input, "inner")
    if not isinstance(other, Tensor):
        raise TypeError(f"inner(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if input.dim() == 0 or other.dim() == 0:
        return out_or(input * other, out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return out_or(tensordot(input, other, ([input.dim() - 1], [other.dim() - 1])), out)


Histogramdd = op_class("Histogramdd", "histogramdd", arity=4)


@export(to=("torch",))
def histogramdd(input, bins, *, range=None, weight=None, density=False, out=None):  # noqa: A001,A002
    """A ``D``-dimensional histogram of the points in the last dimension of ``input`` (``[..., D]``): ``bins`` an
    int, one int per dimension, or one tensor of edges per dimension; returns ``(hist, bin_edges)``.

    >>> import ember
    >>> h, edges = ember.histogramdd(ember.tensor([[0., 0.], [1., 1.], [1., 0.]]), 2)
    >>> h
    tensor([[1., 0.],
            [1., 1.]])
    """
    check_tensor(input, "histogramdd")
    dtypes.check_kernel("histogramdd", input, dtypes.FLOATING_TYPES)
    if input.dim() < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension")
    d = input.shape[-1]
    pts = input.detach().reshape(-1, d)
    if isinstance(bins, int) or (isinstance(bins, Tensor) and bins.dim() == 0):
        bins = [int(bins)] * d
    bins = list(bins)
    if len(bins) != d:
        raise RuntimeError(f"torch.histogramdd: expected {d} sequences of bin edges for each of the {d} dimensions "
                           f"of the input tensor, but got {len(bins)}")
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should have {2 * d} elements, "
                           f"but got {len(range)}")
    edges = []
    for i, b in enumerate(bins):
        col = pts[:, i]
        if isinstance(b, Tensor):
            if b.dim() != 1 or b.numel() < 1 or b.dtype is not input.dtype:
                raise RuntimeError(f"torch.histogramdd: bins tensor {i} should be a 1-D tensor of at least one "
                                   f"element and of the input's dtype, got {list(b.shape)} {b.dtype}")
            edges.append(b.detach())
            continue
        lo, hi = (float(range[2 * i]), float(range[2 * i + 1])) if range is not None else \
            ((float(v) for v in aminmax(col)) if col.numel() else (0.0, 0.0))
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {i}'s range [{lo:g}, {hi:g}] is not finite")
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo} max {hi} for "
                               f"dimension {i}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(_linspace(lo, hi, int(b) + 1, dtype=input.dtype, device=input.device))
    w = None if weight is None else cast(weight.detach().reshape(-1), input.dtype)
    with no_grad():
        hist = apply(Histogramdd, pts, edges, w, bool(density))
    return return_types.histogramdd(hist, edges)


_SEGMENT_REDUCES = {"sum": ("sum", 0.0), "mean": ("mean", math.nan), "max": ("amax", -math.inf),
                    "min": ("amin", math.inf), "prod": ("prod", 1.0)}


@export(to=("torch",))
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Reduce consecutive segments of ``data`` along ``axis`` ('sum', 'mean', 'max', 'min', 'prod'); the segments
    are given by ``lengths`` or by ``offsets`` (their boundaries); an empty segment gives ``initial`` (else the
    reduction's identity, NaN for 'mean').

    >>> import ember
    >>> ember.segment_reduce(ember.tensor([1., 2., 3., 4.]), "sum", lengths=ember.tensor([1, 3]))
    tensor([1., 9.])
    """
    check_tensor(data, "segment_reduce")
    dtypes.check_kernel("_segment_reduce_{device}", data, dtypes.FLOATING_AND_HALF)
    if reduce not in _SEGMENT_REDUCES:
        raise RuntimeError(f"segment_reduce: reduce must be one of sum, mean, max, min or prod, got {reduce}")
    if indices is not None:
        raise NotImplementedError("segment_reduce: indices are not supported (as in PyTorch); give lengths or "
                                  "offsets")
    if (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce: give exactly one of lengths and offsets")
    if offsets is not None:
        lengths = offsets[1:] - offsets[:-1]
    if lengths.dim() != 1:
        raise RuntimeError(f"segment_reduce: only 1-D lengths are supported, got shape {list(lengths.shape)}")
    ax = _wrap_dim(axis, data.dim(), "segment_reduce")
    if ax != 0:
        raise RuntimeError(f"segment_reduce: expected axis 0 for 1-D lengths, got {axis}")
    lengths = lengths.to(data.device)
    if not unsafe:
        if lengths.numel() and bool((lengths < 0).any()):
            raise RuntimeError("segment_reduce: lengths contains negative value!")
        if int(lengths.sum()) != data.shape[ax]:
            raise RuntimeError(f"segment_reduce: expected the lengths to sum to data.size(axis) = "
                               f"{data.shape[ax]}, got {int(lengths.sum())}")
    name, empty = _SEGMENT_REDUCES[reduce]
    n = lengths.shape[0]
    seg = lengths.repeat_interleave() if n else lengths.long()
    shape = [1] * data.dim()
    shape[0] = -1
    idx = seg.reshape(shape).expand(data.shape)
    if initial is not None and name == "mean":  # PyTorch's mean with initial: (sum + initial) / count
        total = segment_reduce(data, "sum", lengths=lengths, axis=axis, unsafe=True, initial=initial)
        count = lengths.to(data.dtype).reshape([-1] + [1] * (data.dim() - 1))
        return composite_node((total / count).where(count > 0, total), "SegmentReduceBackward0")
    base = data.new_full((n,) + tuple(data.shape[1:]), empty if initial is None else initial)
    return composite_node(base.scatter_reduce(0, idx, data, name, include_self=initial is not None),
                       "SegmentReduceBackward0")  # PyTorch's one node


def _grad_along(f, d, h, edge_order):
    """numpy.gradient along dim ``d``: ``h`` a number (uniform spacing) or a 1-D tensor of coordinates."""
    n = f.shape[d]

    def sl(a, b=None):  # f[a:b] along d (negative ends count from the end)
        a = a + n if a < 0 else a
        b = n if b is None else b + n if b < 0 else b
        return f.narrow(d, a, b - a)

    def col(t):  # a 1-D coefficient tensor, broadcast along d
        return t.reshape((-1,) + (1,) * (f.dim() - d - 1))

    if not isinstance(h, Tensor):
        mid = (sl(2) - sl(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first, last = (sl(1, 2) - sl(0, 1)) / h, (sl(-1) - sl(-2, -1)) / h
        else:
            first = (sl(0, 1) * -3.0 + sl(1, 2) * 4.0 - sl(2, 3)) / (2.0 * h)
            last = (sl(-1) * 3.0 - sl(-2, -1) * 4.0 + sl(-3, -2)) / (2.0 * h)
        return cat([first, mid, last], d)
    dx = h[1:] - h[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a, b, c = -dx2 / (dx1 * (dx1 + dx2)), (dx2 - dx1) / (dx1 * dx2), dx1 / (dx2 * (dx1 + dx2))
    mid = col(a) * sl(0, n - 2) + col(b) * sl(1, n - 1) + col(c) * sl(2)
    if edge_order == 1:
        first, last = (sl(1, 2) - sl(0, 1)) / dx[0], (sl(-1) - sl(-2, -1)) / dx[-1]
    else:
        p, q = dx[0], dx[1]
        first = (sl(0, 1) * (-(2 * p + q) / (p * (p + q))) + sl(1, 2) * ((p + q) / (p * q))
                 + sl(2, 3) * (-p / (q * (p + q))))
        p, q = dx[-2], dx[-1]
        last = (sl(-3, -2) * (q / (p * (p + q))) + sl(-2, -1) * (-(q + p) / (p * q))
                + sl(-1) * ((2 * q + p) / (q * (p + q))))
    return cat([first, mid, last], d)


@export(to=("torch",))
def gradient(input, *, spacing=1, dim=None, edge_order=1) -> tuple:  # noqa: A002
    """The derivative of the function sampled by ``input``, one tensor per dimension in ``dim`` (all by
    default): central differences inside, one-sided differences of order ``edge_order`` (1 or 2) at the ends
    (``numpy.gradient``).  ``spacing``: a number, one number per dimension, or one tensor of coordinates per
    dimension.

    >>> import ember
    >>> ember.gradient(ember.tensor([1., 4., 9., 16.]))
    (tensor([3., 4., 6., 7.]),)
    """
    check_tensor(input, "gradient")
    if input.dtype is dtypes.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if input.dtype is dtypes.bool:  # (its differences)
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}")
    dims = list(builtins_range(input.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, input.dim(), "gradient") for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("torch.gradient: dim must not contain repeated dimensions")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        hs = list(spacing)
    else:
        hs = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(f"torch.gradient expected each dimension size to be at least edge_order+1 (input "
                               f"shape {list(input.shape)}, edge_order {edge_order})")
    f = input if input.dtype.category >= dtypes.FLOAT else cast(input, dtypes.get_default_dtype())
    out = []
    for d, h in zip(dims, hs):
        if isinstance(h, Tensor):
            if h.dim() == 0:
                h = float(h.item())
            elif h.dim() != 1 or h.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and of size "
                                   f"{input.shape[d]} along dim {d}, got {list(h.shape)}")
            else:  # PyTorch's coefficients from coordinates: their float dtype (integers' true division: the default)
                rt = dtypes.promote_types(input.dtype, h.dtype if h.dtype.category >= dtypes.FLOAT
                                          else dtypes.get_default_dtype())
                out.append(_grad_along(cast(input, rt), d, cast(h, rt), edge_order))
                continue
        out.append(_grad_along(f, d, h, edge_order))
    return tuple(out)
