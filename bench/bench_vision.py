#!/usr/bin/env python3
"""torchvision.ops on ember: nms and roi_align timed against NumPy references and, where it loads,
torchvision on PyTorch (run in a process of its own).

    python bench/bench_vision.py [--repeat 20] [--device cpu]

Rows: ``nms`` on 1000 random boxes (IoU threshold 0.5) and ``roi_align`` of 256 RoIs on a 1x256x50x50 map
(7x7 output, spatial_scale 1, sampling_ratio 2). The figure is the median milliseconds per call; ratios are
ember's time over the other's. torchvision's compiled ops (``torchvision.ops.nms``/``roi_align``) are used
when they load; otherwise its pure-Python ``_roi_align`` stands in and nms is reported as unavailable.
"""
import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

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


TORCH_SIDE = """
import json, sys, time, types
import numpy as np
sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
import torch, torchvision
sys.path.insert(0, {bench_dir!r})
from bench_vision import make_inputs, median_ms
boxes, scores, feat, rois = (torch.from_numpy(a) for a in make_inputs())
out = {{}}
try:
    out["nms"] = median_ms(lambda: torchvision.ops.nms(boxes, scores, 0.5), {repeat})
except Exception:
    out["nms"] = None
try:
    out["roi_align"] = median_ms(lambda: torchvision.ops.roi_align(feat, rois, 7, 1.0, 2), {repeat})
except Exception:
    from torchvision.ops.roi_align import _roi_align
    out["roi_align (python)"] = median_ms(lambda: _roi_align(feat, rois, 1.0, 7, 7, 2, False), {repeat})
print(json.dumps(out))
"""


def bench_torchvision(repeat):
    if not (REF_DIR / "torchvision").is_dir():
        return {}
    env = dict(os.environ, PYTHONPATH=str(REF_DIR))
    code = TORCH_SIDE.format(bench_dir=str(Path(__file__).resolve().parent), repeat=repeat)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"torchvision side failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return {}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    boxes, scores, feat, rois = make_inputs()
    ref = {"nms": median_ms(lambda: nms_numpy(boxes, scores, 0.5), args.repeat),
           "roi_align": median_ms(lambda: roi_align_numpy(feat, rois), args.repeat)}
    ours = bench_ember(args.repeat, args.device)
    tv = bench_torchvision(args.repeat)
    print(f"{'op':<12}{'ember ms':>10}{'numpy ms':>10}{'ember/np':>10}{'torchvision ms':>16}{'ember/tv':>10}")
    for op in ("nms", "roi_align"):
        tv_key = op if tv.get(op) is not None else f"{op} (python)"
        t = tv.get(tv_key)
        tv_cols = (f"{t:>16.2f}{ours[op] / t:>10.2f}" + ("  (pure-Python _roi_align)" if "python" in tv_key else "")
                   if t else f"{'n/a':>16}{'':>10}")
        print(f"{op:<12}{ours[op]:>10.2f}{ref[op]:>10.2f}{ours[op] / ref[op]:>10.2f}{tv_cols}")


if __name__ == "__main__":
    main()
