"""v1 ``functional`` on tensors as torchvision's tensor kernels compute it (reference process, same inputs):
``rotate`` with expand, center, fill and both interpolations, ``resize`` (PyTorch's nearest, antialias on and
off), and the colour ops whose uint8 results torchvision truncates (``_blend``: brightness, contrast,
saturation, sharpness; grayscale) or converts back (hue)."""
import os
import sys

import numpy as np
import pytest

pytest.importorskip("ember_vision")

import ember  # noqa: E402
import ember_vision.transforms.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

CASES = [
    ("rot30", "lambda F, x: F.rotate(x, 30)"),
    ("rot30_bilinear", "lambda F, x: F.rotate(x, 30, F.InterpolationMode.BILINEAR)"),
    ("rot45_expand", "lambda F, x: F.rotate(x, 45, expand=True)"),
    ("rot33_expand_bilinear_fill",
     "lambda F, x: F.rotate(x, 33, F.InterpolationMode.BILINEAR, expand=True, fill=[10.0, 200.0, 30.0])"),
    ("rot90_center_fill", "lambda F, x: F.rotate(x, 90, center=[2, 3], fill=7)"),
    ("rot_m17_center_expand", "lambda F, x: F.rotate(x, -17.5, expand=True, center=[1, 5])"),
    ("rot200_bilinear_fill", "lambda F, x: F.rotate(x, 200, F.InterpolationMode.BILINEAR, fill=0.5)"),
    ("resize_bilinear_down", "lambda F, x: F.resize(x, [5, 6])"),
    ("resize_bilinear_up_no_antialias", "lambda F, x: F.resize(x, [11, 13], antialias=False)"),
    ("resize_bicubic", "lambda F, x: F.resize(x, [5, 13], F.InterpolationMode.BICUBIC)"),
    ("resize_nearest", "lambda F, x: F.resize(x, [5, 13], F.InterpolationMode.NEAREST)"),
    ("resize_nearest_exact_edge", "lambda F, x: F.resize(x, 4, F.InterpolationMode.NEAREST_EXACT)"),
    ("brightness", "lambda F, x: F.adjust_brightness(x, 1.3)"),
    ("contrast", "lambda F, x: F.adjust_contrast(x, 0.6)"),
    ("saturation", "lambda F, x: F.adjust_saturation(x, 0.4)"),
    ("sharpness", "lambda F, x: F.adjust_sharpness(x, 1.7)"),
    ("grayscale", "lambda F, x: F.rgb_to_grayscale(x, 3)"),
    ("hue", "lambda F, x: F.adjust_hue(x, 0.2)"),
]

_CODE = """
import numpy as np
import torchvision.transforms.functional as F
x = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (2, 3, 7, 9)).astype(np.uint8))
out = {}
for name, src in CASES:
    fn = eval(src)
    out[name] = [fn(F, x).numpy().tolist(), fn(F, x.double() / 255).numpy().tolist()]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def reference():
    return vision_reference.run(f"CASES = {CASES!r}\n" + _CODE)


@pytest.mark.parametrize("name,src", CASES, ids=[c[0] for c in CASES])
def test_matches_torchvision(reference, device, name, src):
    fn = eval(src)
    x = ember.from_numpy(np.random.default_rng(0).integers(0, 256, (2, 3, 7, 9)).astype(np.uint8)).to(device)
    want_u8, want_f = (np.array(v) for v in reference[name])
    got_u8, got_f = fn(F, x), fn(F, x.double() / 255)
    assert got_u8.dtype == ember.uint8 and got_f.dtype == ember.float64
    assert np.array_equal(got_u8.cpu().numpy(), want_u8)
    np.testing.assert_allclose(got_f.cpu().numpy(), want_f, atol=1e-6)


def test_rotate_bad_arguments():
    x = ember.zeros(3, 4, 4, dtype=ember.uint8)
    with pytest.raises(TypeError, match="rotate: Argument angle should be int or float"):
        F.rotate(x, "30")
    with pytest.raises(TypeError, match="rotate: Argument center should be a sequence"):
        F.rotate(x, 30, center=2)
    with pytest.raises(ValueError, match="rotate: Interpolation mode 'bicubic' is unsupported with Tensor input"):
        F.rotate(x, 30, F.InterpolationMode.BICUBIC)
    with pytest.raises(ValueError, match="cannot broadcast to match the number of channels"):
        F.rotate(x, 30, fill=[1, 2])
    assert x.sum().item() == 0


def test_pillow_integer_interpolation():
    x = ember.from_numpy(np.random.default_rng(3).integers(0, 256, (3, 6, 8)).astype(np.uint8))
    assert ember.equal(F.rotate(x, 25, 2), F.rotate(x, 25, F.InterpolationMode.BILINEAR))
    assert ember.equal(F.resize(x, [4, 5], 0), F.resize(x, [4, 5], F.InterpolationMode.NEAREST))
    with pytest.raises(TypeError, match="Argument interpolation should be a InterpolationMode"):
        F.rotate(x, 25, 2.0)
