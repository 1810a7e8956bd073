"""ember_vision.models.detection's one-stage models (RetinaNet, FCOS, SSD, SSDlite) and their building blocks
(box coders, matchers, anchor generators, box losses) against torchvision 0.28 in a reference process
(:mod:`vision_reference`).

torchvision's compiled nms does not load there, so the reference process stands in a greedy nms written in
PyTorch (``_NMS_STANDIN``) for ``torchvision.ops.boxes.nms``, which ``batched_nms`` and the models call.
"""
import json
import os
import sys
import types

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
from ember_vision.models.detection import _utils as det_utils  # noqa: E402
from ember_vision.models.detection.anchor_utils import AnchorGenerator, DefaultBoxGenerator  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

sys.path.pop(0)

_NMS_STANDIN = """
import torchvision.ops.boxes as _tv_boxes
def _greedy_nms(boxes, scores, iou_threshold):
    order = scores.argsort(descending=True, stable=True)
    iou = _tv_boxes.box_iou(boxes, boxes)
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    keep = []
    for i in order.tolist():
        if not suppressed[i]:
            keep.append(i)
            suppressed |= iou[i] > iou_threshold
    return torch.tensor(keep, dtype=torch.int64)
_tv_boxes.nms = _greedy_nms
"""

RNG = np.random.default_rng(0)


def _boxes(n, rng, scale=40.0):
    xy = rng.uniform(0, scale, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(2, scale / 2, (n, 2))], 1).astype(np.float32)


REF_BOXES, PROPOSALS = _boxes(7, RNG), _boxes(7, RNG)
CODES = RNG.standard_normal((7, 8)).astype(np.float32)
QUALITY = RNG.uniform(0, 1, (3, 9)).astype(np.float32)
QUALITY[1, 4] = QUALITY[1].max()  # a tie for ground truth 1's best prediction
QUALITY[1, 6] = QUALITY[1, 4]
FEATURE_SHAPES = [(5, 6), (3, 3), (1, 2)]
BUILDERS = ["retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2", "fcos_resnet50_fpn", "ssd300_vgg16",
            "ssdlite320_mobilenet_v3_large"]


def _t(a):
    return ember.from_numpy(np.asarray(a))


def _image_list(height, width, n=2):
    return types.SimpleNamespace(tensors=ember.zeros(n, 3, height, width), image_sizes=[(height, width)] * n)


_UTILS_REFERENCE = f"""
import numpy as np
from torchvision.models.detection import _utils as U
from torchvision.models.detection.anchor_utils import AnchorGenerator, DefaultBoxGenerator
from torchvision.models.detection.image_list import ImageList
from torchvision.models import get_model_weights
ref, props = torch.tensor({REF_BOXES.tolist()!r}), torch.tensor({PROPOSALS.tolist()!r})
codes, quality = torch.tensor({CODES.tolist()!r}), torch.tensor({QUALITY.tolist()!r})
coder = U.BoxCoder((10.0, 10.0, 5.0, 5.0))
lin = U.BoxLinearCoder(normalize_by_size=True)
out = {{
    "encode": [t.tolist() for t in coder.encode([ref[:3], ref[3:]], [props[:3], props[3:]])],
    "decode": coder.decode(codes, [props[:3], props[3:]]).tolist(),
    "decode_single": U.BoxCoder((1.0, 1.0, 1.0, 1.0), 0.5).decode_single(codes, props).tolist(),
    "lin_encode": lin.encode(props, ref).tolist(),
    "lin_decode": lin.decode(codes[:, :4], props).tolist(),
    "lin_raw": U.BoxLinearCoder(False).decode(codes[:, :4], props).tolist(),
    "matcher": U.Matcher(0.7, 0.3)(quality).tolist(),
    "matcher_low": U.Matcher(0.7, 0.3, allow_low_quality_matches=True)(quality).tolist(),
    "ssd_matcher": U.SSDMatcher(0.5)(quality).tolist(),
    "losses": {{k: U._box_loss(k, coder, props, ref, codes[:, :4], {{"beta": 0.5}}).item()
               for k in ("l1", "smooth_l1", "ciou", "diou", "giou")}},
}}
images = ImageList(torch.zeros(2, 3, 37, 45), [(37, 45), (30, 40)])
feats = [torch.zeros(2, 4, *s) for s in {FEATURE_SHAPES!r}]
gen = AnchorGenerator(((16, 24), (32,), (64, 128)), ((0.5, 1.0, 2.0),) * 3)
out["anchors"] = [a.tolist() for a in gen(images, feats)]
out["anchors_per_loc"] = gen.num_anchors_per_location()
out["anchors_flat"] = AnchorGenerator((8, 16, 32), (0.5, 1.0))(images, feats)[0].tolist()
out["default"] = [a.tolist() for a in DefaultBoxGenerator([[2], [2, 3], [2]])(images, feats)]
steps = DefaultBoxGenerator([[2], [2, 3], [2]], scales=[0.1, 0.3, 0.6, 0.9], steps=[8, 16, 32], clip=False)
out["default_steps"] = steps(images, feats)[0].tolist()
out["default_repr"] = repr(steps)
keys = ("num_params", "categories", "min_size", "recipe", "_metrics", "_ops", "_file_size")
out["weights"] = {{n: {{w.name: [w.url, {{k: w.meta[k] for k in keys}}] for w in get_model_weights(n)}}
                  for n in {BUILDERS!r}}}
"""


def test_box_utils_match_torchvision(default_reference):
    ref = default_reference[1]["utils"]
    coder = det_utils.BoxCoder((10.0, 10.0, 5.0, 5.0))
    lin = det_utils.BoxLinearCoder(normalize_by_size=True)
    ref_b, props, codes, quality = _t(REF_BOXES), _t(PROPOSALS), _t(CODES), _t(QUALITY)
    close = lambda got, key: np.testing.assert_allclose(got.numpy(), np.array(ref[key]), rtol=1e-5, atol=1e-5)
    for got, want in zip(coder.encode([ref_b[:3], ref_b[3:]], [props[:3], props[3:]]), ref["encode"]):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    close(coder.decode(codes, [props[:3], props[3:]]), "decode")
    close(det_utils.BoxCoder((1.0, 1.0, 1.0, 1.0), 0.5).decode_single(codes, props), "decode_single")
    close(lin.encode(props, ref_b), "lin_encode")
    close(lin.decode(codes[:, :4], props), "lin_decode")
    close(det_utils.BoxLinearCoder(False).decode(codes[:, :4], props), "lin_raw")
    assert det_utils.Matcher(0.7, 0.3)(quality).tolist() == ref["matcher"]
    assert det_utils.Matcher(0.7, 0.3, allow_low_quality_matches=True)(quality).tolist() == ref["matcher_low"]
    assert det_utils.SSDMatcher(0.5)(quality).tolist() == ref["ssd_matcher"]
    for kind, want in ref["losses"].items():
        got = det_utils._box_loss(kind, coder, props, ref_b, codes[:, :4], {"beta": 0.5}).item()
        assert got == pytest.approx(want, rel=1e-5), kind

    images = types.SimpleNamespace(tensors=ember.zeros(2, 3, 37, 45), image_sizes=[(37, 45), (30, 40)])
    feats = [ember.zeros(2, 4, *s) for s in FEATURE_SHAPES]
    gen = AnchorGenerator(((16, 24), (32,), (64, 128)), ((0.5, 1.0, 2.0),) * 3)
    anchors = gen(images, feats)
    assert len(anchors) == 2 and anchors[0].dtype == ember.float32
    for got, want in zip(anchors, ref["anchors"]):
        np.testing.assert_array_equal(got.numpy(), want)
    assert gen.num_anchors_per_location() == ref["anchors_per_loc"]
    flat = AnchorGenerator((8, 16, 32), (0.5, 1.0))(images, feats)[0]
    np.testing.assert_array_equal(flat.numpy(), ref["anchors_flat"])
    for got, want in zip(DefaultBoxGenerator([[2], [2, 3], [2]])(images, feats), ref["default"]):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-5)
    steps = DefaultBoxGenerator([[2], [2, 3], [2]], scales=[0.1, 0.3, 0.6, 0.9], steps=[8, 16, 32], clip=False)
    np.testing.assert_allclose(steps(images, feats)[0].numpy(), ref["default_steps"], rtol=1e-6, atol=1e-5)
    assert repr(steps) == ref["default_repr"]

    from ember_vision import models
    from ember_vision.models import detection

    assert set(BUILDERS) <= set(models.list_models(module=detection))
    for name, members in ref["weights"].items():
        enum = models.get_model_weights(name)
        assert enum.DEFAULT is enum.COCO_V1
        assert [w.name for w in enum] == list(members), name
        for member, (url, meta) in members.items():
            assert enum[member].url == url
            assert json.loads(json.dumps({k: enum[member].meta[k] for k in meta})) == meta, name


def test_box_utils_bad_input():
    with pytest.raises(AssertionError, match="low_threshold should be <= high_threshold"):
        det_utils.Matcher(0.3, 0.7)
    with pytest.raises(ValueError, match="No ground-truth boxes available"):
        det_utils.Matcher(0.7, 0.3)(ember.zeros(0, 5))
    with pytest.raises(ValueError, match="No proposal boxes available"):
        det_utils.Matcher(0.7, 0.3)(ember.zeros(2, 0))
    with pytest.raises(AssertionError, match="Unsupported loss: l3"):
        det_utils._box_loss("l3", det_utils.BoxCoder((1.0,) * 4), _t(PROPOSALS), _t(REF_BOXES), _t(CODES[:, :4]))
    with pytest.raises(ValueError, match="aspect_ratios and steps should have the same length"):
        DefaultBoxGenerator([[2], [2]], steps=[8])
    with pytest.raises(AssertionError, match="There needs to be a match between the number of feature maps"):
        AnchorGenerator(((32,),))(_image_list(32, 32), [ember.zeros(2, 1, 4, 4)] * 2)


def test_sampler_and_helpers():
    matched = ember.tensor([1, 0, -1, 0, 2, 0, 0, 3, -1, 0])
    before = matched.clone()
    ember.manual_seed(0)
    pos, neg = det_utils.BalancedPositiveNegativeSampler(4, 0.5)([matched])
    assert pos[0].dtype == ember.uint8 and int(pos[0].sum()) == 2 and int(neg[0].sum()) == 2
    assert bool(((pos[0] == 1) <= (matched >= 1)).all()) and bool(((neg[0] == 1) <= (matched == 0)).all())
    assert ember.equal(matched, before)
    pos, neg = det_utils.BalancedPositiveNegativeSampler(100, 0.25)([matched])
    assert int(pos[0].sum()) == 3 and int(neg[0].sum()) == 5  # capped by what there is
    assert det_utils._topk_min(ember.zeros(3, 7), 10, 1) == 7 and det_utils._topk_min(ember.zeros(3, 7), 2, 1) == 2

    from ember_vision.ops import FrozenBatchNorm2d
    model = ember.nn.Sequential(ember.nn.Conv2d(3, 5, 3, stride=2), FrozenBatchNorm2d(5), ember.nn.Conv2d(5, 6, 1))
    det_utils.overwrite_eps(model, 0.0)
    assert model[1].eps == 0.0
    model.train()
    assert det_utils.retrieve_out_channels(model, (20, 16)) == [6] and model.training


# (builder, builder kwargs, image sizes (H, W)); the first runs in the default suite, the rest are slow
FEW = {"detections_per_img": 30, "topk_candidates": 200}  # fewer candidates: quicker, and no near-ties
SMALL = {"min_size": 40, "max_size": 64, **FEW}
MODELS = [
    ("retinanet_resnet50_fpn", {"num_classes": 5, **SMALL}, [(60, 80), (72, 64)]),
    ("retinanet_resnet50_fpn_v2", {"num_classes": 4, **SMALL}, [(60, 80), (72, 64)]),
    ("fcos_resnet50_fpn", {"num_classes": 5, **SMALL}, [(60, 80), (72, 64)]),
    ("ssd300_vgg16", {"num_classes": 4, **FEW}, [(90, 120), (100, 100)]),
    ("ssdlite320_mobilenet_v3_large", {"num_classes": 4, **FEW}, [(90, 120), (100, 100)]),
]
TARGETS = [{"boxes": [[5.0, 6.0, 40.0, 50.0], [30.0, 10.0, 70.0, 45.0]], "labels": [1, 3]},
           {"boxes": [[2.0, 3.0, 30.0, 60.0]], "labels": [2]}]

_MODEL_REFERENCE = _NMS_STANDIN + """
import numpy as np
torch.manual_seed(0)
model = torchvision.models.get_model({name!r}, weights=None, weights_backbone=None, **{kwargs!r})
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
images = [torch.rand(3, h, w) for h, w in {sizes!r}]
with torch.no_grad():
    batch = model.transform(images)[0].tensors
    if {calibrate!r}:  # features that vanish (SSDlite's small init): batch norms take these images' statistics
        norms = [m for m in model.backbone.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        for m in norms:
            m.momentum = 1.0
        model.backbone(batch)
        for m in norms:
            m.momentum = 0.1
model.eval()
with torch.no_grad():  # the heads start near zero: rescale each conv in turn to unit output spread
    features = model.backbone(batch)
    features = list(features.values()) if isinstance(features, dict) else [features]
    for conv in [m for m in model.head.modules() if isinstance(m, torch.nn.Conv2d)]:
        conv.weight.normal_(0, 1)
        if conv.bias is not None:
            conv.bias.normal_(0, 0.5)
        outputs = []
        hook = conv.register_forward_hook(lambda m, i, o: outputs.append(o.flatten()))
        model.head(features)
        hook.remove()
        scale = torch.cat(outputs).std()
        conv.weight /= scale
        if conv.bias is not None:
            conv.bias /= scale
targets = [{{"boxes": torch.tensor(t["boxes"]), "labels": torch.tensor(t["labels"])}} for t in {targets!r}]
torch.save(model.state_dict(), {dir!r} + "/state.pt")
np.savez({dir!r} + "/images.npz", *[i.numpy() for i in images])
with torch.no_grad():
    detections = [{{k: v.tolist() for k, v in d.items()}} for d in model(images)]
torch.manual_seed(1)
model.train()
losses = {{k: v.item() for k, v in model(images, targets).items()}}
model_out = {{"detections": detections, "losses": losses}}
"""


def _model_reference(case, directory) -> str:
    name, kwargs, sizes = case
    return _MODEL_REFERENCE.format(name=name, kwargs=kwargs, sizes=sizes, targets=TARGETS, dir=str(directory),
                                   calibrate=name.startswith("ssdlite"))


@pytest.fixture(scope="module")
def default_reference(tmp_path_factory):
    """One reference process for the building blocks and the default model: ``(its directory, its output)``."""
    directory = tmp_path_factory.mktemp("onestage")
    code = _UTILS_REFERENCE + _model_reference(MODELS[0], directory)
    return directory, vision_reference.run(code + 'print(json.dumps({"utils": out, "model": model_out}))')


@pytest.mark.parametrize("name,kwargs,sizes", [
    pytest.param(*case, id=case[0], marks=() if i == 0 else pytest.mark.slow) for i, case in enumerate(MODELS)])
def test_same_weights_same_detections_and_losses(request, tmp_path, name, kwargs, sizes):
    from ember_vision import models
    from ember_vision.models import detection  # noqa: F401  (registers the builders)

    if (name, kwargs, sizes) == MODELS[0]:
        tmp_path, ref = request.getfixturevalue("default_reference")
        ref = ref["model"]
    else:
        ref = vision_reference.run(_model_reference((name, kwargs, sizes), tmp_path)
                                   + 'print(json.dumps(model_out))')
    model = models.get_model(name, weights=None, weights_backbone=None, **kwargs)
    model.load_state_dict(ember.load(str(tmp_path / "state.pt")), strict=True)
    with np.load(tmp_path / "images.npz") as f:
        images = [ember.from_numpy(f[k]) for k in sorted(f.files, key=lambda k: int(k.split("_")[1]))]
    model.eval()
    with ember.no_grad():
        detections = model(images)
    for got, want in zip(detections, ref["detections"]):
        assert len(want["scores"]) > 0
        assert got["labels"].tolist() == want["labels"]
        np.testing.assert_allclose(got["scores"].numpy(), want["scores"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got["boxes"].numpy(), want["boxes"], rtol=1e-4, atol=1e-3)
    targets = [{"boxes": ember.tensor(t["boxes"]), "labels": ember.tensor(t["labels"])} for t in TARGETS]
    ember.manual_seed(1)
    model.train()
    losses = model(images, targets)
    assert sorted(losses) == sorted(ref["losses"])
    for key, want in ref["losses"].items():
        assert losses[key].item() == pytest.approx(want, rel=1e-4), key


class _TinyBackbone(ember.nn.Module):
    """One stride-8 conv: a feature map for the heads without a real network."""

    def __init__(self, out_channels=32):
        super().__init__()
        self.conv = ember.nn.Conv2d(3, out_channels, 3, stride=8, padding=1)
        self.out_channels = out_channels

    def forward(self, x):
        return self.conv(x)


def test_models_bad_input():
    from ember_vision.models.detection import FCOS, SSD, RetinaNet
    from ember_vision.models.detection.ssd import SSDHead

    with pytest.raises(ValueError, match="backbone should contain an attribute out_channels"):
        RetinaNet(ember.nn.ReLU(), 3)
    with pytest.raises(TypeError, match="anchor_generator should be of type AnchorGenerator or None"):
        RetinaNet(_TinyBackbone(), 3, anchor_generator=DefaultBoxGenerator([[2]]))
    with pytest.raises(ValueError, match=r"num_anchors_per_location\(\)\[0\] should be 1 instead of 2"):
        FCOS(_TinyBackbone(), 3, anchor_generator=AnchorGenerator(((16,),), ((0.5, 1.0),)))
    anchors = AnchorGenerator(((16,),), ((1.0,),))
    retina = RetinaNet(_TinyBackbone(), 3, min_size=32, max_size=32, anchor_generator=anchors)
    fcos = FCOS(_TinyBackbone(), 3, min_size=32, max_size=32, anchor_generator=anchors)
    ssd = SSD(_TinyBackbone(), DefaultBoxGenerator([[2]]), (32, 32), 3,
              head=SSDHead([32], DefaultBoxGenerator([[2]]).num_anchors_per_location(), 3))
    assert retina.transform.image_mean == [0.485, 0.456, 0.406] and ssd.transform.image_std == [0.229, 0.224, 0.225]
    assert FCOS(_TinyBackbone(), 3, image_mean=[0.5] * 3, anchor_generator=anchors).transform.image_mean == [0.5] * 3
    images = [ember.rand(3, 32, 32)]
    for model in (retina, fcos, ssd):
        model.train()
        with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
            model(images)
        with pytest.raises(AssertionError, match=r"Expected target boxes to be a tensor of shape \[N, 4\]"):
            model(images, [{"boxes": ember.zeros(4), "labels": ember.tensor([1])}])
        target = {"boxes": ember.tensor([[4.0, 4.0, 20.0, 20.0], [10.0, 12.0, 8.0, 30.0]]),
                  "labels": ember.tensor([1, 2])}
        before = target["boxes"].clone()
        with pytest.raises(AssertionError, match=r"positive height and width. Found invalid box \[10.0, 12.0, 8.0"):
            model(images, [target])
        assert ember.equal(target["boxes"], before)
        losses = model(images, [{"boxes": before[:1], "labels": ember.tensor([1])}])
        assert all(bool(ember.isfinite(v)) for v in losses.values())
        empty = model(images, [{"boxes": ember.zeros((0, 4)), "labels": ember.zeros(0, dtype=ember.int64)}])
        assert sorted(empty) == sorted(losses) and all(bool(ember.isfinite(v)) for v in empty.values())
        assert empty["bbox_regression"].item() == 0.0  # no foreground: nothing to regress
        model.eval()
        with ember.no_grad():
            out = model(images)
        assert sorted(out[0]) == ["boxes", "labels", "scores"]


def test_retinanet_heads_load_pre_v2_checkpoint_keys():
    """RetinaNet's COCO_V1 checkpoint names the head convs ``conv.0``, ``conv.2``, ... (ReLUs in between)."""
    from ember_vision.models.detection.retinanet import RetinaNetHead

    head = RetinaNetHead(8, 3, 4)
    state = head.state_dict()
    old = {k.replace(f"conv.{i}.0.", f"conv.{2 * i}."): v for k, v in state.items()
           for i in [int(k.split(".")[2]) if ".conv." in k else -1]}
    assert "classification_head.conv.6.weight" in old and "regression_head.conv.4.bias" in old
    fresh = RetinaNetHead(8, 3, 4)
    fresh.load_state_dict(old, strict=True)
    assert all(ember.equal(fresh.state_dict()[k], v) for k, v in state.items())
