"""The stereo-matching datasets on small files in torchvision's layouts, written by each test: the same items as
torchvision 0.28 reads from the same files (reference process), and torchvision's errors."""
import json
import os
import sys

import numpy as np
import pytest

pytest.importorskip("ember_vision")
PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from ember_vision import datasets  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

RNG = np.random.default_rng(0)
W, H = 5, 4


def image(path, mode="RGB", dtype=np.uint8, high=256, low=1):
    """A small random image at ``path`` (parents made), values in ``[low, high)``."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shape = (H, W, 3) if mode == "RGB" else (H, W)
    Image.fromarray(RNG.integers(low, high, shape).astype(dtype)).save(path)


def pfm(path, channels=1):
    """A small PFM file (little-endian, bottom row first) with some negative and infinite values."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = RNG.normal(size=(H, W, channels)).astype("<f4") * 8
    data[0, 0] = np.inf
    with open(path, "wb") as f:
        f.write(b"Pf\n" if channels == 1 else b"PF\n")
        f.write(f"{W} {H}\n-1.0\n".encode())
        f.write(data.tobytes())


def _write_layouts(root):
    for i in ("000000", "000001"):
        for d in ("colored_0", "colored_1"):
            image(f"{root}/Kitti2012/training/{d}/{i}_10.png")
        image(f"{root}/Kitti2012/training/disp_noc/{i}.png", "I;16", np.uint16, 60000)
        for d in ("image_2", "image_3"):
            image(f"{root}/Kitti2015/training/{d}/{i}.png")
            image(f"{root}/Kitti2015/testing/{d}/{i}.png")
        for d in ("disp_occ_0", "disp_occ_1"):
            image(f"{root}/Kitti2015/training/{d}/{i}.png", "I;16", np.uint16, 60000)
    for scene in ("a", "b"):
        base = f"{root}/carla-highres/trainingF/{scene}"
        image(f"{base}/im0.png"), image(f"{base}/im1.png"), pfm(f"{base}/disp0GT.pfm"), pfm(f"{base}/disp1GT.pfm")
    for scene in ("Adirondack-perfect", "Adirondack-imperfect", "Piano-perfect"):
        base = f"{root}/Middlebury2014/train/{scene}"
        image(f"{base}/im0.png"), image(f"{base}/im1.png"), pfm(f"{base}/disp0.pfm"), pfm(f"{base}/disp1.pfm")
    image(f"{root}/Middlebury2014/test/Plants/im0.png"), image(f"{root}/Middlebury2014/test/Plants/im1.png")
    for part in ("shapenet", "reflective", "tree", "hole"):
        for side in ("left", "right"):
            image(f"{root}/CREStereo/{part}/x_{side}.jpg")
            image(f"{root}/CREStereo/{part}/x_{side}.disp.png", "I;16", np.uint16, 3000)
    for base in (f"{root}/FallingThings/single/obj/scene", f"{root}/FallingThings/mixed/scene"):
        for side in ("left", "right"):
            image(f"{base}/000.{side}.jpg"), image(f"{base}/000.{side}.depth.png", "I;16", np.uint16, 9000)
        with open(f"{base}/_camera_settings.json", "w") as f:
            json.dump({"camera_settings": [{"intrinsic_settings": {"fx": 768.2}}]}, f)
    for pass_dir in ("frames_cleanpass", "frames_finalpass", "disparity"):
        for side in ("left", "right"):
            base = f"{root}/SceneFlow/Monkaa/{pass_dir}/scene/{side}"
            pfm(f"{base}/0001.pfm", 3) if pass_dir == "disparity" else image(f"{base}/0001.png")
    for kind in ("final_left", "final_right", "clean_left", "clean_right", "disparities"):
        image(f"{root}/Sintel/training/{kind}/alley/frame_0001.png")
    for kind in ("occlusions", "outofframe"):
        image(f"{root}/Sintel/training/{kind}/alley/frame_0001.png", "L", high=2, low=0)
    for name in ("left", "right"):
        image(f"{root}/InStereo2k/train/s1/{name}.png")
        image(f"{root}/InStereo2k/train/s1/{name}_disp.png", "I;16", np.uint16, 60000)
    for scene in ("delivery", "forest"):
        for name in ("im0", "im1"):
            image(f"{root}/ETH3D/two_view_training/{scene}/{name}.png")
        pfm(f"{root}/ETH3D/two_view_training_gt/{scene}/disp0GT.pfm")
        image(f"{root}/ETH3D/two_view_training_gt/{scene}/mask0nocc.png", "L", high=2, low=0)


_SUMMARY = r"""
import json
import numpy as np
from PIL import Image

def value(x):
    if isinstance(x, Image.Image):
        return ["image", x.mode, list(x.size), int(np.asarray(x, dtype=np.int64).sum())]
    if isinstance(x, np.ndarray):
        finite = np.where(np.isfinite(x), x, -1).astype(np.float64)
        return ["array", str(x.dtype), list(x.shape), round(float(finite.sum()), 3)]
    return repr(x)

def summary(datasets, root):
    made = {
        "Kitti2012Stereo": lambda: datasets.Kitti2012Stereo(root),
        "Kitti2015Stereo": lambda: datasets.Kitti2015Stereo(root),
        "Kitti2015Stereo-test": lambda: datasets.Kitti2015Stereo(root, split="test"),
        "CarlaStereo": lambda: datasets.CarlaStereo(root),
        "Middlebury2014Stereo": lambda: datasets.Middlebury2014Stereo(root, calibration="both"),
        "Middlebury2014Stereo-test": lambda: datasets.Middlebury2014Stereo(root, split="test", calibration=None),
        "CREStereo": lambda: datasets.CREStereo(root),
        "FallingThingsStereo": lambda: datasets.FallingThingsStereo(root, variant="both"),
        "SceneFlowStereo": lambda: datasets.SceneFlowStereo(root, variant="Monkaa", pass_name="both"),
        "SintelStereo": lambda: datasets.SintelStereo(root, pass_name="both"),
        "InStereo2k": lambda: datasets.InStereo2k(root),
        "ETH3DStereo": lambda: datasets.ETH3DStereo(root),
    }
    return {name: [[value(v) for v in item] for item in make()] for name, make in made.items()}
"""


def test_stereo_datasets_read_as_torchvision_reads(tmp_path):
    _write_layouts(tmp_path)
    reference = vision_reference.run(_SUMMARY + f"\nimport torchvision.datasets as D\n"
                                     f"print(json.dumps(summary(D, {str(tmp_path)!r})))\n")
    scope: dict = {}
    exec(_SUMMARY, scope)
    ours = json.loads(json.dumps(scope["summary"](datasets, str(tmp_path))))
    assert sorted(ours) == sorted(reference)
    for name in reference:
        assert ours[name] == reference[name], name
    assert len(ours["Middlebury2014Stereo"]) == 3 and len(ours["SintelStereo"]) == 2


def test_items_transforms_and_errors(tmp_path):
    _write_layouts(tmp_path)
    left, right, disparity, mask = datasets.Middlebury2014Stereo(str(tmp_path))[0]
    assert left.mode == "RGB" and disparity.shape == (1, H, W) and mask.shape == (H, W) and mask.dtype == bool
    assert disparity[0, H - 1, 0] == 0 and not mask[H - 1, 0]  # the infinite value (bottom row first in the file)
    assert len(datasets.InStereo2k(tmp_path)[0]) == 3  # no mask of its own: a 3-tuple

    def add_mask(images, disparities, masks):
        return images, disparities, (np.ones((H, W), bool), None)

    assert datasets.CarlaStereo(tmp_path, transforms=add_mask)[1][3].all()
    with pytest.raises(FileNotFoundError, match="Could not find any files matching the patterns: .*Kitti2012"):
        datasets.Kitti2012Stereo(tmp_path, split="test")
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        datasets.ETH3DStereo(tmp_path, split="val")
    with pytest.raises(ValueError, match="Split 'test' has only no calibration settings"):
        datasets.Middlebury2014Stereo(tmp_path, split="test")
    with pytest.raises(FileNotFoundError, match="The additional directory was not found"):
        datasets.Middlebury2014Stereo(tmp_path, split="additional")
    os.remove(tmp_path / "InStereo2k" / "train" / "s1" / "right.png")
    with pytest.raises(FileNotFoundError, match="right.png"):
        datasets.InStereo2k(tmp_path)
