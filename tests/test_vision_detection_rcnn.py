"""Same weights, same detections: the R-CNN family of ember-vision against torchvision 0.28's.

Each builder runs in the torchvision reference process (:mod:`vision_reference`, with a Python stand-in for
torchvision's compiled ``nms``) with a fixed seed, batch-norm statistics randomised, in float64 (so no IoU or
score lands within rounding of a threshold and the two sides keep the same boxes).  ember-vision's builder of
the same name loads its ``state_dict`` with ``strict=True`` and must give the same boxes, labels, scores,
masks and key points on the same two images (eval), and the same loss dict on the same targets (training,
with sample sizes large enough that every anchor and proposal is sampled, so no random draw matters).
By default Mask R-CNN's ResNet-50 builder and two small Mask and Keypoint R-CNNs built from the classes'
arguments (every branch, eval and training, at a fraction of the cost) run, all in one reference process;
every other builder and training case is marked ``slow`` (``-m slow``).
"""
import inspect
import os
import sys

import numpy as np
import pytest

import ember

ember_vision = pytest.importorskip("ember_vision")
from ember_vision.models import detection, list_models  # noqa: E402
from ember_vision.models.detection import transform as det_transform  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

sys.path.pop(0)

SIZES = [(72, 96), (80, 64)]  # the two images' (height, width)
# small images, few proposals (the RoI heads' cost), every detection kept
SMALL = {"min_size": 64, "max_size": 96, "weights_backbone": None, "box_score_thresh": 0.0,
         "rpn_pre_nms_top_n_test": 300, "rpn_post_nms_top_n_test": 30}
# training: every anchor and proposal sampled, so the losses do not depend on randperm's draws
TRAIN = {**SMALL, "rpn_pre_nms_top_n_train": 300, "rpn_post_nms_top_n_train": 20,
         "rpn_batch_size_per_image": 100000, "box_batch_size_per_image": 100000}


# Small models built with the classes' own arguments (the same code runs against torchvision and ember-vision):
# every branch, trained and evaluated, at a fraction of the ResNet-50 builders' cost
TINY = {
    "tiny_maskrcnn": """
det = detection
backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=4, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, stride=2, padding=1))
backbone.out_channels = 16
model = det.MaskRCNN(
    backbone, rpn_anchor_generator=det.anchor_utils.AnchorGenerator(((16, 32),), ((0.5, 1.0, 2.0),)),
    box_roi_pool=ops.MultiScaleRoIAlign(["0"], 7, 2), box_head=det.faster_rcnn.TwoMLPHead(16 * 49, 32),
    box_predictor=det.faster_rcnn.FastRCNNPredictor(32, 3), mask_roi_pool=ops.MultiScaleRoIAlign(["0"], 14, 2),
    mask_head=det.mask_rcnn.MaskRCNNHeads(16, [16], 1), mask_predictor=det.mask_rcnn.MaskRCNNPredictor(16, 8, 3),
    **kwargs)
""",
    "tiny_keypointrcnn": """
det = detection
backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=4, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, stride=2, padding=1))
backbone.out_channels = 16
model = det.KeypointRCNN(
    backbone, rpn_anchor_generator=det.anchor_utils.AnchorGenerator(((16, 32),), ((0.5, 1.0, 2.0),)),
    box_roi_pool=ops.MultiScaleRoIAlign(["0"], 7, 2), box_head=det.faster_rcnn.TwoMLPHead(16 * 49, 32),
    box_predictor=det.faster_rcnn.FastRCNNPredictor(32, 2), keypoint_roi_pool=ops.MultiScaleRoIAlign(["0"], 14, 2),
    keypoint_head=det.keypoint_rcnn.KeypointRCNNHeads(16, [16]),
    keypoint_predictor=det.keypoint_rcnn.KeypointRCNNPredictor(16, 4), **kwargs)
""",
}


def build(name, kwargs, torch, torchvision):
    """The builder ``name`` of ``torchvision`` (or ember-vision) called with ``kwargs``, or a :data:`TINY` model."""
    if name not in TINY:
        return torchvision.models.get_model(name, **kwargs)
    kwargs = {k: v for k, v in kwargs.items() if k != "weights_backbone"}
    scope = {"nn": torch.nn, "detection": torchvision.models.detection, "ops": torchvision.ops, "kwargs": kwargs}
    exec(TINY[name], scope)
    return scope["model"]


def _case(mode, name, kwargs, slow=False):
    return pytest.param(mode, name, kwargs, id=f"{mode}-{name}", marks=pytest.mark.slow if slow else ())


CASES = [
    _case("eval", "maskrcnn_resnet50_fpn", {"num_classes": 3, "box_detections_per_img": 6}),
    _case("eval", "tiny_maskrcnn", {}),
    _case("train", "tiny_maskrcnn", {}),
    _case("eval", "tiny_keypointrcnn", {}),
    _case("train", "tiny_keypointrcnn", {}),
    _case("train-empty", "tiny_maskrcnn", {}),  # images without objects: no positives, zero mask loss
    _case("eval", "fasterrcnn_mobilenet_v3_large_320_fpn", {"num_classes": 5}, slow=True),
    _case("eval", "keypointrcnn_resnet50_fpn", {"num_keypoints": 5, "box_detections_per_img": 3}, slow=True),
    _case("eval", "fasterrcnn_resnet50_fpn", {"num_classes": 4, "box_detections_per_img": 30}, slow=True),
    _case("eval", "fasterrcnn_resnet50_fpn_v2", {"num_classes": 4, "box_detections_per_img": 30}, slow=True),
    _case("eval", "fasterrcnn_mobilenet_v3_large_fpn", {"num_classes": 5}, slow=True),
    _case("eval", "maskrcnn_resnet50_fpn_v2", {"num_classes": 3, "box_detections_per_img": 6}, slow=True),
    _case("train", "maskrcnn_resnet50_fpn", {"num_classes": 3}, slow=True),
    _case("train-empty", "tiny_keypointrcnn", {}, slow=True),
    _case("train", "fasterrcnn_mobilenet_v3_large_320_fpn", {"num_classes": 3}, slow=True),
    _case("train", "keypointrcnn_resnet50_fpn", {"num_keypoints": 4}, slow=True),
    _case("train", "fasterrcnn_resnet50_fpn_v2", {"num_classes": 3}, slow=True),
]

_REFERENCE = """
import os
import numpy as np
from torchvision.ops import boxes as box_ops

torch._dynamo.config.disable = True  # torchvision's pure-Python roi_align, run eagerly rather than compiled


def nms(boxes, scores, iou_threshold):  # stands in for the compiled kernel: greedy, by decreasing score
    order = torch.sort(scores, descending=True, stable=True)[1]
    over = box_ops.box_iou(boxes[order], boxes[order]) > iou_threshold
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    kept = []
    for i in range(len(order)):
        if not suppressed[i]:
            kept.append(i)
            suppressed |= over[i]
    return order[torch.tensor(kept, dtype=torch.int64)]


box_ops.nms = nms
TINY = {tiny!r}
{build}
DTYPES = {{"labels": torch.int64, "keypoints": torch.float32, "masks": torch.uint8}}
for folder, name, kwargs, targets in {cases!r}:
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(0)
    model = build(name, kwargs, torch, torchvision)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    torch.save(model.state_dict(), folder + "/state.pt")  # float32, as checkpoints are
    model = model.double()
    images = [torch.rand(3, h, w, dtype=torch.float64) for h, w in {sizes!r}]
    out = {{"image%d" % i: x.numpy() for i, x in enumerate(images)}}
    if targets is None:
        with torch.no_grad():
            for i, det in enumerate(model.eval()(images)):
                out.update({{"%s%d" % (k, i): v.numpy() for k, v in det.items()}})
    else:
        targets = [{{k: torch.tensor(v, dtype=DTYPES.get(k, torch.float64)).reshape(shape)
                    for k, (v, shape) in t.items()}} for t in targets]
        losses = model.train()(images, targets)
        sum(losses.values()).backward()
        out.update({{"loss_" + k: v.detach().numpy() for k, v in losses.items()}})
        out["grad"] = model.roi_heads.box_predictor.cls_score.weight.grad.numpy()
    np.savez(folder + "/out.npz", **out)
extra = {{}}
{extras}
print(json.dumps(extra))
"""


def _targets(with_masks: bool, num_keypoints: int, empty: bool = False):
    """Three boxes per image (labels 1 and 2, or all people with ``num_keypoints`` key points), with random
    masks inside the boxes when ``with_masks``; none when ``empty``.  Each entry is ``(flat values, shape)``."""
    rng = np.random.default_rng(0)
    targets = []
    for h, w in SIZES:
        boxes = np.array([[4.0, 6.0, 40.0, 50.0], [30.0, 20.0, w - 5.0, h - 3.0], [10.0, 30.0, 28.0, 44.0]])
        boxes = boxes[:0] if empty else boxes
        target = {"boxes": boxes, "labels": np.array([1, 2, 1][: len(boxes)])}
        if with_masks:
            masks = np.zeros((len(boxes), h, w), dtype=np.uint8)
            for m, (x0, y0, x1, y1) in zip(masks, boxes.astype(int)):
                m[y0:y1, x0:x1] = rng.random((y1 - y0, x1 - x0)) < 0.7
            target["masks"] = masks
        if num_keypoints:
            xy = rng.uniform(boxes[:, None, :2], boxes[:, None, 2:], size=(len(boxes), num_keypoints, 2))
            target["keypoints"] = np.concatenate([xy, rng.integers(0, 2, (len(boxes), num_keypoints, 1))], -1)
            target["labels"] = np.ones(len(boxes), dtype=np.int64)
        targets.append({k: (v.ravel().tolist(), v.shape) for k, v in target.items()})
    return targets


def _spec(folder, mode, name, kwargs):
    """What the reference process builds and runs for one case."""
    if mode == "eval":
        return str(folder), name, {**SMALL, **kwargs}, None
    keypoints = kwargs.get("num_keypoints", 4 if "keypoint" in name else 0)
    return str(folder), name, {**TRAIN, **kwargs}, _targets("mask" in name, keypoints, mode == "train-empty")


def _run_reference(specs, extras: str = "") -> dict:
    """Run ``specs`` and the snippets ``extras`` (which fill the dict ``extra``) in one reference process."""
    code = _REFERENCE.format(cases=specs, sizes=SIZES, tiny=TINY, build=inspect.getsource(build), extras=extras)
    return vision_reference.run(code, timeout=900)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The default run's cases and the other tests' reference values, all computed in one reference process
    (torch and torchvision imported once): ``(specs by case id, extra values by test)``."""
    root = tmp_path_factory.mktemp("rcnn")
    specs = {p.id: _spec(root / p.id, *p.values) for p in CASES if not p.marks}
    return specs, _run_reference(list(specs.values()), "\n".join([_TRANSFORM_REF, _HEATMAPS_REF, _REGISTRY_REF,
                                                                      _BACKBONES_REF]))


@pytest.fixture
def case(request, tmp_path, mode, name, kwargs):
    """``(model, images, reference outputs, kwargs, targets)`` of one case: ember-vision's builder with the
    reference's state dict loaded strictly, in float64."""
    if request.node.get_closest_marker("slow"):
        spec = _spec(tmp_path, mode, name, kwargs)
        _run_reference([spec])
    else:
        spec = request.getfixturevalue("reference")[0][request.node.callspec.id]
    folder, _, full_kwargs, targets = spec
    ref = np.load(os.path.join(folder, "out.npz"))
    model = build(name, full_kwargs, ember, ember_vision)
    model.load_state_dict(ember.load(os.path.join(folder, "state.pt")), strict=True)
    images = [ember.from_numpy(ref[f"image{i}"]) for i in range(len(SIZES))]
    return model.double(), images, ref, targets


def _pairing(got_boxes, got_labels, want_boxes, want_labels, tol) -> np.ndarray:
    """For each ember detection, the index of torchvision's detection with the same label and box (the order
    of detections with equal scores may differ)."""
    cost = np.abs(got_boxes[:, None, :] - want_boxes[None, :, :]).max(-1)
    cost[got_labels[:, None] != want_labels[None, :]] = np.inf
    pairs = cost.argmin(1)
    assert (cost[np.arange(len(pairs)), pairs] <= tol).all()
    assert sorted(pairs.tolist()) == list(range(len(want_boxes)))
    return pairs


@pytest.mark.parametrize("mode,name,kwargs", CASES)
def test_same_weights_same_outputs(mode, name, kwargs, case):
    model, images, ref, targets = case
    if mode.startswith("train"):
        _check_training_losses(model, images, ref, targets)
        return
    with ember.no_grad():
        detections = model.eval()(images)
    for i, det in enumerate(detections):
        want = {k[:-1]: ref[k] for k in ref.files if k.endswith(str(i)) and not k.startswith("image")}
        assert sorted(det) == sorted(want)
        assert len(want["boxes"]) > 0, "the case should give detections"
        got = {k: v.numpy() for k, v in det.items()}
        assert got["labels"].dtype == np.int64 and got["boxes"].dtype == np.float64
        np.testing.assert_allclose(got["scores"], want["scores"], rtol=0, atol=1e-9)  # sorted: order-free
        pairs = _pairing(got["boxes"], got["labels"], want["boxes"], want["labels"], 1e-6)
        for key in ("masks", "keypoints", "keypoints_scores"):
            if key in want:
                scale = max(float(np.abs(want[key]).max()), 1.0)
                np.testing.assert_allclose(got[key], want[key][pairs], rtol=0, atol=1e-6 * scale)


def _check_training_losses(model, images, ref, targets):
    dtypes = {"labels": ember.int64, "keypoints": ember.float32, "masks": ember.uint8}
    targets = [{k: ember.tensor(v, dtype=dtypes.get(k, ember.float64)).reshape(shape) for k, (v, shape) in t.items()}
               for t in targets]
    losses = model.train()(images, targets)
    want = {k[len("loss_"):]: ref[k] for k in ref.files if k.startswith("loss_")}
    assert sorted(losses) == sorted(want)
    for key, value in losses.items():
        np.testing.assert_allclose(value.item(), float(want[key]), rtol=1e-7, atol=1e-9, err_msg=key)
    sum(losses.values()).backward()
    grad = model.roi_heads.box_predictor.cls_score.weight.grad.numpy()
    np.testing.assert_allclose(grad, ref["grad"], rtol=0, atol=1e-7 * np.abs(ref["grad"]).max())


_TRANSFORM_REF = """
from torchvision.models.detection.transform import GeneralizedRCNNTransform
torch.manual_seed(0)
t = GeneralizedRCNNTransform(50, 70, [0.4, 0.5, 0.6], [0.2, 0.25, 0.3], size_divisible=16)
images = [torch.rand(3, 37, 61), torch.rand(3, 45, 29)]
targets = [{"boxes": torch.tensor([[1.5, 2.0, 30.0, 20.5]]), "masks": (torch.rand(1, 37, 61) > 0.5).byte(),
            "keypoints": torch.tensor([[[3.0, 4.0, 1.0], [20.0, 9.5, 0.0]]])},
           {"boxes": torch.tensor([[0.0, 0.0, 28.0, 44.0]])}]
batch, out = t.eval()(images, targets)
post = t.postprocess([{"boxes": torch.tensor([[2.0, 3.0, 40.0, 30.0]]),
                       "keypoints": torch.tensor([[[5.0, 6.0, 1.0]]])}], batch.image_sizes[:1], [(37, 61)])
fixed, _ = GeneralizedRCNNTransform(50, 70, [0.0] * 3, [1.0] * 3, fixed_size=(40, 24))(images)
extra["transform"] = {"images": [x.tolist() for x in images], "masks": targets[0]["masks"].tolist(),
                      "batch": batch.tensors.tolist(), "sizes": batch.image_sizes,
                      "targets": [{k: v.tolist() for k, v in t.items()} for t in out],
                      "post": {k: v.tolist() for k, v in post[0].items()}, "fixed": list(fixed.tensors.shape),
                      "repr": repr(t)}
"""


def test_transform_resizes_batches_and_maps_back_like_torchvision(reference):
    ref = reference[1]["transform"]
    t = det_transform.GeneralizedRCNNTransform(50, 70, [0.4, 0.5, 0.6], [0.2, 0.25, 0.3], size_divisible=16).eval()
    images = [ember.tensor(x) for x in ref["images"]]
    targets = [{"boxes": ember.tensor([[1.5, 2.0, 30.0, 20.5]]), "masks": ember.tensor(ref["masks"], dtype=ember.uint8),
                "keypoints": ember.tensor([[[3.0, 4.0, 1.0], [20.0, 9.5, 0.0]]])},
               {"boxes": ember.tensor([[0.0, 0.0, 28.0, 44.0]])}]
    before = [dict(t) for t in targets]
    batch, out = t(images, targets)
    assert batch.image_sizes == [tuple(s) for s in ref["sizes"]]
    np.testing.assert_allclose(batch.tensors.numpy(), ref["batch"], rtol=0, atol=5e-5)  # float32 resampling
    for got, want in zip(out, ref["targets"]):
        for key, value in want.items():
            np.testing.assert_allclose(got[key].numpy(), value, rtol=0, atol=1e-5, err_msg=key)
    assert all(a["boxes"] is b["boxes"] for a, b in zip(targets, before))  # the caller's dicts are unchanged
    post = t.postprocess([{"boxes": ember.tensor([[2.0, 3.0, 40.0, 30.0]]),
                           "keypoints": ember.tensor([[[5.0, 6.0, 1.0]]])}], batch.image_sizes[:1], [(37, 61)])
    for key, value in ref["post"].items():
        np.testing.assert_allclose(post[0][key].numpy(), value, rtol=0, atol=1e-5)
    fixed, _ = det_transform.GeneralizedRCNNTransform(50, 70, [0.0] * 3, [1.0] * 3, fixed_size=(40, 24))(images)
    assert list(fixed.tensors.shape) == ref["fixed"]
    assert repr(t) == ref["repr"]


_RNG = np.random.default_rng(1)
MAPS, MASKS = _RNG.normal(size=(3, 2, 8, 8)), _RNG.random((3, 1, 6, 6))
ROIS = np.array([[1.0, 2.0, 12.5, 9.0], [0.0, 0.0, 3.2, 30.0], [5.0, 5.0, 5.5, 5.4]])
KEYPOINTS = np.array([[[2.0, 3.0, 1.0], [12.5, 9.0, 1.0]], [[1.0, 29.0, 0.0], [3.2, 0.5, 2.0]],
                      [[9.0, 9.0, 1.0], [5.2, 5.1, 1.0]]])
_HEATMAPS_REF = f"""
from torchvision.models.detection import roi_heads as r
maps, rois = torch.tensor({MAPS.tolist()}), torch.tensor({ROIS.tolist()})
kp, sc = r.heatmaps_to_keypoints(maps.float(), rois.float())
pasted = r.paste_masks_in_image(torch.tensor({MASKS.tolist()}), rois * 2 - 3, (40, 33))
heat, valid = r.keypoints_to_heatmap(torch.tensor({KEYPOINTS.tolist()}), rois, 7)
extra["heatmaps"] = dict(kp=kp.tolist(), sc=sc.tolist(), pasted=pasted.tolist(), heat=heat.tolist(),
                         valid=valid.tolist())
"""


def test_heatmaps_and_mask_pasting_match_torchvision(reference):
    ref = reference[1]["heatmaps"]
    maps, rois, masks, keypoints = MAPS, ROIS, MASKS, KEYPOINTS
    from ember_vision.models.detection import roi_heads as r

    kp, sc = r.heatmaps_to_keypoints(ember.tensor(maps, dtype=ember.float32), ember.tensor(rois, dtype=ember.float32))
    np.testing.assert_allclose(kp.numpy(), ref["kp"], rtol=0, atol=1e-4)
    np.testing.assert_allclose(sc.numpy(), ref["sc"], rtol=0, atol=1e-5)
    f32 = {"dtype": ember.float32}
    pasted = r.paste_masks_in_image(ember.tensor(masks, **f32), ember.tensor(rois, **f32) * 2 - 3, (40, 33))
    np.testing.assert_allclose(pasted.numpy(), ref["pasted"], rtol=0, atol=1e-6)
    heat, valid = r.keypoints_to_heatmap(ember.tensor(keypoints, **f32), ember.tensor(rois, **f32), 7)
    assert heat.tolist() == ref["heat"] and valid.tolist() == ref["valid"]


RCNN_BUILDERS = ["fasterrcnn_mobilenet_v3_large_320_fpn", "fasterrcnn_mobilenet_v3_large_fpn",
                 "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "keypointrcnn_resnet50_fpn",
                 "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2"]
_REGISTRY_REF = f"""
from torchvision.models import get_model_weights
extra["weights"] = {{n: {{w.name: [w.url, {{k: v for k, v in w.meta.items() if not k.startswith("_docs")}}]
                        for w in get_model_weights(n)}} for n in {RCNN_BUILDERS!r}}}
"""


def test_registry_and_weights_metadata_match_torchvision(reference):
    assert set(RCNN_BUILDERS) <= set(list_models(module=detection))
    ref = reference[1]["weights"]
    for name in RCNN_BUILDERS:
        enum = get_model_weights_of(name)
        assert enum.DEFAULT is enum.COCO_V1
        for member, (url, meta) in ref[name].items():
            got = enum[member]
            assert got.url == url
            for key, value in meta.items():
                value = tuple(value) if key == "min_size" else value
                assert got.meta[key] == value, (name, member, key)


BACKBONES = [("resnet_fpn_backbone", {"backbone_name": "resnet18", "trainable_layers": 2, "returned_layers": [2, 4]}),
             ("mobilenet_backbone", {"backbone_name": "mobilenet_v2", "fpn": False, "trainable_layers": 3}),
             ("mobilenet_backbone", {"backbone_name": "mobilenet_v3_small", "fpn": True, "trainable_layers": 0})]
_BACKBONES_REF = f"""
from torchvision.models.detection import backbone_utils
extra["backbones"] = []
for fn, kw in {BACKBONES!r}:
    m = getattr(backbone_utils, fn)(weights=None, **kw)
    out = m(torch.rand(1, 3, 64, 64))
    out = {{"0": out}} if isinstance(out, torch.Tensor) else out
    extra["backbones"].append([list(m.state_dict()), [n for n, p in m.named_parameters() if p.requires_grad],
                               {{k: list(v.shape) for k, v in out.items()}}])
"""


def test_backbones_freeze_and_return_like_torchvision(reference):
    """The FPN backbones' state-dict keys, which parameters stay trainable, and the levels they return."""
    from ember_vision.models.detection import backbone_utils

    for (fn, kw), (keys, trainable, shapes) in zip(BACKBONES, reference[1]["backbones"]):
        m = getattr(backbone_utils, fn)(weights=None, **kw)
        out = m(ember.rand(1, 3, 64, 64))
        out = {"0": out} if isinstance(out, ember.Tensor) else out
        assert list(m.state_dict()) == keys
        assert [n for n, p in m.named_parameters() if p.requires_grad] == trainable
        assert {k: list(v.shape) for k, v in out.items()} == shapes


def get_model_weights_of(name):
    from ember_vision.models import get_model_weights

    return get_model_weights(name)


def test_legacy_checkpoint_keys_and_bad_arguments():
    from ember_vision.models.detection.mask_rcnn import MaskRCNNHeads
    from ember_vision.models.detection.rpn import RPNHead

    head = RPNHead(4, 3)
    state = {k.replace("conv.0.0.", "conv."): v for k, v in head.state_dict().items()}
    assert "conv.weight" in state
    RPNHead(4, 3).load_state_dict(state, strict=True)
    heads = MaskRCNNHeads(4, [5, 6], 1)
    old = {k.replace("0.0.", "mask_fcn1.").replace("1.0.", "mask_fcn2."): v for k, v in heads.state_dict().items()}
    MaskRCNNHeads(4, [5, 6], 1).load_state_dict(old, strict=True)

    with pytest.raises(ValueError, match="num_classes should not be None when box_predictor is not specified"):
        detection.FasterRCNN(detection.backbone_utils.resnet_fpn_backbone(backbone_name="resnet18", weights=None))
    with pytest.raises(ValueError, match="Trainable backbone layers should be in the range"):
        detection.fasterrcnn_resnet50_fpn(weights_backbone="IMAGENET1K_V1", trainable_backbone_layers=6)
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 91 but got 3 instead"):
        detection.fasterrcnn_resnet50_fpn(weights="DEFAULT", num_classes=3)
    model = detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights_backbone=None, num_classes=3)
    with pytest.raises(TypeError, match="Expected input images to be of floating type"):
        model.eval()([ember.zeros(3, 20, 20, dtype=ember.uint8)])
    bad = [{"boxes": ember.tensor([[5.0, 5.0, 3.0, 9.0]]), "labels": ember.tensor([1])}]
    image = ember.rand(3, 32, 32)
    with pytest.raises(AssertionError, match=r"invalid box \[50.0, 50.0, 30.0, 90.0\] for target at index 0"):
        model.train()([image], bad)
    assert bad[0]["boxes"].tolist() == [[5.0, 5.0, 3.0, 9.0]]
    with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
        model.train()([image])


@pytest.mark.parametrize("transposed", [False, True])
def test_convolutions_take_an_empty_batch(transposed):
    """A detector's heads get no boxes on an image without detections: convolutions of an empty batch give an
    empty result, and zero gradients (the weight's only from elsewhere), as in PyTorch."""
    torch = pytest.importorskip("torch")
    shapes = []
    for lib in (ember, torch):
        conv = lib.nn.ConvTranspose2d(4, 3, 2, stride=2) if transposed else lib.nn.Conv2d(4, 3, 3, padding=1)
        x = lib.zeros(0, 4, 5, 6, requires_grad=True)
        y = conv(x)
        (y.sum() + conv.weight.sum()).backward()
        assert bool(conv.weight.grad.eq(1).all()) and bool(conv.bias.grad.eq(0).all())
        shapes.append((tuple(y.shape), tuple(x.grad.shape)))
    assert shapes[0] == shapes[1]
