#!/usr/bin/env python3
"""Elementwise chains, reductions, batched matmul, sorting/selection and resampling on about 1e6-element
tensors: ember vs raw NumPy doing the same arithmetic, in one process.

    python bench/bench_ops.py [--repeat 5] [--min-time 0.2] [--device cpu] [--json out.json]

Prints milliseconds per call (best of --repeat runs, ember and NumPy timed alternately, each run calibrated
to last --min-time seconds) and the ratio ember/numpy; rows above the 1.15 target are marked.  One
BLAS/OpenMP thread for both.
"""
import argparse
import json
import os
import sys
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import ember  # noqa: E402

TARGET = 1.15


def paired(fe, fn, repeat, min_time):
    """Milliseconds per call of ``fe`` and ``fn``, timed alternately (so load from other processes hits both
    alike); the best of ``repeat`` runs each, every run calibrated to last about ``min_time`` seconds."""
    te, tn = timeit.Timer(fe), timeit.Timer(fn)
    number = 1
    while tn.timeit(number) < min_time:
        number *= 2
    best_e = best_n = float("inf")
    for _ in range(repeat):
        best_e = min(best_e, te.timeit(number))
        best_n = min(best_n, tn.timeit(number))
    return best_e / number * 1e3, best_n / number * 1e3


def cases(device):
    rng = np.random.default_rng(0)
    na, nb, nc = (rng.standard_normal((1000, 1000)).astype(np.float32) for _ in range(3))
    ni = rng.integers(-50, 50, (1000, 1000)).astype(np.int64)
    a, b, c = (ember.tensor(x, device=device) for x in (na, nb, nc))
    i = ember.tensor(ni, device=device)
    na3, nb3 = (rng.standard_normal((64, 128, 128)).astype(np.float32) for _ in range(2))
    a3, b3 = ember.tensor(na3, device=device), ember.tensor(nb3, device=device)
    nw = rng.standard_normal((10000, 64)).astype(np.float32)
    nbag = rng.integers(0, 10000, 16000)
    noffs = np.arange(0, 16000, 16)
    w, bag, offs = (ember.tensor(x, device=device) for x in (nw, nbag, noffs))
    nimg = rng.standard_normal((4, 16, 128, 128)).astype(np.float32)
    img = ember.tensor(nimg, device=device)
    nsorted = np.sort(ni.reshape(-1))
    srt = ember.tensor(nsorted, device=device)
    nreps = rng.integers(0, 4, 1000)
    reps = ember.tensor(nreps, device=device)
    np1, np2 = (rng.standard_normal((1000, 64)).astype(np.float32) for _ in range(2))
    p1, p2 = ember.tensor(np1, device=device), ember.tensor(np2, device=device)
    F = ember.nn.functional
    sync = ember.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def timed(fn):
        def run():
            fn()
            sync()
        return run

    def n_lse():
        m = na.max(1, keepdims=True)
        return np.log(np.exp(na - m).sum(1)) + m[:, 0]

    def n_bilinear():
        out = nimg
        for axis in (2, 3):  # align_corners=False, 2x: source (o + 0.5) / 2 - 0.5, clamped at 0
            s = out.shape[axis]
            src = np.maximum((np.arange(2 * s) + 0.5) / 2 - 0.5, 0)
            i0 = np.floor(src).astype(np.int64)
            i1 = np.minimum(i0 + 1, s - 1)
            lam = (src - i0).astype(np.float32).reshape((-1,) + (1,) * (3 - axis))
            out = np.take(out, i0, axis) * (1 - lam) + np.take(out, i1, axis) * lam
        return out

    def n_unique_consecutive():
        keep = np.ones(nsorted.shape[0], bool)
        keep[1:] = nsorted[1:] != nsorted[:-1]
        starts = np.nonzero(keep)[0]
        return nsorted[keep], np.cumsum(keep) - 1, np.diff(np.append(starts, nsorted.shape[0]))

    def n_cdist():
        sq1, sq2 = (np1 * np1).sum(1, keepdims=True), (np2 * np2).sum(1, keepdims=True)
        return np.sqrt(np.maximum(np1 @ np2.T * -2 + sq1 + sq2.T, 0))

    ncz = (na + 1j * nb).astype(np.complex64)
    cz = ember.tensor(ncz, device=device)
    nsig = na.reshape(-1)
    sig = ember.tensor(nsig, device=device)
    nwin = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(512) / 512)).astype(np.float32)
    win = ember.hann_window(512, device=device)

    ngrid = rng.uniform(-1.1, 1.1, (4, 128, 128, 2)).astype(np.float32)  # some samples fall outside: zeros
    grid = ember.tensor(ngrid, device=device)

    def n_grid_sample():  # bilinear, zeros padding, align_corners=False: (4, 16, 128, 128) from the same image
        n, c, h, w = nimg.shape
        x = ((ngrid[..., 0] + 1) * w - 1) / 2
        y = ((ngrid[..., 1] + 1) * h - 1) / 2
        x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
        out = np.zeros((n, c) + x.shape[1:], np.float32)
        planes = nimg.reshape(n, c, h * w)
        for dx in (0, 1):
            for dy in (0, 1):
                xi, yi = x0 + dx, y0 + dy
                wt = (1 - np.abs(x - xi)) * (1 - np.abs(y - yi))
                inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
                flat = (np.clip(yi, 0, h - 1) * w + np.clip(xi, 0, w - 1)).reshape(n, 1, -1)
                vals = np.take_along_axis(planes, np.broadcast_to(flat, (n, c, flat.shape[-1])), 2)
                out += vals.reshape(out.shape) * (wt * inside)[:, None]
        return out

    def n_stft():  # centred reflect padding, strided frames, windowed one-sided transforms, (freq, frames)
        x = np.pad(nsig, 256, mode="reflect")
        frames = np.lib.stride_tricks.sliding_window_view(x, 512)[::128] * nwin
        return np.fft.rfft(frames, axis=-1).T

    rows = {
        # elementwise chains
        "a*b+c": (lambda: a * b + c, lambda: na * nb + nc),
        "exp((a*b+c).relu()*2-a)": (lambda: ((a * b + c).relu() * 2 - a).exp(),
                                    lambda: np.exp(np.maximum(na * nb + nc, 0) * 2 - na)),
        "(a-b)/(c*c+1)": (lambda: (a - b) / (c * c + 1), lambda: (na - nb) / (nc * nc + 1)),
        "exp(a)*tanh(b)": (lambda: a.exp() * b.tanh(), lambda: np.exp(na) * np.tanh(nb)),
        "sigmoid(a)": (lambda: a.sigmoid(), lambda: 1 / (1 + np.exp(-na))),
        "sqrt(abs(a))+log1p(b*b)": (lambda: a.abs().sqrt() + (b * b).log1p(),
                                    lambda: np.sqrt(np.abs(na)) + np.log1p(nb * nb)),
        "clamp(a,-0.5,0.5)": (lambda: a.clamp(-0.5, 0.5), lambda: np.clip(na, -0.5, 0.5)),
        "where(a>0,b,c)": (lambda: ember.where(a > 0, b, c), lambda: np.where(na > 0, nb, nc)),
        "maximum(a,b)": (lambda: ember.maximum(a, b), lambda: np.maximum(na, nb)),
        "int i//7, i%7": (lambda: (i // 7, i % 7), lambda: (ni // 7, ni % 7)),
        # reductions
        "sum": (lambda: a.sum(), lambda: na.sum()),
        "sum(dim=1)": (lambda: a.sum(1), lambda: na.sum(1)),
        "mean(dim=0)": (lambda: a.mean(0), lambda: na.mean(0)),
        "amax(dim=1)": (lambda: a.amax(1), lambda: na.max(1)),
        "max(dim=1) values+indices": (lambda: a.max(1), lambda: (na.max(1), na.argmax(1))),
        "argmax": (lambda: a.argmax(), lambda: na.argmax()),
        "var(dim=1)": (lambda: a.var(1), lambda: na.var(1, ddof=1)),
        "logsumexp(dim=1)": (lambda: a.logsumexp(1), n_lse),
        "cumsum(dim=1)": (lambda: a.cumsum(1), lambda: na.cumsum(1)),
        "norm": (lambda: a.norm(), lambda: np.sqrt((na * na).sum())),
        # batched matmul
        "bmm 64x128x128": (lambda: a3 @ b3, lambda: na3 @ nb3),
        # sorting and selection
        "unique(inverse,counts) int": (lambda: ember.unique(i, return_inverse=True, return_counts=True),
                                       lambda: np.unique(ni, return_inverse=True, return_counts=True)),
        "unique_consecutive int": (lambda: ember.unique_consecutive(srt, return_inverse=True, return_counts=True),
                                   n_unique_consecutive),
        # repeats and distances
        "repeat_interleave(2, dim=1)": (lambda: a.repeat_interleave(2, dim=1), lambda: na.repeat(2, 1)),
        "repeat_interleave(tensor, 0)": (lambda: a.repeat_interleave(reps, dim=0), lambda: na.repeat(nreps, 0)),
        "cdist 1000x64, 1000x64": (lambda: ember.cdist(p1, p2), n_cdist),
        # embeddings and resampling
        "embedding_bag mean 1000x16": (lambda: F.embedding_bag(bag, w, offs),
                                       lambda: np.add.reduceat(nw[nbag], noffs) / 16),
        "interpolate nearest 2x": (lambda: F.interpolate(img, scale_factor=2),
                                   lambda: nimg.repeat(2, 2).repeat(2, 3)),
        "interpolate bilinear 2x": (lambda: F.interpolate(img, scale_factor=2, mode="bilinear"), n_bilinear),
        "grid_sample bilinear 4x16x128x128": (lambda: F.grid_sample(img, grid, align_corners=False),
                                              n_grid_sample),
        # Fourier transforms
        "fft(dim=1) complex64": (lambda: ember.fft.fft(cz), lambda: np.fft.fft(ncz)),
        "fft(dim=1) float32": (lambda: ember.fft.fft(a), lambda: np.fft.fft(na)),
        "rfft(dim=1)": (lambda: ember.fft.rfft(a), lambda: np.fft.rfft(na)),
        "fft2 complex64": (lambda: ember.fft.fft2(cz), lambda: np.fft.fft2(ncz)),
        "stft n_fft=512 hop=128 1e6": (lambda: ember.stft(sig, 512, 128, window=win, return_complex=True), n_stft),
    }
    return [(name, timed(e), n) for name, (e, n) in rows.items()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    print(f"{'case':30s} {'ember ms':>10s} {'numpy ms':>10s} {'ratio':>7s}")
    results = {}
    for name, e, n in cases(args.device):
        te, tn = paired(e, n, args.repeat, args.min_time)
        ratio = te / tn
        results[name] = {"ember_ms": te, "numpy_ms": tn, "ratio": ratio}
        print(f"{name:30s} {te:10.3f} {tn:10.3f} {ratio:7.2f}{'  > target' if ratio > TARGET else ''}",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
