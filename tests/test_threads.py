"""Grad mode, inference mode and the default device belong to a thread, as in PyTorch; anomaly mode, the
default dtype and determinism are process-wide.  Threads training at once, bounded in time."""
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import ember

TIMEOUT = 120  # seconds a thread may take before the test fails (it never should come close)


def _run_threads(targets):
    """Run each target in its own thread, started together; re-raise the first failure."""
    errors = []
    start = threading.Barrier(len(targets))

    def wrap(fn):
        def body():
            try:
                start.wait(TIMEOUT)
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported to the test below
                errors.append(exc)
        return body

    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread did not finish in time"
    if errors:
        raise errors[0]


def _train(device, seed, steps=15):
    """Train a small model on fixed data; returns the losses (the same in any thread, alone or not)."""
    rng = np.random.RandomState(seed)
    x = ember.tensor(rng.randn(32, 8), dtype=ember.float32, device=device)
    y = ember.tensor(rng.randint(0, 3, 32), device=device)
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 3)).to(device)
    with ember.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(ember.tensor(np.random.RandomState(seed + i).randn(*p.shape) * 0.3, dtype=ember.float32))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        with ember.no_grad():  # a no_grad block inside each step, as evaluation code has
            losses.append(float(loss.detach().cpu()))
    return losses


@pytest.mark.parametrize("n", [2, 4])
def test_threads_train_separate_models_at_once(device, n):
    expected = {s: _train(device, s) for s in range(n)}
    got = {}

    def target(s):
        return lambda: got.__setitem__(s, _train(device, s))

    _run_threads([target(s) for s in range(n)])
    for s in range(n):
        np.testing.assert_allclose(got[s], expected[s], rtol=1e-5, atol=1e-6)
        assert got[s][-1] < got[s][0]


def test_inference_under_no_grad_while_another_thread_trains(device):
    x = ember.randn(16, 8, device=device)
    model = ember.nn.Linear(8, 4).to(device)
    inferred = []
    stop = threading.Event()
    trained = []

    def infer():
        with ember.no_grad():
            while True:  # at least once, however soon the training thread finishes
                out = model(x)
                inferred.append(out.requires_grad)
                assert not ember.is_grad_enabled()
                if stop.is_set():
                    break
        assert ember.is_grad_enabled()

    def train():
        try:
            trained.append(_train(device, 7, steps=25))
            assert ember.is_grad_enabled()
        finally:
            stop.set()

    _run_threads([infer, train])
    assert inferred and not any(inferred)
    assert trained and trained[0][-1] < trained[0][0]


def test_inference_mode_is_per_thread(device):
    seen = {}
    inside, checked = threading.Event(), threading.Event()

    def a():
        with ember.inference_mode():
            inside.set()
            assert checked.wait(TIMEOUT)
            seen["a"] = ember.ones(2, device=device).is_inference()

    def b():
        assert inside.wait(TIMEOUT)
        w = ember.ones(2, device=device, requires_grad=True)
        seen["b"] = (ember.is_inference_mode_enabled(), ember.is_grad_enabled(), (w * 2).requires_grad)
        checked.set()

    _run_threads([a, b])
    assert seen == {"a": True, "b": (False, True, True)}


def test_set_grad_enabled_in_a_thread_leaves_others(device):
    seen = {}
    off, checked = threading.Event(), threading.Event()

    def a():
        ember.set_grad_enabled(False)  # not a context manager: stays off in this thread only
        off.set()
        assert checked.wait(TIMEOUT)
        seen["a"] = ember.is_grad_enabled()

    def b():
        assert off.wait(TIMEOUT)
        seen["b"] = ember.is_grad_enabled()
        checked.set()

    _run_threads([a, b])
    assert seen == {"a": False, "b": True}
    assert ember.is_grad_enabled()


def test_new_thread_starts_with_grad_on_even_if_parent_has_it_off(device):
    seen = []
    with ember.no_grad():
        t = threading.Thread(target=lambda: seen.append(ember.is_grad_enabled()))
        t.start()
        t.join(TIMEOUT)
    assert seen == [True]


def test_process_wide_and_per_thread_switches_match_torch(device, torch):
    """anomaly mode, default dtype and determinism are process-wide; grad, inference and default device per thread."""
    def probe(m):
        res = {}

        def th():
            res["grad"] = m.is_grad_enabled()
            res["inference"] = m.is_inference_mode_enabled()
            res["anomaly"] = m.is_anomaly_enabled()
            res["dtype"] = str(m.get_default_dtype()).split(".")[-1]
            res["device"] = m.empty(1).device.type
            res["deterministic"] = m.are_deterministic_algorithms_enabled()

        prev_dtype = m.get_default_dtype()
        m.set_grad_enabled(False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch warns that anomaly detection slows programs down
            m.autograd.set_detect_anomaly(True)
        m.set_default_dtype(m.float64)
        m.set_default_device("meta" if m is torch else device)
        m.use_deterministic_algorithms(True)
        try:
            with m.inference_mode():
                t = threading.Thread(target=th)
                t.start()
                t.join(TIMEOUT)
        finally:
            m.set_grad_enabled(True)
            m.autograd.set_detect_anomaly(False)
            m.set_default_dtype(prev_dtype)
            m.set_default_device(None)
            m.use_deterministic_algorithms(False)
        return res

    got, want = probe(ember), probe(torch)
    want["device"] = "cpu"
    assert got == want


def test_default_device_is_per_thread(device):
    seen = []
    ember.set_default_device(device)
    try:
        t = threading.Thread(target=lambda: seen.append(ember.get_default_device().type))
        t.start()
        t.join(TIMEOUT)
        assert ember.get_default_device().type == ember.device(device).type
    finally:
        ember.set_default_device(None)
    assert seen == ["cpu"]


# --------------------------------------------------------------------------- NumPy's floating-point state
_IEEE_OPS = [
    ("div by zero", lambda x: x / 0),
    ("0/0", lambda x: (x * 0) / 0),
    ("log of zero and negatives", lambda x: x.log()),
    ("log2", lambda x: x.log2()),
    ("sqrt of negatives", lambda x: x.sqrt()),
    ("rsqrt", lambda x: x.rsqrt()),
    ("reciprocal", lambda x: x.reciprocal()),
    ("pow", lambda x: x ** -1.5),
    ("exp overflow", lambda x: (x * 1000).exp()),
    ("sigmoid of large negatives", lambda x: (x * -1000).sigmoid()),
    ("acos", lambda x: (x * 3).acos()),
    ("atanh", lambda x: x.atanh()),
    ("remainder by zero", lambda x: x.remainder(0.0)),
    ("fmod by zero", lambda x: x.fmod(0.0)),
    ("softmax of all -inf", lambda x: (x * 0 - float("inf")).softmax(0)),
    ("log_softmax of all -inf", lambda x: (x * 0 - float("inf")).log_softmax(0)),
    ("mean of empty", lambda x: x[:0].mean()),
    ("var of one element", lambda x: x[:1].var()),
    ("std of one element", lambda x: x[:1].std()),
    ("logsumexp of -inf", lambda x: (x * 0 - float("inf")).logsumexp(0)),
    ("xlogy", lambda x: ember.xlogy(x, x)),
    ("lgamma", lambda x: ember.lgamma(x)),
    ("digamma", lambda x: ember.digamma(x)),
    ("backward of log at zero", lambda x: x.clone().requires_grad_().log().sum().backward()),
    ("backward of sqrt at zero", lambda x: x.abs().requires_grad_().sqrt().sum().backward()),
]


@pytest.mark.parametrize("name,op", _IEEE_OPS, ids=[n for n, _ in _IEEE_OPS])
def test_no_numpy_warnings_in_a_new_thread(device, name, op):
    """IEEE results come silently in any thread, whatever NumPy's error state there (PyTorch's behaviour)."""
    x = ember.tensor([1.0, 0.0, -1.0, 2.0], device=device)
    caught = []

    def body():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with np.errstate(all="warn"):
                op(x)
        caught.extend(str(i.message) for i in w)

    t = threading.Thread(target=body)
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive()
    assert caught == []


def test_numpy_error_state_is_left_alone(device):
    before = np.geterr()
    x = ember.tensor([1.0, 0.0], device=device)
    (x / 0).log()
    assert np.geterr() == before
    with np.errstate(divide="raise"):  # the program's own NumPy code keeps its setting
        with pytest.raises(FloatingPointError):
            np.array([1.0]) / 0
        x / 0  # ember's ops do not raise or warn


def test_importing_ember_leaves_numpy_error_state():
    code = ("import numpy as np; before = np.geterr(); import ember; ember.ones(2) / 0; "
            "assert np.geterr() == before, (before, np.geterr()); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
