"""Same weights, same detections: the R-CNN family of ember-vision against torchvision 0.28's.

Each builder runs in the torchvision reference process (:mod:`vision_reference`, with a NumPy-free stand-in for
torchvision's compiled ``nms``) with a fixed seed, batch-norm statistics randomised, in float64 (so no IoU or
score lands within rounding of a threshold and the two sides keep the same boxes).  ember-vision's builder of
the same name loads its ``state_dict`` with ``strict=True`` and must give the same boxes, labels, scores,
masks and key points on the same two images (eval), and the same loss dict on the same targets (training,
with sample sizes large enough that every anchor and proposal is sampled, so no random draw matters).
One model per family runs by default; the rest are marked ``slow``.
"""
import os
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
from ember_vision.models import detection, get_model, list_models  # noqa: E402
from ember_vision.models.detection import transform as det_transform  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

sys.path.pop(0)

SIZES = [(72, 96), (80, 64)]  # the two images' (height, width)
SMALL = {"min_size": 64, "max_size": 96, "weights_backbone": None, "box_score_thresh": 0.0}

# (builder, kwargs); the default run keeps one model per family
EVAL_CASES = [
    pytest.param("fasterrcnn_mobilenet_v3_large_320_fpn", {"num_classes": 5}, id="fasterrcnn_mobilenet_320"),
    pytest.param("maskrcnn_resnet50_fpn", {"num_classes": 3, "box_detections_per_img": 6}, id="maskrcnn"),
    pytest.param("keypointrcnn_resnet50_fpn", {"num_keypoints": 5, "box_detections_per_img": 3}, id="keypointrcnn"),
    pytest.param("fasterrcnn_resnet50_fpn", {"num_classes": 4, "box_detections_per_img": 30},
                 marks=pytest.mark.slow, id="fasterrcnn_resnet50"),
    pytest.param("fasterrcnn_resnet50_fpn_v2", {"num_classes": 4, "box_detections_per_img": 30},
                 marks=pytest.mark.slow, id="fasterrcnn_resnet50_v2"),
    pytest.param("fasterrcnn_mobilenet_v3_large_fpn", {"num_classes": 5, "trainable_backbone_layers": None},
                 marks=pytest.mark.slow, id="fasterrcnn_mobilenet"),
    pytest.param("maskrcnn_resnet50_fpn_v2", {"num_classes": 3, "box_detections_per_img": 6},
                 marks=pytest.mark.slow, id="maskrcnn_v2"),
]

# every anchor and proposal sampled: the losses do not depend on randperm's draws
ALL_SAMPLED = {"rpn_batch_size_per_image": 100000, "box_batch_size_per_image": 100000}
TRAIN_CASES = [
    pytest.param("maskrcnn_resnet50_fpn", {"num_classes": 3}, id="maskrcnn"),
    pytest.param("fasterrcnn_mobilenet_v3_large_320_fpn", {"num_classes": 3}, marks=pytest.mark.slow,
                 id="fasterrcnn_mobilenet_320"),
    pytest.param("keypointrcnn_resnet50_fpn", {"num_keypoints": 4}, marks=pytest.mark.slow, id="keypointrcnn"),
]

_REFERENCE = """
import numpy as np
from torchvision.models import detection
from torchvision.ops import boxes as box_ops


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
torch.manual_seed(0)
model = detection.__dict__[{name!r}](**{kwargs!r})
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
model = model.double()
images = [torch.rand(3, h, w, dtype=torch.float64) for h, w in {sizes!r}]
targets = {targets!r}
out = {{"image%d" % i: x.numpy() for i, x in enumerate(images)}}
torch.save(model.state_dict(), {dir!r} + "/state.pt")
if targets is None:
    model.eval()
    with torch.no_grad():
        for i, det in enumerate(model(images)):
            out.update({{"%s%d" % (k, i): v.numpy() for k, v in det.items()}})
else:
    model.train()
    targets = [{{k: torch.tensor(v, dtype=torch.int64 if k == "labels" else torch.float32 if k == "keypoints"
                                  else torch.uint8 if k == "masks" else torch.float64) for k, v in t.items()}}
               for t in targets]
    losses = model(images, targets)
    sum(losses.values()).backward()
    out.update({{"loss_" + k: v.detach().numpy() for k, v in losses.items()}})
    out["grad"] = model.roi_heads.box_predictor.cls_score.weight.grad.numpy()
np.savez({dir!r} + "/out.npz", **out)
print(json.dumps(sorted(out)))
"""


def _reference(tmp_path, name, kwargs, targets=None):
    keys = vision_reference.run(_REFERENCE.format(name=name, kwargs=kwargs, sizes=SIZES, targets=targets,
                                                  dir=str(tmp_path)))
    ref = np.load(tmp_path / "out.npz")
    assert sorted(ref.files) == keys
    model = get_model(name, **kwargs)
    model.load_state_dict(ember.load(str(tmp_path / "state.pt")), strict=True)
    images = [ember.from_numpy(ref[f"image{i}"]) for i in range(len(SIZES))]
    return model.double(), images, ref


def _skip_slow(request):
    if request.node.get_closest_marker("slow") and "slow" not in (request.config.option.markexpr or ""):
        pytest.skip("slow: run with -m slow")


def _pairing(got_boxes, got_labels, want_boxes, want_labels, tol) -> np.ndarray:
    """For each ember detection, the index of torchvision's detection with the same label and box (the order
    of detections with equal scores may differ)."""
    cost = np.abs(got_boxes[:, None, :] - want_boxes[None, :, :]).max(-1)
    cost[got_labels[:, None] != want_labels[None, :]] = np.inf
    pairs = cost.argmin(1)
    assert (cost[np.arange(len(pairs)), pairs] <= tol).all()
    assert sorted(pairs.tolist()) == list(range(len(want_boxes)))
    return pairs


@pytest.mark.parametrize("name,kwargs", EVAL_CASES)
def test_same_weights_same_detections(request, tmp_path, name, kwargs):
    _skip_slow(request)
    kwargs = {**SMALL, **kwargs}
    model, images, ref = _reference(tmp_path, name, kwargs)
    model.eval()
    with ember.no_grad():
        detections = model(images)
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


def _targets(with_masks: bool, num_keypoints: int):
    rng = np.random.default_rng(0)
    targets = []
    for h, w in SIZES:
        boxes = np.array([[4.0, 6.0, 40.0, 50.0], [30.0, 20.0, w - 5.0, h - 3.0], [10.0, 30.0, 28.0, 44.0]])
        target = {"boxes": boxes.tolist(), "labels": [1, 2, 1]}
        if with_masks:
            masks = np.zeros((3, h, w), dtype=np.uint8)
            for m, (x0, y0, x1, y1) in zip(masks, boxes.astype(int)):
                m[y0:y1, x0:x1] = rng.random((y1 - y0, x1 - x0)) < 0.7
            target["masks"] = masks.tolist()
        if num_keypoints:
            xy = rng.uniform(boxes[:, None, :2], boxes[:, None, 2:], size=(3, num_keypoints, 2))
            target["keypoints"] = np.concatenate([xy, rng.integers(0, 2, (3, num_keypoints, 1))], -1).tolist()
            target["labels"] = [1, 1, 1]
        targets.append(target)
    return targets


def _as_tensors(targets):
    dtypes = {"labels": ember.int64, "keypoints": ember.float32, "masks": ember.uint8}
    return [{k: ember.tensor(v, dtype=dtypes.get(k, ember.float64)) for k, v in t.items()} for t in targets]


@pytest.mark.parametrize("name,kwargs", TRAIN_CASES)
def test_training_losses_match_torchvision(request, tmp_path, name, kwargs):
    _skip_slow(request)
    kwargs = {**SMALL, **ALL_SAMPLED, **kwargs}
    targets = _targets(name.startswith("mask"), kwargs.get("num_keypoints", 0))
    model, images, ref = _reference(tmp_path, name, kwargs, targets)
    model.train()
    losses = model(images, _as_tensors(targets))
    want = {k[len("loss_"):]: ref[k] for k in ref.files if k.startswith("loss_")}
    assert sorted(losses) == sorted(want)
    for key, value in losses.items():
        np.testing.assert_allclose(value.item(), float(want[key]), rtol=1e-7, atol=1e-9, err_msg=key)
    sum(losses.values()).backward()
    grad = model.roi_heads.box_predictor.cls_score.weight.grad.numpy()
    np.testing.assert_allclose(grad, ref["grad"], rtol=0, atol=1e-7 * np.abs(ref["grad"]).max())


def test_transform_resizes_batches_and_maps_back_like_torchvision():
    ref = vision_reference.run("""
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
print(json.dumps({"images": [x.tolist() for x in images], "masks": targets[0]["masks"].tolist(),
                  "batch": batch.tensors.tolist(), "sizes": batch.image_sizes,
                  "targets": [{k: v.tolist() for k, v in t.items()} for t in out],
                  "post": {k: v.tolist() for k, v in post[0].items()}, "fixed": list(fixed.tensors.shape),
                  "repr": repr(t)}))
""")
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


def test_heatmaps_and_mask_pasting_match_torchvision():
    rng = np.random.default_rng(1)
    maps = rng.normal(size=(3, 2, 8, 8))
    rois = np.array([[1.0, 2.0, 12.5, 9.0], [0.0, 0.0, 3.2, 30.0], [5.0, 5.0, 5.5, 5.4]])
    masks = rng.random((3, 1, 6, 6))
    keypoints = np.array([[[2.0, 3.0, 1.0], [12.5, 9.0, 1.0]], [[1.0, 29.0, 0.0], [3.2, 0.5, 2.0]],
                          [[9.0, 9.0, 1.0], [5.2, 5.1, 1.0]]])
    ref = vision_reference.run(f"""
from torchvision.models.detection import roi_heads as r
maps, rois = torch.tensor({maps.tolist()}), torch.tensor({rois.tolist()})
kp, sc = r.heatmaps_to_keypoints(maps.float(), rois.float())
pasted = r.paste_masks_in_image(torch.tensor({masks.tolist()}), rois * 2 - 3, (40, 33))
heat, valid = r.keypoints_to_heatmap(torch.tensor({keypoints.tolist()}), rois, 7)
print(json.dumps(dict(kp=kp.tolist(), sc=sc.tolist(), pasted=pasted.tolist(), heat=heat.tolist(),
                      valid=valid.tolist())))
""")
    from ember_vision.models.detection import roi_heads as r

    kp, sc = r.heatmaps_to_keypoints(ember.tensor(maps, dtype=ember.float32), ember.tensor(rois, dtype=ember.float32))
    np.testing.assert_allclose(kp.numpy(), ref["kp"], rtol=0, atol=1e-4)
    np.testing.assert_allclose(sc.numpy(), ref["sc"], rtol=0, atol=1e-5)
    f32 = {"dtype": ember.float32}
    pasted = r.paste_masks_in_image(ember.tensor(masks, **f32), ember.tensor(rois, **f32) * 2 - 3, (40, 33))
    np.testing.assert_allclose(pasted.numpy(), ref["pasted"], rtol=0, atol=1e-6)
    heat, valid = r.keypoints_to_heatmap(ember.tensor(keypoints, **f32), ember.tensor(rois, **f32), 7)
    assert heat.tolist() == ref["heat"] and valid.tolist() == ref["valid"]


def test_registry_and_weights_metadata_match_torchvision():
    names = list_models(module=detection)
    rcnn = {"fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "fasterrcnn_mobilenet_v3_large_fpn",
            "fasterrcnn_mobilenet_v3_large_320_fpn", "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2",
            "keypointrcnn_resnet50_fpn"}
    assert rcnn <= set(names)
    ref = vision_reference.run(f"""
from torchvision.models import get_model_weights
print(json.dumps({{n: {{w.name: [w.url, {{k: v for k, v in w.meta.items() if not k.startswith("_docs")}}]
                      for w in get_model_weights(n)}} for n in {sorted(rcnn)!r}}}))
""")
    for name in sorted(rcnn):
        enum = get_model_weights_of(name)
        assert enum.DEFAULT is enum.COCO_V1
        for member, (url, meta) in ref[name].items():
            got = enum[member]
            assert got.url == url
            for key, value in meta.items():
                value = tuple(value) if key == "min_size" else value
                assert got.meta[key] == value, (name, member, key)


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
