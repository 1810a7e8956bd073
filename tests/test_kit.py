"""The conformance kit: every op table of ember on every backend, and the kit's own checks.

The op-table and in-place tests are imported from ember.testing.conformance, the module
``pytest --ember-backend NAME`` runs for outside backends: ember tests itself with the same kit.
"""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.backend import ArrayBackend
from ember.plugins import hookimpl, register, unregister
from ember.testing import OpCheckError, check_op, kit
from ember.testing.conformance import test_inplace_semantics, test_op_table  # noqa: F401 - run here
from ember.testing.row import Row, Sampler

r = Sampler(0).r


class BrokenBackend(ArrayBackend):
    """A NumPy backend with deliberately wrong kernels."""

    host = True
    array_type = np.ndarray

    def __init__(self, name, overrides):
        self.name = name
        self._broken = overrides
        super().__init__(np)

    def overrides(self):
        return dict(self._broken)


def _wrong_exp(x):
    return np.exp(x) + 1e-3


def _sum_ignoring_keepdim(x, axis=None, keepdims=False, dtype=None):
    return np.sum(x, axis=axis, dtype=dtype)


class _BackendPlugin:
    def __init__(self, backend):
        self.backend = backend

    @hookimpl
    def ember_backends(self, registry):
        registry.add_backend(self.backend)


@pytest.fixture
def broken():
    made = []

    def make(name, overrides):
        register(_BackendPlugin(BrokenBackend(name, overrides)), name=f"test-{name}")
        made.append(f"test-{name}")
        return name

    yield make
    for name in made:
        unregister(name)


ROWS = [
    Row("exp", lambda m, x: m.exp(x), [[r(2, 3)]]),
    Row("sum_keepdim", lambda m, x: x.sum(1, keepdim=True), [[r(2, 3)]]),
    Row("mul", lambda m, x, y: x * y, [[r(2, 3), r(3)]]),
]


def test_kit_passes_on_cpu_rows():
    assert kit.run(ROWS, "cpu") == []


@pytest.mark.parametrize("name, overrides, failing", [
    ("brokenexp", {"exp": _wrong_exp}, "op 'exp', sample 0, check 'forward'"),
    ("brokensum", {"sum": _sum_ignoring_keepdim}, "op 'sum_keepdim', sample 0, check 'forward'"),
])
def test_kit_catches_a_broken_backend(broken, name, overrides, failing):
    dev = broken(name, overrides)
    failures = kit.run(ROWS, dev)
    assert any(f.startswith(failing) and f"on device {dev!r}" in f for f in failures), failures
    assert not any(f.startswith("op 'mul'") for f in failures), failures


def test_kit_run_case_raises_naming_op_and_case(broken):
    dev = broken("brokenexp2", {"exp": _wrong_exp})
    with pytest.raises(kit.KitFailure, match=r"op 'exp', sample 0, check 'forward', on device 'brokenexp2'"):
        kit.run_case((ROWS[0], 0, "forward"), dev)


def test_kit_cases_cover_every_check():
    checks = {c[2] for c in kit.cases(ROWS)}
    assert checks == set(kit.CHECKS)
    assert kit.case_id((ROWS[0], 0, "grad")) == "exp-0-grad"


def test_kit_runs_every_table():
    here = pathlib.Path(kit.__file__).parent
    on_disk = {f"ember.testing.{p.stem}" for p in here.glob("rows_*.py")}
    assert on_disk == set(kit.TABLES)
    rows = kit.tables()
    names = [row.name for row in rows]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    assert len(rows) >= 830  # every row of every table, the nn and batch-norm rows included


def test_kit_checks_gradients_against_the_reference(broken):
    # forward right, gradient wrong: only the gradient checks see it
    dev = broken("brokenreluback", {"relu_backward": lambda g, out: g * (out > 0) * 2})
    rows = [Row("relu", lambda m, x: m.relu(x), [[r(2, 3)]])]
    failures = kit.run(rows, dev)
    assert any(f.startswith("op 'relu', sample 0, check 'backward'") for f in failures), failures
    assert not any("check 'forward'" in f for f in failures), failures


def test_rows_skip_with_their_reason(broken):
    dev = broken("brokenexp3", {"exp": _wrong_exp})
    row = Row("exp", lambda m, x: m.exp(x), [[r(2, 3)]], skips={dev: "exp is wrong there on purpose"})
    assert kit.run([row], dev) == []
    assert kit.skip_reason((row, 0, "forward"), dev) == f"exp on {dev}: exp is wrong there on purpose"
    assert kit.skip_reason((row, 0, "forward"), "cpu") is None


def test_check_op_passes_and_fails(device):
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    check_op(lambda t: t * t, [(x,)], reference=lambda t: t.pow(2), devices=[device])
    with pytest.raises(OpCheckError, match="differs from the reference"):
        check_op(lambda t: t * t, [(x,)], reference=lambda t: t.pow(3), devices=[device])


class _DetachedSave(ember.autograd.Function):
    """Right first derivative, wrong second: it saves a value computed in forward (no graph)."""

    @staticmethod
    def forward(ctx, x):
        d = 1 + x.abs()
        ctx.save_for_backward(d)
        return x / d

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        return g / (d * d)


class _BadGrad(_DetachedSave):
    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        return g / d  # should be g / d**2


def test_check_op_catches_a_wrong_gradient(device):
    x = ember.tensor([0.5, -1.0], requires_grad=True)
    with pytest.raises(OpCheckError, match="sample 0 .* gradcheck failed"):
        check_op(_BadGrad.apply, [(x,)], devices=[device])


def test_check_op_wants_samples():
    with pytest.raises(OpCheckError, match="at least one sample"):
        check_op(lambda t: t, [])


def test_pytest_option_adds_the_kit(tmp_path):
    (tmp_path / "test_a.py").write_text("def test_x():\n    assert True\n")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ember-backend", "cpu",
           "-k", "test_op_table and exp-0-forward or test_x", str(tmp_path / "test_a.py")]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    want = len([c for c in kit.cases() if "exp-0-forward" in kit.case_id(c)]) + 1
    assert f"{want} passed" in res.stdout, res.stdout + res.stderr


def test_check_op_catches_a_wrong_second_derivative(device):
    x = ember.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    check_op(_DetachedSave.apply, [(x,)], devices=[device], gradgrad=False)
    with pytest.raises(OpCheckError, match="gradgradcheck failed"):
        check_op(_DetachedSave.apply, [(x,)], devices=[device])


def test_gradcheck_sees_strided_inputs_and_filtered_outputs(device):
    # finite differences must reach a transposed view, and a function that keeps only the outputs
    # requiring grad must be checked, not pass with no outputs
    x = ember.tensor(np.arange(6.0).reshape(3, 2) / 7, dtype=ember.float64, device=device).t().requires_grad_(True)

    def keep_differentiable(t):
        return tuple(o for o in (_BadGrad.apply(t),) if o.requires_grad)

    assert ember.autograd.gradcheck(lambda t: tuple(o for o in (t * t,) if o.requires_grad), (x,))
    with pytest.raises(ember.autograd.GradcheckError, match="Jacobian mismatch"):
        ember.autograd.gradcheck(keep_differentiable, (x,))
