"""Convolutions through cuDNN (CuPy's ``cupyx.cudnn``), replacing the shared im2col GEMM kernels
where cuDNN can do the case: 2-d and 3-d, symmetric padding, float16/32/64 with one dtype for all
operands, no empty operand.  Other cases (1-d, asymmetric ``'same'`` padding, integer dtypes, empty
batches) and a CuPy without cuDNN use the shared kernels, which run im2col as one strided view and
one cuBLAS GEMM on the GPU.

Pooling keeps the shared kernels: they return the flat argmax indices that ``max_pool`` with
``return_indices`` and its backward need, which cuDNN's pooling does not give.
"""
from __future__ import annotations

from .fused import _cudnn


def kernels(cp, shared: dict) -> dict:
    """cuDNN overrides of ``conv_forward``, ``conv_input_grad`` and ``conv_weight_grad``, or ``{}``."""
    cudnn = _cudnn(cp)
    if cudnn is None:
        return {}
    forward, input_grad, weight_grad = shared["conv_forward"], shared["conv_input_grad"], shared["conv_weight_grad"]

    def usable(x, w, padding, *others):
        # cuDNN takes float16/32/64 (one dtype for every operand) and no zero-sized dimension
        return (x.ndim in (4, 5) and x.dtype.char in "efd" and x.size > 0 and w.size > 0
                and w.dtype == x.dtype and all(a is None or a.dtype == x.dtype for a in others)
                and all(lo == hi for lo, hi in padding))

    def out_shape(x_shape, w_shape, stride, padding, dilation):
        sp = tuple((s + 2 * p[0] - d * (k - 1) - 1) // st + 1
                   for s, k, st, p, d in zip(x_shape[2:], w_shape[2:], stride, padding, dilation))
        return (x_shape[0], w_shape[0]) + sp

    def conv_forward(x, w, b, stride, padding, dilation, groups):
        shape = out_shape(x.shape, w.shape, stride, padding, dilation)
        if not usable(x, w, padding, b) or min(shape) <= 0:
            return forward(x, w, b, stride, padding, dilation, groups)
        pad = tuple(p[0] for p in padding)
        y = cp.empty(shape, dtype=x.dtype)
        cudnn.convolution_forward(cp.ascontiguousarray(x), cp.ascontiguousarray(w), b, y, pad, tuple(stride),
                                  tuple(dilation), groups, auto_tune=True, tensor_core="auto")
        return y, None

    def conv_input_grad(g, w, x_shape, stride, padding, dilation, groups):
        if not usable(g, w, padding) or min(x_shape) <= 0:
            return input_grad(g, w, x_shape, stride, padding, dilation, groups)
        gx = cp.empty(tuple(x_shape), dtype=g.dtype)
        cudnn.convolution_backward_data(cp.ascontiguousarray(w), cp.ascontiguousarray(g), None, gx,
                                        tuple(p[0] for p in padding), tuple(stride), tuple(dilation), groups,
                                        deterministic=False, auto_tune=True, tensor_core="auto")
        return gx

    def conv_weight_grad(x, g, w_shape, stride, padding, dilation, groups, cols=None):
        if not usable(x, g, padding) or min(w_shape) <= 0:
            return weight_grad(x, g, w_shape, stride, padding, dilation, groups, cols)
        gw = cp.empty(tuple(w_shape), dtype=x.dtype)
        cudnn.convolution_backward_filter(cp.ascontiguousarray(x), cp.ascontiguousarray(g), gw,
                                          tuple(p[0] for p in padding), tuple(stride), tuple(dilation), groups,
                                          deterministic=False, auto_tune=True, tensor_core="auto")
        return gw

    return {"conv_forward": conv_forward, "conv_input_grad": conv_input_grad, "conv_weight_grad": conv_weight_grad}
