"""Stereo-matching datasets in torchvision's layouts: Kitti2012Stereo, Kitti2015Stereo, CarlaStereo,
Middlebury2014Stereo, CREStereo, FallingThingsStereo, SceneFlowStereo, SintelStereo, InStereo2k, ETH3DStereo.

An item is ``(left, right, disparity)`` or, for datasets that store which pixels are valid (or whose
``transforms`` make a mask), ``(left, right, disparity, valid_mask)``: RGB PIL images, the left view's
disparity as a ``(1, H, W)`` array (None on test splits without ground truth) and an ``(H, W)`` bool mask.
``transforms`` takes and returns ``(images, disparities, valid_masks)``, each a (left, right) pair.
"""
from __future__ import annotations

import json
import os
import random
import shutil
from glob import glob
from pathlib import Path

import numpy as np
from PIL import Image

from ._optical_flow import _read_pfm
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["CarlaStereo", "CREStereo", "ETH3DStereo", "FallingThingsStereo", "InStereo2k", "Kitti2012Stereo",
           "Kitti2015Stereo", "Middlebury2014Stereo", "SceneFlowStereo", "SintelStereo"]


def _pfm_disparity(file_path) -> np.ndarray:
    """The first channel of a PFM file, made non-negative: ``(1, H, W)`` float32."""
    return np.abs(_read_pfm(file_path, slice_channels=1))


def _pixels(file_path, dtype=None) -> np.ndarray:
    """An image file's pixels as an array (the file closed)."""
    with Image.open(file_path) as img:
        return np.asarray(img, dtype=dtype)


def _png_disparity(file_path, scale: float, dtype=None) -> np.ndarray:
    """A disparity PNG's values divided by ``scale``, as ``(1, H, W)``."""
    return _pixels(file_path, dtype)[None] / scale


class StereoMatchingDataset(VisionDataset):
    """Pairs of views (``_images``) with their disparity files (``_disparities``, a (left, right) pair per item
    whose entries may be None); subclasses give ``_read_disparity(path) -> (disparity, valid_mask)``."""

    _has_built_in_disparity_mask = False

    def __init__(self, root, transforms=None):
        super().__init__(root=root)
        self.transforms = transforms
        self._images: list = []
        self._disparities: list = []

    def _read_img(self, file_path):
        with Image.open(file_path) as img:
            return img.convert("RGB")

    @staticmethod
    def _scan_pairs(left_pattern: str, right_pattern: str | None = None) -> list:
        """The files matching ``left_pattern`` paired in sorted order with those matching ``right_pattern``
        (None for each when it is not given)."""
        left = sorted(glob(left_pattern))
        right = sorted(glob(right_pattern)) if right_pattern else [None] * len(left)
        if not left:
            raise FileNotFoundError(f"Could not find any files matching the patterns: {left_pattern}")
        if not right:
            raise FileNotFoundError(f"Could not find any files matching the patterns: {right_pattern}")
        if len(left) != len(right):
            raise ValueError(f"Found {len(left)} left files but {len(right)} right files using:\n "
                             f"left pattern: {left_pattern}\nright pattern: {right_pattern}\n")
        return list(zip(left, right))

    def _read_disparity(self, file_path):
        raise NotImplementedError

    def _read_or_none(self, file_path):
        return (None, None) if file_path is None else self._read_disparity(file_path)

    def __getitem__(self, index: int):
        images = tuple(self._read_img(p) for p in self._images[index])
        read = [self._read_or_none(p) for p in self._disparities[index]]
        disparities, masks = tuple(r[0] for r in read), tuple(r[1] for r in read)
        if self.transforms is not None:
            images, disparities, masks = self.transforms(images, disparities, masks)
        if self._has_built_in_disparity_mask or masks[0] is not None:
            return images[0], images[1], disparities[0], masks[0]
        return images[0], images[1], disparities[0]

    def __len__(self) -> int:
        return len(self._images)


class CarlaStereo(StereoMatchingDataset):
    """Carla scenes of CREStereo: ``root/carla-highres/trainingF/<scene>/im{0,1}.png`` with
    ``disp{0,1}GT.pfm``."""

    def __init__(self, root, transforms=None):
        super().__init__(root, transforms)
        base = Path(root) / "carla-highres" / "trainingF" / "*"
        self._images = self._scan_pairs(str(base / "im0.png"), str(base / "im1.png"))
        self._disparities = self._scan_pairs(str(base / "disp0GT.pfm"), str(base / "disp1GT.pfm"))

    def _read_disparity(self, file_path):
        return _pfm_disparity(file_path), None


class _Kitti(StereoMatchingDataset):
    """KITTI stereo: left/right image folders and, for ``split="train"``, 16-bit disparity PNGs (value / 256)."""

    _has_built_in_disparity_mask = True
    _year, _images_glob, _disparity_dirs = "", ("", ""), ("", None)

    def __init__(self, root, split: str = "train", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = Path(root) / f"Kitti{self._year}" / (split + "ing")
        self._images = self._scan_pairs(*(str(base / g) for g in self._images_glob))
        if split == "train":
            self._disparities = self._scan_pairs(*(str(base / d / "*.png") if d else None
                                                   for d in self._disparity_dirs))
        else:
            self._disparities = [(None, None)] * len(self._images)

    def _read_disparity(self, file_path):
        return _png_disparity(file_path, 256.0), None


class Kitti2012Stereo(_Kitti):
    """KITTI 2012 stereo: ``root/Kitti2012/{training,testing}/colored_{0,1}/*_10.png``, left disparities in
    ``training/disp_noc``; ``split`` train or test."""

    _year, _images_glob, _disparity_dirs = "2012", ("colored_0/*_10.png", "colored_1/*_10.png"), ("disp_noc", None)


class Kitti2015Stereo(_Kitti):
    """KITTI 2015 stereo: ``root/Kitti2015/{training,testing}/image_{2,3}/*.png``, disparities in
    ``training/disp_occ_{0,1}``; ``split`` train or test."""

    _year, _images_glob, _disparity_dirs = "2015", ("image_2/*.png", "image_3/*.png"), ("disp_occ_0", "disp_occ_1")


class Middlebury2014Stereo(StereoMatchingDataset):
    """Middlebury 2014: ``root/Middlebury2014/<split>/<scene>-<calibration>/im{0,1}.png`` with
    ``disp{0,1}.pfm`` (test scenes have no calibration suffix and no disparities).  ``calibration`` is
    perfect, imperfect or both (None for the test split); ``use_ambient_views`` draws the right view among
    ``im1.png``, ``im1E.png`` and ``im1L.png``; ``download`` fetches the split's scenes."""

    splits = {
        "train": ["Adirondack", "Jadeplant", "Motorcycle", "Piano", "Pipes", "Playroom", "Playtable", "Recycle",
                  "Shelves", "Vintage"],
        "additional": ["Backpack", "Bicycle1", "Cable", "Classroom1", "Couch", "Flowers", "Mask", "Shopvac",
                       "Sticks", "Storage", "Sword1", "Sword2", "Umbrella"],
        "test": ["Plants", "Classroom2E", "Classroom2", "Australia", "DjembeL", "CrusadeP", "Crusade", "Hoops",
                 "Bicycle2", "Staircase", "Newkuba", "AustraliaP", "Djembe", "Livingroom", "Computer"],
    }
    _has_built_in_disparity_mask = True
    _SUFFIXES = {None: [""], "perfect": ["-perfect"], "imperfect": ["-imperfect"], "both": ["-perfect", "-imperfect"]}

    def __init__(self, root, split: str = "train", calibration: str | None = "perfect",
                 use_ambient_views: bool = False, transforms=None, download: bool = False):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test", "additional"))
        self.split = split
        if calibration:
            verify_str_arg(calibration, "calibration", valid_values=("perfect", "imperfect", "both"))
            if split == "test":
                raise ValueError("Split 'test' has only no calibration settings, please set `calibration=None`.")
        elif split != "test":
            raise ValueError(f"Split '{split}' has calibration settings, however None was provided as an argument."
                             f"\nSetting calibration to 'perfect' for split '{split}'. Available calibration "
                             "settings are: 'perfect', 'imperfect', 'both'.")
        if download:
            self._download_dataset(root)
        base = Path(root) / "Middlebury2014" / split
        if not base.exists():
            raise FileNotFoundError(f"The {split} directory was not found in the provided root directory")
        if not any(scene.startswith(s) for scene in os.listdir(base) for s in self.splits[split]):
            raise FileNotFoundError(f"Provided root folder does not contain any scenes from the {split} split.")
        for suffix in self._SUFFIXES[calibration]:
            scenes = base / ("*" + suffix)
            self._images += self._scan_pairs(str(scenes / "im0.png"), str(scenes / "im1.png"))
            if split == "test":
                self._disparities = [(None, None)] * len(self._images)
            else:
                self._disparities += self._scan_pairs(str(scenes / "disp0.pfm"), str(scenes / "disp1.pfm"))
        self.use_ambient_views = use_ambient_views

    def _read_img(self, file_path):
        path = Path(file_path)
        if path.name == "im1.png" and self.use_ambient_views:
            views = [p for p in (path.parent / "im1E.png", path.parent / "im1L.png") if p.exists()]
            path = random.choice(views + [path])
        return super()._read_img(path)

    def _read_disparity(self, file_path):
        disparity = _pfm_disparity(file_path)
        disparity[disparity == np.inf] = 0  # infinite disparities are unknown
        return disparity, (disparity > 0).squeeze(0)

    def _download_dataset(self, root) -> None:
        base = Path(root) / "Middlebury2014"
        if self.split != "test":
            split_root = base / self.split
            for scene in self.splits[self.split]:
                for calibration in ("perfect", "imperfect"):
                    name = f"{scene}-{calibration}"
                    if not (split_root / name).exists():
                        _fetch_zip(f"https://vision.middlebury.edu/stereo/data/scenes2014/zip/{name}.zip",
                                   split_root, f"{name}.zip")
            return
        os.makedirs(base / "test", exist_ok=True)
        if all(s in os.listdir(base / "test") for s in self.splits["test"]):
            return
        _fetch_zip("https://vision.middlebury.edu/stereo/submit3/zip/MiddEval3-data-F.zip", base,
                   "MiddEval3-data-F.zip")
        test_scenes = base / "MiddEval3" / "testF"
        for scene in sorted(os.listdir(test_scenes)):
            if (test_scenes / scene).is_dir():
                shutil.move(str(test_scenes / scene), str(base / "test" / scene))
        shutil.rmtree(base / "MiddEval3")


def _fetch_zip(url: str, root: Path, filename: str) -> None:
    """Download ``url`` into ``root/filename``, extract it there and remove the archive."""
    download_and_extract_archive(url, str(root), filename=filename)
    os.remove(root / filename)


class CREStereo(StereoMatchingDataset):
    """CREStereo's synthetic set: ``root/CREStereo/{shapenet,reflective,tree,hole}/*_{left,right}.jpg`` with
    ``*_{left,right}.disp.png`` (value / 32)."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, transforms=None):
        super().__init__(root, transforms)
        for part in ("shapenet", "reflective", "tree", "hole"):
            base = Path(root) / "CREStereo" / part
            self._images += self._scan_pairs(str(base / "*_left.jpg"), str(base / "*_right.jpg"))
            self._disparities += self._scan_pairs(str(base / "*_left.disp.png"), str(base / "*_right.disp.png"))

    def _read_disparity(self, file_path):
        return _png_disparity(file_path, 32.0, np.float32), None


class FallingThingsStereo(StereoMatchingDataset):
    """NVIDIA's FallingThings: ``root/FallingThings/single/<object>/<scene>/*.{left,right}.jpg`` and
    ``mixed/<scene>/...`` with ``*.{left,right}.depth.png``; disparity from depth and the scene's
    ``_camera_settings.json`` focal length.  ``variant`` single, mixed or both."""

    def __init__(self, root, variant: str = "single", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(variant, "variant", valid_values=("single", "mixed", "both"))
        prefixes = {"single": Path("*") / "*", "mixed": Path("*")}
        for part in (("single", "mixed") if variant == "both" else (variant,)):
            base = Path(root) / "FallingThings" / part / prefixes[part]
            self._images += self._scan_pairs(str(base / "*.left.jpg"), str(base / "*.right.jpg"))
            self._disparities += self._scan_pairs(str(base / "*.left.depth.png"), str(base / "*.right.depth.png"))

    def _read_disparity(self, file_path):
        depth = _pixels(file_path)
        with open(Path(file_path).parent / "_camera_settings.json") as f:
            focal = json.load(f)["camera_settings"][0]["intrinsic_settings"]["fx"]
        baseline_cm, pixels_per_cm = 6, 100  # depth = baseline * focal / (disparity * pixel constant)
        return ((baseline_cm * focal * pixels_per_cm) / depth.astype(np.float32))[None], None


class SceneFlowStereo(StereoMatchingDataset):
    """The Scene Flow sets (FlyingThings3D, Monkaa, Driving):
    ``root/SceneFlow/<variant>/frames_{clean,final}pass/<scene dirs>/{left,right}/*.png`` with
    ``disparity/<scene dirs>/{left,right}/*.pfm``; ``pass_name`` clean, final or both."""

    _SCENE_DIRS = {"Monkaa": Path("*"), "FlyingThings3D": Path("*") / "*" / "*", "Driving": Path("*") / "*" / "*"}

    def __init__(self, root, variant: str = "FlyingThings3D", pass_name: str = "clean", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(variant, "variant", valid_values=("FlyingThings3D", "Driving", "Monkaa"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        base = Path(root) / "SceneFlow" / variant
        scenes = self._SCENE_DIRS[variant]
        for name in (("clean", "final") if pass_name == "both" else (pass_name,)):
            frames = base / f"frames_{name}pass" / scenes
            self._images += self._scan_pairs(str(frames / "left" / "*.png"), str(frames / "right" / "*.png"))
            disparity = base / "disparity" / scenes
            self._disparities += self._scan_pairs(str(disparity / "left" / "*.pfm"),
                                                  str(disparity / "right" / "*.pfm"))

    def _read_disparity(self, file_path):
        return _pfm_disparity(file_path), None


class SintelStereo(StereoMatchingDataset):
    """MPI Sintel stereo: ``root/Sintel/training/{final,clean}_{left,right}/<scene>/*.png``, left disparities
    (RGB-encoded) in ``training/disparities`` and the valid mask from ``occlusions`` and ``outofframe``;
    ``pass_name`` final, clean or both."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, pass_name: str = "final", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(pass_name, "pass_name", valid_values=("final", "clean", "both"))
        base = Path(root) / "Sintel" / "training"
        for name in (("final", "clean") if pass_name == "both" else (pass_name,)):
            self._images += self._scan_pairs(str(base / f"{name}_left" / "*" / "*.png"),
                                             str(base / f"{name}_right" / "*" / "*.png"))
            self._disparities += self._scan_pairs(str(base / "disparities" / "*" / "*.png"), None)

    @staticmethod
    def _mask_paths(file_path) -> tuple:
        path = Path(file_path)
        training = path.parent.parent.parent
        found = tuple(str(training / kind / path.parent.name / path.name) for kind in ("occlusions", "outofframe"))
        for what, p in zip(("Occlusion mask", "Out of frame mask"), found):
            if not os.path.exists(p):
                raise FileNotFoundError(f"{what} {p} does not exist")
        return found

    def _read_disparity(self, file_path):
        rgb = _pixels(file_path, np.float32)
        disparity = rgb[..., 0] * 4 + rgb[..., 1] / 2 ** 6 + rgb[..., 2] / 2 ** 14  # Sintel's README encoding
        occluded, out_of_frame = (_pixels(p) for p in self._mask_paths(file_path))
        return disparity[None], (occluded == 0) & (out_of_frame == 0)


class InStereo2k(StereoMatchingDataset):
    """InStereo2k: ``root/InStereo2k/{train,test}/<scene>/{left,right}.png`` with ``{left,right}_disp.png``
    (value / 1024)."""

    def __init__(self, root, split: str = "train", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        scenes = Path(root) / "InStereo2k" / split / "*"
        self._images = self._scan_pairs(str(scenes / "left.png"), str(scenes / "right.png"))
        self._disparities = self._scan_pairs(str(scenes / "left_disp.png"), str(scenes / "right_disp.png"))

    def _read_disparity(self, file_path):
        return _png_disparity(file_path, 1024.0, np.float32), None


class ETH3DStereo(StereoMatchingDataset):
    """ETH3D low-res two-view: ``root/ETH3D/two_view_training/<scene>/im{0,1}.png`` (the test split in
    ``two_view_test``), left disparities ``two_view_training_gt/<scene>/disp0GT.pfm`` with ``mask0nocc.png``."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, split: str = "train", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = Path(root) / "ETH3D"
        scenes = base / ("two_view_training" if split == "train" else "two_view_test") / "*"
        self._images = self._scan_pairs(str(scenes / "im0.png"), str(scenes / "im1.png"))
        if split == "test":
            self._disparities = [(None, None)] * len(self._images)
        else:
            self._disparities = self._scan_pairs(str(base / "two_view_training_gt" / "*" / "disp0GT.pfm"), None)

    def _read_disparity(self, file_path):
        mask = _pixels(Path(file_path).parent / "mask0nocc.png").astype(bool)
        return _pfm_disparity(file_path), mask
