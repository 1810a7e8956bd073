"""Weights' ``transforms()``: every ``*_Weights`` member's preset against torchvision 0.28's, and each preset's
output, ``repr`` and ``describe()`` against torchvision's on the same PIL image and tensors.

One torchvision reference process (:mod:`vision_reference`) answers everything, once per module.
"""
import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
Image = pytest.importorskip("PIL.Image")

import vision_reference  # noqa: E402
from ember_vision import models  # noqa: E402
from ember_vision.transforms import InterpolationMode  # noqa: E402
from ember_vision.transforms import _presets as P  # noqa: E402

# (name, preset, its arguments as Python source, what it is given: "image", "video" or "pair")
PRESETS = [
    ("classification_bilinear", "ImageClassification", "crop_size=8, resize_size=11", "image"),
    ("classification_bicubic", "ImageClassification",
     "crop_size=9, resize_size=9, interpolation=InterpolationMode.BICUBIC, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)",
     "image"),
    ("segmentation", "SemanticSegmentation", "resize_size=9", "image"),
    ("segmentation_no_resize", "SemanticSegmentation", "resize_size=None", "image"),
    ("detection", "ObjectDetection", "", "image"),
    ("flow", "OpticalFlow", "", "pair"),
    ("video", "VideoClassification", "crop_size=(6, 6), resize_size=(8, 9)", "video"),
    ("video_short_side", "VideoClassification", "crop_size=(5, 5), resize_size=(7,)", "video"),
]

# the inputs, built alike in both processes from NumPy's seeded generator
_INPUTS = """
rng = np.random.default_rng(0)
pixels = rng.integers(0, 256, (17, 23, 3), dtype=np.uint8)
batch = rng.integers(0, 256, (2, 3, 14, 19), dtype=np.uint8)
clip = rng.integers(0, 256, (2, 3, 3, 15, 12), dtype=np.uint8)
"""

_REFERENCE = _INPUTS + """
from torchvision import models
from torchvision.transforms import InterpolationMode, _presets as P
from PIL import Image

weights = {}
for name in models.list_models():
    if ".quantization." in models.get_model_builder(name).__module__:
        continue  # ember-vision has no quantized models
    enum = models.get_model_weights(name)
    for member in enum:
        weights[enum.__name__ + "." + member.name] = repr(member.transforms())

def listed(out):
    return [o.tolist() for o in out] if isinstance(out, tuple) else out.tolist()

def inputs(kind):
    image, tensor = Image.fromarray(pixels), torch.from_numpy(pixels).permute(2, 0, 1).contiguous()
    if kind == "image":
        return {"pil": (image,), "tensor": (tensor,), "batch": (torch.from_numpy(batch),)}
    if kind == "pair":
        return {"pil": (image, image.transpose(Image.FLIP_LEFT_RIGHT)), "tensor": (tensor, tensor.flip(-1))}
    return {"clip": (torch.from_numpy(clip[0]),), "batch": (torch.from_numpy(clip),)}

presets = {}
for name, cls, args, kind in PRESETS:
    t = eval(f"P.{cls}({args})")
    outs = {key: listed(t(*given)) for key, given in inputs(kind).items()}
    presets[name] = {"repr": repr(t), "describe": t.describe(), "outputs": outs}
print(json.dumps({"weights": weights, "presets": presets}))
"""


@pytest.fixture(scope="module")
def reference():
    return vision_reference.run(f"import numpy as np\nPRESETS = {PRESETS!r}\n" + _REFERENCE)


def _ember_weights() -> dict:
    got = {}
    for name in models.list_models():
        enum = models.get_model_weights(name)
        for member in enum:
            got[f"{enum.__name__}.{member.name}"] = repr(member.transforms())
    return got


def test_every_weights_member_has_torchvisions_transforms(reference):
    want, got = reference["weights"], _ember_weights()
    assert sorted(got) == sorted(want)
    wrong = {key: (got[key], want[key]) for key in want if got[key] != want[key]}
    assert not wrong, f"{len(wrong)} members differ from torchvision, e.g. {next(iter(wrong.items()))}"


def test_weights_transforms_is_the_members_factory():
    weights = models.ResNet50_Weights.IMAGENET1K_V2
    preset = weights.transforms()
    assert isinstance(preset, P.ImageClassification) and preset.resize_size == [232]
    assert models.ResNet18_Weights.DEFAULT.transforms().crop_size == [224]
    assert isinstance(models.get_weight("Raft_Small_Weights.C_T_V2").transforms(), P.OpticalFlow)


def _inputs(kind: str, device) -> dict:
    scope = {"np": np}
    exec(_INPUTS, scope)
    pixels, batch, clip = scope["pixels"], scope["batch"], scope["clip"]
    image = Image.fromarray(pixels)
    tensor = ember.from_numpy(pixels).permute(2, 0, 1).contiguous().to(device)
    if kind == "image":
        return {"pil": (image,), "tensor": (tensor,), "batch": (ember.from_numpy(batch).to(device),)}
    if kind == "pair":
        return {"pil": (image, image.transpose(Image.FLIP_LEFT_RIGHT)), "tensor": (tensor, tensor.flip(-1))}
    return {"clip": (ember.from_numpy(clip[0]).to(device),), "batch": (ember.from_numpy(clip).to(device),)}


@pytest.mark.parametrize("name, cls, args, kind", PRESETS, ids=[p[0] for p in PRESETS])
def test_preset_matches_torchvision(device, reference, name, cls, args, kind):
    want = reference["presets"][name]
    preset = eval(f"P.{cls}({args})", {"P": P, "InterpolationMode": InterpolationMode})
    assert repr(preset) == want["repr"]
    assert preset.describe() == want["describe"]
    for key, given in _inputs(kind, device).items():
        out = preset(*given)
        outs = out if isinstance(out, tuple) else (out,)
        wants = want["outputs"][key] if isinstance(out, tuple) else (want["outputs"][key],)
        for o, w in zip(outs, wants):
            assert o.dtype == ember.float32
            assert key == "pil" or o.device == given[0].device  # PIL images become CPU tensors
            got, w = o.cpu().numpy(), np.asarray(w, dtype=np.float32)
            if key == "pil" or "resize_size=" not in args or "resize_size=None" in args:
                np.testing.assert_allclose(got, w, rtol=0, atol=1e-5, err_msg=f"{name} on {key}")
                continue
            # uint8 tensors are resized in uint8 (torchvision rounds its fixed-point sums): a few pixels may
            # round the other way, one step of 1/255 before normalizing
            step = 1 / 255 / min(preset.std)
            np.testing.assert_allclose(got, w, rtol=0, atol=step + 1e-5, err_msg=f"{name} on {key}")
            assert np.mean(np.abs(got - w) > 1e-5) < 0.02, f"{name} on {key}: many pixels round differently"
