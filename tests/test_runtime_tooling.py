"""Runtime settings (determinism, threads, matmul precision, compile), ember.backends, ember.utils.benchmark and
ember.hub, against PyTorch's behaviour."""
import contextlib
import os
import re
import urllib.error
import warnings

import numpy as np
import pytest
from fakegpu import _Plugin

import ember
from ember.backend import ArrayBackend
from ember.utils import benchmark


class Nondeterministic(ArrayBackend):
    """A CPU backend that declares its index_add kernel nondeterministic (as CUDA's atomic scatters are)."""

    name = "nondet"
    nondeterministic_kernels = frozenset({"index_add"})

    def __init__(self):
        super().__init__(np)


@contextlib.contextmanager
def deterministic(mode=True, warn_only=False):
    ember.use_deterministic_algorithms(mode, warn_only=warn_only)
    try:
        yield
    finally:
        ember.use_deterministic_algorithms(False)


def test_deterministic_flags_match_pytorch(torch):
    assert ember.are_deterministic_algorithms_enabled() is torch.are_deterministic_algorithms_enabled() is False
    for mode, warn in ((True, False), (True, True), (False, True)):
        with deterministic(mode, warn):
            torch.use_deterministic_algorithms(mode, warn_only=warn)
            try:
                assert ember.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
                assert (ember.is_deterministic_algorithms_warn_only_enabled()
                        == torch.is_deterministic_algorithms_warn_only_enabled())
                assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
            finally:
                torch.use_deterministic_algorithms(False)
    for mode in ("warn", "error", 1, "default"):
        ember.set_deterministic_debug_mode(mode)
        torch.set_deterministic_debug_mode(mode)
        assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
    with pytest.raises(TypeError, match="must be bool, not int"):
        ember.use_deterministic_algorithms(1)
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        ember.set_deterministic_debug_mode("loud")


def test_nondeterministic_kernel_raises_naming_the_op_and_leaves_input():
    ember.plugins.register(_Plugin(Nondeterministic()), name="test-nondet")
    try:
        x = ember.zeros(4, device="nondet")
        idx, v = ember.tensor([0, 0, 2], device="nondet"), ember.ones(3, device="nondet")
        assert x.index_add(0, idx, v).tolist() == [2.0, 0.0, 1.0, 0.0]
        with deterministic():
            with pytest.raises(RuntimeError, match=r"^index_add on nondet does not have a deterministic "
                                                   r"implementation, but you set 'ember.use_deterministic"):
                x.index_add_(0, idx, v)
            assert x.tolist() == [0.0] * 4
            assert (x + 1).tolist() == [1.0] * 4  # other kernels are unaffected
        with deterministic(warn_only=True), pytest.warns(UserWarning, match="index_add on nondet does not have"):
            assert x.index_add(0, idx, v).tolist() == [2.0, 0.0, 1.0, 0.0]
    finally:
        ember.plugins.unregister("test-nondet")
        ember.set_default_device(None)


def test_deterministic_mode_keeps_every_builtin_kernel_of_this_device(device):
    x = ember.zeros(5, device=device)
    idx, v = ember.tensor([0, 0, 1], device=device), ember.ones(3, device=device)
    with deterministic():
        for f in (lambda: x.index_add(0, idx, v), lambda: x.scatter_add(0, idx, v),
                  lambda: x.index_put((idx,), v, accumulate=True), lambda: ember.bincount(idx)):
            if ember.device(device).type != "cuda":
                f()  # the CPU kernels are deterministic, as PyTorch's are


def test_threads(torch):
    before = ember.get_num_threads()
    assert before >= 1 and ember.get_num_interop_threads() >= 1
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        threadpoolctl = pytest.importorskip("threadpoolctl")
        blas = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert blas and all(n == 1 for n in blas)
    finally:
        ember.set_num_threads(before)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            ember.set_num_threads(bad)
    with pytest.raises(RuntimeError):
        torch.set_num_threads(0)
    ember.set_num_interop_threads(3)
    assert ember.get_num_interop_threads() == 3


def test_float32_matmul_precision(torch):
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    try:
        for p in ("high", "medium", "highest"):
            ember.set_float32_matmul_precision(p)
            torch.set_float32_matmul_precision(p)
            assert ember.get_float32_matmul_precision() == p
            assert ember.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32 == (p != "highest")
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            ember.set_float32_matmul_precision("fast")
        assert ember.get_float32_matmul_precision() == "highest"
    finally:
        ember.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("highest")


def test_compile_runs_eagerly_with_identical_results(device):
    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU()).to(device)
    x = ember.randn(2, 3, device=device)
    assert ember.compile(net)._orig_mod is net and ember.equal(ember.compile(net)(x), net(x))

    @ember.compile(mode="max-autotune")
    def f(t):
        return t.sin() * 2

    assert ember.equal(f(x), x.sin() * 2)
    assert "eager" in ember.compile.__doc__
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(net, mode="default", options={})


def test_backends_flags(torch):
    import ember.backends.cudnn as cudnn

    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(cudnn, name) == getattr(torch.backends.cudnn, name)
    with cudnn.flags(enabled=False, benchmark=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)
    cudnn.benchmark = True  # what training scripts write
    assert ember.backends.cudnn.benchmark is True
    cudnn.benchmark = False
    if not ember.cuda.is_available():
        assert cudnn.is_available() is False and cudnn.version() is None
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False
    assert ember.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "NEON", "DEFAULT")
    ember.backends.cuda.matmul.allow_tf32 = True
    assert ember.get_float32_matmul_precision() == "highest" and ember.backends.cuda.matmul.allow_tf32
    ember.backends.cuda.matmul.allow_tf32 = False
    with pytest.raises(AttributeError, match="Unknown attribute"):
        ember.backends.cuda.matmul.no_such_flag = 1
    with ember.backends.cuda.sdp_kernel(enable_flash=False):
        assert not ember.backends.cuda.flash_sdp_enabled()
    assert ember.backends.cuda.flash_sdp_enabled()


# ---------------------------------------------------------------------------------------------- benchmark
def _shape(text):
    """A printed Measurement with the numbers and the object address blanked."""
    lines = text.splitlines()[1:]
    return [re.sub(r"\d+(\.\d+)?", "N", line) for line in lines]


def test_timer_measurement_and_printed_form_match_pytorch(device, torch):
    x = ember.ones(100, device=device)
    t = benchmark.Timer("x.sum()", globals={"x": x}, label="sum", sub_label="ones(100)", description="ember")
    m = t.timeit(200)
    assert m.number_per_run == 200 and len(m.times) == 1 and m.times[0] > 0
    assert m.median == m.mean == m.times[0] and m.title == "sum: ones(100)"
    import torch.utils.benchmark as tbench

    tt = tbench.Timer("x.sum()", globals={"x": torch.ones(100)}, label="sum", sub_label="ones(100)",
                                     description="ember")
    assert _shape(repr(m))[:2] == _shape(repr(tt.timeit(200)))[:2]
    assert re.fullmatch(r"  N measurement, N runs , N thread", _shape(repr(m))[-1])
    b = t.blocked_autorange(min_run_time=0.02)
    assert sum(b.raw_times) >= 0.02 and len(b.times) >= 2
    assert repr(b).splitlines()[3].startswith("  Median: ")
    a = t.adaptive_autorange(max_run_time=0.2)
    assert a.number_per_run >= 1 and len(a.times) >= 1
    assert a.iqr >= 0 and 1 <= a.significant_figures <= 4
    s = benchmark.Timer("x.mean()", globals={"x": x}, label="sum", sub_label="ones(100)", description="mean")
    table = str(benchmark.Compare([b, s.blocked_autorange(min_run_time=0.02)]))
    lines = table.splitlines()
    assert lines[0].startswith("[") and " sum " in lines[0] and "ember" in lines[1] and "mean" in lines[1]
    assert lines[2].startswith("1 threads: ") and "ones(100)" in lines[3]
    assert re.match(r"Times are in (nano|micro|milli)?seconds \((ns|us|ms|s)\)\.", lines[5])


def test_timer_rejects_cpp_and_callgrind():
    with pytest.raises(ValueError, match="Python statements only"):
        benchmark.Timer("1", language=benchmark.Language.CPP)
    with pytest.raises(NotImplementedError):
        benchmark.Timer("1").collect_callgrind()


# --------------------------------------------------------------------------------------------------- hub
HUBCONF = '''
"""A hub repository."""
dependencies = ["numpy"]

import ember


def tiny(width=3, pretrained=False):
    """A tiny linear model."""
    return ember.nn.Linear(2, width)


def _private():
    pass
'''


@pytest.fixture
def hub_dir(tmp_path):
    ember.hub.set_dir(str(tmp_path / "hub"))
    yield tmp_path / "hub"
    ember.hub._HUB_DIR[0] = None


def test_hub_local_list_help_load(tmp_path, hub_dir):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    assert ember.hub.list(str(repo), source="local") == ["tiny"]
    assert ember.hub.help(str(repo), "tiny", source="local") == "A tiny linear model."
    m = ember.hub.load(str(repo), "tiny", source="local", width=5)
    assert isinstance(m, ember.nn.Linear) and m.out_features == 5
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        ember.hub.load(str(repo), "nope", source="local")
    (repo / "hubconf.py").write_text(HUBCONF.replace('["numpy"]', '["numpy", "no_such_dependency"]'))
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_dependency"):
        ember.hub.load(str(repo), "tiny", source="local")
    with pytest.raises(ValueError, match='Unknown source: "ftp"'):
        ember.hub.load(str(repo), "tiny", source="ftp")


def _offline(*args, **kwargs):
    raise urllib.error.URLError("network unreachable")


def test_hub_github_from_cache_and_offline_error(hub_dir, monkeypatch):
    monkeypatch.setattr("urllib.request.urlopen", _offline)
    with pytest.raises(RuntimeError, match=r"could not download owner/repo:v1 .*Put the repository's files \(with "
                                           r"hubconf.py at the top\) in .*owner_repo_v1"):
        ember.hub.load("owner/repo:v1", "tiny", trust_repo=True)
    cached = hub_dir / "owner_repo_v1"
    cached.mkdir(parents=True)
    (cached / "hubconf.py").write_text(HUBCONF)
    assert ember.hub.load("owner/repo:v1", "tiny", trust_repo=True, verbose=False).out_features == 3
    assert (hub_dir / "trusted_list").read_text().split() == ["owner_repo"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.hub.list("owner/repo:v1", verbose=False) == ["tiny"]  # trusted now: no warning
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        ember.hub.load("not-a-repo", "tiny")


def test_load_state_dict_from_url_reads_the_cache_and_checks_the_hash(device, hub_dir, monkeypatch):
    monkeypatch.setattr("urllib.request.urlopen", _offline)
    ckdir = hub_dir / "checkpoints"
    ckdir.mkdir(parents=True)
    state = {"w": ember.arange(4.0, device=device)}
    tmp = ckdir / "tmp.pt"
    ember.save(state, str(tmp))
    import hashlib

    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    good = ckdir / f"net-{digest[:8]}.pth"
    os.replace(tmp, good)
    url = f"https://example.invalid/models/{good.name}"
    got = ember.hub.load_state_dict_from_url(url, check_hash=True, map_location=device)
    assert ember.equal(got["w"], state["w"])
    bad = ckdir / "net-00000000.pth"
    bad.write_bytes(good.read_bytes())
    with pytest.raises(RuntimeError, match="wrong checksum"):
        ember.hub.load_state_dict_from_url("https://example.invalid/net-00000000.pth", check_hash=True)
    with pytest.raises(RuntimeError, match=r"Put the file at .*checkpoints.missing-abcdef12\.pth \(its SHA-256 "
                                           r"starts with abcdef12\) and try again"):
        ember.hub.load_state_dict_from_url("https://example.invalid/missing-abcdef12.pth", check_hash=True)
    assert sorted(p.name for p in ckdir.iterdir()) == sorted([good.name, bad.name])  # no partial file left


def test_load_state_dict_from_url_reads_pytorchs_own_cache(device, hub_dir, tmp_path, monkeypatch):
    """A checkpoint that PyTorch downloaded before ($TORCH_HOME/hub/checkpoints) is read in place, hash checked;
    an explicit model_dir is the only place looked at."""
    monkeypatch.setattr("urllib.request.urlopen", _offline)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    theirs = tmp_path / "torch_home" / "hub" / "checkpoints"
    theirs.mkdir(parents=True)
    ember.save({"w": ember.arange(3.0, device=device)}, str(theirs / "tmp.pt"))
    import hashlib

    digest = hashlib.sha256((theirs / "tmp.pt").read_bytes()).hexdigest()[:8]
    os.replace(theirs / "tmp.pt", theirs / f"net-{digest}.pth")
    url = f"https://example.invalid/net-{digest}.pth"
    got = ember.hub.load_state_dict_from_url(url, check_hash=True, map_location=device)
    assert got["w"].tolist() == [0.0, 1.0, 2.0]
    assert not (hub_dir / "checkpoints" / f"net-{digest}.pth").exists()  # read where it is, not copied
    with pytest.raises(RuntimeError, match="Put the file at"):
        ember.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "elsewhere"))
