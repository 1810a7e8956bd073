#!/usr/bin/env python3
"""Graph capture and export: tracing overhead, replay speed, ONNX export time.

    python bench/bench_export.py [--repeat 7] [--timer thread|wall] [--json out.json]

Rows:
* ``trace/<model>``: one ``ember.jit.trace`` against one eager forward of the same model and input
  (the budget: at most 2x);
* ``replay/<model>``: a call of the traced module against the eager module (the budget: no slower),
  with and without grad mode;
* ``onnx_export/resnet18``: ``ember.onnx.export`` of the vision plugin's ResNet-18 at 1x3x224x224 with a
  dynamic batch axis, into memory (the budget: under 5 s on the CPU).
Times are medians of ``--repeat`` runs, in milliseconds (this thread's CPU time unless ``--timer wall``).
"""
import argparse
import io
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember.jit._graph import capture  # noqa: E402


CLOCK = [time.perf_counter]


def median_ms(fn, repeat, number=1):
    fn()
    clock = CLOCK[0]
    runs = []
    for _ in range(repeat):
        t = clock()
        for _ in range(number):
            fn()
        runs.append((clock() - t) / number * 1e3)
    return statistics.median(runs)


def models():
    out = {"mlp": (nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)),
                   ember.randn(8, 32))}
    out["lstm"] = (nn.LSTM(16, 32, 2, batch_first=True), ember.randn(4, 10, 16))
    out["transformer"] = (nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2).eval(),
                          ember.randn(4, 10, 32))
    try:
        import ember_vision
        out["resnet18"] = (ember_vision.models.resnet18(num_classes=10).eval(), ember.randn(1, 3, 64, 64))
    except ImportError:
        pass
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json", default=None)
    p.add_argument("--timer", choices=("wall", "thread"), default="thread",
                   help="thread: this thread's CPU time (steadier on a shared machine)")
    args = p.parse_args(argv)
    CLOCK[0] = time.thread_time if args.timer == "thread" else time.perf_counter
    ember.manual_seed(0)
    rows = []
    print(f"{'row':34s} {'ember ms':>10s} {'baseline ms':>12s} {'ratio':>7s}")

    def row(name, t, base=None, budget=None):
        ratio = t / base if base else None
        rows.append({"row": name, "ms": t, "baseline_ms": base, "ratio": ratio, "budget": budget})
        b = f"{base:12.3f}" if base is not None else " " * 12
        r = f"{ratio:7.2f}" if ratio is not None else " " * 7
        print(f"{name:34s} {t:10.3f} {b} {r}  {budget or ''}")

    for name, (m, x) in models().items():
        number = 20 if name == "mlp" else 3
        with ember.no_grad():
            eager = median_ms(lambda m=m, x=x: m(x), args.repeat, number)
            traced_ms = median_ms(lambda m=m, x=x: capture(m, (x,), module=m), args.repeat, number)
        row(f"trace/{name}", traced_ms, eager, "<= 2x one forward")
    m, x = models()["mlp"]
    traced = ember.jit.trace(m, x)
    for grad in (False, True):
        with ember.set_grad_enabled(grad):
            eager = median_ms(lambda: m(x), args.repeat, 200)
            replay = median_ms(lambda: traced(x), args.repeat, 200)
        row(f"replay/mlp ({'grad' if grad else 'no_grad'})", replay, eager, "no slower than eager")
    try:
        import ember_vision
        import onnx  # noqa: F401

        net = ember_vision.models.resnet18().eval()
        img = ember.randn(1, 3, 224, 224)

        def export():
            ember.onnx.export(net, (img,), io.BytesIO(), input_names=["x"], dynamic_axes={"x": {0: "batch"}})

        row("onnx_export/resnet18 (224px)", median_ms(export, max(1, args.repeat // 3)), None, "< 5000 ms")
    except ImportError as e:
        print(f"onnx_export/resnet18 skipped: {e}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
