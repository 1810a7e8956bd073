"""Optical-flow datasets: FlyingChairs, FlyingThings3D, Sintel, KittiFlow and HD1K, with their flow readers
(``.flo`` and ``.pfm`` files, KITTI's 16-bit PNGs)."""
from __future__ import annotations

import itertools
import os
import struct
from glob import glob

import numpy as np

from ember.utils.data import ConcatDataset

from .folder import default_loader
from .utils import verify_str_arg
from .vision import VisionDataset


class FlowDataset(VisionDataset):
    """Pairs of frames (``_image_list``) with their flow files (``_flow_list``, empty where a split has no
    ground truth).  An item is ``(img1, img2, flow)`` (flow a ``(2, H, W)`` float32 array), or with
    ``valid_flow_mask`` (``(H, W)`` bool) for datasets that store one; ``transforms`` takes and returns all four."""

    _has_builtin_flow_mask = False

    def __init__(self, root, transforms=None, loader=default_loader):
        super().__init__(root=root)
        self.transforms = transforms
        self._flow_list: list = []
        self._image_list: list = []
        self._loader = loader

    def _read_img(self, file_name: str):
        return self._loader(file_name)

    def _read_flow(self, file_name: str):
        raise NotImplementedError

    def __getitem__(self, index: int):
        img1 = self._read_img(self._image_list[index][0])
        img2 = self._read_img(self._image_list[index][1])
        flow = valid = None
        if self._flow_list:
            flow = self._read_flow(self._flow_list[index])
            if self._has_builtin_flow_mask:
                flow, valid = flow
        if self.transforms is not None:
            img1, img2, flow, valid = self.transforms(img1, img2, flow, valid)
        if self._has_builtin_flow_mask or valid is not None:
            return img1, img2, flow, valid
        return img1, img2, flow

    def __len__(self) -> int:
        return len(self._image_list)

    def __rmul__(self, v: int) -> ConcatDataset:
        return ConcatDataset([self] * v)


class Sintel(FlowDataset):
    """MPI Sintel: ``root/Sintel/{training,testing}/<pass>/<scene>/*.png``, flow in ``training/flow/<scene>``;
    ``pass_name`` clean, final or both."""

    def __init__(self, root, split: str = "train", pass_name: str = "clean", transforms=None,
                 loader=default_loader):
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        base = os.path.join(self.root, "Sintel")
        split_dir = "training" if split == "train" else "testing"
        for name in (("clean", "final") if pass_name == "both" else (pass_name,)):
            image_root = os.path.join(base, split_dir, name)
            for scene in sorted(os.listdir(image_root)):
                frames = sorted(glob(os.path.join(image_root, scene, "*.png")))
                self._image_list += [[a, b] for a, b in zip(frames, frames[1:])]
                if split == "train":
                    self._flow_list += sorted(glob(os.path.join(base, "training", "flow", scene, "*.flo")))

    def _read_flow(self, file_name: str):
        return _read_flo(file_name)


class KittiFlow(FlowDataset):
    """KITTI 2015 flow: ``root/KittiFlow/{training,testing}/image_2/*_1{0,1}.png``, flow and its valid mask in
    ``training/flow_occ/*_10.png``."""

    _has_builtin_flow_mask = True

    def __init__(self, root, split: str = "train", transforms=None, loader=default_loader):
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = os.path.join(self.root, "KittiFlow", split + "ing")
        images1 = sorted(glob(os.path.join(base, "image_2", "*_10.png")))
        images2 = sorted(glob(os.path.join(base, "image_2", "*_11.png")))
        if not images1 or not images2:
            raise FileNotFoundError(f"Could not find the Kitti flow images in {os.path.join(base, 'image_2')}. "
                                    "Please make sure the directory structure is correct.")
        self._image_list = [[a, b] for a, b in zip(images1, images2)]
        if split == "train":
            self._flow_list = sorted(glob(os.path.join(base, "flow_occ", "*_10.png")))

    def _read_flow(self, file_name: str):
        return _read_16bits_png_with_flow_and_valid_mask(file_name)


class FlyingChairs(FlowDataset):
    """FlyingChairs: ``root/FlyingChairs/data/<n>_img{1,2}.ppm`` and ``<n>_flow.flo``, split by
    ``FlyingChairs_train_val.txt`` (1: train, 2: val)."""

    def __init__(self, root, split: str = "train", transforms=None):
        super().__init__(root=root, transforms=transforms)
        verify_str_arg(split, "split", valid_values=("train", "val"))
        base = os.path.join(self.root, "FlyingChairs")
        images = sorted(glob(os.path.join(base, "data", "*.ppm")))
        flows = sorted(glob(os.path.join(base, "data", "*.flo")))
        split_file = os.path.join(base, "FlyingChairs_train_val.txt")
        if not os.path.exists(split_file):
            raise FileNotFoundError(f"The FlyingChairs_train_val.txt file was not found ({split_file}) - please "
                                    "download it from the dataset page.")
        split_list = np.loadtxt(split_file, dtype=np.int32).reshape(-1)
        wanted = 1 if split == "train" else 2
        for i, flow in enumerate(flows):
            if split_list[i] == wanted:
                self._flow_list.append(flow)
                self._image_list.append([images[2 * i], images[2 * i + 1]])

    def _read_flow(self, file_name: str):
        return _read_flo(file_name)


class FlyingThings3D(FlowDataset):
    """FlyingThings3D: ``root/FlyingThings3D/frames_{clean,final}pass/<SPLIT>/<set>/<scene>/<camera>/*.png`` with
    ``optical_flow/<SPLIT>/<set>/<scene>/into_{future,past}/<camera>/*.pfm``; both flow directions give pairs
    (a past-directed pair runs from the later frame to the earlier)."""

    def __init__(self, root, split: str = "train", pass_name: str = "clean", camera: str = "left",
                 transforms=None, loader=default_loader):
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        verify_str_arg(camera, "camera", valid_values=("left", "right", "both"))
        passes = {"clean": ["frames_cleanpass"], "final": ["frames_finalpass"],
                  "both": ["frames_cleanpass", "frames_finalpass"]}[pass_name]
        cameras = ["left", "right"] if camera == "both" else [camera]
        base = os.path.join(self.root, "FlyingThings3D")
        split = split.upper()
        for frames, cam, direction in itertools.product(passes, cameras, ("into_future", "into_past")):
            image_dirs = sorted(os.path.join(d, cam) for d in glob(os.path.join(base, frames, split, "*", "*")))
            flow_dirs = sorted(os.path.join(d, direction, cam)
                               for d in glob(os.path.join(base, "optical_flow", split, "*", "*")))
            if not image_dirs or not flow_dirs:
                raise FileNotFoundError(f"Could not find the FlyingThings3D flow images under {base}. Please make "
                                        "sure the directory structure is correct.")
            for image_dir, flow_dir in zip(image_dirs, flow_dirs):
                images = sorted(glob(os.path.join(image_dir, "*.png")))
                flows = sorted(glob(os.path.join(flow_dir, "*.pfm")))
                for i in range(len(flows) - 1):
                    if direction == "into_future":
                        self._image_list.append([images[i], images[i + 1]])
                        self._flow_list.append(flows[i])
                    else:
                        self._image_list.append([images[i + 1], images[i]])
                        self._flow_list.append(flows[i + 1])

    def _read_flow(self, file_name: str):
        return _read_pfm(file_name)


class HD1K(FlowDataset):
    """HD1K: ``root/hd1k/hd1k_input/image_2/<seq>_<frame>.png`` with flow and valid mask in
    ``hd1k_flow_gt/flow_occ``; the test split is ``hd1k_challenge/image_2/*1{0,1}.png``."""

    _has_builtin_flow_mask = True

    def __init__(self, root, split: str = "train", transforms=None, loader=default_loader):
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = os.path.join(self.root, "hd1k")
        if split == "train":
            for seq in range(36):
                flows = sorted(glob(os.path.join(base, "hd1k_flow_gt", "flow_occ", f"{seq:06d}_*.png")))
                images = sorted(glob(os.path.join(base, "hd1k_input", "image_2", f"{seq:06d}_*.png")))
                for i in range(len(flows) - 1):
                    self._flow_list.append(flows[i])
                    self._image_list.append([images[i], images[i + 1]])
        else:
            images1 = sorted(glob(os.path.join(base, "hd1k_challenge", "image_2", "*10.png")))
            images2 = sorted(glob(os.path.join(base, "hd1k_challenge", "image_2", "*11.png")))
            self._image_list = [[a, b] for a, b in zip(images1, images2)]
        if not self._image_list:
            raise FileNotFoundError(f"Could not find the HD1K images under {base}. Please make sure the directory "
                                    "structure is correct.")

    def _read_flow(self, file_name: str):
        return _read_16bits_png_with_flow_and_valid_mask(file_name)


def _read_flo(file_name: str) -> np.ndarray:
    """A Middlebury ``.flo`` file as a ``(2, H, W)`` float32 array."""
    with open(file_name, "rb") as f:
        if f.read(4) != b"PIEH":
            raise ValueError(f"Magic number incorrect. Invalid .flo file: {file_name}")
        w, h = struct.unpack("<ii", f.read(8))
        data = np.frombuffer(f.read(8 * w * h), "<f4")
    if data.size != 2 * w * h:
        raise ValueError(f"Truncated .flo file: {file_name} holds {data.size} of {2 * w * h} values")
    return data.reshape(h, w, 2).transpose(2, 0, 1).astype(np.float32)


def _read_pfm(file_name: str, slice_channels: int = 2) -> np.ndarray:
    """A PFM file (``PF``: 3 channels, ``Pf``: 1; bottom row first; a negative scale means little-endian) as a
    ``(C, H, W)`` float32 array of its first ``slice_channels`` channels, top row first."""
    with open(file_name, "rb") as f:
        header = f.readline().rstrip()
        if header not in (b"PF", b"Pf"):
            raise ValueError(f"Invalid PFM file: {file_name}")
        dims = f.readline().split()
        if len(dims) != 2 or not all(d.isdigit() for d in dims):
            raise ValueError(f"Malformed PFM header in {file_name}")
        w, h = (int(d) for d in dims)
        endian = "<" if float(f.readline().rstrip()) < 0 else ">"
        data = np.frombuffer(f.read(), endian + "f4")
    channels = 3 if header == b"PF" else 1
    return data.reshape(h, w, channels).transpose(2, 0, 1)[:slice_channels, ::-1].astype(np.float32)


def _read_16bits_png_with_flow_and_valid_mask(file_name: str):
    """KITTI's flow PNG (16-bit RGB: u, v, valid) as ``(flow (2, H, W) float32, valid (H, W) bool)``."""
    pixels = _read_png16(file_name).astype(np.float32)
    flow = (pixels[:2] - 2 ** 15) / 64
    return flow, pixels[2].astype(bool)


def _read_png16(file_name: str) -> np.ndarray:
    """A 16-bit grey/RGB/RGBA PNG as a ``(C, H, W)`` uint16 array, read by pypng (Pillow keeps only 8 bits of
    16-bit colour images)."""
    import png

    with open(file_name, "rb") as f:
        width, height, rows, info = png.Reader(file=f).asDirect()
        if info["bitdepth"] != 16:
            raise ValueError(f"{file_name}: expected a 16-bit PNG, got bit depth {info['bitdepth']}")
        pixels = np.vstack([np.asarray(r, dtype=np.uint16) for r in rows])
    return pixels.reshape(height, width, info["planes"]).transpose(2, 0, 1)
