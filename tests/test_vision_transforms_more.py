"""transforms: adjust_gamma, convert_image_dtype, five_crop, ten_crop and the v1 classes over them and over the
colour ops (ConvertImageDtype, FiveCrop, TenCrop, GaussianBlur, LinearTransformation, RandomAffine, RandomChoice,
RandomOrder, Random{AdjustSharpness,Autocontrast,Equalize,Invert,Posterize,Solarize}); transforms.v2's
conversions, colour, blur, crop, noise, JPEG and temporal transforms and its sample helpers; each against
torchvision 0.28 in one reference process, on the same tensor and PIL image.

ember's generator is not PyTorch's: random classes run with fixed parameters (degenerate ranges, ``p=1``, or
their ``transform(inpt, params)`` with given params); v1's RandomChoice and RandomOrder draw from Python's
``random`` as torchvision's do, so they are compared under the same ``random.seed``.
"""
import inspect
import os
import random
import sys
import warnings

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
from PIL import Image  # noqa: E402

from ember_vision import tv_tensors as TV  # noqa: E402
from ember_vision.transforms import functional as F  # noqa: E402
from ember_vision.transforms import transforms as T  # noqa: E402
from ember_vision.transforms import v2  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

sys.path.pop(0)

H, W = 14, 18
PHOTO = [dict(brightness_factor=1.1, contrast_factor=0.8, saturation_factor=1.3, hue_factor=0.05,
              contrast_before=True, channel_permutation=[2, 0, 1]),
         dict(brightness_factor=None, contrast_factor=1.4, saturation_factor=0.6, hue_factor=None,
              contrast_before=False, channel_permutation=None)]
RANDOM3 = "[T.RandomInvert(1.0), T.RandomPosterize(2, 1.0), T.RandomSolarize(100, 1.0)]"
# name -> (call text, the kinds of input it runs on); the same text runs in torchvision with ``torch`` types.
# ``im(img)`` wraps a tensor as an Image (PIL images stay), ``gray(img)`` is its first channel / "L" mode.
CALLS = {
    "gamma": ("F.adjust_gamma(img, 0.7, 1.1)", "tensor pil float"),
    "gamma_high": ("F.adjust_gamma(img, 2.2)", "tensor pil float"),
    "cid_float": ("F.convert_image_dtype(img, f32)", "tensor"),
    "cid_u8": ("F.convert_image_dtype(img, u8)", "float"),
    "cid_i16": ("F.convert_image_dtype(img, i16)", "tensor"),
    "cid_f64": ("F.convert_image_dtype(img, f64)", "float"),
    "five": ("F.five_crop(img, [5, 7])", "tensor pil"),
    "ten": ("F.ten_crop(img, 6)", "tensor pil"),
    "ten_vertical": ("F.ten_crop(img, [5, 8], vertical_flip=True)", "tensor pil"),
    "T_cid": ("T.ConvertImageDtype(f32)(img)", "tensor"),
    "T_five": ("T.FiveCrop(5)(img)", "tensor pil"),
    "T_ten": ("T.TenCrop((4, 6), vertical_flip=True)(img)", "tensor pil"),
    "T_blur": ("T.GaussianBlur(5, sigma=(1.3, 1.3))(img)", "tensor pil float"),
    "T_blur_rect": ("T.GaussianBlur((3, 7), sigma=0.9)(img)", "tensor"),
    "T_linear": ("T.LinearTransformation(LT_M, LT_V)(img)", "float"),
    "T_sharpness": ("T.RandomAdjustSharpness(1.8, p=1.0)(img)", "tensor pil"),
    "T_affine": ("T.RandomAffine((15, 15), scale=(1.1, 1.1), shear=(5, 5, 8, 8), fill=7)(img)", "tensor pil"),
    "T_affine_center": ("T.RandomAffine([-20, -20], center=[3, 4])(img)", "tensor pil"),
    "T_autocontrast": ("T.RandomAutocontrast(p=1.0)(img)", "tensor pil"),
    "T_equalize": ("T.RandomEqualize(p=1.0)(img)", "tensor pil"),
    "T_invert": ("T.RandomInvert(p=1.0)(img)", "tensor pil"),
    "T_posterize": ("T.RandomPosterize(3, p=1.0)(img)", "tensor pil"),
    "T_solarize": ("T.RandomSolarize(120, p=1.0)(img)", "tensor pil"),
    "T_order": (f"seeded(lambda: T.RandomOrder({RANDOM3})(img), 4)", "tensor pil"),
    "T_choice": (f"seeded(lambda: T.RandomChoice({RANDOM3}, p=[0.2, 0.3, 0.5])(img), 7)", "tensor pil"),
    "T_choice2": (f"seeded(lambda: T.RandomChoice({RANDOM3})(img), 1)", "tensor"),
    "v2_cid": ("v2.ConvertImageDtype(f32)(im(img))", "tensor"),
    "v2_five": ("v2.FiveCrop(5)(im(img))", "tensor pil"),
    "v2_ten": ("v2.TenCrop([4, 6])(im(img))", "tensor pil"),
    "v2_blur": ("v2.GaussianBlur(5, (1.3, 1.3))(im(img))", "tensor pil float"),
    "v2_linear": ("v2.LinearTransformation(LT_M, LT_V)(im(img))", "float"),
    "v2_rgb": ("v2.RGB()(im(gray(img)))", "tensor pil"),
    "v2_rgb_same": ("v2.RGB()(im(img))", "tensor"),
    "v2_noise": ("v2.GaussianNoise(mean=0.2, sigma=0.0)(im(img))", "tensor float"),
    "v2_noise_noclip": ("v2.GaussianNoise(mean=-0.3, sigma=0.0, clip=False)(im(img))", "tensor float"),
    "v2_photo0": (f"v2.RandomPhotometricDistort().transform(im(img), {PHOTO[0]!r})", "tensor pil float"),
    "v2_photo1": (f"v2.RandomPhotometricDistort().transform(im(img), {PHOTO[1]!r})", "tensor pil"),
    "v2_permute": ("v2.RandomChannelPermutation().transform(im(img), {'permutation': [1, 2, 0]})", "tensor pil"),
    "v2_sharpness": ("v2.RandomAdjustSharpness(1.8, p=1.0)(im(img))", "tensor pil"),
    "v2_autocontrast": ("v2.RandomAutocontrast(p=1.0)(im(img))", "tensor pil"),
    "v2_equalize": ("v2.RandomEqualize(p=1.0)(im(img))", "tensor pil"),
    "v2_invert": ("v2.RandomInvert(p=1.0)(im(img))", "tensor pil"),
    "v2_posterize": ("v2.RandomPosterize(3, p=1.0)(im(img))", "tensor pil"),
    "v2_solarize": ("v2.RandomSolarize(120, p=1.0)(im(img))", "tensor pil"),
    "v2_jpeg": ("v2.JPEG(60)(img)", "pil"),
    "v2_subsample": ("v2.UniformTemporalSubsample(4)(img)", "video"),
    "v2_subsample_plain": ("v2.UniformTemporalSubsample(3)(img.as_subclass(Tensor))", "video"),
    "v2_pil_to_tensor": ("v2.PILToTensor()(img)", "pil"),
    "v2_to_pil": ("v2.ToPILImage()(im(img))", "tensor"),
    "v2_to_tensor": ("v2.ToTensor()(img)", "pil"),
    "v2_identity": ("v2.Identity()(im(img))", "tensor"),
    "v2_lambda": ("v2.Lambda(lambda x: x.flip(-1), Tensor)(im(img))", "tensor"),
}

_PRELUDE = """
import random
import numpy as np
from PIL import Image
from torch import Tensor
from torchvision import tv_tensors as TV
from torchvision.transforms import functional as F, transforms as T, v2
u8, i16, f32, f64 = torch.uint8, torch.int16, torch.float32, torch.float64
"""
_REFERENCE_BODY = """
import json, warnings
warnings.simplefilter("ignore")
d = {dir!r}
arr = np.load(d + "/img.npy")
LT_M, LT_V = torch.from_numpy(np.load(d + "/m.npy")), torch.from_numpy(np.load(d + "/v.npy"))
inputs = {{"tensor": lambda: torch.from_numpy(arr.copy()), "float": lambda: torch.from_numpy(arr / 255.0).float(),
          "pil": lambda: Image.fromarray(arr.transpose(1, 2, 0)),
          "video": lambda: TV.Video(torch.from_numpy(np.load(d + "/video.npy")))}}
out, kinds = {{}}, {{}}
for name, (call, where) in {calls!r}.items():
    for kind in where.split():
        img = inputs[kind]()
        y = eval(call)
        out[kind + ":" + name], kinds[kind + ":" + name] = arr_of(y), kind_of(y)
np.savez(d + "/out.npz", **out)
print(json.dumps(kinds))
"""

u8, i16, f32, f64 = ember.uint8, ember.int16, ember.float32, ember.float64
Tensor = ember.Tensor

# helpers run here and, by their source text, in the reference process (both have np, Image, Tensor, TV, random)


def im(x):
    return TV.Image(x) if isinstance(x, Tensor) and not isinstance(x, TV.TVTensor) else x


def gray(x):
    return x.convert("L") if isinstance(x, Image.Image) else x[:1]


def seeded(fn, seed):
    random.seed(seed)
    return fn()


def kind_of(y):
    if isinstance(y, tuple):
        return "tuple:" + kind_of(y[0])
    return "PIL" if isinstance(y, Image.Image) else type(y).__name__


def arr_of(y):
    if isinstance(y, tuple):
        return np.stack([arr_of(v) for v in y])
    if isinstance(y, Image.Image):
        return np.atleast_3d(np.asarray(y)).transpose(2, 0, 1)
    return y.as_subclass(Tensor).cpu().numpy()


_COMMON = "\n".join(inspect.getsource(f) for f in (im, gray, seeded, kind_of, arr_of))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("more")
    rng = np.random.default_rng(0)
    arr = rng.integers(30, 230, (3, H, W), dtype=np.uint8)
    arr[:, :2, :2] = 30
    np.save(d / "img.npy", arr)
    n = 3 * H * W
    np.save(d / "m.npy", rng.normal(0, 0.05, (n, n)).astype(np.float32))
    np.save(d / "v.npy", rng.uniform(0, 1, n).astype(np.float32))
    np.save(d / "video.npy", rng.integers(0, 256, (2, 9, 3, 4, 5), dtype=np.uint8))
    kinds = vision_reference.run(_PRELUDE + _COMMON + _REFERENCE_BODY.format(dir=str(d), calls=CALLS))
    return d, arr, dict(np.load(d / "out.npz")), kinds


def _inputs(d, arr, kind: str, device):
    if kind == "pil":
        return Image.fromarray(arr.transpose(1, 2, 0))
    if kind == "video":
        return TV.Video(ember.from_numpy(np.load(d / "video.npy")).to(device))
    x = ember.from_numpy(arr.copy()) if kind == "tensor" else ember.from_numpy(arr / 255.0).float()
    return x.to(device)


def _run(reference, kind: str, name: str, device="cpu"):
    d, arr, want, kinds = reference
    key = f"{kind}:{name}"
    img = _inputs(d, arr, kind, device)
    before = arr_of(img).copy()
    env = dict(globals(), img=img, LT_M=ember.from_numpy(np.load(d / "m.npy")).to(device),
               LT_V=ember.from_numpy(np.load(d / "v.npy")).to(device))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ToTensor's deprecation (checked on its own)
        y = eval(CALLS[name][0], env)
    assert np.array_equal(arr_of(img), before), f"{key}: the input changed"
    assert kind_of(y) == kinds[key], key
    return y, want[key], key


# uint8 tensors through colour blends: ember's blend rounds to the nearest integer where torchvision's truncates
# (one unit per blend), and v2's autocontrast and hue kernels order their float arithmetic differently.
UINT8_TOLERANCE = {"tensor:T_sharpness": 1, "tensor:v2_sharpness": 1, "tensor:v2_autocontrast": 1,
                   "tensor:v2_photo0": 5, "tensor:v2_photo1": 2}


def _compare(got, want, key):
    assert got.shape == want.shape and got.dtype == want.dtype, (key, got.shape, want.shape, got.dtype, want.dtype)
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=key)
    else:
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        tol = UINT8_TOLERANCE.get(key, 0)
        assert diff.max(initial=0) <= tol, f"{key}: {int((diff > tol).sum())} values differ, max {diff.max()}"


TENSOR_CASES = [(k, n) for n, (_, where) in CALLS.items() for k in where.split() if k != "pil"]
PIL_CASES = [n for n, (_, where) in CALLS.items() if "pil" in where.split()]


@pytest.mark.parametrize("kind,name", TENSOR_CASES, ids=[f"{k}-{n}" for k, n in TENSOR_CASES])
def test_tensor_transform_matches_torchvision(reference, device, kind, name):
    y, want, key = _run(reference, kind, name, device)
    leaves = y if isinstance(y, tuple) else (y,)
    for leaf in leaves:
        if isinstance(leaf, ember.Tensor):
            assert leaf.device.type == ember.device(device).type, key
    _compare(arr_of(y), want, key)


@pytest.mark.parametrize("name", PIL_CASES)
def test_pil_transform_matches_torchvision(reference, name):
    y, want, key = _run(reference, "pil", name)
    _compare(arr_of(y), want, key)


def test_jpeg_on_tensors_matches_the_pil_round_trip(reference, device):
    d, arr, want, _ = reference
    img = TV.Image(ember.from_numpy(arr.copy())).to(device)
    got = v2.JPEG(60)(img)
    assert isinstance(got, TV.Image) and got.dtype == ember.uint8 and got.device.type == ember.device(device).type
    _compare(arr_of(got), want["pil:v2_jpeg"], "tensor:v2_jpeg")
    batch = v2.JPEG([60, 60])(ember.stack([img, img]))
    _compare(arr_of(batch), np.stack([want["pil:v2_jpeg"]] * 2), "batch:v2_jpeg")
    error = {q: np.abs(arr_of(v2.JPEG(q)(img)).astype(int) - arr).mean() for q in (10, 95)}
    assert error[95] < error[10]  # a higher quality loses less


def test_gaussian_noise_draws_normal_noise(device):
    img = ember.full((3, 64, 64), 0.5, device=device)
    ember.manual_seed(0)
    out = v2.GaussianNoise(mean=0.1, sigma=0.05)(img)
    delta = (out - img).cpu().numpy()
    assert abs(delta.mean() - 0.1) < 0.005 and abs(delta.std() - 0.05) < 0.005
    ember.manual_seed(0)
    assert ember.equal(v2.GaussianNoise(mean=0.1, sigma=0.05)(img), out)  # reproducible under a seed
    clipped = v2.GaussianNoise(sigma=2.0)(img)
    assert float(clipped.min()) == 0.0 and float(clipped.max()) == 1.0
    u = v2.GaussianNoise(sigma=0.2)(ember.full((3, 8, 8), 128, dtype=ember.uint8, device=device))
    assert u.dtype == ember.uint8 and 0 < float(u.float().std()) < 255


def test_random_order_and_choice_follow_their_draws(device):
    img = ember.from_numpy(np.random.default_rng(1).integers(0, 256, (3, 6, 7), dtype=np.uint8)).to(device)
    steps = [v2.RandomInvert(1.0), v2.RandomPosterize(2, p=1.0), v2.RandomSolarize(100, p=1.0)]
    for seed in range(4):
        ember.manual_seed(seed)
        got = v2.RandomOrder(steps)(img)
        ember.manual_seed(seed)
        want = img
        for i in ember.randperm(3).tolist():
            ember.rand(1)  # each step's coin
            want = [F.invert, lambda x: F.posterize(x, 2), lambda x: F.solarize(x, 100)][i](want)
        assert ember.equal(got, want)
    assert ember.equal(v2.RandomInvert(p=0.0)(img), img)
    assert ember.equal(T.RandomChoice([T.RandomInvert(1.0)])(img), F.invert(img))


def test_random_transforms_apply_their_drawn_parameters(device):
    img = TV.Image(ember.from_numpy(np.random.default_rng(2).integers(0, 256, (3, 8, 9), dtype=np.uint8))).to(device)
    t = v2.RandomPhotometricDistort(p=1.0)
    ember.manual_seed(5)
    got = t(img)
    ember.manual_seed(5)
    params = t.make_params([img])
    assert sorted(params["channel_permutation"]) == [0, 1, 2] and 0.875 <= params["brightness_factor"] <= 1.125
    assert ember.equal(got, t.transform(img, params))
    ember.manual_seed(6)
    sigma = v2.GaussianBlur(3, (0.5, 1.5)).make_params([img])["sigma"]
    ember.manual_seed(6)
    assert ember.equal(v2.GaussianBlur(3, (0.5, 1.5))(img), F.gaussian_blur(img.as_subclass(Tensor), [3, 3], sigma))
    ember.manual_seed(7)
    perm = ember.randperm(3).tolist()
    ember.manual_seed(7)
    assert ember.equal(v2.RandomChannelPermutation()(img), img[perm])
    ember.manual_seed(8)
    (angle, translate, scale, shear) = T.RandomAffine.get_params([-30, 30], [0.2, 0.1], [0.8, 1.2], [-5, 5, -3, 3],
                                                                 [9, 8])
    assert -30 <= angle <= 30 and abs(translate[0]) <= 2 and abs(translate[1]) <= 1 and 0.8 <= scale <= 1.2
    assert -5 <= shear[0] <= 5 and -3 <= shear[1] <= 3
    ember.manual_seed(8)
    got = T.RandomAffine(30, (0.2, 0.1), (0.8, 1.2), (-5, 5, -3, 3))(img.as_subclass(Tensor))
    assert ember.equal(got, F.affine(img.as_subclass(Tensor), angle, translate, scale, shear, fill=[0.0] * 3))


def test_v2_types_pass_through_and_helpers():
    img = TV.Image(ember.zeros(3, 4, 5, dtype=ember.uint8))
    boxes = TV.BoundingBoxes([[0, 0, 2, 2]], format="XYXY", canvas_size=(4, 5))
    mask = TV.Mask(ember.ones(4, 5, dtype=ember.uint8))
    out = v2.RandomInvert(p=1.0)({"image": img, "boxes": boxes, "mask": mask, "label": 3})
    assert ember.equal(out["image"], ember.full((3, 4, 5), 255, dtype=ember.uint8)) and out["label"] == 3
    assert out["boxes"] is boxes and out["mask"] is mask
    plain = ember.zeros(2, 4, 5)
    img2, other = v2.GaussianNoise(mean=0.5, sigma=0.0)(plain, plain)  # only the first plain tensor is the image
    assert float(img2.min()) == 0.5 and other is plain
    flat = [img, boxes, mask, 3]
    assert v2.query_chw(flat) == (3, 4, 5) and v2.query_size(flat) == (4, 5)
    assert v2.has_any(flat, TV.Mask) and not v2.has_any(flat, TV.Video)
    assert v2.has_all(flat, TV.Image, TV.Mask) and not v2.has_all(flat, TV.Image, TV.Video)
    assert v2.check_type(3, (str, lambda x: x == 3)) and not v2.check_type(3, (str,))
    assert v2.get_bounding_boxes(flat) is boxes
    with pytest.raises(ValueError, match="No Keypoints"):
        v2.get_keypoints(flat)
    with pytest.raises(ValueError, match="No bounding boxes"):
        v2.get_bounding_boxes([img])
    with pytest.raises(TypeError, match="No image or video"):
        v2.query_chw([mask])
    with pytest.raises(ValueError, match="multiple CxHxW"):
        v2.query_chw([img, TV.Image(ember.zeros(1, 4, 5))])
    with pytest.raises(ValueError, match="multiple HxW"):
        v2.query_size([img, TV.Mask(ember.zeros(3, 3))])
    with pytest.warns(UserWarning, match="ToTensor"):
        v2.ToTensor()
    pil = Image.new("RGB", (5, 4))
    assert v2.ConvertImageDtype()(pil) is pil and v2.PILToTensor()(img) is img  # not their input types
    assert v2.Lambda(lambda x: x + 1, int)([img, 3])[1] == 4


@pytest.mark.parametrize("call,exc,match", [
    (lambda img: F.convert_image_dtype(img.float(), ember.int32), RuntimeError, "cannot be performed safely"),
    (lambda img: F.convert_image_dtype(img.numpy(), ember.float32), TypeError, "convert_image_dtype"),
    (lambda img: F.five_crop(img, 20), ValueError, "bigger than input size"),
    (lambda img: F.ten_crop(img, [1, 2, 3]), ValueError, "two dimensions"),
    (lambda img: F.adjust_gamma(img, -1.0), ValueError, "non-negative"),
    (lambda img: T.GaussianBlur(4), ValueError, "odd and positive"),
    (lambda img: T.GaussianBlur(3, sigma=(2.0, 1.0)), ValueError, r"\(min, max\)"),
    (lambda img: T.GaussianBlur(3, sigma=-1.0), ValueError, "must be positive"),
    (lambda img: T.LinearTransformation(ember.zeros(3, 4), ember.zeros(3)), ValueError, "square"),
    (lambda img: T.LinearTransformation(ember.eye(4), ember.zeros(3)), ValueError, "same length"),
    (lambda img: T.LinearTransformation(ember.eye(4), ember.zeros(4))(img.float()), ValueError, "incompatible"),
    (lambda img: T.RandomAffine(-5), ValueError, "must be positive"),
    (lambda img: T.RandomAffine(5, translate=(0.5, 1.5)), ValueError, "between 0 and 1"),
    (lambda img: T.RandomAffine(5, scale=(0.0, 1.0)), ValueError, "positive"),
    (lambda img: T.RandomAffine(5, shear=(1, 2, 3)), ValueError, "shear"),
    (lambda img: T.RandomAffine(5, fill=object()), TypeError, "Fill"),
    (lambda img: T.RandomChoice(T.RandomInvert()), TypeError, "sequence"),
    (lambda img: v2.JPEG(0), ValueError, "from 1 to 100"),
    (lambda img: v2.JPEG(True), TypeError, "bool"),
    (lambda img: v2.JPEG(50)(img.float()), TypeError, "uint8"),
    (lambda img: v2.GaussianNoise()(F.to_pil_image(img)), TypeError, "PIL"),
    (lambda img: v2.GaussianNoise(sigma=-1.0)(img.float()), ValueError, "negative"),
    (lambda img: v2.GaussianNoise()(img.to(ember.int32)), ValueError, "uint8 or float"),
    (lambda img: v2.LinearTransformation(ember.eye(3), ember.zeros(3))(F.to_pil_image(img)), TypeError, "PIL"),
    (lambda img: v2.FiveCrop(2)(TV.Mask(img[0])), TypeError, "not supported"),
    (lambda img: v2.RandomOrder([]), ValueError, "at least one"),
    (lambda img: v2.RandomInvert(p=2.0), ValueError, "interval"),
], ids=lambda v: getattr(v, "__name__", None) if isinstance(v, type) else None)
def test_bad_input_raises_torchvisions_error(call, exc, match):
    img = ember.from_numpy(np.random.default_rng(4).integers(0, 256, (3, 6, 7), dtype=np.uint8))
    before = img.clone()
    with pytest.raises(exc, match=match):
        call(img)
    assert ember.equal(img, before)
