"""Meta-tests: every hook is tested and documented; every differentiable op has a gradient row."""
import inspect
import pathlib

import pytest

import ember
from ember import hookspecs
from ember.autograd.function import Op
from ember.testing import kit

ROOT = pathlib.Path(__file__).resolve().parent.parent
HOOKS = sorted(name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
               if hasattr(fn, "ember_spec"))


def test_hookspecs_found():
    assert {"ember_backends", "ember_kernels", "ember_ops"} <= set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_test(hook):
    tests = [p for p in (ROOT / "tests").glob("test_*.py") if p.name != pathlib.Path(__file__).name]
    assert any(f"def {hook}(" in p.read_text() for p in tests), f"no test implements the hook {hook}"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_in_the_guide(hook):
    guide = (ROOT / "docs" / "plugins.md").read_text()
    assert f"`{hook}(registry)`" in guide, f"docs/plugins.md does not document the hook {hook}"
    assert inspect.getdoc(getattr(hookspecs, hook)), f"hookspec {hook} has no docstring"


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _differentiable_ops():
    """Concrete differentiable ops: bases shared by several ops (``Pick``) are covered through those."""
    return {c for c in _subclasses(Op) if c.__module__.startswith("ember.ops.")
            and c.backward is not Op.backward and not c.__subclasses__()}


def _nodes_of(outputs):
    seen, stack = set(), [o.grad_fn for o in outputs if isinstance(o, ember.Tensor) and o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if type(node) in seen:
            continue
        seen.add(type(node))
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return seen


def _first_grads(outs, args):
    outs = [o for o in outs if o.requires_grad]
    leaves = [a for a in args if isinstance(a, ember.Tensor) and a.requires_grad]
    if not outs or not leaves:
        return []
    grads = ember.autograd.grad(outs, leaves, [ember.ones_like(o) for o in outs], create_graph=True,
                                allow_unused=True)
    return [g for g in grads if g is not None]


def _covered():
    covered = set()
    for row in kit.tables():
        if not row.grad:
            continue
        for sample in row.samples:
            try:
                args = kit.build(ember, sample, "float64", "cpu")
                outs = [o for o in kit.outputs(row.op(ember, *args)) if isinstance(o, ember.Tensor)]
            except Exception:  # noqa: BLE001 - error-case samples make no graph
                continue
            covered |= _nodes_of(outs)
            if row.gradgrad:  # the ops that only backward formulas use appear in the double-backward graph
                covered |= _nodes_of(_first_grads(outs, args))
    for _, inplace, _, shapes in kit.INPLACE:
        x, y = (ember.rand(*s, dtype=ember.float64, requires_grad=True) for s in shapes)
        covered |= _nodes_of([inplace(x.clone(), y)])
    # a node renamed to PyTorch's name of an overload (Fill as FillBackward2) covers the op it was made by
    return {base for c in covered for base in c.__mro__}


# dtype and device conversions need two dtypes or two devices, which a float64 row on one device cannot
# express; their gradients are checked against PyTorch in tests/test_ops_conversion.py and test_devices.py
CONVERSIONS = {"ember.ops.pointwise.ToCopyBackward0", "ember.ops.conversion.ToCopyBackward0"}
# sampling ops draw random values no reference can reproduce; their (zero) gradients are checked in
# tests/test_ops_random.py
SAMPLING = {"ember.ops.random_ops.DrawnBackward0", "ember.ops.random_ops.SampledBackward0"}
# the one-node attention (PyTorch's flash-attention node, whose saved values and in-place behaviour ember's node
# does not share): its gradients are checked against PyTorch, gradcheck and gradgradcheck in
# tests/test_transformer_kernels3.py
ATTENTION = {"ember.ops.nn.ScaledDotProductFlashAttentionForCpuBackward0"}
# ops only ember.compile's capture records: LSTMLayerKept is LSTMLayer's node (its row is "lstm") keeping its cache
# for the compiled backward; compiled gradients are checked against eager in tests/test_bilstm_paths.py
COMPILE_ONLY = {"ember.ops.nn_recurrent.LSTMLayerKeptBackward0"}


def test_every_differentiable_op_has_a_gradient_row():
    missing = sorted(f"{c.__module__}.{c.__name__}" for c in _differentiable_ops() - _covered()
                     if f"{c.__module__}.{c.__name__}" not in CONVERSIONS | SAMPLING | ATTENTION | COMPILE_ONLY)
    assert not missing, f"differentiable ops with no gradient row in the op tables: {missing}"
