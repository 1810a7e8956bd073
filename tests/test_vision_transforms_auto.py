"""AutoAugment, RandAugment, TrivialAugmentWide, AugMix, RandomPerspective, ElasticTransform and the functional
ops under them (affine, perspective, elastic_transform, gaussian_blur, posterize, solarize, autocontrast,
equalize, adjust_sharpness, invert), against torchvision 0.28 in its reference process.

ember's generator is not PyTorch's, so the random classes cannot be compared draw for draw: their ops and
magnitude tables, and every op with fixed parameters, are compared with torchvision's; each class is then
checked to apply exactly the ops it draws.
"""
import os
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
from PIL import Image  # noqa: E402

from ember_vision import transforms as T  # noqa: E402
from ember_vision.transforms import autoaugment  # noqa: E402
from ember_vision.transforms import functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

sys.path.pop(0)

H, W = 20, 24
START = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
END = [[2, 1], [W - 3, 3], [W - 1, H - 2], [1, H - 4]]
# name -> call on the functional module ``F`` (the same text runs in torchvision)
CALLS = {
    "invert": "F.invert(img)",
    "autocontrast": "F.autocontrast(img)",
    "equalize": "F.equalize(img)",
    "posterize": "F.posterize(img, 3)",
    "solarize": "F.solarize(img, 100)",
    "sharpness_low": "F.adjust_sharpness(img, 0.3)",
    "sharpness_high": "F.adjust_sharpness(img, 2.0)",
    "affine_nearest": "F.affine(img, 15.0, [2, -3], 1.1, [5.0, 8.0])",
    "affine_bilinear_fill": "F.affine(img, -30.0, [1, 2], 0.9, 10.0, F.InterpolationMode.BILINEAR, [10, 20, 30])",
    "affine_center": "F.affine(img, 45.0, [0, 0], 1.0, [0.0, 0.0], fill=7, center=[3, 4])",
    "perspective": f"F.perspective(img, {START}, {END})",
    "perspective_nearest_fill": f"F.perspective(img, {START}, {END}, F.InterpolationMode.NEAREST, 99)",
    "elastic": "F.elastic_transform(img, displacement)",
    "elastic_nearest_fill": "F.elastic_transform(img, displacement, F.InterpolationMode.NEAREST, [5.0, 6.0, 7.0])",
    "blur": "F.gaussian_blur(img, [5, 3], [1.0, 0.7])",
}
# AutoAugment's op table: (name, magnitude), each of torchvision's ops with both signs where signed
OPS = [("ShearX", 0.2), ("ShearY", -0.15), ("TranslateX", 5.0), ("TranslateY", -4.0), ("Rotate", 20.0),
       ("Rotate", -7.5), ("Brightness", 0.3), ("Color", -0.4), ("Contrast", 0.5), ("Sharpness", 0.6),
       ("Posterize", 4.0), ("Solarize", 128.0), ("AutoContrast", 0.0), ("Equalize", 0.0), ("Invert", 0.0),
       ("Identity", 0.0)]
PIL_ONLY_SKIP = {"elastic", "elastic_nearest_fill", "blur"}  # PIL goes through a tensor: compared on tensors

_REFERENCE = """
import numpy as np
from PIL import Image
from torchvision.transforms import functional as F, autoaugment
from torchvision import transforms as T
d = {dir!r}
arr = np.load(d + "/img.npy")
displacement = torch.from_numpy(np.load(d + "/disp.npy"))
out = {{}}
def arr_of(y):
    return y.numpy() if isinstance(y, torch.Tensor) else np.asarray(y).transpose(2, 0, 1)
for kind, img in (("tensor", torch.from_numpy(arr)), ("pil", Image.fromarray(arr.transpose(1, 2, 0)))):
    for name, call in {calls!r}.items():
        if kind == "pil" and name in {pil_skip!r}:
            continue
        out[kind + ":" + name] = arr_of(eval(call))
    for op, m in {ops!r}:
        mode = F.InterpolationMode.BILINEAR if op == "Rotate" and m < 0 else F.InterpolationMode.NEAREST
        y = autoaugment._apply_op(img, op, m, interpolation=mode, fill=None if kind == "pil" else [1.0, 2.0, 3.0])
        out[kind + ":op:" + op + str(m)] = arr_of(y)
np.savez(d + "/out.npz", **out)
def space(s):
    return {{k: [v.tolist() if v.ndim else [float(v)], signed] for k, (v, signed) in s.items()}}
print(json.dumps({{
    "auto": space(T.AutoAugment()._augmentation_space(10, ({h}, {w}))),
    "rand": space(T.RandAugment()._augmentation_space(31, ({h}, {w}))),
    "trivial": space(T.TrivialAugmentWide()._augmentation_space(31)),
    "augmix": space(T.AugMix(all_ops=True)._augmentation_space(10, ({h}, {w}))),
    "augmix_some": space(T.AugMix(all_ops=False)._augmentation_space(10, ({h}, {w}))),
    "coeffs": F._get_perspective_coeffs({start!r}, {end!r}),
}}))
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("auto")
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 256, (3, H, W), dtype=np.uint8)
    arr[:, :3, :3] = 40  # a flat corner; values 40..255 elsewhere leave autocontrast something to stretch
    np.save(d / "img.npy", arr)
    np.save(d / "disp.npy", (rng.uniform(-0.15, 0.15, (1, H, W, 2))).astype(np.float32))
    meta = vision_reference.run(_REFERENCE.format(dir=str(d), calls=CALLS, ops=OPS, pil_skip=PIL_ONLY_SKIP, h=H,
                                                  w=W, start=START, end=END))
    return d, arr, dict(np.load(d / "out.npz")), meta


def _inputs(d, arr):
    return {"tensor": ember.from_numpy(arr.copy()), "pil": Image.fromarray(arr.transpose(1, 2, 0))}


def _as_array(y):
    return y.numpy() if isinstance(y, ember.Tensor) else np.asarray(y).transpose(2, 0, 1)


def _assert_close_pixels(got, want, key, tol: int = 0):
    """uint8 images equal (bilinear sampling: within ``tol`` of 255 where float rounding may tip a value)."""
    assert got.shape == want.shape and got.dtype == want.dtype, key
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert diff.max() <= tol, f"{key}: {int((diff > tol).sum())} values differ, max {diff.max()}"


def _check_call(reference, kind: str, name: str, device=None):
    d, arr, want, _ = reference
    img = _inputs(d, arr)[kind]
    if device is not None:
        img = img.to(device)
    displacement = ember.from_numpy(np.load(d / "disp.npy"))  # noqa: F841  (used by the call text)
    got = eval(CALLS[name])
    if device is not None:
        assert got.device.type == ember.device(device).type
        assert np.array_equal(img.cpu().numpy(), arr)  # the input is left as it was
        got = got.cpu()
    _assert_close_pixels(_as_array(got), want[f"{kind}:{name}"], f"{kind}:{name}", tol=1 if device else 0)


@pytest.mark.parametrize("name", list(CALLS))
def test_functional_op_matches_torchvision(reference, device, name):
    _check_call(reference, "tensor", name, device)


@pytest.mark.parametrize("name", [n for n in CALLS if n not in PIL_ONLY_SKIP])
def test_functional_op_on_pil_matches_torchvision(reference, name):
    _check_call(reference, "pil", name)


def _check_op(reference, kind: str, op: str, magnitude: float, device=None):
    d, arr, want, _ = reference
    img = _inputs(d, arr)[kind]
    if device is not None:
        img = img.to(device)
    mode = F.InterpolationMode.BILINEAR if op == "Rotate" and magnitude < 0 else F.InterpolationMode.NEAREST
    got = autoaugment._apply_op(img, op, magnitude, mode, None if kind == "pil" else [1.0, 2.0, 3.0])
    key = f"{kind}:op:{op}{magnitude}"
    _assert_close_pixels(_as_array(got.cpu() if device else got), want[key], key, tol=1 if device else 0)


@pytest.mark.parametrize("op,magnitude", OPS, ids=[f"{o}{m}" for o, m in OPS])
def test_augment_op_matches_torchvision(reference, device, op, magnitude):
    _check_op(reference, "tensor", op, magnitude, device)


@pytest.mark.parametrize("op,magnitude", OPS, ids=[f"{o}{m}" for o, m in OPS])
def test_augment_op_on_pil_matches_torchvision(reference, op, magnitude):
    _check_op(reference, "pil", op, magnitude)


def _space(s):
    return {k: [[float(x) for x in v], signed] for k, (v, signed) in s.items()}


def test_magnitude_tables_and_perspective_coefficients_match_torchvision(reference):
    *_, meta = reference

    def close(got, want):
        assert list(got) == list(want)  # the same ops in the same order (the draw indexes them)
        for k in want:
            assert got[k][1] == want[k][1], k
            np.testing.assert_allclose(got[k][0], [float(x) for x in want[k][0]], rtol=1e-6, atol=1e-6, err_msg=k)

    space = autoaugment.augmentation_space
    close(_space(space(10, (H, W), identity=False, invert=True)), meta["auto"])
    close(_space(space(31, (H, W))), meta["rand"])
    close(_space(space(31, (H, W), wide=True)), meta["trivial"])
    close(_space(T.AugMix(all_ops=True)._augmentation_space(10, (H, W))), meta["augmix"])
    close(_space(T.AugMix(all_ops=False)._augmentation_space(10, (H, W))), meta["augmix_some"])
    np.testing.assert_allclose(F._get_perspective_coeffs(START, END), meta["coeffs"], rtol=1e-5, atol=1e-6)


def _seeded(fn, seed=3):
    ember.manual_seed(seed)
    return fn()


@pytest.mark.parametrize("make", [lambda: T.AutoAugment(), lambda: T.AutoAugment(T.AutoAugmentPolicy.SVHN),
                                  lambda: T.RandAugment(num_ops=3, magnitude=20), lambda: T.TrivialAugmentWide()],
                         ids=["auto-imagenet", "auto-svhn", "rand", "trivial"])
def test_policy_applies_the_ops_it_draws(make):
    img = ember.from_numpy(np.random.default_rng(1).integers(0, 256, (2, 3, H, W), dtype=np.uint8))
    t = make()
    for seed in range(6):
        got = _seeded(lambda: t(img), seed)
        steps = _seeded(lambda: t.draw(H, W), seed)
        want = img
        for op, m in steps:
            want = autoaugment._apply_op(want, op, m, t.interpolation, None)
        assert ember.equal(got, want)
        assert got.dtype == ember.uint8 and got.shape == img.shape
    assert ember.equal(_seeded(lambda: t(img)), _seeded(lambda: t(img)))  # reproducible under a seed


def test_augmix_mixes_its_chains_with_the_drawn_weights(monkeypatch):
    img = ember.from_numpy(np.random.default_rng(2).integers(0, 256, (3, H, W), dtype=np.uint8))
    t = T.AugMix(mixture_width=2, chain_depth=1)
    weights = iter([ember.tensor([[1.0, 0.0]]), ember.tensor([[0.5, 0.5]])])
    monkeypatch.setattr(t, "_sample_dirichlet", lambda params: next(weights))
    assert ember.equal(t(img), img)  # all weight on the original
    pil = T.AugMix()(Image.fromarray(img.numpy().transpose(1, 2, 0)))
    assert isinstance(pil, Image.Image) and pil.size == (W, H)
    batch = ember.stack([img, img.flip(-1)])
    out = T.AugMix(severity=5, mixture_width=4)(batch)
    assert out.dtype == ember.uint8 and out.shape == batch.shape


def test_random_perspective_and_elastic_apply_their_params():
    img = ember.from_numpy(np.random.default_rng(3).integers(0, 256, (3, H, W), dtype=np.uint8))
    t = T.RandomPerspective(distortion_scale=0.6, p=1.0, fill=9)
    got = _seeded(lambda: t(img))

    def want():
        ember.rand(1)  # the coin
        start, end = T.RandomPerspective.get_params(W, H, 0.6)
        assert start == START[:1] + [[W - 1, 0], [W - 1, H - 1], [0, H - 1]]
        assert all(0 <= x < W and 0 <= y < H for x, y in end)
        return F.perspective(img, start, end, fill=[9.0] * 3)

    assert ember.equal(got, _seeded(want))
    assert ember.equal(T.RandomPerspective(p=0.0)(img), img)
    e = T.ElasticTransform(alpha=30.0, sigma=3.0)
    disp = _seeded(lambda: T.ElasticTransform.get_params([30.0, 30.0], [3.0, 3.0], [H, W]))
    assert tuple(disp.shape) == (1, H, W, 2) and float(disp.abs().max()) < 30.0 / min(H, W)
    assert ember.equal(_seeded(lambda: e(img)), F.elastic_transform(img, disp, fill=[0.0]))


def test_bad_input_raises_like_torchvision():
    img = ember.zeros(3, 8, 8)
    with pytest.raises(TypeError, match="Only torch.uint8"):
        F.posterize(img, 2)
    with pytest.raises(TypeError, match="Only torch.uint8"):
        F.equalize(img)
    with pytest.raises(ValueError, match="sharpness_factor|not non-negative"):
        F.adjust_sharpness(img, -1.0)
    with pytest.raises(ValueError, match="exactly four corners"):
        F.perspective(img, START[:3], END)
    with pytest.raises(ValueError, match="severity must be between"):
        T.AugMix(severity=11)
    with pytest.raises(ValueError, match="not recognized"):
        autoaugment._apply_op(img, "Blur", 1.0, F.InterpolationMode.NEAREST, None)
    with pytest.raises(TypeError, match="alpha should be"):
        T.ElasticTransform(alpha=5)
    assert ember.equal(img, ember.zeros(3, 8, 8))


# -- transforms.v2: the same draws as v1 for the same seed, carried to every image (masks: nearest)
def _v2():
    from ember_vision import tv_tensors
    from ember_vision.transforms import v2
    return v2, tv_tensors


@pytest.mark.parametrize("name,args", [("AutoAugment", ()), ("RandAugment", (3, 15)), ("TrivialAugmentWide", ()),
                                       ("RandomErasing", (1.0,)), ("RandomPerspective", (0.4, 1.0))])
def test_v2_transform_draws_and_applies_like_v1(name, args):
    v2, tv_tensors = _v2()
    arr = np.random.default_rng(4).integers(0, 256, (3, H, W), dtype=np.uint8)
    image = tv_tensors.Image(ember.from_numpy(arr))
    for seed in range(4):
        got = _seeded(lambda: getattr(v2, name)(*args)(image), seed)
        want = _seeded(lambda: getattr(T, name)(*args)(ember.from_numpy(arr)), seed)
        assert isinstance(got, tv_tensors.Image)
        assert np.array_equal(got.as_subclass(ember.Tensor).numpy(), want.numpy()), seed


def test_v2_geometry_moves_masks_with_images_and_refuses_boxes():
    v2, tv_tensors = _v2()
    arr = np.random.default_rng(5).integers(0, 256, (3, H, W), dtype=np.uint8)
    image, mask = tv_tensors.Image(ember.from_numpy(arr)), tv_tensors.Mask(ember.from_numpy(arr[0] > 128))
    image_out, mask_out = _seeded(lambda: v2.ElasticTransform(alpha=20.0, sigma=2.0)(image, mask))
    disp = _seeded(lambda: T.ElasticTransform.get_params([20.0, 20.0], [2.0, 2.0], [H, W]))
    assert np.array_equal(image_out.as_subclass(ember.Tensor).numpy(),
                          F.elastic_transform(ember.from_numpy(arr), disp, fill=[0.0] * 3).numpy())
    want_mask = F.elastic_transform(mask.as_subclass(ember.Tensor)[None], disp, F.InterpolationMode.NEAREST,
                                    fill=[0.0])[0]
    assert isinstance(mask_out, tv_tensors.Mask) and np.array_equal(mask_out.numpy(), want_mask.numpy())
    boxes = tv_tensors.BoundingBoxes(ember.tensor([[1.0, 2.0, 8.0, 9.0]]), format="XYXY", canvas_size=(H, W))
    with pytest.raises(TypeError, match="does not support BoundingBoxes"):
        v2.AutoAugment()(image, boxes)
    with pytest.raises(NotImplementedError, match="bounding boxes"):
        v2.RandomPerspective(p=1.0)(image, boxes)
    assert v2.functional.equalize(boxes) is boxes  # colour ops leave boxes alone
    assert isinstance(v2.functional.posterize(image, 2), tv_tensors.Image)
    assert isinstance(v2.AugMix()(image), tv_tensors.Image)
