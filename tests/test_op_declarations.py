"""One declaration per op: every side table is keyed by ``OPS`` and derived from the declarations.

The meta-tests fail when a side table (vmap rules, ONNX mappings and the reasons for their absence, autocast
rows, forward-mode closed forms, vmap's random ops) names a key that is no op, when a declaration names a
tag, promotion kind or autocast policy that does not exist, and when a pointwise op has no vmap rule or no
ONNX mapping and no listed reason.  The promotion kinds are checked against PyTorch's result types, and
``DECLARED`` is the table of worked examples (``docs/internals.md``): one row holds an op's declaration to
what every subsystem does with it.
"""
from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest

import ember
from ember import dtypes
from ember.amp import lists
from ember.autograd.function import OPS, TAGS
from ember.func import batching, forward_ad
from ember.onnx import _symbolic

POLICIES = {lists.LOWER, lists.FP32, lists.PROMOTE, None}


def _side_tables():
    return {
        "vmap rules (func/batching.py RULES)": set(batching.RULES),
        "ONNX mappings (onnx/_symbolic.py SYMBOLICS)": set(_symbolic.SYMBOLICS),
        "ONNX reasons (onnx/_symbolic.py NOT_EXPORTED)": set(_symbolic.NOT_EXPORTED),
        "autocast rows (amp/lists.py ROWS)": {row[1] for row in lists.ROWS if row[1] is not None},
        "forward-mode closed forms (func/forward_ad.py _RULES)": set(forward_ad._RULES),
    }


@pytest.mark.parametrize("table", sorted(_side_tables()))
def test_side_tables_name_only_ops(table):
    stray = sorted(_side_tables()[table] - set(OPS))
    assert not stray, f"{table} names keys that are not in OPS: {stray}"


def test_declared_facts_are_known():
    bad = []
    for key, Op in OPS.items():
        if not Op.tags <= TAGS:
            bad.append(f"{key}: tags {sorted(Op.tags - TAGS)}")
        if Op.promotion not in dtypes.PROMOTION_KINDS:
            bad.append(f"{key}: promotion {Op.promotion!r}")
        if Op.onnx is not None and not (isinstance(Op.onnx, str) and Op.onnx[:1].isupper()):
            bad.append(f"{key}: onnx {Op.onnx!r}")
        for device_type, policy in (Op.autocast or {}).items():
            if device_type not in lists.LIST_COLUMN or policy not in POLICIES:
                bad.append(f"{key}: autocast {device_type!r}: {policy!r}")
    assert not bad


_POINTWISE_CHECK = """
from ember.autograd.function import OPS
from ember.func import batching
from ember.onnx import _symbolic
for key, Op in OPS.items():
    if "pointwise" not in Op.tags or Op._origin:  # plugin ops bring their own mappings
        continue
    if batching.rule_of(Op, key) is None:
        print(f"{key}: no vmap rule")
    exported, reason = key in _symbolic.SYMBOLICS, key in _symbolic.NOT_EXPORTED
    if exported and reason:
        print(f"{key}: an ONNX mapping and a reason for its absence")
    elif not exported and not reason:
        print(f"{key}: no ONNX mapping and no reason in NOT_EXPORTED")
"""


def test_pointwise_ops_are_batched_and_exported_or_say_why():
    # in a fresh interpreter: the ops ember declares, not those other tests define on the way
    run = subprocess.run([sys.executable, "-c", _POINTWISE_CHECK], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""


def test_every_declared_onnx_op_is_mapped():
    assert not [k for k, Op in OPS.items() if Op.onnx is not None and k not in _symbolic.SYMBOLICS]


@pytest.mark.parametrize("facts", [{"tags": ("pointwize",)}, {"promotion": "int_to_floats"}])
def test_unknown_facts_are_refused_and_leave_no_op(facts):
    from ember.registry import op_class
    with pytest.raises(ValueError, match="unknown"):
        op_class("DeclarationTestBad", "exp", **facts)
    assert "DeclarationTestBad" not in OPS


def test_data_dependent_ops_are_refused_on_meta():
    meta = ember.plugins.REGISTRY.backends["meta"]
    keys = [k for k, Op in OPS.items() if "data-dependent" in Op.tags]
    assert {"nonzero", "Unique", "bincount"} <= set(keys)
    for key in keys:
        with pytest.raises(NotImplementedError, match="depends on the values"):
            meta.kernels[OPS[key].kernel_name](np.zeros(3))
    with pytest.raises(NotImplementedError, match="depends on the values"):
        ember.empty(4, device="meta").nonzero()


def test_random_ops_follow_vmaps_randomness_mode_as_pytorchs(device):
    # the "random" tag, not a list of names: binomial (missing from the old list) is refused in "error" mode
    torch = pytest.importorskip("torch")
    counts = ember.full((3, 2), 5.0, device=device)
    with pytest.raises(RuntimeError) as want:
        torch.vmap(lambda c: torch.binomial(c, torch.full(c.shape, 0.5)), randomness="error")(torch.full((3, 2), 5.0))
    with pytest.raises(RuntimeError) as got:
        ember.vmap(lambda c: ember.binomial(c, ember.full(c.shape, 0.5, device=device)), randomness="error")(counts)
    assert str(got.value).startswith(str(want.value)[:60])
    drawn = ember.vmap(lambda c: ember.binomial(c, ember.full(c.shape, 0.5, device=device)),
                       randomness="different")(counts)
    assert drawn.shape == (3, 2) and bool(((drawn >= 0) & (drawn <= 5)).all())


# --------------------------------------------------------------------------- promotion kinds against PyTorch
def _unary_rows():
    """The public one-tensor rows that PyTorch has under the same name."""
    torch = pytest.importorskip("torch")
    return sorted(k for k, Op in OPS.items() if "pointwise" in Op.tags and k.islower() and
                  getattr(Op, "kernel_name", None) is not None and Op.forward.__code__.co_argcount == 3 and
                  hasattr(ember, k) and hasattr(torch, k))


@pytest.mark.parametrize("dtype", ["int64", "bool", "float64", "complex128"])
def test_unary_promotion_kinds_give_pytorchs_result_types(dtype):
    torch = pytest.importorskip("torch")
    checked, wrong = 0, []
    for key in _unary_rows():
        Op = OPS[key]
        x = torch.tensor([1, 0, 1]).to(getattr(torch, dtype))
        try:
            want = getattr(torch, key)(x).dtype
        except (RuntimeError, NotImplementedError):
            continue  # PyTorch has no kernel for this dtype: ember's own error tests cover the refusal
        got = dtypes.result_dtype(Op.promotion, getattr(dtypes, dtype))
        ran = getattr(ember, key)(ember.tensor([1, 0, 1]).to(getattr(ember, dtype))).dtype
        if str(want) != f"torch.{got.name}" or ran is not got:
            wrong.append(f"{key} ({Op.promotion}): PyTorch {want}, declared {got}, ran {ran}")
        checked += 1
    assert checked > 20 and not wrong


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_binary_promotion_kinds_give_pytorchs_result_types(dtype):
    torch = pytest.importorskip("torch")
    checked, wrong = 0, []
    for key, Op in sorted(OPS.items()):
        name = key.lower()
        if "pointwise" not in Op.tags or getattr(Op, "kernel_name", None) is None or \
                Op.forward.__code__.co_argcount != 4 or not hasattr(torch, name) or not hasattr(ember, name):
            continue
        x = torch.tensor([3, 0, 2]).to(getattr(torch, dtype))
        try:
            want = getattr(torch, name)(x, x).dtype
        except (RuntimeError, NotImplementedError):
            continue
        got = dtypes.result_dtype(Op.promotion, getattr(dtypes, dtype))
        e = ember.tensor([3, 0, 2]).to(getattr(ember, dtype))
        ran = getattr(ember, name)(e, e).dtype
        if str(want) != f"torch.{got.name}" or ran is not got:
            wrong.append(f"{key} ({Op.promotion}): PyTorch {want}, declared {got}, ran {ran}")
        checked += 1
    assert checked > 10 and not wrong


def test_the_output_cast_check_is_pytorchs():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as want:
        torch.zeros(2, dtype=torch.long).exp_()
    with pytest.raises(RuntimeError) as got:
        ember.zeros(2, dtype=ember.long).exp_()
    assert str(want.value) in str(got.value) and str(got.value).startswith("exp_: ")
    with pytest.raises(RuntimeError, match="^out=: result type ComplexFloat can't be cast to the desired output "
                                           "type Float$"):
        dtypes.check_out_cast("out=", dtypes.complex64, dtypes.float32)
    dtypes.check_out_cast("add_", dtypes.int64, dtypes.float16)  # a lower category casts


# --------------------------------------------------------------------------- worked examples
@dataclass
class Declared:
    """An op and what its declaration promises: vmap batches it with no per-sample loop, ONNX exports it (the
    operator where one-to-one), autocast applies the policy, and its promotion kind gives the result type."""

    name: str
    fn: object          # fn(module, *inputs): ember or PyTorch
    inputs: tuple       # float arrays, each with a batch dimension first
    onnx: str | None    # the ONNX operator the export must use, where the declaration names one
    autocast_cuda: str | None


DECLARED = [
    Declared("exp", lambda m, x: m.exp(x), ((0.5 * np.arange(6.0) - 1).reshape(2, 3),), "Exp", lists.FP32),
    Declared("eq", lambda m, x, y: m.eq(x, y), (np.eye(2, 3), np.ones((2, 3))), "Equal", None),
    Declared("sigmoid", lambda m, x: m.sigmoid(x), (np.linspace(-2, 2, 6).reshape(2, 3),), "Sigmoid", None),
]


def _ember(a, dtype=None):
    return ember.tensor(a, dtype=dtype or ember.float32)


@pytest.mark.parametrize("row", DECLARED, ids=lambda r: r.name)
def test_declared_op_forward_and_promotion_match_pytorch(device, row):
    torch = pytest.importorskip("torch")
    Op = OPS[row.name]
    for cast in (np.float32, np.int64):
        got = row.fn(ember, *[_ember(a.astype(cast), None).to(device) for a in row.inputs])
        want = row.fn(torch, *[torch.tensor(a.astype(cast)) for a in row.inputs])
        assert str(want.dtype) == f"torch.{got.dtype.name}"
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6)
    assert dtypes.result_dtype(Op.promotion, dtypes.int64).name == str(want.dtype)[len("torch."):]


@pytest.mark.parametrize("row", DECLARED, ids=lambda r: r.name)
def test_declared_op_is_batched_without_a_loop(device, row):
    inputs = [_ember(a).to(device) for a in row.inputs]
    batching.LOOPED.clear()
    got = ember.vmap(lambda *xs: row.fn(ember, *xs))(*inputs)
    assert not batching.LOOPED
    want = ember.stack([row.fn(ember, *[x[i] for x in inputs]) for i in range(len(inputs[0]))])
    assert ember.equal(got, want)


@pytest.mark.parametrize("row", DECLARED, ids=lambda r: r.name)
def test_declared_op_exports_to_its_onnx_operator(row):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")

    class Model(ember.nn.Module):
        def forward(self, *xs):
            return row.fn(ember, *xs)

    inputs = [_ember(a) for a in row.inputs]
    buf = io.BytesIO()
    ember.onnx.export(Model(), tuple(inputs), buf, input_names=[f"x{i}" for i in range(len(inputs))])
    proto = onnx.load_from_string(buf.getvalue())
    assert row.onnx in {n.op_type for n in proto.graph.node}
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {f"x{i}": x.numpy() for i, x in enumerate(inputs)})
    np.testing.assert_allclose(got, Model()(*inputs).numpy(), rtol=1e-6)


@pytest.mark.parametrize("row", DECLARED, ids=lambda r: r.name)
def test_declared_op_has_its_autocast_policy(row):
    assert lists.policies("cuda").get(row.name) == row.autocast_cuda
    assert lists.policies("xpu").get(row.name) == row.autocast_cuda  # other device types follow CUDA's list
    assert OPS[row.name].autocast is None or row.autocast_cuda is not None
