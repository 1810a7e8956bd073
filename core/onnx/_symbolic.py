"""The one table from ember op names (keys of ``ember.autograd.function.OPS``) to ONNX.

Each entry is ``fn(g, node) -> ONNX name or list of names`` (one per output of the node); see
:class:`ember.onnx._builder.GraphContext` for ``g``.  Factories (``create`` nodes) and device moves are
mapped by kind in :func:`map_node`.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..jit._graph import ARef, Ref, Sym
from ._builder import (INT64_MAX, INT64_MIN, OnnxExporterError, UnsupportedOperatorError, _has_sym, _onnx,
                       is_array)

SYMBOLICS: dict = {}


def symbolic(*names):
    def deco(fn):
        for n in names:
            SYMBOLICS[n] = fn
        return fn

    return deco


def _compute_dtype(g, *operands):
    dims, zero, scalars = [], [], []
    for o in operands:
        if isinstance(o, Ref):
            (dims if len(g.shape(o)) else zero).append(g.dtype(o))
        elif isinstance(o, dtypes.dtype):
            dims.append(o)
        elif o is not None:
            scalars.append(o)
    return dtypes.result_type_of(dims, zero, scalars)


# --------------------------------------------------------------------------- elementwise
_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "abs": "Abs", "neg": "Neg", "erf": "Erf", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin",
          "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh",
          "atanh": "Atanh", "floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign",
          "reciprocal": "Reciprocal", "logical_not": "Not", "isnan": "IsNaN", "bitwise_not": "BitwiseNot",
          "clone": "Identity", "contiguous": "Identity", "NormSqrt": "Sqrt"}


def _unary(onnx_op):
    def fn(g, n):
        x = g.arg(n.args[0], g.out_dtype()) if g.out_dtype().category >= dtypes.FLOAT and onnx_op not in (
            "Identity", "Not", "BitwiseNot", "IsNaN", "Abs", "Neg", "Sign") else g.x(n.args[0])
        return g.op(onnx_op, x)

    return fn


for _k, _v in _UNARY.items():
    SYMBOLICS[_k] = _unary(_v)


def _float_in(g, n):
    return g.arg(n.args[0], g.out_dtype())


@symbolic("rsqrt")
def _rsqrt(g, n):
    return g.op("Reciprocal", g.op("Sqrt", _float_in(g, n)))


@symbolic("square")
def _square(g, n):
    x = g.x(n.args[0])
    return g.op("Mul", x, x)


@symbolic("log1p")
def _log1p(g, n):
    return g.op("Log", g.op("Add", _float_in(g, n), g.scalar_like(1, g.out_dtype())))


@symbolic("expm1")
def _expm1(g, n):
    return g.op("Sub", g.op("Exp", _float_in(g, n)), g.scalar_like(1, g.out_dtype()))


@symbolic("log2", "log10")
def _log_base(g, n):
    base = 2.0 if n.op == "log2" else 10.0
    return g.op("Div", g.op("Log", _float_in(g, n)), g.scalar_like(math.log(base), g.out_dtype()))


@symbolic("exp2")
def _exp2(g, n):
    return g.op("Pow", g.scalar_like(2, g.out_dtype()), _float_in(g, n))


@symbolic("erfc")
def _erfc(g, n):
    return g.op("Sub", g.scalar_like(1, g.out_dtype()), g.op("Erf", _float_in(g, n)))


@symbolic("isinf")
def _isinf(g, n):
    return g.op("IsInf", g.x(n.args[0]))


@symbolic("isfinite")
def _isfinite(g, n):
    x = g.x(n.args[0])
    return g.op("Not", g.op("Or", g.op("IsNaN", x), g.op("IsInf", x)))


@symbolic("trunc")
def _trunc(g, n):
    x = g.x(n.args[0])
    return g.op("Mul", g.op("Sign", x), g.op("Floor", g.op("Abs", x)))


_BINARY = {"Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "Div", "Pow": "Pow", "Maximum": "Max",
           "Minimum": "Min", "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
           "ge": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
           "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor"}
_COMPARE = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"}


def _binary(onnx_op):
    def fn(g, n):
        a, b = n.args[0], n.args[1]
        if onnx_op in ("And", "Or", "Xor"):
            d = dtypes.bool
        else:
            d = _compute_dtype(g, a, b)
        if onnx_op == "Pow" and not isinstance(b, Ref):
            d = _compute_dtype(g, a, b)
        y = g.op(onnx_op, g.arg(a, d), g.arg(b, d))
        if onnx_op not in _COMPARE:
            y = g.cast(y, d, g.out_dtype())
        return y

    return fn


for _k, _v in _BINARY.items():
    SYMBOLICS[_k] = _binary(_v)


@symbolic("ne")
def _ne(g, n):
    d = _compute_dtype(g, n.args[0], n.args[1])
    return g.op("Not", g.op("Equal", g.arg(n.args[0], d), g.arg(n.args[1], d)))


@symbolic("AddScaled")
def _add_scaled(g, n):
    x, y, alpha = n.args
    d = g.out_dtype()
    return g.op("Add", g.arg(x, d), g.op("Mul", g.arg(y, d), g.scalar_like(alpha, d)))


@symbolic("Fmod", "Remainder")
def _mod(g, n):
    d = g.out_dtype()
    a, b = g.arg(n.args[0], d), g.arg(n.args[1], d)
    if d.category < dtypes.FLOAT:
        return g.op("Mod", a, b, fmod_i=1 if n.op == "Fmod" else 0)
    if n.op == "Fmod":
        return g.op("Mod", a, b, fmod_i=1)
    return g.op("Sub", a, g.op("Mul", g.op("Floor", g.op("Div", a, b)), b))


@symbolic("Where")
def _where(g, n):
    c, a, b = n.args
    d = g.out_dtype()
    return g.op("Where", g.cast(g.x(c), g.dtype(c), dtypes.bool), g.arg(a, d), g.arg(b, d))


@symbolic("MaskedFill")
def _masked_fill(g, n):
    x, mask, value = n.args
    d = g.out_dtype()
    v = g.arg(value, d) if isinstance(value, Ref) else g.scalar_like(value, d)
    return g.op("Where", g.cast(g.x(mask), g.dtype(mask), dtypes.bool), v, g.x(x))


@symbolic("Clamp", "ClampScalar", "Hardtanh")
def _clip(g, n):
    x, lo, hi = n.args
    d = g.out_dtype()
    lo = None if lo is None else (g.arg(lo, d) if isinstance(lo, Ref) else g.scalar_like(lo, d))
    hi = None if hi is None else (g.arg(hi, d) if isinstance(hi, Ref) else g.scalar_like(hi, d))
    if isinstance(n.args[1], Ref) or isinstance(n.args[2], Ref):
        y = g.x(x)
        if lo is not None:
            y = g.op("Max", y, lo)
        if hi is not None:
            y = g.op("Min", y, hi)
        return y
    return g.op("Clip", g.x(x), lo, hi)


@symbolic("Cast")
def _cast(g, n):
    return g.cast(g.x(n.args[0]), g.dtype(n.args[0]), g.out_dtype())


@symbolic("Softplus")
def _softplus(g, n):
    x, beta, threshold = n.args
    d = g.out_dtype()
    xs = g.op("Mul", g.x(x), g.scalar_like(beta, d)) if beta != 1 else g.x(x)
    soft = g.op("Softplus", xs)
    if beta != 1:
        soft = g.op("Div", soft, g.scalar_like(beta, d))
    return g.op("Where", g.op("Greater", xs, g.scalar_like(threshold, d)), g.x(x), soft)


@symbolic("Softmax", "LogSoftmax")
def _softmax(g, n):
    x, dim = n.args
    return g.op("Softmax" if n.op == "Softmax" else "LogSoftmax", g.x(x), axis_i=dim)


# --------------------------------------------------------------------------- linear algebra
@symbolic("Matmul")
def _matmul(g, n):
    a, b = n.args
    d = g.out_dtype()
    return g.op("MatMul", g.arg(a, d), g.arg(b, d))


@symbolic("Linear")
def _linear(g, n):
    x, w, b = n.args
    if len(g.shape(x)) == 2:
        return g.op("Gemm", g.x(x), g.x(w), None if b is None else g.x(b), transB_i=1)
    y = g.op("MatMul", g.x(x), g.op("Transpose", g.x(w), perm_is=[1, 0]))
    return y if b is None else g.op("Add", y, g.x(b))


@symbolic("Einsum")
def _einsum(g, n):
    eq, *ops = n.args
    if isinstance(eq, str) and all(isinstance(o, Ref) for o in ops):
        return g.op("Einsum", *[g.x(o) for o in ops], equation_s=eq)
    if len(n.args) == 2 and isinstance(n.args[1], (list, tuple)):
        return g.op("Einsum", *[g.x(o) for o in n.args[1]], equation_s=n.args[0])
    raise OnnxExporterError(f"onnx.export: einsum{g.where()}: unexpected arguments")


# --------------------------------------------------------------------------- convolution and pooling
def _pads(pairs):
    return [lo for lo, _ in pairs] + [hi for _, hi in pairs]


@symbolic("Conv")
def _conv(g, n):
    x, w, b, params = n.args
    stride, pairs, dilation, groups = g.static(params, "convolution parameter")
    return g.op("Conv", g.x(x), g.x(w), None if b is None else g.x(b), strides_is=list(stride),
                pads_is=_pads(pairs), dilations_is=list(dilation), group_i=groups,
                kernel_shape_is=list(g.shape(w)[2:]))


@symbolic("ConvInputGrad")
def _conv_transpose(g, n):
    x, w, out_shape, params = n.args
    stride, pairs, dilation, groups = g.static(params, "convolution parameter")
    k = g.shape(w)[2:]
    ins = g.shape(x)[2:]
    osp = g.out_shape()[2:]
    extra = [o - ((i - 1) * s - lo - hi + d * (kk - 1) + 1)
             for o, i, s, (lo, hi), d, kk in zip(osp, ins, stride, pairs, dilation, k)]
    return g.op("ConvTranspose", g.x(x), g.x(w), strides_is=list(stride), pads_is=_pads(pairs),
                dilations_is=list(dilation), group_i=groups, kernel_shape_is=list(k), output_padding_is=extra)


@symbolic("MaxPool")
def _max_pool(g, n):
    x, params, indices = n.args
    if indices:
        raise UnsupportedOperatorError(f"onnx.export: max pooling with return_indices=True{g.where()} has no ONNX "
                                       f"mapping in ember")
    k, stride, pairs, dilation = g.static(params, "pooling parameter")
    attrs = {"dilations_is": list(dilation)} if any(d != 1 for d in dilation) else {}
    return g.op("MaxPool", g.x(x), kernel_shape_is=list(k), strides_is=list(stride), pads_is=_pads(pairs),
                **attrs)


@symbolic("AdaptiveMaxPool")
def _adaptive_max_pool(g, n):
    x, osize = n.args
    sp = g.shape(x)[2:]
    osize = list(osize)
    if all(o == 1 for o in osize):
        y = g.op("GlobalMaxPool", g.x(x))
    elif all(s % o == 0 for s, o in zip(sp, osize)):
        k = [s // o for s, o in zip(sp, osize)]
        y = g.op("MaxPool", g.x(x), kernel_shape_is=k, strides_is=k)
    else:
        raise UnsupportedOperatorError(f"onnx.export: adaptive max pooling{g.where()} of size {list(sp)} to "
                                       f"{osize} (not a divisor) has no ONNX mapping")
    return [y, None]


@symbolic("ConstantPad")
def _constant_pad(g, n):
    x, pairs, value = n.args
    nd = len(g.shape(x))
    full = [(0, 0)] * (nd - len(pairs)) + [tuple(p) for p in g.static(pairs, "padding")]
    return g.op("Pad", g.x(x), g.ints(_pads(full)), g.scalar_like(value, g.dtype(x)), mode_s="constant")


# --------------------------------------------------------------------------- shapes
@symbolic("View", "Reshape")
def _reshape(g, n):
    x, shape = n.args
    return g.op("Reshape", g.x(x), g.ints(shape))


@symbolic("Transpose", "T", "Permute")
def _transpose(g, n):
    x, perm = n.args
    perm = list(perm)
    if perm == list(range(len(perm))):
        return g.op("Identity", g.x(x))
    return g.op("Transpose", g.x(x), perm_is=perm)


@symbolic("Expand")
def _expand(g, n):
    x, shape = n.args
    return g.op("Expand", g.x(x), g.ints(shape))


@symbolic("Cat")
def _cat(g, n):
    items, axis = n.args
    d = g.out_dtype()
    items = [t for t in items if not (len(g.shape(t)) == 1 and g.shape(t)[0] == 0 and len(g.out_shape()) != 1)]
    return g.op("Concat", *[g.arg(t, d) for t in items], axis_i=axis)


@symbolic("Stack")
def _stack(g, n):
    items, axis = n.args
    d = g.out_dtype()
    return g.op("Concat", *[g.unsqueeze(g.arg(t, d), [axis]) for t in items], axis_i=axis)


@symbolic("Split")
def _split(g, n):
    x, bounds, axis = n.args
    size = g.shape(x)[axis]
    if isinstance(bounds, int):
        raise OnnxExporterError(f"onnx.export: split{g.where()}: unexpected bounds {bounds!r}")
    edges = [0] + [min(int(b), size) for b in g.static(bounds, "split bound")] + [size]
    sizes = [b - a for a, b in zip(edges[:-1], edges[1:])]
    return g.op("Split", g.x(x), g.ints(sizes), axis_i=axis, outputs=len(sizes)) if len(sizes) > 1 else \
        [g.op("Identity", g.x(x))]


@symbolic("Unbind")
def _unbind(g, n):
    x, axis = n.args
    k = g.shape(x)[axis]
    parts = g.op("Split", g.x(x), g.ints([1] * k), axis_i=axis, outputs=k) if k > 1 else [g.x(x)]
    return [g.squeeze(p, [axis]) for p in parts]


@symbolic("Repeat")
def _repeat(g, n):
    x, reps = n.args
    reps = list(reps)
    nd = len(g.shape(x))
    y = g.x(x)
    if len(reps) > nd:
        y = g.op("Reshape", y, g.ints([1] * (len(reps) - nd) + list(g.shape(x))))
    return g.op("Tile", y, g.ints(reps))


@symbolic("Flip")
def _flip(g, n):
    x, *params = n.args
    axes = params[0] if params else None
    axes = list(axes) if isinstance(axes, (tuple, list)) else [axes]
    k = len(axes)
    return g.op("Slice", g.x(x), g.ints([-1] * k), g.ints([INT64_MIN] * k), g.ints(axes), g.ints([-1] * k))


@symbolic("Tril", "Triu")
def _trilu(g, n):
    x, *params = n.args
    k = params[0] if params else 0
    return g.op("Trilu", g.x(x), g.const(np.asarray(k, np.int64)), upper_i=1 if n.op == "Triu" else 0)


def getitem(g, x, index):
    """NumPy-style ``x[index]`` (ints, slices, ``...``, ``None``, one integer index array) in ONNX."""
    idx = index if isinstance(index, tuple) else (index,)
    nd = len(g.shape(x))
    consuming = sum(1 for e in idx if e is not None and e is not Ellipsis and not (isinstance(e, bool)))
    if any(is_array(e) and e.dtype == np.bool_ for e in idx) or any(
            isinstance(e, Ref) and g.dtype(e) is dtypes.bool for e in idx):
        raise UnsupportedOperatorError(f"onnx.export: boolean-mask indexing{g.where()} has no ONNX mapping in "
                                       f"ember (its result shape depends on the data)")
    arrays = [e for e in idx if isinstance(e, Ref) or is_array(e)]
    if len(arrays) > 1:
        raise UnsupportedOperatorError(f"onnx.export: indexing with several index tensors{g.where()} has no ONNX "
                                       f"mapping in ember")
    full = []
    for e in idx:
        if e is Ellipsis:
            full += [slice(None)] * (nd - consuming)
        else:
            full.append(e)
    y = g.x(x)
    od = 0
    for e in full:
        if e is None:
            y = g.unsqueeze(y, [od])
            od += 1
        elif isinstance(e, slice):
            if e.start is None and e.stop is None and e.step in (None, 1):
                od += 1
                continue
            step = 1 if e.step is None else e.step
            start = e.start if e.start is not None else (0 if step > 0 else INT64_MAX)
            stop = e.stop if e.stop is not None else (INT64_MAX if step > 0 else INT64_MIN)
            y = g.op("Slice", y, g.ints([start]), g.ints([stop]), g.ints([od]), g.ints([step]))
            od += 1
        elif isinstance(e, (int, np.integer, Sym)) and not isinstance(e, bool):
            i = g.ints([e]) if isinstance(e, Sym) else g.const(np.asarray(int(e), np.int64))
            if isinstance(e, Sym):
                i = g.squeeze(i, [0])
            y = g.op("Gather", y, i, axis_i=od)
        else:
            ind = g.cast(g.x(e), g.dtype(e), dtypes.int64) if isinstance(e, Ref) else \
                g.const(np.asarray(e, dtype=np.int64))
            y = g.op("Gather", y, ind, axis_i=od)
            od += len(g.shape(e)) if isinstance(e, Ref) else e.ndim
    return y


@symbolic("SliceView", "Getitem", "SelectView", "UnsqueezeView", "AliasView")
def _getitem(g, n):
    x, index = n.args
    return getitem(g, x, index)


# --------------------------------------------------------------------------- gathering
@symbolic("IndexSelect")
def _index_select(g, n):
    x, axis, idx = n.args
    ind = g.x(idx) if isinstance(idx, Ref) else g.const(np.asarray(idx, np.int64))
    if isinstance(idx, Ref) and len(g.shape(idx)) != 1:
        ind = g.op("Reshape", ind, g.ints([-1]))
    return g.op("Gather", g.x(x), ind, axis_i=axis)


@symbolic("Gather")
def _gather(g, n):
    x, axis, idx = n.args
    ind = g.x(idx) if isinstance(idx, Ref) else g.const(np.asarray(idx, np.int64))
    return g.op("GatherElements", g.x(x), ind, axis_i=axis)


# --------------------------------------------------------------------------- reductions
def _reduce_of(onnx_op):
    def fn(g, n):
        x, axes, keepdim, *rest = n.args
        d = g.out_dtype()
        y = g.reduce(onnx_op, g.arg(x, d), axes, keepdim)
        return y

    return fn


SYMBOLICS["Sum"] = _reduce_of("ReduceSum")
SYMBOLICS["Mean"] = _reduce_of("ReduceMean")
SYMBOLICS["LogSumExp"] = _reduce_of("ReduceLogSumExp")


@symbolic("Amax", "Amin")
def _amax(g, n):
    x, axes, keepdim, kernel = n.args
    return g.reduce("ReduceMax" if n.op == "Amax" else "ReduceMin", g.x(x), axes, keepdim)


@symbolic("Prod")
def _prod(g, n):
    x, axis, keepdim = n.args
    return g.reduce("ReduceProd", g.arg(x, g.out_dtype()), None if axis is None else [axis], keepdim)


@symbolic("Var")
def _var(g, n):
    x, axes, correction, keepdim = n.args
    shape = g.shape(x)
    count = 1
    for a in (range(len(shape)) if axes is None else axes):
        count *= shape[a]
    d = g.out_dtype()
    xs = g.x(x)
    mean = g.reduce("ReduceMean", xs, axes, True)
    diff = g.op("Sub", xs, mean)
    ss = g.reduce("ReduceSum", g.op("Mul", diff, diff), axes, keepdim)
    return g.op("Div", ss, g.scalar_like(max(count - correction, 0), d))


@symbolic("Std")
def _std(g, n):
    return g.op("Sqrt", _var(g, n))


@symbolic("MaxDim", "MinDim")
def _max_dim(g, n):
    x, dim, keepdim, kernel = n.args
    big = kernel == "max"
    vals = g.reduce("ReduceMax" if big else "ReduceMin", g.x(x), [dim], keepdim)
    idx = g.op("ArgMax" if big else "ArgMin", g.x(x), axis_i=dim, keepdims_i=1 if keepdim else 0,
               select_last_index_i=0)
    return [vals, idx]


@symbolic("Argmax", "Argmin")
def _argmax(g, n):
    x, dim, keepdim, kernel = n.args
    op = "ArgMax" if "max" in kernel else "ArgMin"
    if dim is None:
        flat = g.op("Reshape", g.x(x), g.ints([-1]))
        y = g.op(op, flat, axis_i=0, keepdims_i=0)
        return g.op("Reshape", y, g.ints([1] * len(g.shape(x)))) if keepdim else y
    return g.op(op, g.x(x), axis_i=dim, keepdims_i=1 if keepdim else 0)


@symbolic("Cumsum")
def _cumsum(g, n):
    x, dim = n.args
    return g.op("CumSum", g.arg(x, g.out_dtype()), g.const(np.asarray(dim, np.int64)))


# --------------------------------------------------------------------------- in place
@symbolic("Copy", "Fill")
def _fill(g, n):
    x, value = n.args
    d = g.dtype(x)
    v = g.arg(value, d) if isinstance(value, Ref) else g.scalar_like(value, d)
    return g.op("Expand", v, g.op("Shape", g.x(x)))


# --------------------------------------------------------------------------- recurrent layers
def _reorder(g, name, sizes, order, axis=0):
    """Split ``name`` into gate blocks of ``sizes`` along ``axis`` and concatenate them in ``order``."""
    parts = g.op("Split", name, g.ints(sizes), axis_i=axis, outputs=len(sizes))
    return g.op("Concat", *[parts[i] for i in order], axis_i=axis)


def _rnn_weights(g, w_ih, w_hh, b_ih, b_hh, H, order):
    """ONNX's ``W``, ``R`` and ``B`` (or None without biases) of one direction, gates in ONNX's ``order``."""
    def gates(v):
        return g.x(v) if len(order) == 1 else _reorder(g, g.x(v), [H] * len(order), order)

    W, R = g.unsqueeze(gates(w_ih), [0]), g.unsqueeze(gates(w_hh), [0])
    if b_ih is None:
        return W, R, None
    return W, R, g.unsqueeze(g.op("Concat", gates(b_ih), gates(b_hh), axis_i=0), [0])


def _rnn_unsupported(g, n, mask, proj=None):
    if mask is not None:
        raise UnsupportedOperatorError(f"onnx.export: {n.op} over a PackedSequence{g.where()} has no ONNX mapping in "
                                       f"ember (export padded batches)")
    if proj is not None:
        raise UnsupportedOperatorError(f"onnx.export: LSTM with proj_size{g.where()} has no ONNX mapping in ember")


@symbolic("LSTMLayer")
def _lstm(g, n):
    x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse = n.args
    _rnn_unsupported(g, n, mask, w_hr)
    H = g.shape(c0)[-1]
    order = [0, 3, 1, 2]  # ember/PyTorch i, f, g, o -> ONNX i, o, f, c
    W, R, B = _rnn_weights(g, w_ih, w_hh, b_ih, b_hh, H, order)
    y, yh, yc = g.op("LSTM", g.x(x), W, R, B, None, g.unsqueeze(g.x(h0), [0]), g.unsqueeze(g.x(c0), [0]),
                     hidden_size_i=H, direction_s="reverse" if reverse else "forward", outputs=3)
    return [g.squeeze(y, [1]), g.squeeze(yh, [0]), g.squeeze(yc, [0])]


@symbolic("GRULayer")
def _gru(g, n):
    x, w_ih, w_hh, b_ih, b_hh, h0, mask, reverse = n.args
    _rnn_unsupported(g, n, mask)
    H = g.shape(h0)[-1]
    order = [1, 0, 2]  # ember/PyTorch r, z, n -> ONNX z, r, h
    W, R, B = _rnn_weights(g, w_ih, w_hh, b_ih, b_hh, H, order)
    y, yh = g.op("GRU", g.x(x), W, R, B, None, g.unsqueeze(g.x(h0), [0]), hidden_size_i=H,
                 linear_before_reset_i=1, direction_s="reverse" if reverse else "forward", outputs=2)
    return [g.squeeze(y, [1]), g.squeeze(yh, [0])]


@symbolic("RNNLayer")
def _rnn(g, n):
    x, w_ih, w_hh, b_ih, b_hh, h0, relu, mask, reverse = n.args
    _rnn_unsupported(g, n, mask)
    H = g.shape(h0)[-1]
    W, R, B = _rnn_weights(g, w_ih, w_hh, b_ih, b_hh, H, [0])
    y, yh = g.op("RNN", g.x(x), W, R, B, None, g.unsqueeze(g.x(h0), [0]),
                 hidden_size_i=H, activations_ss=["Relu" if relu else "Tanh"],
                 direction_s="reverse" if reverse else "forward", outputs=2)
    return [g.squeeze(y, [1]), g.squeeze(yh, [0])]


# --------------------------------------------------------------------------- factories and moves
_RANDOM = {"rand", "randn", "randint", "randperm", "normal", "bernoulli", "rand_like", "randn_like",
           "randint_like", "uniform", "multinomial", "poisson"}


def map_create(g, n, evaluate):
    """A factory: a constant (computed now) or, with a dynamic size, ``ConstantOfShape``."""
    op = n.op
    dev, _rg, out, kernel, *args = n.args
    if op in _RANDOM or any(type(a).__name__ == "Gen" for a in args):
        raise UnsupportedOperatorError(f"onnx.export: random factory {op}{g.where()} has no ONNX mapping in ember "
                                       f"(export in eval mode, where dropout draws nothing)")
    if out is not None:
        raise UnsupportedOperatorError(f"onnx.export: factory {op}(out=...){g.where()} has no ONNX mapping")
    if _has_sym(args):
        if kernel == "full":
            size, value, nd = args[:3]
            d = g.out_dtype()
            return g.op("ConstantOfShape", g.ints(size), value_t=_tensor_attr(value, d))
        if kernel == "empty":
            d = g.out_dtype()
            return g.op("ConstantOfShape", g.ints(args[0]), value_t=_tensor_attr(0, d))
        raise OnnxExporterError(f"onnx.export: factory {op}{g.where()} has a size that follows a dynamic axis; "
                                f"only zeros/ones/full/empty support that")
    return g.const(evaluate(n))


def _tensor_attr(value, d):
    return _onnx().numpy_helper.from_array(np.asarray([value], dtype=d.np))


__all__ = ["SYMBOLICS", "symbolic", "map_create", "getitem", "ARef"]


@symbolic("NanToNum")
def _nan_to_num(g, n):
    x, nan, posinf, neginf = n.args
    d = g.out_dtype()
    xs = g.x(x)
    y = g.op("Where", g.op("IsNaN", xs), g.scalar_like(nan, d), xs)
    y = g.op("Where", g.op("IsInf", xs, detect_negative_i=0), g.scalar_like(posinf, d), y)
    return g.op("Where", g.op("IsInf", xs, detect_positive_i=0), g.scalar_like(neginf, d), y)
