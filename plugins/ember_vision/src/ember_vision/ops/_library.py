"""torchvision's operators as ``ember.ops.torchvision.<name>``, with the schemas of torchvision's C++ library
(as PyTorch shows them under ``torch.ops.torchvision`` once torchvision is imported), registered through
:mod:`ember.library` when :mod:`ember_vision.ops` is first imported.

Each is a composite of ember-vision's own functions, so it differentiates and runs on every backend; the ops with
a second output (RoI max pooling's argmax, the position-sensitive ops' channel mapping) return it as
torchvision's CPU kernels do.  On the meta device they give their output shapes only (``nms``'s is
data-dependent: it has none).
"""
from __future__ import annotations

import ember
from ember.library import Library

from .boxes import nms
from .deform_conv import deform_conv2d
from .ps_roi_align import ps_roi_align
from .ps_roi_pool import ps_roi_pool
from .roi_align import roi_align
from .roi_pool import _roi_pool

_ROI = "Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width"
SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align": f"roi_align({_ROI}, int sampling_ratio, bool aligned) -> Tensor",
    "roi_pool": f"roi_pool({_ROI}) -> (Tensor, Tensor)",
    "ps_roi_align": f"ps_roi_align({_ROI}, int sampling_ratio) -> (Tensor, Tensor)",
    "ps_roi_pool": f"ps_roi_pool({_ROI}) -> (Tensor, Tensor)",
    "deform_conv2d": "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
                     "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
                     "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
}


def _channel_mapping(out: ember.Tensor, pooled_height: int, pooled_width: int) -> ember.Tensor:
    """The input channel each output of a position-sensitive op reads: ``(c * PH + i) * PW + j`` (int32)."""
    k, c = out.shape[:2]
    channels = ember.arange(c * pooled_height * pooled_width, dtype=ember.int32, device=out.device)
    return channels.reshape(1, c, pooled_height, pooled_width).expand(k, c, pooled_height, pooled_width).clone()


def _nms_op(dets, scores, iou_threshold):
    return nms(dets, scores, iou_threshold)


def _roi_align_op(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    return roi_align(input, rois, (pooled_height, pooled_width), spatial_scale, sampling_ratio, aligned)


def _roi_pool_op(input, rois, spatial_scale, pooled_height, pooled_width):
    return _roi_pool(input, rois, (pooled_height, pooled_width), spatial_scale, argmax=True)


def _ps_roi_align_op(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    out = ps_roi_align(input, rois, (pooled_height, pooled_width), spatial_scale, sampling_ratio)
    return out, _channel_mapping(out, pooled_height, pooled_width)


def _ps_roi_pool_op(input, rois, spatial_scale, pooled_height, pooled_width):
    out = ps_roi_pool(input, rois, (pooled_height, pooled_width), spatial_scale)
    return out, _channel_mapping(out, pooled_height, pooled_width)


def _deform_conv2d_op(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
                      groups, offset_groups, use_mask):
    if input.shape[1] != groups * weight.shape[1]:
        raise RuntimeError(f"deform_conv2d: input channels {input.shape[1]} should be groups ({groups}) times the "
                           f"weight's {weight.shape[1]}")
    return deform_conv2d(input, offset, weight, bias, (stride_h, stride_w), (pad_h, pad_w),
                         (dilation_h, dilation_w), mask if use_mask else None)


def _roi_shape(input, rois, pooled_height, pooled_width, channels=None):
    if rois.dim() != 2 or rois.shape[1] != 5:
        raise RuntimeError("rois must have shape as Tensor[K, 5]")
    return (rois.shape[0], input.shape[1] if channels is None else channels, pooled_height, pooled_width)


def _fake_pair(shape, input):
    return input.new_empty(shape), ember.empty(shape, dtype=ember.int32, device=input.device)


def _ps_channels(input, pooled_height, pooled_width):
    if input.shape[1] % (pooled_height * pooled_width):
        raise RuntimeError("input channels must be a multiple of pooling height * pooling width")
    return input.shape[1] // (pooled_height * pooled_width)


FAKES = {
    "roi_align": lambda input, rois, scale, ph, pw, *_: input.new_empty(_roi_shape(input, rois, ph, pw)),
    "roi_pool": lambda input, rois, scale, ph, pw: _fake_pair(_roi_shape(input, rois, ph, pw), input),
    "ps_roi_align": lambda input, rois, scale, ph, pw, *_: _fake_pair(
        _roi_shape(input, rois, ph, pw, _ps_channels(input, ph, pw)), input),
    "ps_roi_pool": lambda input, rois, scale, ph, pw: _fake_pair(
        _roi_shape(input, rois, ph, pw, _ps_channels(input, ph, pw)), input),
    "deform_conv2d": lambda input, weight, offset, *_: input.new_empty(
        (input.shape[0], weight.shape[0], *offset.shape[-2:])),
}
KERNELS = {"nms": _nms_op, "roi_align": _roi_align_op, "roi_pool": _roi_pool_op, "ps_roi_align": _ps_roi_align_op,
           "ps_roi_pool": _ps_roi_pool_op, "deform_conv2d": _deform_conv2d_op}


def _on_meta_fake(kernel, fake):
    """``kernel``, or ``fake`` where the first input is on the meta device."""
    if fake is None:
        return kernel

    def run(*args, **kwargs):
        first = args[0] if args else next(iter(kwargs.values()))
        return (fake if first.device.type == "meta" else kernel)(*args, **kwargs)

    return run


def register() -> Library:
    """Define the ``torchvision`` namespace's operators; the library, kept by the caller."""
    lib = Library("torchvision", "DEF")
    for name, schema in SCHEMAS.items():
        lib.define(schema)
        lib.impl(name, _on_meta_fake(KERNELS[name], FAKES.get(name)), "CompositeImplicitAutograd")
    return lib
