"""torchvision's operators under ``ember.ops.torchvision`` (as ``torch.ops.torchvision`` once torchvision is
imported): torchvision's argument order and outputs, the same values and gradients as ember-vision's functions,
RoI max pooling's argmax and the position-sensitive ops' channel mapping as torchvision's kernels give them,
and output shapes on the meta device."""
import pytest

pytest.importorskip("ember_vision")

import ember  # noqa: E402
from ember_vision import ops  # noqa: E402

TV = ember.ops.torchvision


def _rois(device):
    return ember.tensor([[0, 0.5, 1.0, 6.2, 5.0], [1, 2.0, 0.0, 7.5, 7.9], [0, 3.0, 3.0, 3.2, 3.1]], device=device)


def test_ops_match_the_functions(device):
    ember.manual_seed(0)
    x = ember.randn(2, 8, 9, 9, device=device)
    rois = _rois(device)
    assert ember.equal(TV.roi_align(x, rois, 0.5, 3, 2, 2, True), ops.roi_align(x, rois, (3, 2), 0.5, 2, True))
    assert ember.equal(TV.roi_align.default(x, rois, 1.0, 2, 2, -1, False), ops.roi_align(x, rois, 2))
    out, _ = TV.roi_pool(x, rois, 1.0, 2, 3)
    assert ember.equal(out, ops.roi_pool(x, rois, (2, 3)))
    out, _ = TV.ps_roi_align(x, rois, 1.0, 2, 2, 2)
    assert ember.equal(out, ops.ps_roi_align(x, rois, 2, 1.0, 2))
    out, _ = TV.ps_roi_pool(x, rois, 1.0, 2, 2)
    assert ember.equal(out, ops.ps_roi_pool(x, rois, 2))
    boxes = ember.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30.0]], device=device)
    scores = ember.tensor([0.9, 0.8, 0.7], device=device)
    assert TV.nms(boxes, scores, 0.5).tolist() == [0, 2]
    assert TV.nms(dets=boxes, scores=scores, iou_threshold=0.99).tolist() == [0, 1, 2]


def test_roi_pool_argmax_and_channel_mapping(device):
    ember.manual_seed(1)
    x = ember.randn(2, 3, 8, 8, device=device)
    rois = ember.tensor([[0, 0.0, 0.0, 7.0, 7.0], [1, 2.0, 1.0, 5.0, 6.0], [0, 9.0, 9.0, 12.0, 12.0]], device=device)
    out, argmax = TV.roi_pool(x, rois, 1.0, 2, 2)
    assert argmax.dtype == ember.int32 and argmax.shape == out.shape
    for k, batch in enumerate([0, 1]):  # each output is the input at its argmax
        flat = x[batch].flatten(1)
        picked = flat.gather(1, argmax[k].flatten(1).long()).reshape(out[k].shape)
        assert ember.equal(picked, out[k])
    assert (argmax[2] == -1).all() and (out[2] == 0).all()  # a box outside the map: empty bins
    row, col = divmod(int(x[0, 0, :4, :4].argmax()), 4)
    assert argmax[0, 0, 0, 0].item() == row * 8 + col  # the top-left bin of the whole map, indexed in the 8x8 map
    x = ember.randn(1, 12, 6, 6, device=device)
    _, mapping = TV.ps_roi_align(x, rois[:2], 1.0, 2, 2, 1)
    assert mapping.dtype == ember.int32 and tuple(mapping.shape) == (2, 3, 2, 2)
    assert mapping[1, 2].tolist() == [[8, 9], [10, 11]]  # (c * PH + i) * PW + j


def test_deform_conv2d_in_torchvision_argument_order(device):
    ember.manual_seed(2)
    x = ember.randn(1, 4, 6, 6, device=device)
    weight = ember.randn(6, 2, 3, 3, device=device)
    offset = ember.randn(1, 2 * 2 * 9, 4, 4, device=device)
    mask = ember.rand(1, 2 * 9, 4, 4, device=device)
    bias = ember.randn(6, device=device)
    got = TV.deform_conv2d(x, weight, offset, mask, bias, 1, 1, 0, 0, 1, 1, 2, 2, True)
    assert ember.allclose(got, ops.deform_conv2d(x, offset, weight, bias, mask=mask))
    unmasked = TV.deform_conv2d(x, weight, offset, ember.zeros(0, device=device), bias, 1, 1, 0, 0, 1, 1, 2, 2, False)
    assert ember.allclose(unmasked, ops.deform_conv2d(x, offset, weight, bias))
    with pytest.raises(RuntimeError, match="deform_conv2d: input channels 4 should be groups"):
        TV.deform_conv2d(x, weight, offset, mask, bias, 1, 1, 0, 0, 1, 1, 1, 2, True)


def test_gradients_flow_through_the_ops(device):
    x = ember.randn(1, 2, 6, 6, dtype=ember.float64, device=device, requires_grad=True)
    rois = ember.tensor([[0, 0.3, 0.7, 4.4, 5.1]], dtype=ember.float64, device=device)
    assert ember.autograd.gradcheck(lambda t: TV.roi_align(t, rois, 1.0, 2, 2, 2, False), (x,))
    (grad,) = ember.autograd.grad(TV.roi_pool(x, rois, 1.0, 2, 2)[0].sum(), x)
    assert grad.sum().item() == pytest.approx(2 * 4)  # one maximum per bin per channel


def test_shapes_on_the_meta_device():
    x = ember.empty(2, 8, 9, 9, device="meta")
    rois = ember.empty(5, 5, device="meta")
    assert tuple(TV.roi_align(x, rois, 1.0, 3, 2, 2, False).shape) == (5, 8, 3, 2)
    out, argmax = TV.roi_pool(x, rois, 1.0, 2, 2)
    assert tuple(out.shape) == (5, 8, 2, 2) and argmax.dtype == ember.int32
    assert tuple(TV.ps_roi_pool(x, rois, 1.0, 2, 2)[0].shape) == (5, 2, 2, 2)
    with pytest.raises(RuntimeError, match="multiple of pooling height"):
        TV.ps_roi_align(x, rois, 1.0, 3, 3, 1)
    with pytest.raises(RuntimeError, match=r"rois must have shape as Tensor\[K, 5\]"):
        TV.roi_align(x, ember.empty(5, 4, device="meta"), 1.0, 2, 2, 2, False)
    offset = ember.empty(2, 18, 7, 7, device="meta")
    got = TV.deform_conv2d(x, ember.empty(4, 8, 3, 3, device="meta"), offset, offset, ember.empty(4, device="meta"),
                           1, 1, 0, 0, 1, 1, 1, 1, False)
    assert tuple(got.shape) == (2, 4, 7, 7)
