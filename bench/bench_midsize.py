#!/usr/bin/env python3
"""Mid-size models on the CPU, ember vs PyTorch in one process, as ratios (issue: CPU speed on mid-size models):

  resnet_step   ResNet-18 (ember_vision) at 64 px, batch 16, cross-entropy, SGD momentum step  (target <= 1.2x)
  resnet_infer  ResNet-18 at 224 px, batch 8, eval() under no_grad                             (target <= 1.2x)
  lstm_step     LSTM 2 layers x 128, sequence 50, batch 32, MSE, SGD step                      (target <= 1.2x)
  transformer   TransformerEncoder 2 x d128 (4 heads, ff 512), sequence 64, batch 16, SGD step (target <= 1.0x)
  resnet_infer_folded  resnet_infer with every BatchNorm folded into its convolution on both sides
                (``nn.utils.fusion.fuse_conv_bn_eval``: the explicit inference optimisation)

    python bench/bench_midsize.py [--threads 2] [--repeat 15] [--only resnet_step,lstm_step] [--rss] [--alone]
                                  [--json out]
    python bench/bench_midsize.py --profile resnet_step [--lib ember|torch]

Both libraries get ``set_num_threads(threads)``.  The two contenders' steps are interleaved (ember, torch,
ember, ...) so that load from other processes falls on both alike, with a pause of ``--settle`` seconds (0.3)
before every timed step: BLAS and OpenMP worker threads spin for up to ~0.1 s after their last job (OpenBLAS
for 2^28 cycles), and without the pause the spinning workers of one contender's step take the cores from
the next contender's step (ember's OpenBLAS workers made PyTorch's ResNet-18 step 1.7x slower).  The figures
are medians of --repeat steps after warm-up, in wall time and in process CPU time (all threads), with the
interquartile range as the noise;
"best ratio" compares the fastest step of each (what a quiet machine gives; load from other processes only adds),
and "faults/step" counts the minor page faults of a step (fresh pages the OS zeroes and maps in, about a
microsecond each).  Faults depend on the process's history: glibc raises its ``mmap`` threshold after large
frees, so one contender's allocations can spare the other its faults (PyTorch's ResNet-18 step takes ~9,000
a step on its own, and 0 to that here, run to run); ``--alone`` also times each contender in a process of its own.
``--rss`` runs each contender's ResNet-18 step in its own subprocess and reports its peak resident set (the
whole process, and the growth over the resident set just before the first step).
The first line names NumPy's BLAS and its kernel family: conv and LSTM time is mostly GEMM, so an OpenBLAS
held to AVX2 kernels (``OPENBLAS_CORETYPE=Haswell``) on an AVX-512 machine halves ember's side.
``--profile`` prints the op-by-op time of one workload: ember's through a timing handler on
``ember.dispatch.intercept``, PyTorch's from its profiler.
``--conv-layers`` times each distinct convolution of ResNet-18 at 224 px, batch 8 (forward, no_grad) in
ember and PyTorch, next to the floor NumPy's BLAS sets for it: one sgemm of the im2col shape
(out channels x in channels*kernel x batch*positions).  The GFLOP/s columns show where the time goes.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

try:
    import resource
except ImportError:  # not on Windows
    resource = None

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["resnet_step", "resnet_infer", "lstm_step", "transformer", "resnet_infer_folded"]
TARGETS = {"resnet_step": 1.2, "resnet_infer": 1.2, "lstm_step": 1.2, "transformer": 1.0, "resnet_infer_folded": 1.2}


def import_lib(name):
    if name == "ember":
        import ember
        return ember
    import torch
    return torch


def resnet18(lib):
    """ember_vision's ResNet-18; for PyTorch the same module source run against ``torch.nn``."""
    if lib.__name__ == "ember":
        from ember_vision.models import resnet18 as build
        return build()
    import importlib.util
    spec = importlib.util.find_spec("ember_vision.models.resnet")
    src = open(spec.origin).read()
    src = src.replace("import ember\n", "import torch as ember\n")
    src = src.replace("from ember import nn", "from torch import nn")
    # ember-vision's weights and registry helpers mean nothing to the torch copy: each name the module imports
    # from them is a stand-in that does nothing (a decorator factory returning its function unchanged)
    src = re.sub(r"^from \._api import (.*)$",
                 lambda m: "\n".join(["_nothing = lambda *a, **k: (lambda f: f)"]
                                      + [f"{n.strip()} = _nothing" for n in m.group(1).split(",")]), src, flags=re.M)
    ns = {"__name__": "torch_resnet"}
    exec(compile(src, spec.origin, "exec"), ns)
    return ns["ResNet"](ns["BasicBlock"], [2, 2, 2, 2])


def fold_batchnorms(model, lib):
    """Fold each ResNet block's BatchNorms into the convolutions before them (eval mode), in place."""
    fuse = lib.nn.utils.fusion.fuse_conv_bn_eval
    for m in list(model.modules()):
        for i in (1, 2, 3):
            conv, bn = getattr(m, f"conv{i}", None), getattr(m, f"bn{i}", None)
            if isinstance(conv, lib.nn.Conv2d) and isinstance(bn, lib.nn.BatchNorm2d):
                setattr(m, f"conv{i}", fuse(conv, bn))
                setattr(m, f"bn{i}", lib.nn.Identity())
        ds = getattr(m, "downsample", None)
        if isinstance(ds, lib.nn.Sequential) and len(ds) == 2 and isinstance(ds[1], lib.nn.BatchNorm2d):
            m.downsample = lib.nn.Sequential(fuse(ds[0], ds[1]))
    return model


def make(workload, lib):
    """A closure running one step of ``workload`` with ``lib`` (ember or torch)."""
    rng = np.random.default_rng(0)
    nn = lib.nn
    if workload.startswith("resnet"):
        lib.manual_seed(0)
        model = resnet18(lib)
        if workload.startswith("resnet_infer"):
            model.eval()
            if workload == "resnet_infer_folded":
                fold_batchnorms(model, lib)
            x = lib.from_numpy(rng.standard_normal((8, 3, 224, 224), dtype=np.float32))

            def infer():
                with lib.no_grad():
                    return model(x)
            return infer
        x = lib.from_numpy(rng.standard_normal((16, 3, 64, 64), dtype=np.float32))
        y = lib.from_numpy(rng.integers(0, 1000, 16))
        loss_fn = nn.CrossEntropyLoss()
    elif workload == "lstm_step":
        lib.manual_seed(0)
        model = nn.LSTM(128, 128, 2)
        x = lib.from_numpy(rng.standard_normal((50, 32, 128), dtype=np.float32))
        y = lib.from_numpy(rng.standard_normal((50, 32, 128), dtype=np.float32))
        mse = nn.MSELoss()

        def loss_fn(out, target):
            return mse(out[0], target)
    elif workload == "transformer":
        lib.manual_seed(0)
        layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.1, batch_first=True)
        model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        x = lib.from_numpy(rng.standard_normal((16, 64, 128), dtype=np.float32))
        y = lib.from_numpy(rng.standard_normal((16, 64, 128), dtype=np.float32))
        loss_fn = nn.MSELoss()
    else:
        raise SystemExit(f"unknown workload {workload!r}; one of {WORKLOADS}")
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def clocked(fn):
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def kernel_plugins():
    """The CPU kernels plugins serve, as ``plugin: op, op``."""
    import ember
    served = {}
    for dev, op, plugin, *_ in ember.plugins.REGISTRY.overridden():
        if dev == "cpu":
            served.setdefault(plugin, []).append(op)
    return "; ".join(f"{p}: {', '.join(ops)}" for p, ops in served.items())


def minor_faults():
    """Page faults of this process so far that the OS served without I/O (fresh pages zeroed and mapped)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource is not None else 0


def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[1], q[2] - q[0]


def run_interleaved(workload, libs, repeat, warmup, settle=0.3, steps=None):
    """Medians of ``repeat`` interleaved steps per contender; ``steps`` ({name: step}) built by the caller, or
    ``make(workload, lib)`` for each of ``libs``."""
    if steps is None:
        steps = {name: make(workload, lib) for name, lib in libs.items()}
    for _ in range(warmup):
        for s in steps.values():
            s()
    wall = {k: [] for k in steps}
    cpu = {k: [] for k in steps}
    faults = {k: [] for k in steps}
    for _ in range(repeat):
        for k, s in steps.items():
            time.sleep(settle)
            f0 = minor_faults()
            w, c = clocked(s)
            faults[k].append(minor_faults() - f0)
            wall[k].append(w)
            cpu[k].append(c)
    out = {}
    for k in steps:
        out[k] = {"wall_ms": [1e3 * v for v in quartiles(wall[k])], "cpu_ms": [1e3 * v for v in quartiles(cpu[k])],
                  "best_ms": 1e3 * min(wall[k]), "faults": statistics.median(faults[k])}
    return out


def rss_child(lib_name, workload, steps):
    """Run in a subprocess: peak RSS (MiB) of ``steps`` steps, total and over the RSS before the first.

    The peak is the kernel's high-water mark of this process image (``VmHWM``): ``ru_maxrss`` would carry
    over the parent's peak across ``exec``."""
    lib = import_lib(lib_name)
    lib.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    step = make(workload, lib)
    before = proc_status_mib("VmRSS")
    for _ in range(steps):
        step()
    peak = proc_status_mib("VmHWM")
    print(json.dumps({"peak_mib": peak, "growth_mib": peak - before}))


def alone_child(lib_name, workload, repeat, warmup, settle):
    """Run in a subprocess: :func:`run_interleaved` for one library alone, as JSON."""
    lib = import_lib(lib_name)
    lib.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    print(json.dumps(run_interleaved(workload, {lib_name: lib}, repeat, warmup, settle)[lib_name]))


def measure_alone(threads, workload, repeat, warmup, settle):
    """Each contender's step timed in a process of its own (no other library moving its allocator's state)."""
    env = dict(os.environ, BENCH_THREADS=str(threads))
    res = {}
    for lib in ("ember", "torch"):
        out = subprocess.run([sys.executable, __file__, "--alone-child", lib, workload, str(repeat), str(warmup),
                              str(settle)], env=env, capture_output=True, text=True, check=True)
        res[lib] = json.loads(out.stdout.strip().splitlines()[-1])
    return res


def proc_status_mib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure_rss(threads, workload="resnet_step", steps=3):
    env = dict(os.environ, BENCH_THREADS=str(threads))
    res = {}
    for lib in ("ember", "torch"):
        out = subprocess.run([sys.executable, __file__, "--rss-child", lib, workload, str(steps)], env=env,
                             capture_output=True, text=True, check=True)
        res[lib] = json.loads(out.stdout.strip().splitlines()[-1])
    return res


def profile(workload, lib_name, steps=3):
    lib = import_lib(lib_name)
    step = make(workload, lib)
    step()
    if lib_name == "torch":
        from torch.profiler import ProfilerActivity, profile as tprof
        with tprof(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                step()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
        return
    from ember import dispatch
    totals = {}

    def timing(kind, Op, args, run):
        t = time.perf_counter()
        try:
            return run(*args)
        finally:
            rec = totals.setdefault(getattr(Op, "__name__", str(Op)), [0.0, 0])
            rec[0] += time.perf_counter() - t
            rec[1] += 1

    t0 = time.perf_counter()
    with dispatch.intercept(timing):
        for _ in range(steps):
            step()
    total = time.perf_counter() - t0
    print(f"forward ops through dispatch (inclusive; {1e3 * total / steps:.1f} ms/step in all)")
    print(f"{'op':<34}{'ms/step':>10}{'calls/step':>12}")
    for name, (t, n) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:25]:
        print(f"{name:<34}{1e3 * t / steps:10.2f}{n / steps:12.1f}")
    import cProfile
    import pstats
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(steps):
        step()
    pr.disable()
    print("cProfile, forward and backward (self time):")
    pstats.Stats(pr).sort_stats("tottime").print_stats(30)


RESNET18_CONVS = [  # (in, out, size, kernel, stride, padding, count in the network)
    (3, 64, 224, 7, 2, 3, 1), (64, 64, 56, 3, 1, 1, 4), (64, 128, 56, 3, 2, 1, 1), (64, 128, 56, 1, 2, 0, 1),
    (128, 128, 28, 3, 1, 1, 3), (128, 256, 28, 3, 2, 1, 1), (128, 256, 28, 1, 2, 0, 1),
    (256, 256, 14, 3, 1, 1, 3), (256, 512, 14, 3, 2, 1, 1), (256, 512, 14, 1, 2, 0, 1), (512, 512, 7, 3, 1, 1, 3)]


def conv_layers(libs, repeat, batch=8):
    """Per-convolution times (process CPU, medians) of ember, PyTorch and the NumPy sgemm floor."""
    def med(fn):
        fn()
        runs = []
        for _ in range(repeat):
            runs.append(clocked(fn)[1])
        return statistics.median(runs)

    rng = np.random.default_rng(0)
    tot = {"ember": 0.0, "torch": 0.0, "gemm": 0.0}
    print(f"{'conv (in->out @px kKsS)':<26}{'ember ms':>10}{'torch ms':>10}{'gemm ms':>9}"
          f"{'ember/torch':>12}{'ember/gemm':>11}{'GF/s e/t/gemm':>19}")
    for cin, cout, px, k, s, p, count in RESNET18_CONVS:
        x = rng.standard_normal((batch, cin, px, px), dtype=np.float32)
        w = rng.standard_normal((cout, cin, k, k), dtype=np.float32)
        o = (px + 2 * p - k) // s + 1
        t = {}
        for name, lib in libs.items():
            xl, wl = lib.from_numpy(x), lib.from_numpy(w)
            with lib.no_grad():
                t[name] = med(lambda f=lib.nn.functional.conv2d, xl=xl, wl=wl, s=s, p=p: f(xl, wl, stride=s, padding=p))
        a = rng.standard_normal((cout, cin * k * k), dtype=np.float32)
        b = rng.standard_normal((cin * k * k, batch * o * o), dtype=np.float32)
        t["gemm"] = med(lambda a=a, b=b: a @ b)
        gf = 2 * cout * cin * k * k * batch * o * o / 1e9
        for key in tot:
            tot[key] += count * t.get(key, 0.0)
        rates = "/".join(f"{gf / t[key]:.0f}" for key in ("ember", "torch", "gemm") if key in t)
        line = f"{cin:>4}->{cout:<4} @{px:<3} k{k}s{s} x{count}"
        line += f"{1e3 * t['ember']:10.2f}{1e3 * t.get('torch', float('nan')):10.2f}{1e3 * t['gemm']:9.2f}"
        line += f"{t['ember'] / t['torch'] if 'torch' in t else float('nan'):11.2f}x{t['ember'] / t['gemm']:10.2f}x"
        print(line + f"{rates:>19}")
    if tot["torch"]:
        print(f"{'whole network':<26}{1e3 * tot['ember']:10.1f}{1e3 * tot['torch']:10.1f}{1e3 * tot['gemm']:9.1f}"
              f"{tot['ember'] / tot['torch']:11.2f}x{tot['ember'] / tot['gemm']:10.2f}x")


def blas_info():
    """NumPy's BLAS and the kernel family it runs (an OpenBLAS pinned to an older core, e.g. by
    ``OPENBLAS_CORETYPE=Haswell``, runs AVX2 GEMMs on an AVX-512 machine: half PyTorch's MKL throughput)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture') or ''}".strip()
                     for i in libs) or "none found"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--settle", type=float, default=0.3,
                    help="seconds of idle before each timed step, for the other contender's spinning threads to stop")
    ap.add_argument("--only", help="comma-separated workloads (default: all)")
    ap.add_argument("--rss", action="store_true", help="also the peak RSS of the ResNet-18 step, per subprocess")
    ap.add_argument("--profile", metavar="WORKLOAD")
    ap.add_argument("--lib", default="ember", choices=["ember", "torch"])
    ap.add_argument("--conv-layers", action="store_true",
                    help="each ResNet-18 convolution against PyTorch and the NumPy sgemm floor")
    ap.add_argument("--alone", action="store_true", help="also time each contender in a process of its own")
    ap.add_argument("--rss-child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--alone-child", nargs=5, help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.rss_child:
        return rss_child(args.rss_child[0], args.rss_child[1], int(args.rss_child[2]))
    if args.alone_child:
        lib, w, repeat, warmup, settle = args.alone_child
        return alone_child(lib, w, int(repeat), int(warmup), float(settle))
    libs = {"ember": import_lib("ember")}
    try:
        libs["torch"] = import_lib("torch")
    except ImportError:
        print("torch not installed: ember alone")
    for lib in libs.values():
        lib.set_num_threads(args.threads)
    if args.profile:
        return profile(args.profile, args.lib)
    if args.conv_layers:
        print(f"NumPy BLAS: {blas_info()}  (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})")
        return conv_layers(libs, args.repeat)
    report = {"threads": args.threads, "repeat": args.repeat, "blas": blas_info(), "workloads": {},
              "kernels": kernel_plugins()}
    print(f"NumPy BLAS: {report['blas']}  (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})")
    print(f"ember CPU kernels from plugins: {report['kernels'] or 'none (all on NumPy)'}")
    names = args.only.split(",") if args.only else WORKLOADS
    print(f"{'workload':<14}{'ember ms':>16}{'torch ms':>16}{'ratio':>8}{'cpu ratio':>11}{'best ratio':>12}"
          f"{'faults/step e/t':>17}  target")
    for w in names:
        r = run_interleaved(w, libs, args.repeat, args.warmup, args.settle)
        report["workloads"][w] = r
        e = r["ember"]
        line = f"{w:<14}{e['wall_ms'][0]:9.1f} ±{e['wall_ms'][1] / 2:5.1f}"
        if "torch" in r:
            t = r["torch"]
            ratio, cratio = e["wall_ms"][0] / t["wall_ms"][0], e["cpu_ms"][0] / t["cpu_ms"][0]
            bratio = e["best_ms"] / t["best_ms"]
            r["ratio"], r["cpu_ratio"], r["best_ratio"] = ratio, cratio, bratio
            line += (f"{t['wall_ms'][0]:9.1f} ±{t['wall_ms'][1] / 2:5.1f}{ratio:7.2f}x{cratio:10.2f}x{bratio:11.2f}x"
                     f"{e['faults']:>9.0f}/{t['faults']:<7.0f}  <= {TARGETS[w]}")
        print(line, flush=True)
        if args.alone and "torch" in r:
            a = r["alone"] = measure_alone(args.threads, w, args.repeat, args.warmup, args.settle)
            e, t = a["ember"], a["torch"]
            print(f"{'  alone':<14}{e['wall_ms'][0]:9.1f} ±{e['wall_ms'][1] / 2:5.1f}{t['wall_ms'][0]:9.1f} "
                  f"±{t['wall_ms'][1] / 2:5.1f}{e['wall_ms'][0] / t['wall_ms'][0]:7.2f}x"
                  f"{e['cpu_ms'][0] / t['cpu_ms'][0]:10.2f}x{e['best_ms'] / t['best_ms']:11.2f}x"
                  f"{e['faults']:>9.0f}/{t['faults']:<7.0f}", flush=True)
    if args.rss and "torch" in libs:
        rss = measure_rss(args.threads)
        report["rss"] = rss
        e, t = rss["ember"], rss["torch"]
        print(f"resnet_step peak RSS MiB: ember {e['peak_mib']:.0f} (+{e['growth_mib']:.0f} over the model), "
              f"torch {t['peak_mib']:.0f} (+{t['growth_mib']:.0f}); ratio {e['peak_mib'] / t['peak_mib']:.2f}x "
              f"(growth {e['growth_mib'] / t['growth_mib']:.2f}x)  target <= 1.3")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
