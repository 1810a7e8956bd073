"""transforms.v2.functional's per-kind kernels and box/key-point ops, and the v2 box transforms, against
torchvision 0.28 (reference process) on the same inputs; random transforms by their invariants."""
import json

import numpy as np
import pytest

import ember
import vision_reference

pytest.importorskip("ember_vision")
from ember_vision import tv_tensors as tv  # noqa: E402
from ember_vision.transforms import v2  # noqa: E402
from ember_vision.transforms.v2 import functional as F  # noqa: E402

RNG = np.random.default_rng(1)
IMG = RNG.integers(0, 256, (3, 12, 16), dtype=np.uint8)
BOXES = [[2.0, 3.0, 12.0, 10.0], [10.0, 1.0, 15.5, 8.0]]
POINTS = [[2.0, 3.0], [15.0, 11.0], [7.5, 4.0]]
DISP = "torch.zeros(1, 12, 16, 2)"

# name -> a call on plain tensors: img (uint8 image), f (float image), b (xyxy boxes), k (key points), m (mask)
CASES = {
    "resize_image": "F.resize_image(f, [6, 8])",
    "resize_mask": "F.resize_mask(m, [6, 8])",
    "resize_bounding_boxes": "F.resize_bounding_boxes(b, (12, 16), [6, 8])",
    "resize_keypoints": "F.resize_keypoints(k, [6, 8], (12, 16))",
    "crop_bounding_boxes": "F.crop_bounding_boxes(b, X, 2, 3, 8, 9)",
    "crop_keypoints": "F.crop_keypoints(k, 2, 3, 8, 9)",
    "crop_mask": "F.crop_mask(m, 2, 3, 8, 9)",
    "pad_bounding_boxes": "F.pad_bounding_boxes(b, X, (12, 16), [1, 2, 3, 4])",
    "pad_keypoints": "F.pad_keypoints(k, (12, 16), [1, 2, 3, 4])",
    "center_crop_bounding_boxes": "F.center_crop_bounding_boxes(b, X, (12, 16), [8, 8])",
    "hflip_bounding_boxes": "F.horizontal_flip_bounding_boxes(b, X, (12, 16))",
    "hflip_keypoints": "F.horizontal_flip_keypoints(k, (12, 16))",
    "vflip_keypoints": "F.vertical_flip_keypoints(k, (12, 16))",
    "affine_bounding_boxes": "F.affine_bounding_boxes(b, X, (12, 16), 20.0, [1, -2], 0.9, [5.0, 0.0])",
    "affine_mask": "F.affine_mask(m, 20.0, [1, -2], 0.9, [5.0, 0.0])",
    "rotate_bounding_boxes": "F.rotate_bounding_boxes(b, X, (12, 16), 30.0)",
    "resized_crop_bounding_boxes": "F.resized_crop_bounding_boxes(b, X, 1, 2, 8, 10, [4, 5])",
    "convert_xywh": "F.convert_bounding_box_format(b, old_format='XYXY', new_format='XYWH')",
    "convert_cxcywh": "F.convert_bounding_box_format(b, old_format=X, new_format='CXCYWH')",
    "clamp_bounding_boxes": "F.clamp_bounding_boxes(b * 1.3 - 2, format=X, canvas_size=(12, 16), "
                            "clamping_mode='hard')",
    "clamp_keypoints": "F.clamp_keypoints(k * 1.3 - 2, canvas_size=(12, 16))",
    "sanitize_keypoints": "F.sanitize_keypoints(k * 1.3 - 2, canvas_size=(12, 16))",
    "sanitize_bounding_boxes": "F.sanitize_bounding_boxes(b * 1.3 - 2, format=X, canvas_size=(12, 16))",
    "adjust_brightness_image": "F.adjust_brightness_image(f, 1.4)",
    "adjust_contrast_video": "F.adjust_contrast_video(f[None], 0.6)",
    "adjust_saturation_image": "F.adjust_saturation_image(f, 0.3)",
    "adjust_hue_image": "F.adjust_hue_image(f, 0.2)",
    "adjust_gamma_image": "F.adjust_gamma_image(img, 0.7, 1.1)",
    "five_crop_image": "F.five_crop_image(img, [5, 7])",
    "ten_crop": "F.ten_crop(img, [5, 7], vertical_flip=True)",
    "get_dimensions_video": "F.get_dimensions_video(f[None])",
    "get_num_channels": "F.get_num_channels(img)",
    "permute_channels_image": "F.permute_channels_image(img, [2, 0, 1])",
    "grayscale_to_rgb_image": "F.grayscale_to_rgb_image(img[:1])",
    "uniform_temporal_subsample": "F.uniform_temporal_subsample_video(torch.arange(7.0).reshape(7, 1, 1, 1), 3)",
    "convert_image_dtype": "F.convert_image_dtype(img, torch.float64)",
    "rgb_to_grayscale_image": "F.rgb_to_grayscale_image(img)",
    "to_dtype_video": "F.to_dtype_video(img[None], torch.float32, scale=True)",
}


def _tolist(x):
    if isinstance(x, (tuple, list)):
        return [_tolist(v) for v in x]
    return x.tolist() if hasattr(x, "tolist") else x


_SETUP = f"""
img = torch.tensor({IMG.tolist()}, dtype=torch.uint8)
f = img.float() / 255
b = torch.tensor({BOXES})
k = torch.tensor({POINTS})
m = (img[:1] > 128).to(torch.uint8)
"""


@pytest.fixture(scope="module")
def ref():
    return vision_reference.run("""
from torchvision import tv_tensors as tv
from torchvision.transforms.v2 import functional as F
X = tv.BoundingBoxFormat.XYXY

def tolist(x):
    return [tolist(v) for v in x] if isinstance(x, (tuple, list)) else (x.tolist() if hasattr(x, "tolist") else x)
""" + _SETUP + f"print(json.dumps({{name: tolist(eval(call)) for name, call in {json.dumps(CASES)}.items()}}))")


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_matches_torchvision(name, ref):
    scope = {"torch": ember, "F": F, "X": tv.BoundingBoxFormat.XYXY}
    exec(_SETUP, scope)
    _assert_close(_tolist(eval(CASES[name], scope)), ref[name])


def _assert_close(got, want):
    """Values equal within 1e-4, element by element where a result is a tuple (tensor, canvas size)."""
    try:
        want_arr = np.asarray(want, dtype=float)
    except ValueError:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_close(g, w)
        return
    np.testing.assert_allclose(np.asarray(got, dtype=float), want_arr, atol=1e-4)


def test_every_torchvision_kernel_name_exists():
    names = vision_reference.run("""
        import torchvision.transforms.v2.functional as F
        print(json.dumps([n for n in dir(F) if not n.startswith("_")]))
    """)
    assert [n for n in names if not hasattr(F, n)] == []


def test_kernel_signature_follows_torchvision():
    import inspect
    params = list(inspect.signature(F.resize_bounding_boxes).parameters)
    assert params == ["bounding_boxes", "canvas_size", "size", "max_size", "format", "clamping_mode"]
    assert list(inspect.signature(F.affine_mask).parameters)[:5] == ["mask", "angle", "translate", "scale", "shear"]


def test_bad_input():
    b = ember.tensor(BOXES)
    with pytest.raises(ValueError, match="old_format"):
        F.convert_bounding_box_format(b, new_format="XYWH")
    with pytest.raises(ValueError, match="clamping_mode"):
        F.clamp_bounding_boxes(b, format="XYXY", canvas_size=(12, 16), clamping_mode="auto")
    with pytest.raises(ValueError, match="sigma"):
        F.gaussian_noise(ember.rand(3, 4, 4), sigma=-1.0)
    with pytest.raises(ValueError, match="bigger than input"):
        F.five_crop(ember.rand(3, 4, 4), [5, 5])
    with pytest.raises(NotImplementedError, match="coefficients"):
        F.perspective_mask(ember.zeros(1, 4, 4), None, None, coefficients=[1.0] * 8)
    with pytest.raises(ValueError, match="side range"):
        v2.RandomZoomOut(side_range=(0.5, 2.0))


def _sample():
    img = tv.Image(ember.tensor(IMG))
    boxes = tv.BoundingBoxes(ember.tensor(BOXES), format="XYXY", canvas_size=(12, 16))
    return img, boxes


def test_box_bookkeeping_transforms():
    img, boxes = _sample()
    out_img, out = v2.ConvertBoundingBoxFormat("XYWH")(img, boxes)
    assert out.format == tv.BoundingBoxFormat.XYWH and out_img is img
    np.testing.assert_allclose(out.numpy(), [[2, 3, 10, 7], [10, 1, 5.5, 7]])
    loose = tv.wrap(boxes * 2, like=boxes)
    assert float(v2.ClampBoundingBoxes()(loose).max()) == 16.0
    unclamped = v2.SetClampingMode(None)(loose)
    assert unclamped.clamping_mode is None and float(F.crop(unclamped, 0, 0, 5, 5).max()) > 5
    pts = tv.KeyPoints(ember.tensor([[-1.0, 3.0], [20.0, 5.0], [4.0, 4.0]]), canvas_size=(12, 16))
    np.testing.assert_allclose(v2.ClampKeyPoints()(pts).numpy(), [[0, 3], [15, 5], [4, 4]])
    labels = ember.tensor([1, 2, 3])
    kept = v2.SanitizeKeyPoints(labels_getter=lambda s: s["labels"])({"kp": pts, "labels": labels})
    assert kept["kp"].tolist() == [[4.0, 4.0]] and kept["labels"].tolist() == [3]


@pytest.mark.parametrize("make", [
    lambda: v2.RandomZoomOut(side_range=(1.5, 2.0), p=1.0),
    lambda: v2.RandomIoUCrop(sampler_options=[0.0]),
    lambda: v2.ScaleJitter((24, 24), scale_range=(0.5, 1.5)),
    lambda: v2.RandomShortestSize([6, 9], max_size=14),
    lambda: v2.RandomResize(5, 9),
])
def test_random_box_transforms_keep_sample_consistent(make):
    ember.manual_seed(0)
    img, boxes = _sample()
    out_img, out_boxes = make()(img, boxes)
    assert isinstance(out_img, tv.Image) and isinstance(out_boxes, tv.BoundingBoxes)
    assert tuple(out_boxes.canvas_size) == tuple(out_img.shape[-2:])
    assert tuple(out_img.shape[-2:]) != (12, 16)


def test_register_kernel_for_a_user_tv_tensor():
    class Depth(tv.TVTensor):
        pass

    calls = []

    @F.register_kernel(F.resize, Depth)
    def resize_depth(depth, size, *args, **kwargs):
        calls.append(size)
        return depth

    depth = ember.zeros(1, 4, 4).as_subclass(Depth)
    try:
        assert F.resize(depth, [2, 2]) is depth and v2.Resize([3, 3])(depth) is depth
        assert calls == [[2, 2], [3, 3]]
        assert F.resize(ember.zeros(1, 4, 4), [2, 2]).shape == (1, 2, 2)
        with pytest.raises(ValueError, match="subclasses"):
            F.register_kernel(F.resize, tv.Image)
        with pytest.raises(ValueError, match="dispatchers"):
            F.register_kernel(print, Depth)
    finally:
        F._USER_KERNELS.pop(("resize", Depth), None)


def test_jpeg_round_trip_stays_close():
    img = ember.tensor(np.repeat(np.linspace(0, 255, 16, dtype=np.uint8)[None, None], 3, 0).repeat(12, 1))
    out = F.jpeg(tv.Image(img), 95)
    assert isinstance(out, tv.Image) and out.dtype == ember.uint8 and out.shape == img.shape
    assert float((out.float() - img.float()).abs().max()) <= 8
    with pytest.raises(ValueError, match="quality"):
        F.jpeg(img, 0)


# transform -> (constructor, the parameters torchvision's make_params could draw); transform() compared
PARAM_CASES = {
    "zoom_out": ("v2.RandomZoomOut(fill=7, p=1.0)", "{'padding': [3, 1, 5, 2]}"),
    "iou_crop": ("v2.RandomIoUCrop()", "{'top': 2, 'left': 1, 'height': 8, 'width': 10, "
                 "'is_within_crop_area': torch.tensor([True, False])}"),
    "scale_jitter": ("v2.ScaleJitter((20, 20))", "{'size': (9, 13)}"),
    "shortest_size": ("v2.RandomShortestSize(6)", "{'size': (6, 8)}"),
    "random_resize": ("v2.RandomResize(5, 9)", "{'size': [7]}"),
}


@pytest.fixture(scope="module")
def ref_params():
    return vision_reference.run("""
from torchvision import tv_tensors as tv
from torchvision.transforms import v2
""" + _SETUP + f"""
img, boxes = tv.Image(f), tv.BoundingBoxes(b, format="XYXY", canvas_size=(12, 16))
out = {{}}
for name, (make, params) in {json.dumps(PARAM_CASES)}.items():
    t, p = eval(make), eval(params)
    out[name] = [t.transform(x, p).tolist() for x in (img, boxes)] + [list(t.transform(boxes, p).canvas_size)]
print(json.dumps(out))""")


@pytest.mark.parametrize("name", sorted(PARAM_CASES))
def test_box_transform_with_drawn_parameters_matches_torchvision(name, ref_params):
    scope = {"torch": ember, "v2": v2}
    exec(_SETUP, scope)
    make, params = PARAM_CASES[name]
    t, p = eval(make, scope), eval(params, scope)
    img = tv.Image(scope["f"])
    boxes = tv.BoundingBoxes(scope["b"], format="XYXY", canvas_size=(12, 16))
    out_boxes = t.transform(boxes, p)
    _assert_close([t.transform(img, p).tolist(), out_boxes.tolist(), list(out_boxes.canvas_size)], ref_params[name])


DRAWS = {"zoom_out": "v2.RandomZoomOut(side_range=(1.5, 3.0))", "scale_jitter": "v2.ScaleJitter((20, 24))"}


def test_box_transform_draws_follow_torchvision(monkeypatch):
    """With every uniform draw fixed at 0.3, make_params gives torchvision's parameters."""
    want = vision_reference.run(f"""
from torchvision import tv_tensors as tv
from torchvision.transforms import v2
torch.rand = lambda *size, **kw: torch.full(size[0] if len(size) == 1 and isinstance(size[0], tuple) else size, 0.3)
img = tv.Image(torch.zeros(3, 12, 16))
print(json.dumps({{k: eval(v).make_params([img]) for k, v in {json.dumps(DRAWS)}.items()}}))""")
    monkeypatch.setattr(ember, "rand", lambda *size, **kw: ember.full(size, 0.3))
    img = tv.Image(ember.zeros(3, 12, 16))
    got = {k: eval(v, {"v2": v2}).make_params([img]) for k, v in DRAWS.items()}
    assert json.loads(json.dumps(got)) == want
