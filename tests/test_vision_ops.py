"""ember_vision.ops (torchvision.ops): box ops, losses and misc layers against torchvision 0.28's Python code in
a reference process (its pure-Python ``_roi_align`` included); nms, roi_pool and roi_align also against
brute-force NumPy references written here, hand-computed cases and float64 gradcheck."""
import json
import math

import numpy as np
import pytest

import ember
import vision_reference

pytest.importorskip("ember_vision")
from ember_vision import ops  # noqa: E402

RNG = np.random.default_rng(0)


def _boxes(n, rng=RNG, scale=20.0):
    xy = rng.uniform(0, scale, (n, 2))
    wh = rng.uniform(0.5, scale / 2, (n, 2))
    return np.concatenate([xy, xy + wh], 1)


B1, B2 = _boxes(6), _boxes(5)
FEAT = RNG.standard_normal((2, 3, 9, 11))
ROIS = np.array([[0, 1.0, 1.0, 5.0, 6.0], [1, 0.0, 0.0, 10.0, 8.0], [0, 2.3, 1.1, 4.4, 6.6],
                 [1, -3.0, -2.0, 4.0, 3.0], [0, 6.2, 5.1, 14.0, 12.5], [1, 3.0, 3.0, 3.0, 3.0]])
ROI_ALIGN_CASES = [dict(output_size=(2, 3), spatial_scale=1.0, sampling_ratio=-1, aligned=False),
                   dict(output_size=(3, 3), spatial_scale=0.5, sampling_ratio=2, aligned=True),
                   dict(output_size=(4, 2), spatial_scale=1.0, sampling_ratio=-1, aligned=True)]
PYRAMID = {"f1": RNG.standard_normal((2, 3, 16, 16)), "f2": RNG.standard_normal((2, 5, 8, 8)),
           "f3": RNG.standard_normal((2, 2, 4, 4))}
PYR_BOXES = [np.array([[2.0, 3.0, 20.0, 30.0], [0.0, 0.0, 60.0, 50.0], [10.0, 12.0, 14.0, 15.0]]),
             np.array([[5.0, 5.0, 55.0, 58.0], [30.0, 1.0, 40.0, 9.0]])]
MASKS = np.zeros((3, 6, 7), dtype=np.uint8)
MASKS[0, 1:4, 2:6] = 1
MASKS[1, 5, 0] = 1


def _json(a):
    if isinstance(a, dict):
        return json.dumps({k: v.tolist() for k, v in a.items()})
    return json.dumps([v.tolist() for v in a])


@pytest.fixture(scope="module")
def ref():
    return vision_reference.run(f"""
        from torchvision import ops
        from torchvision.ops.roi_align import _roi_align
        b1, b2 = torch.tensor({B1.tolist()}, dtype=torch.float64), torch.tensor({B2.tolist()}, dtype=torch.float64)
        t = lambda x: x.tolist()
        out = dict(box_iou=t(ops.box_iou(b1, b2)), giou=t(ops.generalized_box_iou(b1, b2)),
                   ciou=t(ops.complete_box_iou(b1, b2)), diou=t(ops.distance_box_iou(b1, b2)),
                   giou_loss=t(ops.generalized_box_iou_loss(b1[:5], b2, reduction="none")),
                   ciou_loss=t(ops.complete_box_iou_loss(b1[:5], b2, reduction="mean")),
                   diou_loss=t(ops.distance_box_iou_loss(b1[:5], b2, reduction="sum")),
                   area=t(ops.box_area(b1)), clip=t(ops.clip_boxes_to_image(b1, (12, 15))),
                   small=t(ops.remove_small_boxes(b1, 5.0)),
                   masks=t(ops.masks_to_boxes(torch.tensor({MASKS.tolist()}))))
        for a in ("xyxy", "xywh", "cxcywh"):
            for b in ("xyxy", "xywh", "cxcywh"):
                out[a + b] = t(ops.box_convert(b1, a, b))
        x = torch.tensor({FEAT.tolist()}, dtype=torch.float64)
        logits, targets = x[0, 0], (x[1, 0] > 0).float()
        out["focal"] = t(ops.sigmoid_focal_loss(logits, targets))
        out["focal_mean"] = t(ops.sigmoid_focal_loss(logits, targets, alpha=-1, gamma=1.5, reduction="mean"))
        rois = torch.tensor({ROIS.tolist()}, dtype=torch.float64)
        out["roi_align"] = [t(_roi_align(x, rois, c["spatial_scale"], *c["output_size"], c["sampling_ratio"],
                                         c["aligned"])) for c in {ROI_ALIGN_CASES!r}]
        mods = dict(cna=ops.Conv2dNormActivation(3, 8), cna3=ops.Conv3dNormActivation(3, 4, norm_layer=None),
                    se=ops.SqueezeExcitation(8, 2), mlp=ops.MLP(4, [8, 8, 3], norm_layer=torch.nn.LayerNorm),
                    frozen=ops.FrozenBatchNorm2d(4))
        out["keys"] = {{k: list(m.state_dict()) for k, m in mods.items()}}
        from torchvision.ops import poolers
        from torchvision.ops.feature_pyramid_network import LastLevelMaxPool, LastLevelP6P7
        poolers.roi_align = lambda inp, r, output_size, spatial_scale, sampling_ratio: _roi_align(
            inp, r, spatial_scale, *output_size, sampling_ratio, False)
        pyr = {{k: torch.tensor(v, dtype=torch.float64) for k, v in {_json(PYRAMID)}.items()}}
        msra = ops.MultiScaleRoIAlign(["f1", "f3"], 3, 2)
        pboxes = [torch.tensor(b, dtype=torch.float64) for b in {_json(PYR_BOXES)}]
        out["msra"] = t(msra(dict(pyr, f1=pyr["f1"][:, :2]), pboxes, [(64, 64), (60, 64)]))
        torch.manual_seed(0)
        fpn = ops.FeaturePyramidNetwork([3, 5, 2], 4, extra_blocks=LastLevelMaxPool()).double()
        fout = fpn(pyr)
        out["fpn_state"] = {{k: t(v) for k, v in fpn.state_dict().items()}}
        out["fpn_out"] = {{k: t(v) for k, v in fout.items()}}
        out["p6p7_keys"] = list(ops.FeaturePyramidNetwork([3, 5], 4, extra_blocks=LastLevelP6P7(5, 4)).state_dict())
        out["reprs"] = {{k: repr(m) for k, m in mods.items()}}
        print(json.dumps(out))
    """)


def _t(a, device, dtype=ember.float64):
    return ember.tensor(np.asarray(a), dtype=dtype, device=device)


def _close(x, expected, tol=1e-6):
    np.testing.assert_allclose(np.asarray(x.detach().cpu().numpy(), dtype=np.float64), np.asarray(expected),
                               rtol=tol, atol=tol)


def test_box_ops_match_torchvision(ref, device):
    b1, b2 = _t(B1, device), _t(B2, device)
    _close(ops.box_iou(b1, b2), ref["box_iou"])
    _close(ops.generalized_box_iou(b1, b2), ref["giou"])
    _close(ops.complete_box_iou(b1, b2), ref["ciou"])
    _close(ops.distance_box_iou(b1, b2), ref["diou"])
    _close(ops.generalized_box_iou_loss(b1[:5], b2), ref["giou_loss"])
    _close(ops.complete_box_iou_loss(b1[:5], b2, reduction="mean"), ref["ciou_loss"])
    _close(ops.distance_box_iou_loss(b1[:5], b2, reduction="sum"), ref["diou_loss"])
    _close(ops.box_area(b1), ref["area"])
    _close(ops.clip_boxes_to_image(b1, (12, 15)), ref["clip"])
    assert ops.remove_small_boxes(b1, 5.0).tolist() == ref["small"]
    assert ops.masks_to_boxes(ember.tensor(MASKS, device=device)).tolist() == ref["masks"]
    for a in ("xyxy", "xywh", "cxcywh"):
        for b in ("xyxy", "xywh", "cxcywh"):
            _close(ops.box_convert(b1, a, b), ref[a + b])


def test_box_ops_batched_and_float32(device):
    b1 = _t(np.stack([B1, B1[::-1]]), device, ember.float32)
    iou = ops.box_iou(b1, b1[:, :3])
    assert iou.shape == (2, 6, 3) and iou.dtype == ember.float32
    _close(iou[1], ops.box_iou(b1[1], b1[1, :3]).cpu().numpy(), 1e-6)
    assert ops.box_iou(b1[0], b1[0], fmt="xyxy").diagonal().allclose(ember.ones(6, device=device))


def test_focal_loss_matches_torchvision(ref, device):
    x = _t(FEAT, device)
    logits, targets = x[0, 0], (x[1, 0] > 0).double()
    _close(ops.sigmoid_focal_loss(logits, targets), ref["focal"])
    _close(ops.sigmoid_focal_loss(logits, targets, alpha=-1, gamma=1.5, reduction="mean"), ref["focal_mean"])


def _bilinear(img, y, x):
    h, w = img.shape[-2:]
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return 0 * img[..., 0, 0]
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = (y0, x0)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[..., y0, x0] + (1 - ly) * lx * img[..., y0, x1]
            + ly * (1 - lx) * img[..., y1, x0] + ly * lx * img[..., y1, x1])


def _roi_align_numpy(feat, rois, output_size, spatial_scale, sampling_ratio, aligned):
    """torchvision's CPU kernel, one sample at a time."""
    ph, pw = output_size
    out = np.zeros((len(rois), feat.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for r, (b, *box) in enumerate(rois):
        x1, y1, x2, y2 = (v * spatial_scale - off for v in box)
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / ph)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pw)
        for i in range(ph):
            for j in range(pw):
                acc = 0
                for iy in range(gh):
                    for ix in range(gw):
                        acc = acc + _bilinear(feat[int(b)], y1 + i * rh / ph + (iy + 0.5) * rh / ph / gh,
                                              x1 + j * rw / pw + (ix + 0.5) * rw / pw / gw)
                out[r, :, i, j] = acc / max(gh * gw, 1)
    return out


@pytest.mark.parametrize("case", range(len(ROI_ALIGN_CASES)))
def test_roi_align_matches_torchvision_and_brute_force(ref, device, case):
    kw = ROI_ALIGN_CASES[case]
    out = ops.roi_align(_t(FEAT, device), _t(ROIS, device), **kw)
    # torchvision's Python version leaves out the C++ kernels' rule that samples more than one pixel outside
    # the map count as zero, so it is compared on the RoIs whose samples all lie within the map
    inside = [0, 1, 2, 5]
    _close(out[inside], np.asarray(ref["roi_align"][case])[inside], 1e-10)
    _close(out, _roi_align_numpy(FEAT, ROIS, **kw), 1e-10)


def test_roi_align_hand_computed_and_list_boxes(device):
    x = ember.arange(16.0, device=device).reshape(1, 1, 4, 4)
    # one sample at the centre of the box [0, 1] x [0, 1]: the bilinear mean of pixels (0..1, 0..1)
    out = ops.roi_align(x, [ember.tensor([[0.0, 0.0, 1.0, 1.0]], device=device)], 1, sampling_ratio=1)
    assert out.tolist() == [[[[(0 + 1 + 4 + 5) / 4]]]]
    # 2x2 samples of the box [0, 2] x [0, 4]: at x 0.5, 1.5 and y 1, 3, i.e. the mean of row 1 and row 3 there
    out = ops.roi_align(x, ember.tensor([[0.0, 0.0, 0.0, 2.0, 4.0]], device=device), 1, sampling_ratio=2)
    assert out.item() == (4.5 + 5.5 + 12.5 + 13.5) / 4
    mod = ops.RoIAlign((2, 2), 0.5, 2, aligned=True)
    rois = _t(ROIS, device, ember.float32)
    boxes = [rois[rois[:, 0] == i, 1:] for i in range(2)]
    feat = _t(FEAT, device, ember.float32)
    order = np.argsort(ROIS[:, 0], kind="stable")
    _close(mod(feat, boxes), ops.roi_align(feat, rois[ember.tensor(order, device=device)], 2, 0.5, 2, True).cpu()
           .numpy(), 1e-6)
    assert "RoIAlign(output_size=(2, 2)" in repr(mod)


def _roi_pool_numpy(feat, rois, output_size, spatial_scale):
    ph, pw = output_size
    h, w = feat.shape[-2:]
    out = np.zeros((len(rois), feat.shape[1], ph, pw))
    rnd = lambda v: math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)  # noqa: E731 (C's round)
    for r, (b, *box) in enumerate(rois):
        x1, y1, x2, y2 = (rnd(v * spatial_scale) for v in box)
        bh, bw = max(y2 - y1 + 1, 1) / ph, max(x2 - x1 + 1, 1) / pw
        for i in range(ph):
            for j in range(pw):
                hs, he = min(max(math.floor(i * bh) + y1, 0), h), min(max(math.ceil((i + 1) * bh) + y1, 0), h)
                ws, we = min(max(math.floor(j * bw) + x1, 0), w), min(max(math.ceil((j + 1) * bw) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = feat[int(b), :, hs:he, ws:we].max(axis=(1, 2))
    return out


@pytest.mark.parametrize("output_size,scale", [((2, 3), 1.0), ((3, 3), 0.5), ((4, 4), 1.0)])
def test_roi_pool_brute_force(device, output_size, scale):
    out = ops.roi_pool(_t(FEAT, device), _t(ROIS, device), output_size, scale)
    _close(out, _roi_pool_numpy(FEAT, ROIS, output_size, scale), 0)
    x = ember.arange(16.0, device=device).reshape(1, 1, 4, 4)
    assert ops.RoIPool(1, 1.0)(x, ember.tensor([[0.0, 0.0, 0.0, 1.0, 2.0]], device=device)).item() == 9.0


def test_roi_ops_gradcheck(device):
    x = _t(RNG.standard_normal((2, 2, 6, 7)), device).requires_grad_()
    rois = _t(ROIS[:5] * 0.6, device)
    assert ember.autograd.gradcheck(lambda t: ops.roi_align(t, rois, (2, 2), 1.0, -1, True), (x,))
    assert ember.autograd.gradcheck(lambda t: ops.roi_align(t, rois, 3, 0.8, 2, False), (x,))
    assert ember.autograd.gradcheck(lambda t: ops.roi_pool(t, rois, (2, 3), 1.0), (x,))
    b1 = _t(B1[:5], device).requires_grad_()
    b2 = _t(B2, device)
    assert ember.autograd.gradcheck(lambda a: ops.generalized_box_iou_loss(a, b2), (b1,))
    assert ember.autograd.gradcheck(lambda a: ops.distance_box_iou(a, b2), (b1,))
    assert ember.autograd.gradcheck(lambda a: ops.sigmoid_focal_loss(a, (b2[:, :4] > 10).double()), (b1,))


def _nms_numpy(boxes, scores, thr):
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    keep = []
    for i in order:
        if all(_iou(boxes[i], boxes[k]) <= thr for k in keep):
            keep.append(i)
    return keep


def _iou(a, b):
    iw = max(min(a[2], b[2]) - max(a[0], b[0]), 0)
    ih = max(min(a[3], b[3]) - max(a[1], b[1]), 0)
    inter = iw * ih
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def test_nms_hand_computed_and_brute_force(device):
    boxes = ember.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 10, 9.0]], device=device)
    scores = ember.tensor([0.9, 0.8, 0.7, 0.95], device=device)
    # box 3 wins; box 0 overlaps it by 0.9, box 1 by 81/(90+100-81) = 0.74, box 2 not at all
    assert ops.nms(boxes, scores, 0.5).tolist() == [3, 2]
    assert ops.nms(boxes, scores, 0.8).tolist() == [3, 1, 2]
    assert ops.nms(boxes, scores, 0.5).dtype == ember.int64
    assert ops.nms(boxes[:0], scores[:0], 0.5).tolist() == []
    rng = np.random.default_rng(1)
    b, s = _boxes(200, rng, 50.0), rng.uniform(size=200)
    for thr in (0.3, 0.7):
        assert ops.nms(_t(b, device), _t(s, device), thr).tolist() == _nms_numpy(b, s, thr)
    cls = rng.integers(0, 3, 200)
    kept = ops.batched_nms(_t(b, device), _t(s, device), ember.tensor(cls, device=device), 0.5).tolist()
    expected = sorted((i for c in range(3) for i in np.flatnonzero(cls == c)[_nms_numpy(b[cls == c], s[cls == c],
                                                                                        0.5)]), key=lambda i: -s[i])
    assert kept == expected


def test_bad_input_raises_torchvision_errors(device):
    boxes, scores = ember.zeros(3, 4, device=device), ember.zeros(3, device=device)
    with pytest.raises(RuntimeError, match="nms: boxes should have 4 elements in dimension 1"):
        ops.nms(ember.zeros(3, 5, device=device), scores, 0.5)
    with pytest.raises(RuntimeError, match="nms: scores should be a 1d tensor"):
        ops.nms(boxes, scores[:, None], 0.5)
    with pytest.raises(RuntimeError, match="same number of elements"):
        ops.nms(boxes, scores[:2], 0.5)
    x = ember.zeros(1, 1, 4, 4, device=device)
    with pytest.raises(AssertionError, match=r"Tensor\[K, 5\]"):
        ops.roi_align(x, boxes, 2)
    with pytest.raises(AssertionError, match=r"List\[Tensor\[L, 4\]\]"):
        ops.roi_pool(x, [ember.zeros(2, 5, device=device)], 2)
    with pytest.raises(ValueError, match="in_fmt xyxy and out_fmt xyz"):
        ops.box_convert(boxes, "xyxy", "xyz")
    with pytest.raises(ValueError, match="Invalid alpha value"):
        ops.sigmoid_focal_loss(scores, scores, alpha=2.0)
    with pytest.raises(ValueError, match="Invalid Value for arg 'reduction'"):
        ops.generalized_box_iou_loss(boxes, boxes, reduction="max")
    with pytest.raises(ValueError, match="drop probability"):
        ops.stochastic_depth(x, 1.5, "row")
    with pytest.raises(ValueError, match="mode has to be"):
        ops.StochasticDepth(0.5, "col")(x)
    assert boxes.abs().sum().item() == 0


def test_misc_layers_match_torchvision_names(ref):
    nn = ember.nn
    mods = dict(cna=ops.Conv2dNormActivation(3, 8), cna3=ops.Conv3dNormActivation(3, 4, norm_layer=None),
                se=ops.SqueezeExcitation(8, 2), mlp=ops.MLP(4, [8, 8, 3], norm_layer=nn.LayerNorm),
                frozen=ops.FrozenBatchNorm2d(4))
    assert {k: list(m.state_dict()) for k, m in mods.items()} == ref["keys"]
    assert repr(mods["frozen"]) == ref["reprs"]["frozen"]


def test_misc_layers_compute(device):
    nn = ember.nn
    frozen = ops.FrozenBatchNorm2d(3).to(device)
    bn = nn.BatchNorm2d(3).to(device).eval()
    for m in (bn, frozen):
        m.running_mean.copy_(ember.tensor([0.5, -1.0, 2.0], device=device))
        m.running_var.copy_(ember.tensor([2.0, 0.5, 1.5], device=device))
    with ember.no_grad():
        bn.weight.copy_(ember.tensor([1.5, 0.5, -1.0], device=device))
        bn.bias.copy_(ember.tensor([0.1, 0.2, 0.3], device=device))
    frozen.load_state_dict(bn.state_dict())  # num_batches_tracked is dropped
    x = ember.randn(2, 3, 4, 4, device=device)
    assert ember.allclose(frozen(x), bn(x), atol=1e-6)
    se = ops.SqueezeExcitation(4, 2).to(device)
    y = ember.randn(2, 4, 3, 3, device=device)
    gate = ember.sigmoid(se.fc2(ember.relu(se.fc1(y.mean((2, 3), keepdim=True)))))
    assert ember.allclose(se(y), gate * y, atol=1e-6)
    assert ops.Permute([0, 2, 3, 1])(y).shape == (2, 3, 3, 4)
    cna = ops.Conv2dNormActivation(4, 6, 3, stride=2, activation_layer=nn.ReLU6).to(device)
    assert cna(y).shape == (2, 6, 2, 2) and cna[0].bias is None and cna(y).min().item() >= 0


def test_stochastic_depth(device):
    x = ember.ones(64, 3, 2, device=device)
    ember.manual_seed(0)
    out = ops.stochastic_depth(x, 0.5, "row")
    rows = out.flatten(1)
    assert set(rows[:, 0].tolist()) <= {0.0, 2.0} and (rows == rows[:, :1]).all()
    assert 0 < (rows[:, 0] == 0).sum().item() < 64
    whole = ops.stochastic_depth(x, 0.5, "batch")
    assert len(set(whole.flatten().tolist())) == 1
    mod = ops.StochasticDepth(0.5, "row").eval()
    assert mod(x) is x and repr(mod) == "StochasticDepth(p=0.5, mode=row)"


def test_multiscale_roi_align_and_fpn_match_torchvision(ref, device):
    pyr = {k: _t(v, device) for k, v in PYRAMID.items()}
    boxes = [_t(b, device) for b in PYR_BOXES]
    msra = ops.MultiScaleRoIAlign(["f1", "f3"], 3, 2)
    out = msra({"f1": pyr["f1"][:, :2], "f2": pyr["f2"], "f3": pyr["f3"]}, boxes, [(64, 64), (60, 64)])
    expected = np.asarray(ref["msra"])
    assert out.shape == expected.shape == (5, 2, 3, 3)
    _close(out, expected, 1e-10)
    fpn = ops.FeaturePyramidNetwork([3, 5, 2], 4, extra_blocks=ops.feature_pyramid_network.LastLevelMaxPool())
    fpn = fpn.double().to(device)
    state = {k: _t(v, device) for k, v in ref["fpn_state"].items()}
    fpn.load_state_dict(state)
    got = fpn(pyr)
    assert list(got) == list(ref["fpn_out"]) == ["f1", "f2", "f3", "pool"]
    for k, v in ref["fpn_out"].items():
        _close(got[k], v, 1e-10)
    p6p7 = ops.feature_pyramid_network.LastLevelP6P7(5, 4)
    assert list(ops.FeaturePyramidNetwork([3, 5], 4, extra_blocks=p6p7).state_dict()) == ref["p6p7_keys"]
    with pytest.raises(TypeError, match="extra_blocks should be of type ExtraFPNBlock"):
        ops.FeaturePyramidNetwork([3], 4, extra_blocks=ember.nn.ReLU())


def test_ps_roi_ops_brute_force(device):
    feat = RNG.standard_normal((2, 12, 9, 11))
    out_size = (2, 3)
    full = _roi_align_numpy(feat, ROIS, out_size, 0.8, -1, True)
    expected = np.zeros((len(ROIS), 2) + out_size)
    for c in range(2):
        for i in range(2):
            for j in range(3):
                expected[:, c, i, j] = full[:, (c * 2 + i) * 3 + j, i, j]
    _close(ops.ps_roi_align(_t(feat, device), _t(ROIS, device), out_size, 0.8), expected, 1e-10)
    rnd = lambda v: math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)  # noqa: E731
    pooled = np.zeros_like(expected)
    for r, (b, *box) in enumerate(ROIS):
        x1, y1, x2, y2 = (rnd(v * 0.8) for v in box)
        bh, bw = max(y2 - y1, 1) / 2, max(x2 - x1, 1) / 3
        for c in range(2):
            for i in range(2):
                for j in range(3):
                    hs, he = (min(max(math.floor(i * bh) + y1, 0), 9), min(max(math.ceil((i + 1) * bh) + y1, 0), 9))
                    ws, we = (min(max(math.floor(j * bw) + x1, 0), 11),
                              min(max(math.ceil((j + 1) * bw) + x1, 0), 11))
                    if he > hs and we > ws:
                        pooled[r, c, i, j] = feat[int(b), (c * 2 + i) * 3 + j, hs:he, ws:we].mean()
    _close(ops.PSRoIPool(out_size, 0.8)(_t(feat, device), _t(ROIS, device)), pooled, 1e-10)
    x = _t(feat[:, :4, :5, :6], device).requires_grad_()
    assert ember.autograd.gradcheck(lambda t: ops.ps_roi_align(t, _t(ROIS[:3] * 0.5, device), 2, 1.0, 2), (x,))
    assert ember.autograd.gradcheck(lambda t: ops.ps_roi_pool(t, _t(ROIS[:3] * 0.5, device), 2, 1.0), (x,))
    with pytest.raises(RuntimeError, match="multiple of pooling height"):
        ops.ps_roi_align(_t(feat, device), _t(ROIS, device), 5)


def _deform_numpy(x, offset, weight, bias, stride, pad, dil, mask):
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    oh, ow = offset.shape[2:]
    g = offset.shape[1] // (2 * kh * kw)
    groups = c // cg

    def sample(img, y, xx):
        if y <= -1 or y >= h or xx <= -1 or xx >= w:
            return 0.0
        y0, x0 = math.floor(y), math.floor(xx)
        total = 0.0
        for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
            for xq, wx in ((x0, 1 - (xx - x0)), (x0 + 1, xx - x0)):
                if 0 <= yy < h and 0 <= xq < w:
                    total += wy * wx * img[yy, xq]
        return total

    out = np.zeros((n, o, oh, ow))
    for b in range(n):
        for oc in range(o):
            grp = oc // (o // groups)
            for i in range(oh):
                for j in range(ow):
                    acc = bias[oc]
                    for ci in range(cg):
                        ch = grp * cg + ci
                        og = ch // (c // g)
                        for ki in range(kh):
                            for kj in range(kw):
                                k = ki * kw + kj
                                dy, dx = offset[b, (og * kh * kw + k) * 2:(og * kh * kw + k) * 2 + 2, i, j]
                                v = sample(x[b, ch], i * stride - pad + ki * dil + dy, j * stride - pad + kj * dil + dx)
                                m = 1.0 if mask is None else mask[b, og * kh * kw + k, i, j]
                                acc += weight[oc, ci, ki, kj] * v * m
                    out[b, oc, i, j] = acc
    return out


def test_deform_conv2d_brute_force_and_gradcheck(device):
    rng = np.random.default_rng(3)
    x, weight, bias = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6)
    offset = rng.uniform(-2, 2, (2, 2 * 2 * 9, 3, 3))
    mask = rng.uniform(size=(2, 2 * 9, 3, 3))
    for m in (None, mask):
        got = ops.deform_conv2d(_t(x, device), _t(offset, device), _t(weight, device), _t(bias, device), stride=2,
                                padding=1, dilation=1, mask=None if m is None else _t(m, device))
        _close(got, _deform_numpy(x, offset, weight, bias, 2, 1, 1, m), 1e-10)
    args = [_t(a, device).requires_grad_() for a in (x[:1, :, :4, :4], offset[:1, :, :2, :2] * 0.7 + 0.13,
                                                       weight, bias, mask[:1, :, :2, :2])]
    assert ember.autograd.gradcheck(lambda *a: ops.deform_conv2d(*a[:4], stride=2, padding=1, mask=a[4]), args)
    mod = ops.DeformConv2d(4, 6, 3, padding=1, groups=2).to(device)
    assert mod(_t(x, device, ember.float32), ember.zeros(2, 18, 5, 6, device=device)).shape == (2, 6, 5, 6)
    with pytest.raises(RuntimeError, match="offset output dims"):
        mod(_t(x, device, ember.float32), ember.zeros(2, 18, 4, 6, device=device))


def test_drop_block(device):
    x = ember.ones(2, 3, 9, 9, device=device)
    ember.manual_seed(0)
    out = ops.drop_block2d(x, 0.3, 3)
    zeros = (out == 0).cpu().numpy()
    kept = out[out != 0]
    assert zeros.any() and kept.numel() > 0
    assert ember.allclose(kept, ember.full_like(kept, out.numel() / kept.numel()), rtol=1e-4)
    # seeds are drawn where a whole block fits, so every dropped position lies in a fully dropped 3x3 window
    for n, c, i, j in zip(*np.nonzero(zeros)):
        assert any(zeros[n, c, a:a + 3, b:b + 3].all() for a in range(max(i - 2, 0), min(i, 6) + 1)
                   for b in range(max(j - 2, 0), min(j, 6) + 1))
    assert ops.DropBlock2d(0.5, 3).eval()(x) is x and ops.drop_block2d(x, 0.0, 3) is x
    assert ops.DropBlock3d(0.2, 3)(ember.ones(1, 2, 5, 5, 5, device=device)).shape == (1, 2, 5, 5, 5)
    with pytest.raises(ValueError, match="block size should be odd"):
        ops.drop_block2d(x, 0.3, 4)
    with pytest.raises(ValueError, match="input should be 4 dimensional"):
        ops.drop_block2d(x[0], 0.3, 3)
    assert repr(ops.DropBlock2d(0.1, 3)) == "DropBlock2d(p=0.1, block_size=3, inplace=False)"
