"""ember_vision.transforms.v2 and tv_tensors against torchvision 0.28's v2 (reference process) on the same
uint8 image, boxes and masks with fixed parameters; random transforms by their drawn parameters and invariants."""
import json

import numpy as np
import pytest

import ember
import vision_reference

pytest.importorskip("ember_vision")
from ember_vision import tv_tensors as tv  # noqa: E402
from ember_vision.transforms import v2  # noqa: E402
from ember_vision.transforms.v2 import functional as F  # noqa: E402

RNG = np.random.default_rng(0)
IMG = RNG.integers(0, 256, (3, 20, 30), dtype=np.uint8)
BOXES = np.array([[2.0, 3.0, 12.0, 15.0], [20.0, 1.0, 29.5, 8.0], [5.0, 5.0, 6.0, 5.5]])
MASK = np.zeros((3, 20, 30), dtype=np.uint8)
MASK[0, 3:15, 2:12] = 1
MASK[1, 1:8, 20:29] = 1

# (name, call with F bound to v2.functional, the value to take: image, boxes (xywh), mask)
CASES = {
    "resize": "F.resize({x}, [10, 14])",
    "resize_short": "F.resize({x}, 12)",
    "hflip": "F.horizontal_flip({x})",
    "vflip": "F.vertical_flip({x})",
    "crop": "F.crop({x}, 2, 3, 10, 12)",
    "crop_outside": "F.crop({x}, -1, -2, 8, 9)",
    "center_crop": "F.center_crop({x}, [9, 9])",
    "center_crop_pad": "F.center_crop({x}, [25, 33])",
    "pad": "F.pad({x}, [1, 2, 3, 4])",
    "resized_crop": "F.resized_crop({x}, 4, 5, 12, 16, [6, 8])",
    "affine": "F.affine({x}, 25.0, [2, -3], 0.9, [10.0, 5.0])",
    "rotate": "F.rotate({x}, 30.0)",
    "affine_centre": "F.affine({x}, -40.0, [0, 0], 1.2, [0.0, 0.0], center=[8, 6])",
}


@pytest.fixture(scope="module")
def ref():
    cases = json.dumps(CASES)
    return vision_reference.run(f"""
        from torchvision import tv_tensors as tv
        from torchvision.transforms import v2
        from torchvision.transforms.v2 import functional as F
        img = tv.Image(torch.tensor({IMG.tolist()}, dtype=torch.uint8))
        boxes = tv.BoundingBoxes(torch.tensor({BOXES.tolist()}), format="XYXY", canvas_size=(20, 30))
        xywh = F.convert_bounding_box_format(boxes, new_format="XYWH")
        mask = tv.Mask(torch.tensor({MASK.tolist()}, dtype=torch.uint8))
        out = {{}}
        for name, call in {cases}.items():
            out[name] = [eval(call.format(x=v)).tolist() for v in ("img", "boxes", "xywh", "mask")]
            out[name + "_canvas"] = list(eval(call.format(x="boxes")).canvas_size)
        f = F.to_dtype(img, torch.float32, scale=True)
        out["float"] = f.tolist()
        out["resize_noaa"] = F.resize(f, [9, 13], antialias=False).tolist()
        out["normalize"] = F.normalize(f, [0.5, 0.4, 0.3], [0.2, 0.3, 0.4]).tolist()
        out["to_uint8"] = F.to_dtype(f, torch.uint8, scale=True).tolist()
        out["gray"] = F.rgb_to_grayscale(img).tolist()
        target = dict(boxes=F.crop(boxes, 2, 3, 10, 12), labels=torch.tensor([1, 2, 3]),
                      masks=F.crop(mask, 2, 3, 10, 12))
        san = v2.SanitizeBoundingBoxes()(F.crop(img, 2, 3, 10, 12), target)[1]
        out["sanitize"] = [san["boxes"].tolist(), san["labels"].tolist(), san["masks"].shape[0]]
        pipe = v2.Compose([v2.RandomHorizontalFlip(p=1.0), v2.Resize((10, 15)), v2.CenterCrop(8),
                           v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5] * 3, [0.25] * 3)])
        pi, pt = pipe(img, dict(boxes=boxes, masks=mask))
        out["pipe"] = [type(pi).__name__, pi.tolist(), pt["boxes"].tolist(), pt["masks"].tolist()]
        print(json.dumps(out))
    """)


def _inputs(device):
    img = tv.Image(ember.tensor(IMG, device=device))
    boxes = tv.BoundingBoxes(ember.tensor(BOXES, dtype=ember.float32, device=device), format="XYXY",
                             canvas_size=(20, 30))
    xywh = tv.BoundingBoxes(ember.tensor(np.c_[BOXES[:, :2], BOXES[:, 2:] - BOXES[:, :2]], dtype=ember.float32,
                                         device=device), format="XYWH", canvas_size=(20, 30))
    return img, boxes, xywh, tv.Mask(ember.tensor(MASK, device=device))


def _np(x):
    return np.asarray(x.cpu().numpy() if isinstance(x, ember.Tensor) else x, dtype=np.float64)


@pytest.mark.parametrize("name", list(CASES))
def test_functional_matches_torchvision(ref, device, name):
    img, boxes, xywh, mask = _inputs(device)
    outs = [eval(CASES[name].format(x="v"), {"F": F, "v": v}) for v in (img, boxes, xywh, mask)]
    for got, want, kind in zip(outs, ref[name], ("img", "boxes", "xywh", "mask")):
        assert isinstance(got, type((img, boxes, xywh, mask)[("img", "boxes", "xywh", "mask").index(kind)]))
        assert got.shape == np.asarray(want).shape, kind
        tol = 1 if kind == "img" else 1e-4  # uint8 resampling rounds within one level
        np.testing.assert_allclose(_np(got), np.asarray(want), atol=tol, err_msg=kind)
    assert list(outs[1].canvas_size) == ref[name + "_canvas"]


def test_dtype_colour_and_pipeline_match_torchvision(ref, device):
    img, boxes, _, mask = _inputs(device)
    f = F.to_dtype(img, ember.float32, scale=True)
    assert isinstance(f, tv.Image) and f.dtype == ember.float32
    np.testing.assert_allclose(_np(f), ref["float"], atol=1e-7)
    np.testing.assert_allclose(_np(F.resize(f, [9, 13], antialias=False)), ref["resize_noaa"], atol=1e-5)
    np.testing.assert_allclose(_np(F.normalize(f, [0.5, 0.4, 0.3], [0.2, 0.3, 0.4])), ref["normalize"], atol=1e-5)
    assert _np(F.to_dtype(f, ember.uint8, scale=True)).tolist() == ref["to_uint8"]
    np.testing.assert_allclose(_np(F.rgb_to_grayscale(img)), ref["gray"], atol=1)
    target = dict(boxes=F.crop(boxes, 2, 3, 10, 12), labels=ember.tensor([1, 2, 3], device=device),
                  masks=F.crop(mask, 2, 3, 10, 12))
    san = v2.SanitizeBoundingBoxes()(F.crop(img, 2, 3, 10, 12), target)[1]
    np.testing.assert_allclose(_np(san["boxes"]), ref["sanitize"][0], atol=1e-5)
    assert san["labels"].tolist() == ref["sanitize"][1] and san["masks"].shape[0] == ref["sanitize"][2]
    pipe = v2.Compose([v2.RandomHorizontalFlip(p=1.0), v2.Resize((10, 15)), v2.CenterCrop(8),
                       v2.ToDtype(ember.float32, scale=True), v2.Normalize([0.5] * 3, [0.25] * 3)])
    pi, pt = pipe(img, dict(boxes=boxes, masks=mask))
    assert type(pi).__name__ == ref["pipe"][0]
    np.testing.assert_allclose(_np(pi), ref["pipe"][1], atol=4 / 255 / 0.25 + 1e-6)
    np.testing.assert_allclose(_np(pt["boxes"]), ref["pipe"][2], atol=1e-4)
    assert _np(pt["masks"]).tolist() == ref["pipe"][3]


def test_tv_tensors_types_and_metadata(device):
    img, boxes, _, mask = _inputs(device)
    assert type(img + 1) is ember.Tensor and type(img.clone()) is tv.Image
    moved = boxes.to(ember.float64)
    assert type(moved) is tv.BoundingBoxes and moved.canvas_size == (20, 30) and moved.format.name == "XYXY"
    wrapped = tv.wrap(boxes * 2, like=boxes, canvas_size=(40, 60))
    assert type(wrapped) is tv.BoundingBoxes and wrapped.canvas_size == (40, 60)
    assert tv.Image(ember.zeros(4, 5, device=device)).shape == (1, 4, 5)
    assert tv.KeyPoints([[1.0, 2.0]], canvas_size=(4, 4)).shape == (1, 2)
    with pytest.raises(ValueError, match="at least 4 dimensions"):
        tv.Video(ember.zeros(3, 4, 5))
    with pytest.raises(ValueError, match="shape"):
        tv.KeyPoints(ember.zeros(2, 3), canvas_size=(4, 4))
    with tv.set_return_type("TVTensor"):
        assert type(img + 1) is tv.Image
    assert type(img + 1) is ember.Tensor
    points = tv.KeyPoints([[1.0, 2.0], [29.0, 0.0]], canvas_size=(20, 30))
    assert F.horizontal_flip(points).tolist() == [[28.0, 2.0], [0.0, 0.0]]  # torchvision: x -> W - 1 - x
    assert F.resize(points, [10, 15]).tolist() == [[0.5, 1.0], [14.5, 0.0]]


def test_random_transforms_draw_once_per_call(device):
    img, boxes, _, mask = _inputs(device)
    ember.manual_seed(0)
    for _ in range(5):
        i, b, m = v2.RandomResizedCrop(12, antialias=True)(img, boxes, mask)
        assert i.shape == (3, 12, 12) and m.shape == (3, 12, 12) and b.canvas_size == (12, 12)
        i, b, m = v2.RandomCrop(10, padding=3)(img, boxes, mask)
        assert i.shape[-2:] == m.shape[-2:] == (10, 10)
        # the crop is the same window for the mask and the image: where the mask is set, so are the boxes
        assert (_np(b)[:, 2:] <= 10).all()
        flipped = v2.RandomHorizontalFlip(p=0.5)(img, mask)
        assert (ember.equal(flipped[0], img) and ember.equal(flipped[1], mask)) or (
            ember.equal(flipped[0], F.horizontal_flip(img)) and ember.equal(flipped[1], F.horizontal_flip(mask)))
    x = ember.rand(4, 3, 8, 8, device=device)
    labels = ember.tensor([0, 1, 2, 3], device=device)
    for mix in (v2.MixUp(num_classes=5), v2.CutMix(num_classes=5)):
        out, soft = mix(x, labels)
        assert out.shape == x.shape and soft.shape == (4, 5)
        assert ember.allclose(soft.sum(1), ember.ones(4, device=device))
    with pytest.raises(ValueError, match="num_classes"):
        v2.MixUp()(x, labels)
    assert v2.RandomApply([v2.Grayscale(3)], p=0.0)(img) is img
    assert v2.RandomChoice([v2.CenterCrop(4), v2.CenterCrop(4)])(img).shape == (3, 4, 4)
    assert v2.ColorJitter(0.3, 0.3, 0.3, 0.1)(img).dtype == ember.uint8
    assert type(v2.ToPureTensor()(img)) is ember.Tensor and type(v2.ToImage()(ember.zeros(3, 4, 4))) is tv.Image
    assert v2.RandomRotation(30)(img, mask)[1].shape == mask.shape
    i, b, m = v2.RandomAffine(20, translate=(0.1, 0.1), scale=(0.8, 1.1), shear=5)(img, boxes, mask)
    assert i.shape == img.shape and m.shape == mask.shape and b.canvas_size == (20, 30)
    with pytest.raises(ValueError, match="Padding must be"):
        v2.Pad([1, 2, 3])
