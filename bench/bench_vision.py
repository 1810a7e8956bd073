#!/usr/bin/env python3
"""ember-vision against NumPy references and torchvision on PyTorch (run in a process of its own).

    python bench/bench_vision.py [--repeat 20] [--device cpu] [--only ops,transforms,model] [--threads 1]

Rows (median milliseconds per call; ratios are ember's time over the other's):

* ops: ``nms`` on 1000 random boxes (IoU threshold 0.5) and ``roi_align`` of 256 RoIs on a 1x256x50x50 map
  (7x7 output, spatial_scale 1, sampling_ratio 2), also against NumPy references. torchvision's compiled ops
  are used when they load; otherwise its pure-Python ``_roi_align`` stands in and nms is reported as
  unavailable.
* transforms: the main v1 ``functional`` ops on a 3x224x224 uint8 image (float32 for ``normalize``), the same
  call on both sides (torchvision's tensor kernels are pure Python on PyTorch).
* model: eval forwards under no_grad of the builders in ``MODELS`` (``--models`` picks some): resnet18 (batch 2),
  resnet50 and vit_b_16 (batch 8, 224 px), fasterrcnn_mobilenet_v3_large_320_fpn (one 320 px image);
  torchvision's builder is loaded with ember's weights, and the outputs are checked to agree. The detector
  needs torchvision's compiled nms and roi_align, so its torchvision column is n/a where they do not load.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

# builder -> (batch, side, keyword arguments): the inputs of the model rows
MODELS = {"resnet18": (2, 224, {}), "resnet50": (8, 224, {}), "vit_b_16": (8, 224, {}),
          "fasterrcnn_mobilenet_v3_large_320_fpn": (1, 320, {"weights_backbone": None})}
REF_DIR = Path(os.environ.get("EMBER_TORCHVISION_REF",
                              Path(__file__).resolve().parents[1] / ".cache" / "torchvision-ref"))


def make_inputs(seed=0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 200, (1000, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + rng.uniform(5, 60, (1000, 2)).astype(np.float32)], 1)
    scores = rng.uniform(size=1000).astype(np.float32)
    feat = rng.standard_normal((1, 256, 50, 50)).astype(np.float32)
    rxy = rng.uniform(0, 40, (256, 2)).astype(np.float32)
    rois = np.concatenate([np.zeros((256, 1), np.float32), rxy, rxy + rng.uniform(2, 20, (256, 2)).astype(np.float32)],
                          1)
    return boxes, scores, feat, rois


def median_ms(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3)


def nms_numpy(boxes, scores, thr):
    """Greedy NMS, one kept box at a time against all remaining ones."""
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        i, rest = order[0], order[1:]
        keep.append(i)
        w = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0, None)
        h = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0, None)
        inter = w * h
        order = rest[inter / (areas[i] + areas[rest] - inter) <= thr]
    return np.array(keep)


def roi_align_numpy(feat, rois, size=7, ratio=2):
    """RoI Align gathering the four neighbours of every sample point (torchvision's CPU rules)."""
    _, c, h, w = feat.shape
    x1, y1, x2, y2 = rois[:, 1:].T
    rw, rh = np.maximum(x2 - x1, 1), np.maximum(y2 - y1, 1)
    steps = (np.arange(size)[:, None] + (np.arange(ratio)[None, :] + 0.5) / ratio).reshape(-1)
    ys = y1[:, None] + steps[None] * (rh / size)[:, None]  # R, size*ratio
    xs = x1[:, None] + steps[None] * (rw / size)[:, None]

    def axis(v, n):
        ok = (v >= -1) & (v <= n)
        v = np.clip(v, 0, None)
        lo = np.minimum(np.floor(v), n - 1).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        frac = np.where(lo >= n - 1, 0, v - lo)
        return lo, hi, frac * ok, (1 - frac) * ok

    ylo, yhi, ly, hy = axis(ys, h)
    xlo, xhi, lx, hx = axis(xs, w)
    f = feat[rois[:, 0].astype(np.int64)]  # R, C, H, W
    r = np.arange(len(rois))[:, None, None]
    out = 0
    for yi, wy in ((ylo, hy), (yhi, ly)):
        for xi, wx in ((xlo, hx), (xhi, lx)):
            out = out + f[r, :, yi[:, :, None], xi[:, None, :]] * (wy[:, :, None] * wx[:, None, :])[..., None]
    out = out.reshape(len(rois), size, ratio, size, ratio, c).mean((2, 4))
    return out.transpose(0, 3, 1, 2)


def bench_ember(repeat, device):
    import ember
    from ember_vision import ops
    boxes, scores, feat, rois = make_inputs()
    b, s = ember.tensor(boxes, device=device), ember.tensor(scores, device=device)
    f, r = ember.tensor(feat, device=device), ember.tensor(rois, device=device)
    sync = ember.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    kept = ops.nms(b, s, 0.5).cpu().numpy()
    assert np.array_equal(kept, nms_numpy(boxes, scores, 0.5)), "nms differs from the NumPy reference"
    aligned = ops.roi_align(f, r, 7, 1.0, 2).cpu().numpy()
    assert np.allclose(aligned, roi_align_numpy(feat, rois), atol=1e-4), "roi_align differs from the NumPy reference"

    def timed(fn):
        return median_ms(lambda: (fn(), sync()), repeat)

    return {"nms": timed(lambda: ops.nms(b, s, 0.5)), "roi_align": timed(lambda: ops.roi_align(f, r, 7, 1.0, 2))}


# (row name, call): the same expression runs on ember (F = ember_vision's v1 functional) and on torchvision
TRANSFORMS = [
    ("resize 224->160 bilinear", "F.resize(img, [160, 160], antialias=True)"),
    ("resize 224->256 nearest", "F.resize(img, [256, 256], F.InterpolationMode.NEAREST)"),
    ("center_crop 160", "F.center_crop(img, [160, 160])"),
    ("pad 16 reflect", "F.pad(img, [16, 16], padding_mode='reflect')"),
    ("hflip", "F.hflip(img)"),
    ("rotate 30 bilinear", "F.rotate(img, 30.0, F.InterpolationMode.BILINEAR)"),
    ("affine", "F.affine(img, 15.0, [10, -5], 1.1, [5.0, 0.0])"),
    ("adjust_brightness", "F.adjust_brightness(img, 1.3)"),
    ("adjust_contrast", "F.adjust_contrast(img, 0.7)"),
    ("adjust_saturation", "F.adjust_saturation(img, 0.5)"),
    ("adjust_hue", "F.adjust_hue(img, 0.1)"),
    ("gaussian_blur 5", "F.gaussian_blur(img, [5, 5], [1.5, 1.5])"),
    ("rgb_to_grayscale", "F.rgb_to_grayscale(img)"),
    ("normalize (float)", "F.normalize(fimg, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])"),
]


def make_image(seed=0):
    return np.random.default_rng(seed).integers(0, 256, (3, 224, 224)).astype(np.uint8)


def time_rows(scope: dict, repeat: int) -> dict:
    """Each TRANSFORMS row's median ms, its expression evaluated in ``scope`` (F, img, fimg)."""
    out = {}
    for name, call in TRANSFORMS:
        code = compile(call, name, "eval")
        out[name] = median_ms(lambda code=code: eval(code, scope), repeat)
    return out


def bench_transforms_ember(repeat, device):
    import ember
    import ember_vision.transforms.functional as F
    img = ember.from_numpy(make_image()).to(device)
    return time_rows({"F": F, "img": img, "fimg": img.float() / 255}, repeat)


def model_input(name):
    batch, side, _ = MODELS[name]
    x = np.random.default_rng(1).random((batch, 3, side, side), dtype=np.float32)
    return x


def flat_output(out):
    """The numbers of a model's output (logits, or a detector's list of dicts) as one float64 vector."""
    if isinstance(out, (list, tuple)):
        return np.concatenate([flat_output(o) for o in out]) if out else np.zeros(0)
    if isinstance(out, dict):
        return np.concatenate([flat_output(v) for _, v in sorted(out.items())]) if out else np.zeros(0)
    return np.asarray(out.detach().cpu().numpy(), dtype=np.float64).ravel()


def call_model(model, name, x):
    return model(list(x)) if name.startswith("fasterrcnn") else model(x)


def bench_model_ember(name, repeat, device, weights_path):
    """An eval forward of ``name``; saves the weights, input and output for the torchvision side."""
    import ember
    from ember_vision import models
    ember.manual_seed(0)
    model = models.get_model(name, **MODELS[name][2]).to(device).eval()
    x = ember.from_numpy(model_input(name)).to(device)
    with ember.no_grad():
        out = call_model(model, name, x)
        ms = median_ms(lambda: call_model(model, name, x), repeat)
    arrays = {f"w:{k}": v.cpu().numpy() for k, v in model.state_dict().items()}
    np.savez(weights_path, out=flat_output(out), **arrays)
    return ms


TORCH_SIDE = """
import json, sys, time, types
import numpy as np
sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
import torch, torchvision
torch.set_num_threads({threads})
sys.path.insert(0, {bench_dir!r})
from bench_vision import MODELS, call_model, flat_output, make_image, make_inputs, median_ms, model_input, time_rows
parts = {parts!r}
out = {{}}
if "ops" in parts:
    boxes, scores, feat, rois = (torch.from_numpy(a) for a in make_inputs())
    try:
        out["nms"] = median_ms(lambda: torchvision.ops.nms(boxes, scores, 0.5), {repeat})
    except Exception:
        out["nms"] = None
    try:
        out["roi_align"] = median_ms(lambda: torchvision.ops.roi_align(feat, rois, 7, 1.0, 2), {repeat})
    except Exception:
        from torchvision.ops.roi_align import _roi_align
        out["roi_align (python)"] = median_ms(lambda: _roi_align(feat, rois, 1.0, 7, 7, 2, False), {repeat})
if "transforms" in parts:
    import torchvision.transforms.functional as F
    img = torch.from_numpy(make_image())
    out.update(time_rows({{"F": F, "img": img, "fimg": img.float() / 255}}, {repeat}))
for name in {models!r} if "model" in parts else ():
    saved = np.load({weights!r} + "/" + name + ".npz")
    model = torchvision.models.get_model(name, **MODELS[name][2]).eval()
    model.load_state_dict({{k[2:]: torch.from_numpy(saved[k]) for k in saved.files if k.startswith("w:")}}, strict=True)
    x = torch.from_numpy(model_input(name))
    try:
        with torch.no_grad():
            got = flat_output(call_model(model, name, x))
            out[name] = median_ms(lambda: call_model(model, name, x), {model_repeat})
    except Exception:  # (a detector without torchvision's compiled ops)
        continue
    want = saved["out"]
    out[name + " diff"] = float(np.abs(got - want).max()) if got.shape == want.shape else None
print(json.dumps(out))
"""


def bench_torchvision(repeat, parts, weights_path, model_repeat, threads, model_names):
    if not (REF_DIR / "torchvision").is_dir():
        return {}
    env = dict(os.environ, PYTHONPATH=str(REF_DIR))
    code = TORCH_SIDE.format(bench_dir=str(Path(__file__).resolve().parent), repeat=repeat, parts=parts,
                             weights=str(weights_path), model_repeat=model_repeat, threads=threads,
                             models=model_names)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"torchvision side failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return {}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _row(name, ours, theirs, note=""):
    cols = f"{theirs:>16.2f}{ours / theirs:>10.2f}" if theirs else f"{'n/a':>16}{'':>10}"
    print(f"{name:<28}{ours:>10.2f}{cols}{note}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--model-repeat", type=int, default=5)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated builders of the model rows")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default="ops,transforms,model", help="comma-separated parts: ops, transforms, model")
    ap.add_argument("--threads", "--torch-threads", type=int, default=1, dest="threads",
                    help="intra-op threads of each side, ember's and PyTorch's alike (1: one core each side, steady "
                         "on a shared machine, where a two-thread barrier waits on a descheduled thread)")
    args = ap.parse_args()
    import ember
    ember.set_num_threads(args.threads)
    parts = [p for p in args.only.split(",") if p]
    with tempfile.TemporaryDirectory() as tmp:
        names = [m for m in args.models.split(",") if m]
        ours = bench_ember(args.repeat, args.device) if "ops" in parts else {}
        if "transforms" in parts:
            ours.update(bench_transforms_ember(args.repeat, args.device))
        for name in names if "model" in parts else ():
            ours[name] = bench_model_ember(name, args.model_repeat, args.device, Path(tmp) / f"{name}.npz")
        tv = bench_torchvision(args.repeat, parts, tmp, args.model_repeat, args.threads, names)
    print(f"{'row':<28}{'ember ms':>10}{'torchvision ms':>16}{'ember/tv':>10}")
    if "ops" in parts:
        boxes, scores, feat, rois = make_inputs()
        ref = {"nms": median_ms(lambda: nms_numpy(boxes, scores, 0.5), args.repeat),
               "roi_align": median_ms(lambda: roi_align_numpy(feat, rois), args.repeat)}
        for op in ("nms", "roi_align"):
            key = op if tv.get(op) is not None else f"{op} (python)"
            note = (" (pure-Python _roi_align)" if "python" in key and tv.get(key) else "") + \
                f"  numpy {ref[op]:.2f} ms, ember/np {ours[op] / ref[op]:.2f}"
            _row(op, ours[op], tv.get(key), note)
    for name, _ in TRANSFORMS if "transforms" in parts else ():
        _row(name, ours[name], tv.get(name))
    for name in names if "model" in parts else ():
        batch, side, _ = MODELS[name]
        diff = tv.get(name + " diff")
        _row(f"{name} ({batch}x{side})", ours[name], tv.get(name),
             f"  same weights, max |output diff| {diff:.1e}" if diff is not None else "")


if __name__ == "__main__":
    main()
