"""The one table from ember op names (keys of ``ember.autograd.function.OPS``) to ONNX.

Each entry is ``fn(g, node) -> ONNX name or list of names`` (one per output of the node); see
:class:`ember.onnx._builder.GraphContext` for ``g``.  Factories (``create`` nodes) and device moves are
mapped by kind in :func:`map_node`.  An op whose declaration names its ONNX operator (``onnx="Exp"``) gets
its entry from the declaration (:func:`declared`); the functions below are the mappings that are not
one-to-one.  A pointwise op with neither says why in :data:`NOT_EXPORTED`.
"""
from __future__ import annotations

import math

import itertools

import numpy as np

from .. import dtypes
from ..autograd.function import OPS
from ..jit._graph import ARef, Ref, Sym
from ._builder import (INT64_MAX, INT64_MIN, OnnxExporterError, UnsupportedOperatorError, _has_sym, _onnx,
                       elem_type, is_array)

SYMBOLICS: dict = {}


def symbolic(*names):
    def deco(fn):
        for n in names:
            SYMBOLICS[n] = fn
        return fn

    return deco


def _compute_dtype(g, *operands, kind="default"):
    """The dtype an op of promotion ``kind`` computes in over ``operands`` (graph values, dtypes, numbers):
    PyTorch's promotion as eager dispatch applies it (:func:`ember.dtypes.computation_dtype`)."""
    dims, zero, scalars = [], [], []
    for o in operands:
        if isinstance(o, Ref):
            (dims if len(g.shape(o)) else zero).append(g.dtype(o))
        elif isinstance(o, dtypes.dtype):
            dims.append(o)
        elif o is not None:
            scalars.append(o)
    return dtypes.computation_dtype(kind, dtypes.result_type_of(dims, zero, scalars))


# --------------------------------------------------------------------------- elementwise, from the declarations
_BINARY_ONNX = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "LessOrEqual", "Greater",
                "GreaterOrEqual", "And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}
_BOOL_ONNX = {"And", "Or", "Xor", "Not"}  # ONNX's logical operators take bool operands only


def _unary(Op):
    """One ONNX operator over the one input, converted first where the op's promotion kind computes integers
    in the default float dtype."""
    onnx_op = Op.onnx

    def fn(g, n):
        x = g.arg(n.args[0], g.out_dtype()) if Op.promotion == "int_to_float" else g.x(n.args[0])
        return g.op(onnx_op, x)

    return fn


def _binary(Op):
    """One ONNX operator over both operands, converted to the dtype the op's promotion kind computes in; the
    result converted to the output's dtype unless the op always gives bool."""
    onnx_op = Op.onnx

    def fn(g, n):
        a, b = n.args[0], n.args[1]
        d = dtypes.bool if onnx_op in _BOOL_ONNX else _compute_dtype(g, a, b, kind=Op.promotion)
        y = g.op(onnx_op, g.arg(a, d), g.arg(b, d))
        return y if Op.promotion == "always_bool" else g.cast(y, d, g.out_dtype())

    return fn


def declared() -> None:
    """Enter the mapping of every op whose declaration names its ONNX operator (one-to-one), under its OPS key
    (run once all built-in ops are defined: at the end of this module)."""
    for key, Op in list(OPS.items()):
        if Op.onnx is not None and key not in SYMBOLICS:
            SYMBOLICS[key] = (_binary if Op.onnx in _BINARY_ONNX else _unary)(Op)


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


# the activations ember computes as one op each (PyTorch's nodes EluBackward0, GeluBackward0, ...)
@symbolic("Elu", "Elu_", "Celu", "Celu_")
def _elu(g, n):
    x, alpha, scale, input_scale = n.args
    if scale == 1 and input_scale == 1:
        return g.op("Elu", g.x(x), alpha_f=alpha)
    if input_scale == 1:
        return g.op("Selu", g.x(x), alpha_f=alpha, gamma_f=scale)
    d = g.out_dtype()
    neg = g.op("Mul", g.op("Sub", g.op("Exp", g.op("Mul", g.op("Min", g.x(x), g.scalar_like(0, d)),
                                                  g.scalar_like(input_scale, d))), g.scalar_like(1, d)),
               g.scalar_like(alpha * scale, d))
    return g.op("Where", g.op("Greater", g.x(x), g.scalar_like(0, d)), g.op("Mul", g.x(x), g.scalar_like(scale, d)),
                neg)


@symbolic("LeakyRelu", "LeakyRelu_")
def _leaky_relu(g, n):
    return g.op("LeakyRelu", g.x(n.args[0]), alpha_f=n.args[1])


@symbolic("RreluWithNoise", "RreluWithNoise_", "PreluKernel")
def _prelu(g, n):
    x, w = n.args
    d = g.out_dtype()
    return g.op("Where", g.op("Greater", g.x(x), g.scalar_like(0, d)), g.x(x), g.op("Mul", g.x(x), g.arg(w, d)))


@symbolic("Threshold", "Threshold_")
def _threshold(g, n):
    x, th, value = n.args
    d = g.out_dtype()
    return g.op("Where", g.op("Greater", g.x(x), g.scalar_like(th, d)), g.x(x), g.scalar_like(value, d))


@symbolic("Softshrink", "Hardshrink")
def _shrink(g, n):
    x, lambd = n.args
    return g.op("Shrink", g.x(x), bias_f=lambd if n.op == "Softshrink" else 0.0, lambd_f=lambd)


@symbolic("Hardsigmoid")
def _hardsigmoid(g, n):
    return g.op("HardSigmoid", g.x(n.args[0]), alpha_f=1 / 6, beta_f=0.5)


@symbolic("Hardswish")
def _hardswish(g, n):
    return g.op("HardSwish", g.x(n.args[0]))


@symbolic("Silu")
def _silu(g, n):
    return g.op("Mul", g.x(n.args[0]), g.op("Sigmoid", g.x(n.args[0])))


@symbolic("Mish")
def _mish(g, n):
    return g.op("Mul", g.x(n.args[0]), g.op("Tanh", g.op("Softplus", g.x(n.args[0]))))


@symbolic("LogSigmoid")
def _log_sigmoid(g, n):
    return g.op("Neg", g.op("Softplus", g.op("Neg", g.x(n.args[0]))))


@symbolic("Gelu")
def _gelu(g, n):
    x, approximate = g.x(n.args[0]), n.args[1]
    d = g.out_dtype()
    if approximate == "tanh":
        cube = g.op("Mul", g.op("Mul", g.op("Mul", x, x), x), g.scalar_like(0.044715, d))
        inner = g.op("Mul", g.op("Add", x, cube), g.scalar_like(math.sqrt(2.0 / math.pi), d))
        half = g.op("Add", g.op("Tanh", inner), g.scalar_like(1, d))
    else:
        half = g.op("Add", g.op("Erf", g.op("Mul", x, g.scalar_like(1 / math.sqrt(2.0), d))), g.scalar_like(1, d))
    return g.op("Mul", g.op("Mul", x, g.scalar_like(0.5, d)), half)


@symbolic("Glu")
def _glu(g, n):
    x, axis = n.args
    half = g.shape(x)[axis] // 2
    a, b = g.op("Split", g.x(x), g.ints([half, half]), axis_i=axis, outputs=2)
    return g.op("Mul", a, g.op("Sigmoid", b))


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
    k, stride, pairs, dilation = g.static(params, "pooling parameter")
    attrs = {"dilations_is": list(dilation)} if any(d != 1 for d in dilation) else {}
    if not indices:
        return g.op("MaxPool", g.x(x), kernel_shape_is=list(k), strides_is=list(stride), pads_is=_pads(pairs),
                    **attrs)
    # ONNX's indices count over the whole N*C*H*W tensor, PyTorch's within each (n, c) plane: subtract the
    # index of each plane's first element, read off a 1x1 pooling (PyTorch's exporter does the same)
    y, idx = g.op("MaxPool", g.x(x), kernel_shape_is=list(k), strides_is=list(stride), pads_is=_pads(pairs),
                  outputs=2, **attrs)
    d = len(k)
    _, every = g.op("MaxPool", g.x(x), kernel_shape_is=[1] * d, strides_is=[1] * d, outputs=2)
    axes = list(range(2, 2 + d))
    first = g.op("Slice", every, g.ints([0] * d), g.ints([1] * d), g.ints(axes))
    return [y, g.op("Sub", idx, first)]


@symbolic("FlatScatter")
def _flat_scatter(g, n):
    # zeros of ``shape`` with ``v`` added at the flat positions ``idx`` of each (n, c) plane (max_unpool)
    v, idx, shape = n.args
    nc = [shape[0], shape[1], -1]
    plane = int(np.prod(g.static(list(shape[2:]), "output size")))
    zeros = g.op("ConstantOfShape", g.ints([shape[0], shape[1], plane]),
                 value_t=_tensor_attr(0, g.out_dtype()))
    flat_v = g.op("Reshape", g.x(v), g.ints(nc))
    flat_i = g.op("Reshape", g.cast(g.x(idx), g.dtype(idx), dtypes.int64), g.ints(nc))
    out = g.op("ScatterElements", zeros, flat_i, flat_v, axis_i=2, reduction_s="add")
    return g.op("Reshape", out, g.ints(shape))


@symbolic("AdaptiveMaxPool")
def _adaptive_max_pool(g, n):
    """Values and indices (flat positions within each (n, c) plane, as PyTorch's): one ``MaxPool`` when the
    sizes divide, else one window per output position (PyTorch's bins ``[floor(i*S/O), ceil((i+1)*S/O))``),
    each reduced by ``ReduceMax`` and ``ArgMax`` (the first maximum in row-major order, as PyTorch picks)."""
    x, osize = n.args
    sp = list(g.static(g.shape(x)[2:], "pooled size"))
    osize = [s if o is None else o for s, o in zip(sp, osize)]
    d = len(sp)
    if all(s % o == 0 for s, o in zip(sp, osize)):
        k = [s // o for s, o in zip(sp, osize)]
        y, idx = g.op("MaxPool", g.x(x), kernel_shape_is=k, strides_is=k, outputs=2)
        # ONNX's indices count over the whole tensor: subtract each plane's first index (as in _max_pool)
        _, every = g.op("MaxPool", g.x(x), kernel_shape_is=[1] * d, strides_is=[1] * d, outputs=2)
        first = g.op("Slice", every, g.ints([0] * d), g.ints([1] * d), g.ints(list(range(2, 2 + d))))
        return [y, g.op("Sub", idx, first)]
    bins = [[(i * s // o, -(-(i + 1) * s // o)) for i in range(o)] for s, o in zip(sp, osize)]
    strides = [int(np.prod(sp[j + 1:])) for j in range(d)]  # of a plane's flat positions
    values, indices = [], []
    for cell in itertools.product(*bins):
        starts, ends = [b[0] for b in cell], [b[1] for b in cell]
        window = g.op("Slice", g.x(x), g.ints(starts), g.ints(ends), g.ints(list(range(2, 2 + d))))
        flat = g.op("Reshape", window, g.ints([0, 0, -1]))
        values.append(g.op("ReduceMax", flat, g.axes([2]), keepdims_i=1) if g.opset >= 18 else
                      g.op("ReduceMax", flat, axes_is=[2], keepdims_i=1))
        local = g.op("ArgMax", flat, axis_i=2, keepdims_i=1)  # the first maximum, row-major in the window
        pos = None
        rest = local
        for j in range(d):  # the window's position (its row-major digits) to the plane's
            width = int(np.prod([e - b for b, e in zip(starts[j + 1:], ends[j + 1:])]))
            digit = g.op("Div", rest, g.const(np.asarray(width, np.int64))) if width != 1 else rest
            if j + 1 < d:
                rest = g.op("Mod", rest, g.const(np.asarray(width, np.int64)))
            term = g.op("Mul", g.op("Add", digit, g.const(np.asarray(starts[j], np.int64))),
                        g.const(np.asarray(strides[j], np.int64)))
            pos = term if pos is None else g.op("Add", pos, term)
        indices.append(pos)
    shape = g.ints([0, 0] + osize)
    y = g.op("Reshape", g.op("Concat", *values, axis_i=2), shape)
    return [y, g.op("Reshape", g.op("Concat", *indices, axis_i=2), shape)]


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


@symbolic("IndexInRange")
def _index_in_range(g, n):
    return g.op("Identity", g.x(n.args[0]))  # (ONNX's Gather leaves an index out of range undefined)


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


@symbolic("Roll")
def _roll(g, n):
    x, shifts, axes = n.args
    shape = g.shape(x)
    if axes is None:  # the elements rolled in order, the shape kept
        flat = g.op("Reshape", g.x(x), g.ints([-1]))
        return g.op("Reshape", _rolled(g, flat, g.static(shifts, "shift"), (0,), (math.prod(shape),)),
                    g.op("Shape", g.x(x)))
    return _rolled(g, g.x(x), g.static(shifts, "shift"), axes, [shape[a] for a in axes])


def _rolled(g, y, shifts, axes, sizes):
    """ONNX value ``y`` rolled by ``shifts`` along ``axes`` (of traced sizes ``sizes``): two slices and a concat
    per axis."""
    for s, a, size in zip(shifts, axes, sizes):
        if size == 0:
            continue
        if not -size < s < size:  # a shift within the size is kept as is, so a dynamic axis may grow
            s %= size
        if s == 0:
            continue
        cut = -s  # roll by s > 0: x[-s:] then x[:-s]; by s = -k < 0: x[k:] then x[:k]
        head = g.op("Slice", y, g.ints([cut]), g.ints([INT64_MAX]), g.ints([a]))
        tail = g.op("Slice", y, g.ints([0]), g.ints([cut]), g.ints([a]))
        y = g.op("Concat", head, tail, axis_i=a)
    return y


@symbolic("Tril", "Triu")
def _trilu(g, n):
    x, *params = n.args
    k = params[0] if params else 0
    return g.op("Trilu", g.x(x), g.const(np.asarray(k, np.int64)), upper_i=1 if n.op == "Triu" else 0)


def _is_index_array(e):
    return isinstance(e, Ref) or is_array(e)


def _is_mask(g, e):
    return (is_array(e) and e.dtype == np.bool_) or (isinstance(e, Ref) and g.dtype(e) is dtypes.bool)


def _ndim(g, e):
    return len(g.shape(e)) if isinstance(e, Ref) else e.ndim


def getitem(g, x, index):
    """NumPy-style ``x[index]`` (ints, slices, ``...``, ``None``, integer and boolean index arrays) in ONNX."""
    idx = index if isinstance(index, tuple) else (index,)
    arrays = [e for e in idx if _is_index_array(e)]
    if len(arrays) > 1 or any(_is_mask(g, e) for e in arrays):
        return _advanced_getitem(g, x, idx)
    consuming = sum(1 for e in idx if e is not None and e is not Ellipsis and not (isinstance(e, bool)))
    full = _expand_ellipsis(idx, len(g.shape(x)), consuming)
    y = g.x(x)
    od = 0
    for e in full:
        if e is None:
            y = g.unsqueeze(y, [od])
            od += 1
        elif isinstance(e, slice):
            y = _slice(g, y, e, od)
            od += 1
        elif isinstance(e, (int, np.integer, Sym)) and not isinstance(e, bool):
            i = g.ints([e]) if isinstance(e, Sym) else g.const(np.asarray(int(e), np.int64))
            if isinstance(e, Sym):
                i = g.squeeze(i, [0])
            y = g.op("Gather", y, i, axis_i=od)
        else:
            y = g.op("Gather", y, _index_value(g, e), axis_i=od)
            od += _ndim(g, e)
    return y


def _expand_ellipsis(idx, nd, consuming):
    full = []
    for e in idx:
        if e is Ellipsis:
            full += [slice(None)] * (nd - consuming)
        else:
            full.append(e)
    return full


def _slice(g, y, e, axis):
    if e.start is None and e.stop is None and e.step in (None, 1):
        return y
    step = 1 if e.step is None else e.step
    start = e.start if e.start is not None else (0 if step > 0 else INT64_MAX)
    stop = e.stop if e.stop is not None else (INT64_MAX if step > 0 else INT64_MIN)
    return g.op("Slice", y, g.ints([start]), g.ints([stop]), g.ints([axis]), g.ints([step]))


def _index_value(g, e):
    """An integer index array (a graph value or a constant) as int64."""
    if isinstance(e, Ref):
        return g.cast(g.x(e), g.dtype(e), dtypes.int64)
    return g.const(np.asarray(e, dtype=np.int64))


def _advanced(g, x, idx, writing=False):
    """The parts of ``x[idx]`` with several index arrays or a mask, NumPy's rules (PyTorch's exporter's graph).

    Returns ``(y, perm, indices, front)``: ``x`` with its slices applied and its indexed axes moved first
    (by ``perm``), the stacked, non-negative ``(*S, k)`` indices for ``GatherND``/``ScatterND`` and the axis
    where the result's ``S`` axes go (0 when the indexed axes are not adjacent, as in NumPy).
    """
    nd = len(g.shape(x))
    consuming = 0
    for e in idx:
        if e is None or e is Ellipsis:
            continue
        consuming += _ndim(g, e) if _is_index_array(e) and _is_mask(g, e) else 1
    full = _expand_ellipsis(idx, nd, consuming)
    y = g.x(x)
    od = 0
    picks = []  # (axis of y, int64 index value, may be negative)
    for e in full:
        if e is None:
            if writing:
                raise UnsupportedOperatorError(f"onnx.export: index assignment with None in the index{g.where()} "
                                               f"has no ONNX mapping in ember")
            y = g.unsqueeze(y, [od])
            od += 1
        elif isinstance(e, slice):
            if writing and not (e.start is None and e.stop is None and e.step in (None, 1)):
                raise UnsupportedOperatorError(f"onnx.export: index assignment mixing a partial slice with index "
                                               f"tensors{g.where()} has no ONNX mapping in ember")
            y = _slice(g, y, e, od)
            od += 1
        elif _is_index_array(e) and _is_mask(g, e):
            k = _ndim(g, e)
            mask = g.x(e) if isinstance(e, Ref) else g.const(np.asarray(e))
            nz = g.op("NonZero", mask)  # (k, nnz): the positions of the mask's true elements
            g.data_dependent = True
            for j in range(k):
                picks.append((od + j, g.op("Gather", nz, g.const(np.asarray(j, np.int64)), axis_i=0), False, 1))
            od += k
        elif _is_index_array(e):
            picks.append((od, _index_value(g, e), True, _ndim(g, e)))
            od += 1
        else:  # an integer among index arrays is a 0-d index array (NumPy)
            picks.append((od, g.const(np.asarray(int(e), np.int64)), int(e) < 0, 0))
            od += 1
    axes = [p[0] for p in picks]
    rank = od
    perm = axes + [a for a in range(rank) if a not in axes]
    if perm != list(range(rank)):
        y = g.op("Transpose", y, perm_is=perm)
    shape = g.op("Shape", y) if any(p[2] for p in picks) else None
    width = max(p[3] for p in picks)
    vals = []
    for j, (_, v, negative, _nd) in enumerate(picks):
        if negative:  # x[-1] counts from the end: add the axis' size where the index is negative
            size = g.op("Gather", shape, g.const(np.asarray(j, np.int64)), axis_i=0)
            v = g.op("Where", g.op("Less", v, g.const(np.asarray(0, np.int64))), g.op("Add", v, size), v)
        vals.append(v)
    if len(vals) > 1:  # broadcast the indices to their common shape (adding a zero of that shape)
        zero = vals[0]
        for v in vals[1:]:
            zero = g.op("Add", zero, v)
        zero = g.op("Mul", zero, g.const(np.asarray(0, np.int64)))
        vals = [g.op("Add", v, zero) for v in vals]
    indices = g.op("Concat", *[g.unsqueeze(v, [-1]) for v in vals], axis_i=-1)
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    return y, perm, indices, (axes[0] if adjacent else 0), width, rank - len(axes)


def _front_to(g, y, front, width, rest):
    """Move the ``width`` leading axes of ``y`` (of ``width + rest`` axes) to position ``front``."""
    if front == 0 or width == 0:
        return y, None
    perm = [width + i for i in range(front)] + list(range(width)) + [width + i for i in range(front, rest)]
    return g.op("Transpose", y, perm_is=perm), perm


def _scatter_positions(g, x, idx, val):
    """``x[idx] = val`` for an index no ``ScatterND`` form covers (a partial slice, ``None`` among index
    tensors): the positions ``x[idx]`` selects, read by indexing an iota of ``x``'s shape the same way, take
    ``val`` (broadcast to them) by ``ScatterElements`` into the flattened ``x``."""
    name = g.x(x)
    shape = g.op("Shape", name)
    count = g.squeeze(g.op("ReduceProd", shape, keepdims_i=1), [0])
    iota = g.op("Reshape", g.op("Range", g.const(np.asarray(0, np.int64)), count,
                                g.const(np.asarray(1, np.int64))), shape)
    saved = g.names[x.i]
    g.names[x.i] = iota
    try:
        positions = getitem(g, x, idx)
    finally:
        g.names[x.i] = saved
    flat = g.op("ScatterElements", g.op("Reshape", name, g.ints([-1])), g.op("Reshape", positions, g.ints([-1])),
                g.op("Reshape", g.op("Expand", val, g.op("Shape", positions)), g.ints([-1])), axis_i=0)
    return g.op("Reshape", flat, shape)


def _advanced_getitem(g, x, idx):
    y, _, indices, front, width, rest = _advanced(g, x, idx)
    out = g.op("GatherND", y, indices)
    return _front_to(g, out, front, width, rest)[0]


@symbolic("SliceView", "Getitem", "SelectView", "UnsqueezeView", "AliasView")
def _getitem(g, n):
    x, index = n.args
    return getitem(g, x, index)


@symbolic("IndexPut")
def _index_put(g, n):
    """``x[index] = v`` with index tensors: ``Where`` for one mask and one value, else ``ScatterND``."""
    x, v, index = n.args
    idx = index if isinstance(index, tuple) else (index,)
    d = g.dtype(x)
    val = g.arg(v, d)
    lead = [e for e in idx if not (isinstance(e, slice) and e == slice(None)) and e is not Ellipsis]
    one = isinstance(v, Ref) and int(np.prod(g.shape(v))) == 1
    if len(lead) == 1 and _is_index_array(idx[0]) and _is_mask(g, idx[0]) and (one or not isinstance(v, Ref)):
        mask = g.x(idx[0]) if isinstance(idx[0], Ref) else g.const(np.asarray(idx[0]))
        extra = len(g.shape(x)) - _ndim(g, idx[0])
        if extra:
            mask = g.unsqueeze(mask, list(range(-extra, 0)))
        if isinstance(v, Ref) and g.shape(v):
            val = g.op("Reshape", val, g.ints([]))
        return g.op("Where", mask, val, g.x(x))
    if any(e is None or isinstance(e, slice) and e != slice(None) for e in idx):
        return _scatter_positions(g, x, idx, val)
    y, perm, indices, front, width, rest = _advanced(g, x, idx, writing=True)
    picked = g.op("GatherND", y, indices)
    moved, to_front = _front_to(g, picked, front, width, rest)
    val = g.op("Expand", val, g.op("Shape", moved))  # the value broadcast to the result of x[index]
    if to_front is not None:
        val = g.op("Transpose", val, perm_is=[to_front.index(i) for i in range(len(to_front))])
    out = g.op("ScatterND", y, indices, val)
    if perm != list(range(len(perm))):
        out = g.op("Transpose", out, perm_is=[perm.index(i) for i in range(len(perm))])
    return out


# --------------------------------------------------------------------------- gathering
@symbolic("Diagonal")
def _diagonal(g, n):
    """``x.diagonal(offset, d1, d2)``: ``d1`` and ``d2`` moved last and flattened, the diagonal's flat positions
    gathered (the result's last axis, as PyTorch's).  Writes through it reach ``x`` as through any view."""
    x, offset, d1, d2 = n.args
    shape = g.shape(x)
    n1, n2 = g.static([shape[d1], shape[d2]], "diagonal size")
    rest = [a for a in range(len(shape)) if a not in (d1, d2)]
    y = g.x(x)
    if rest + [d1, d2] != list(range(len(shape))):
        y = g.op("Transpose", y, perm_is=rest + [d1, d2])
    length = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
    r0, c0 = max(-offset, 0), max(offset, 0)
    flat = g.op("Reshape", y, g.ints([0] * len(rest) + [n1 * n2]))
    pos = g.const(np.asarray([(r0 + i) * n2 + c0 + i for i in range(length)], np.int64))
    return g.op("Gather", flat, pos, axis_i=len(rest))


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


def _seq_lens(g, mask):
    """ONNX's ``sequence_lens`` (int32, one per sequence) from a packed batch's step mask ``(T, B, 1)``."""
    if mask is None:
        return None
    m = g.x(mask) if isinstance(mask, Ref) else g.const(np.asarray(mask))
    d = g.dtype(mask) if isinstance(mask, Ref) else dtypes.as_dtype(np.asarray(mask).dtype.name)
    steps = g.reduce("ReduceSum", g.squeeze(m, [2]), [0], False)
    return g.cast(steps, d, dtypes.int32)


def _direction(reverse):
    return "reverse" if reverse else "forward"


@symbolic("LSTMLayer")
def _lstm(g, n):
    x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse = n.args
    if w_hr is not None:
        return _lstm_projected(g, n)
    H = g.shape(c0)[-1]
    order = [0, 3, 1, 2]  # ember/PyTorch i, f, g, o -> ONNX i, o, f, c
    W, R, B = _rnn_weights(g, w_ih, w_hh, b_ih, b_hh, H, order)
    y, yh, yc = g.op("LSTM", g.x(x), W, R, B, _seq_lens(g, mask), g.unsqueeze(g.x(h0), [0]),
                     g.unsqueeze(g.x(c0), [0]), hidden_size_i=H, direction_s=_direction(reverse), outputs=3)
    return [g.squeeze(y, [1]), g.squeeze(yh, [0]), g.squeeze(yc, [0])]


def _lstm_projected(g, n):
    """An LSTM layer with ``proj_size`` (ONNX's LSTM has no projection): a ``Scan`` over the time steps whose
    body is the cell, ``h = (o * tanh(c)) @ w_hr^T``; a packed batch's mask keeps finished sequences' state."""
    onnx = _onnx()
    x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse = n.args
    d = g.dtype(x)
    et = elem_type(d)
    H = g.shape(c0)[-1]
    xproj = g.op("MatMul", g.x(x), g.op("Transpose", g.x(w_ih), perm_is=[1, 0]))  # every step's input part
    if b_ih is not None:
        xproj = g.op("Add", xproj, g.op("Add", g.x(b_ih), g.x(b_hh)))
    w_hh_t = g.op("Transpose", g.x(w_hh), perm_is=[1, 0])
    w_hr_t = g.op("Transpose", g.x(w_hr), perm_is=[1, 0])
    with g.subgraph() as body:
        h, c, xt = g.fresh("h"), g.fresh("c"), g.fresh("x_t")
        ins = [h, c, xt]
        gates = g.op("Add", xt, g.op("MatMul", h, w_hh_t))
        i, f, gg, o = g.op("Split", gates, g.ints([H] * 4), axis_i=1, outputs=4)
        c_new = g.op("Add", g.op("Mul", g.op("Sigmoid", f), c), g.op("Mul", g.op("Sigmoid", i), g.op("Tanh", gg)))
        h_new = g.op("MatMul", g.op("Mul", g.op("Sigmoid", o), g.op("Tanh", c_new)), w_hr_t)
        y = h_new
        if mask is not None:
            m = g.fresh("m_t")
            ins.append(m)
            keep = g.op("Sub", g.scalar_like(1, d), m)
            y = g.op("Mul", m, h_new)
            h_new = g.op("Add", y, g.op("Mul", keep, h))
            c_new = g.op("Add", g.op("Mul", m, c_new), g.op("Mul", keep, c))
        outs = [g.op("Identity", v) for v in (h_new, c_new, y)]
    graph = onnx.helper.make_graph(body, g.fresh("lstm_proj_body"),
                                   [onnx.helper.make_tensor_value_info(v, et, None) for v in ins],
                                   [onnx.helper.make_tensor_value_info(v, et, None) for v in outs])
    scans = [xproj] + ([g.x(mask) if isinstance(mask, Ref) else g.const(np.asarray(mask))] if mask is not None
                            else [])
    way = 1 if reverse else 0
    yh, yc, y = g.op("Scan", g.x(h0), g.x(c0), *scans, body_g=graph, num_scan_inputs_i=len(scans),
                     scan_input_directions_is=[way] * len(scans), scan_output_directions_is=[way], outputs=3)
    return [y, yh, yc]


@symbolic("GRULayer")
def _gru(g, n):
    x, w_ih, w_hh, b_ih, b_hh, h0, mask, reverse = n.args
    H = g.shape(h0)[-1]
    order = [1, 0, 2]  # ember/PyTorch r, z, n -> ONNX z, r, h
    W, R, B = _rnn_weights(g, w_ih, w_hh, b_ih, b_hh, H, order)
    y, yh = g.op("GRU", g.x(x), W, R, B, _seq_lens(g, mask), g.unsqueeze(g.x(h0), [0]), hidden_size_i=H,
                 linear_before_reset_i=1, direction_s=_direction(reverse), outputs=2)
    return [g.squeeze(y, [1]), g.squeeze(yh, [0])]


@symbolic("RNNLayer")
def _rnn(g, n):
    x, w_ih, w_hh, b_ih, b_hh, h0, relu, mask, reverse = n.args
    H = g.shape(h0)[-1]
    W, R, B = _rnn_weights(g, w_ih, w_hh, b_ih, b_hh, H, [0])
    y, yh = g.op("RNN", g.x(x), W, R, B, _seq_lens(g, mask), g.unsqueeze(g.x(h0), [0]), hidden_size_i=H,
                 activations_ss=["Relu" if relu else "Tanh"], direction_s=_direction(reverse), outputs=2)
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


declared()


# pointwise ops the exporter does not map, each with the reason (tests/test_op_declarations.py holds every other
# pointwise op to a mapping)
_SPECIAL = "a special function ONNX has no operator for (no composition written)"
_NOT_YET = "no one-to-one ONNX operator, and its composition is not written yet"
NOT_EXPORTED = {
    **dict.fromkeys(("Polygamma", "Gammainc", "Gammaincc", "Zeta", "Xlog1py", "airy_ai", "bessel_j0", "bessel_j1",
                     "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
                     "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erfcx", "erfinv",
                     "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e",
                     "laguerre_polynomial_l", "legendre_polynomial_p", "lgamma", "log_ndtr", "modified_bessel_i0",
                     "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                     "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                     "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc",
                     "spherical_bessel_j0"), _SPECIAL),
    **dict.fromkeys(("Atan2", "Copysign", "DivRounding", "Fmax", "Fmin", "Frexp", "Hypot", "Lerp", "LogAddExp",
                     "LogAddExp2", "Nextafter", "Xlogy", "bitwise_left_shift", "bitwise_right_shift", "deg2rad",
                     "rad2deg", "frac", "gcd", "lcm", "heaviside", "isneginf", "isposinf", "isreal", "signbit",
                     "sgn", "nan_zeroed"), _NOT_YET),
    **dict.fromkeys(("Angle", "Conj", "RealAngle"), "complex numbers: ONNX has no complex tensor type"),
    **dict.fromkeys(("bernoulli", "poisson", "Sampled"),
                    "a random draw: an exported graph could not reproduce ember's generator"),
    **dict.fromkeys(("ReluGrad", "TanhGrad", "SigmoidGrad", "SoftmaxGrad", "ClampScalarGrad"),
                    "only in backward graphs, which the exporter does not write"),
}
