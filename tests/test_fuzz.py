"""The differential fuzzer (:mod:`ember.testing.fuzz`) on a fixed budget: random calls, valid and invalid, over
every op-table row, against PyTorch.  Every disagreement must be listed in ``fuzz_known_differences.py`` with
its reason; the long run is ``python -m ember.testing.fuzz --calls 5000 --seed N --known
tests/fuzz_known_differences.py``."""
import re

import numpy as np
import pytest

from ember.testing import fuzz
from fuzz_known_differences import KNOWN, SWEEP_OPEN, known

torch = pytest.importorskip("torch")

CALLS, SEED = 400, 0

# one row per family whose dtypes are declared as PyTorch's kernel has them (ember.dtypes.check_kernel): each
# computes and refuses exactly the dtypes PyTorch does (the slow test sweeps every row)
DTYPE_SWEPT = ("grid_sample_bilinear_zeros_0", "batch_norm_eval_plain", "pdist", "cdist", "max_pool2d_with_indices",
               "adaptive_max_pool2d", "conv2d", "multi_margin_loss", "histogramdd", "lu_factor", "mm",
               "matmul_empty", "frac", "round", "chebyshev_polynomial_t", "median", "kthvalue", "argmax", "topk",
               "nansum", "softplus", "logit", "gather", "scatter", "index_0d_forms", "batch_norm_train_plain",
               "index_reduce_mean", "addmm", "sum_to_size", "gather_empty", "fill_diagonal", "matrix_exp")


def test_fuzz_budget_has_no_unlisted_disagreement(device):
    """A fixed, seeded budget of random calls agrees with PyTorch except where the list says why."""
    report = fuzz.run(calls=CALLS, seed=SEED, known=known, device=device)
    assert report.calls == CALLS
    lines = [f"{d.kind} {d.call}: {d.detail[:300]}" for d in report.disagreements]
    assert not lines, f"{len(lines)} unlisted disagreements:\n" + "\n".join(lines)


def test_dtype_support_as_pytorch(device):
    """Each of these rows, once in every dtype, agrees with PyTorch: same outcome, exception class, results and
    gradients (complex linear algebra is the listed exception)."""
    report = fuzz.sweep_dtypes(ops=DTYPE_SWEPT, device=device, known=known)
    assert report.calls >= 5 * len(DTYPE_SWEPT)
    lines = [f"{d.kind} {d.call}: {d.detail[:300]}" for d in report.disagreements]
    assert not lines, f"{len(lines)} dtype disagreements:\n" + "\n".join(lines)


@pytest.mark.slow
def test_dtype_sweep_of_every_row(device):
    """Every row once in every dtype: the rows that still disagree with PyTorch are the listed ones
    (``SWEEP_OPEN``); a row that agreed and regresses fails here (a minute: run with ``-m slow``)."""
    report = fuzz.sweep_dtypes(device=device, known=known)
    new = sorted({d.op for d in report.disagreements} - SWEEP_OPEN)
    detail = [f"{d.kind} {d.call}: {d.detail[:200]}" for d in report.disagreements if d.op in new]
    assert not new, f"rows that disagree with PyTorch on a dtype: {new}\n" + "\n".join(detail)


def test_fuzzer_is_seeded():
    """The same seed draws the same calls (a disagreement can be replayed), another seed others."""
    def calls(seed):
        rng = np.random.RandomState(seed)
        table = fuzz.rows()
        out = []
        for _ in range(30):
            row = table[rng.randint(len(table))]
            out.append(fuzz.describe(row, fuzz.mutate(rng, row.samples[rng.randint(len(row.samples))])))
        return out

    assert calls(3) == calls(3)
    assert calls(3) != calls(4)


def test_fuzzer_sees_each_kind_of_disagreement():
    """The comparison finds a wrong value, a wrong dtype, an exception where PyTorch computes and a result where
    PyTorch raises (checked on a row whose ember side is replaced)."""
    import ember
    from ember.testing.row import F, Row

    def op(m, x):
        if m is ember:
            return {"values": lambda: x + 1, "dtype": x.double, "refuses": lambda: m.tensor([]).reshape(7),
                    "accepts": lambda: x}[mode]()
        return x if mode != "accepts" else x.reshape(7)

    row = Row("probe", op, [[F(np.ones((2, 3)))]])
    args = [fuzz.Arg(np.ones((2, 3)), "float32")]
    for mode in ("values", "dtype", "refuses", "accepts"):
        kinds = [k for k, _ in fuzz.compare(row, args)]
        assert kinds == [mode], (mode, kinds)


def test_complex_values_compare_by_part():
    """An inf in one part of a complex value leaves the other part to compare at the dtype's tolerance (NumPy's
    isclose of the complex difference would call any two such values different)."""
    import ember

    near = complex(-np.inf, 0.06892119348049164), complex(-np.inf, 0.06892118602991104)
    far = complex(-np.inf, 0.07), complex(-np.inf, 0.06)
    for (a, b), same in ((near, True), (far, False)):
        got = fuzz._values_differ(ember.tensor([a], dtype=ember.complex64), torch.tensor([b], dtype=torch.complex64),
                                  "complex64")
        assert (got is None) == same, (a, b, got)


def test_fuzzer_flags_inputs_changed_by_a_failed_call():
    """An op that writes into its input and then raises is reported (``mutated``)."""
    from ember.testing.row import Row

    def op(m, x):
        x.add_(1)
        raise RuntimeError("refused after writing")

    row = Row("probe", op, [[]])
    kinds = [k for k, _ in fuzz.compare(row, [fuzz.Arg(np.ones(3), "float32")])]
    assert kinds == ["mutated"]


def test_known_differences_say_why():
    """Every listed difference is deliberate or open, with a reason, and its patterns compile."""
    for k in KNOWN:
        assert k.status in ("deliberate", "open") and len(k.reason) > 20, k
        re.compile(k.op)
        re.compile(k.detail)
