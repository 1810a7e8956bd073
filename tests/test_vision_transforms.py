"""ember-vision transforms: tensor path against PIL's own operations and hand-computed references."""
import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
Image = pytest.importorskip("PIL.Image")

from ember_vision import transforms as T  # noqa: E402
from ember_vision.transforms import functional as F  # noqa: E402

RNG = np.random.default_rng(0)
PIXELS = RNG.integers(0, 256, (7, 9, 3), dtype=np.uint8)


def _pair(device):
    img = Image.fromarray(PIXELS)
    return img, F.pil_to_tensor(img).to(device)


def _pixels(x):
    if isinstance(x, Image.Image):
        x = F.pil_to_tensor(x)
    return x.cpu().numpy().astype(np.int64)


# (name, function on an image, largest allowed per-pixel difference PIL vs tensor)
PIL_VS_TENSOR = [
    # PIL's nearest samples the pixel centres: NEAREST_EXACT on tensors (NEAREST is PyTorch's floor(i * in / out))
    ("resize_nearest_up", lambda im: F.resize(im, (12, 15), "nearest-exact"), 0),
    ("resize_nearest_down", lambda im: F.resize(im, (3, 4), "nearest-exact"), 0),
    ("resize_bilinear_up", lambda im: F.resize(im, (12, 15)), 1),
    ("resize_bilinear_down", lambda im: F.resize(im, (3, 4)), 1),
    ("resize_short_edge", lambda im: F.resize(im, 4), 1),
    ("crop_outside", lambda im: F.crop(im, -1, 2, 5, 9), 0),
    ("center_crop", lambda im: F.center_crop(im, 4), 0),
    ("pad_constant", lambda im: F.pad(im, [1, 2, 3, 1], fill=7), 0),
    ("pad_edge", lambda im: F.pad(im, [1, 2], padding_mode="edge"), 0),
    ("pad_reflect", lambda im: F.pad(im, 2, padding_mode="reflect"), 0),
    ("pad_symmetric", lambda im: F.pad(im, [1, 2, 3, 1], padding_mode="symmetric"), 0),
    ("hflip", F.hflip, 0),
    ("vflip", F.vflip, 0),
    ("grayscale3", lambda im: F.rgb_to_grayscale(im, 3), 1),  # tensors: torchvision's 0.2989 luma, truncated
    ("grayscale1", F.rgb_to_grayscale, 1),
    ("brightness", lambda im: F.adjust_brightness(im, 1.3), 1),
    ("contrast", lambda im: F.adjust_contrast(im, 0.6), 1),
    ("saturation", lambda im: F.adjust_saturation(im, 0.4), 1),
    ("hue", lambda im: F.adjust_hue(im, 0.2), 8),  # PIL quantises hue to 256 levels
    # tensors rotate (and resize bicubic) as torchvision's tensor kernels, not as PIL
    # (tests/test_vision_rotate_extra2.py compares them with torchvision's); these rotations land on whole pixels
    ("rotate_center", lambda im: F.rotate(im, 90, center=(2, 3), fill=(10, 20, 30)), 0),
    ("rotate90_expand", lambda im: F.rotate(im, 90, expand=True), 0),
]


@pytest.mark.parametrize("name, fn, tol", PIL_VS_TENSOR, ids=[r[0] for r in PIL_VS_TENSOR])
def test_tensor_path_matches_pil(device, name, fn, tol):
    img, t = _pair(device)
    want, got = _pixels(fn(img)), fn(t)
    assert got.dtype == ember.uint8 and got.device.type == device
    assert want.shape == tuple(got.shape)
    assert np.abs(want - _pixels(got)).max() <= tol


def test_hand_computed_references(device):
    x = ember.tensor([[[0.0, 1.0], [2.0, 3.0]]], device=device)
    # bilinear 2 -> 4 upsampling: PIL's centre-aligned triangle weights (1, 0.75/0.25, ...)
    up = F.resize(x, (2, 4))
    np.testing.assert_allclose(up.cpu().numpy()[0, 0], [0.0, 0.25, 0.75, 1.0], atol=1e-6)
    # 2 -> 1 downsampling averages (antialiased), nearest takes the pixel under the centre
    assert F.resize(x, (1, 1)).item() == pytest.approx(1.5)
    assert F.resize(x, (1, 1), "nearest").item() == 0.0  # PyTorch's nearest: source floor(0 * 2 / 1)
    assert F.resize(x, (1, 1), "nearest-exact").item() == 3.0  # the pixel under the centre, as PIL
    norm = F.normalize(ember.ones(2, 1, 1, device=device), [0.5, 0.25], [0.5, 0.25])
    np.testing.assert_allclose(norm.cpu().numpy().ravel(), [1.0, 3.0])
    gray = F.rgb_to_grayscale(ember.tensor([[[1.0]], [[0.0]], [[0.0]]], device=device))
    assert gray.item() == pytest.approx(0.2989)
    assert F.pad(x, 1, padding_mode="symmetric").cpu().numpy()[0, 0].tolist() == [0, 0, 1, 1]


def test_float_and_uint8_tensor_paths_agree(device):
    _, t = _pair(device)
    for fn in (lambda im: F.resize(im, (5, 6)), lambda im: F.adjust_contrast(im, 1.7),
               lambda im: F.adjust_hue(im, -0.3), lambda im: F.rotate(im, 20, "bilinear")):
        as_uint8 = _pixels(fn(t))
        as_float = fn(t.to(ember.float32) / 255).cpu().numpy() * 255
        assert np.abs(as_uint8 - as_float).max() <= 1.0


def test_to_tensor_and_back():
    img = Image.fromarray(PIXELS)
    t = T.ToTensor()(img)
    assert t.dtype == ember.float32 and tuple(t.shape) == (3, 7, 9)
    np.testing.assert_allclose(t.numpy().transpose(1, 2, 0), PIXELS / 255.0, rtol=1e-6)
    assert np.array_equal(np.asarray(T.ToPILImage()(t)), PIXELS)
    gray = T.ToTensor()(img.convert("L"))
    assert tuple(gray.shape) == (1, 7, 9)
    assert T.ToPILImage()(gray).mode == "L"


def _pipeline():
    return T.Compose([
        T.RandomCrop(6, padding=2, padding_mode="reflect"), T.RandomResizedCrop(5, scale=(0.3, 1.0)),
        T.RandomHorizontalFlip(), T.RandomVerticalFlip(), T.RandomRotation(30),
        T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomApply([T.Grayscale(3)], p=0.5), T.RandomGrayscale(0.3),
    ])


def test_random_pipeline_reproducible_and_paths_agree(device):
    img, t = _pair(device)
    outs = []
    for src in (img, t, img):
        ember.manual_seed(7)
        outs.append([_pixels(_pipeline()(src)) for _ in range(4)])
    assert all(np.array_equal(a, b) for a, b in zip(outs[0], outs[2]))
    assert not all(np.array_equal(outs[0][0], o) for o in outs[0][1:])
    for a, b in zip(outs[0], outs[1]):
        assert a.shape == b.shape
        assert np.mean(np.abs(a - b) > 12) < 0.05


def test_random_erasing_and_lambda(device):
    t = ember.ones(3, 8, 8, device=device)
    ember.manual_seed(0)
    out = T.Compose([T.RandomErasing(p=1.0, value=0), T.Lambda(lambda x: x * 2)])(t)
    erased = (out == 0).all(dim=0).cpu().numpy()
    assert 0 < erased.sum() < 64 and set(np.unique(out.cpu().numpy())) == {0.0, 2.0}
    rows, cols = np.nonzero(erased)
    assert erased[rows.min():rows.max() + 1, cols.min():cols.max() + 1].all()  # one rectangle
    assert (t == 1).all()  # the input is untouched
    ember.manual_seed(0)
    rnd = T.RandomErasing(p=1.0, value="random")(t)
    assert ((rnd != 1).sum() > 0).item()


def test_normalize_matches_torch(device, torch):
    x = ember.rand(2, 3, 4, 5, device=device)
    want = (torch.tensor(x.cpu().numpy()) - torch.tensor([0.1, 0.2, 0.3]).view(3, 1, 1)) / torch.tensor(
        [0.5, 0.6, 0.7]).view(3, 1, 1)
    ember.testing.assert_close(T.Normalize([0.1, 0.2, 0.3], [0.5, 0.6, 0.7])(x), want)


BAD_INPUT = [
    (lambda: F.hflip([[1, 2]]), TypeError, "hflip: img should be PIL Image or Tensor. Got list"),
    (lambda: F.normalize(ember.ones(3, 2, 2, dtype=ember.uint8), [0.5], [0.5]), TypeError, "float tensor"),
    (lambda: F.normalize(ember.ones(3, 2, 2), [0.5, 0.5], [0.5]), ValueError, "mean has 2 values but the image has 3"),
    (lambda: F.rgb_to_grayscale(ember.ones(4, 2, 2)), TypeError, "permitted channel values are [3], but found 4"),
    (lambda: F.adjust_saturation(ember.ones(2, 2, 2), 0.5), TypeError, "found 2"),
    (lambda: F.to_pil_image(ember.ones(5, 2, 2)), ValueError, "should not have > 4 channels. Got 5"),
    (lambda: F.to_tensor("img.png"), TypeError, "pic should be PIL Image or ndarray. Got str"),
    (lambda: F.adjust_hue(ember.ones(3, 2, 2), 0.7), ValueError, "hue_factor (0.7) is not in [-0.5, 0.5]"),
    (lambda: T.RandomCrop(9)(ember.ones(3, 4, 4)), ValueError, "crop size (9, 9) is larger than input image size"),
    (lambda: F.pad(ember.ones(1, 2, 2), 1, padding_mode="wrap"), ValueError, "padding_mode should be one of"),
    (lambda: T.RandomErasing(p=1.0)(Image.fromarray(PIXELS)), TypeError, "img should be Tensor Image"),
    (lambda: F.hflip(ember.ones(3)), TypeError, "expected at least 2 dimensions"),
    (lambda: T.ColorJitter(hue=0.7), ValueError, "hue values should be between (-0.5, 0.5)"),
    (lambda: F.pad(ember.ones(3, 2, 2), 1, fill=(1, 2, 3)), TypeError, "a tensor image takes a number as fill"),
    (lambda: T.ColorJitter(brightness=-1), ValueError, "brightness is a single number, it must be non negative"),
]


@pytest.mark.parametrize("call, exc, msg", BAD_INPUT)
def test_bad_input(call, exc, msg):
    with pytest.raises(exc) as info:
        call()
    assert msg in str(info.value)
