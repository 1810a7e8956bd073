"""``ember.utils.flop_counter``: count the floating-point operations of the GEMMs and convolutions a region runs,
in total and per module, as PyTorch's ``FlopCounterMode`` does.

The counts follow PyTorch's formulas: ``2 * M * N * K`` for a matrix product; for a convolution, 2 times the
output's elements times the weight's elements per output channel, the same for each of its two gradients (the
weight's counted ``groups`` times over, as PyTorch counts it). Other ops count zero. Ops are seen through the one
interception point; modules through the module-call hook, and a module's backward through gradient hooks on its
outputs and inputs, so the flops of a backward are charged to the modules whose forward made them.

>>> import ember
>>> from ember.utils.flop_counter import FlopCounterMode
>>> with FlopCounterMode(display=False) as counter:
...     _ = ember.nn.Linear(3, 5)(ember.ones(4, 3))
>>> counter.get_total_flops(), counter.get_flop_counts()["Linear"]
(120, {'addmm': 120})
"""
from __future__ import annotations

import math
import weakref
from collections import defaultdict

from .._pytree import tree_leaves
from ..autograd.engine import TASK
from ..autograd.graph import register_multi_grad_hook
from ..interception import intercept
from ..nn.modules import module as _module
from ..ops.linalg import Matmul
from ..ops.nn import Linear
from ..ops.nn_conv import Conv, ConvInputGrad, ConvWeightGrad
from ..tensor import Tensor

__all__ = ["FlopCounterMode", "register_flop_formula"]


def _matmul_flops(a, b, out=None):
    # PyTorch counts a matrix-vector product (aten.mv) as zero; every other product folds into a GEMM
    if b.ndim < 2 and a.ndim < 3:
        return 0
    return 2 * math.prod(out.shape) * a.shape[-1]


def _linear_flops(x, w, b, out=None):
    return 2 * math.prod(out.shape) * w.shape[-1]


def _conv_flops(x, w, b, params, out=None):
    return 2 * math.prod(out.shape) * math.prod(w.shape[1:])


def _conv_input_grad_flops(g, w, x_shape, params, out=None):
    return 2 * math.prod(g.shape) * math.prod(w.shape[1:])


def _conv_weight_grad_flops(x, g, w_shape, params, cols, out=None):
    # PyTorch's formula for the weight gradient leaves the groups out: it counts ``groups`` times a grouped one
    return 2 * math.prod(g.shape) * math.prod(w_shape[1:]) * params[3]


# Op -> (the name the counts are kept under, formula(*op's arguments, out=result) -> flops)
FLOP_REGISTRY = {
    Matmul: ("mm", _matmul_flops),
    Linear: ("addmm", _linear_flops),
    Conv: ("convolution", _conv_flops),
    ConvInputGrad: ("convolution_backward", _conv_input_grad_flops),
    ConvWeightGrad: ("convolution_backward", _conv_weight_grad_flops),
}


def register_flop_formula(targets, get_raw=False):
    """Decorator: ``formula(*args, out=result)`` gives the flops of the ops (Op classes) in ``targets``."""
    targets = targets if isinstance(targets, (list, tuple)) else [targets]

    def register(formula):
        for op in targets:
            FLOP_REGISTRY[op] = (getattr(op, "__name__", str(op)), formula)
        return formula

    return register


class FlopCounterMode:
    """A context that counts the flops of the ops run inside it, in total (``"Global"``) and per module (named by
    the outermost module's class and the attribute path: ``"Net.fc1"``).

    ``depth`` limits the modules the printed table shows (``display=True`` prints it on exit);
    ``custom_mapping`` maps further ops to formulas. ``mods`` is accepted for PyTorch's signature: every module
    called inside the region is tracked.
    """

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping: dict | None = None):
        self.depth, self.display = depth, display
        self.flop_registry = {**FLOP_REGISTRY, **{op: (getattr(op, "__name__", str(op)), f)
                                                  for op, f in (custom_mapping or {}).items()}}
        self.flop_counts: dict = defaultdict(lambda: defaultdict(int))
        self._names = weakref.WeakKeyDictionary()  # module -> its name
        self._forward: list = []  # the names of the modules whose forward is running
        self._backward: set = set()  # the names of the modules whose backward is running
        self._hooks: list = []
        self._intercept = intercept(self._count)
        self._saved_scope = None

    def get_total_flops(self) -> int:
        """All flops counted so far."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict:
        """``{module name: {op name: flops}}``, with ``"Global"`` for the whole region."""
        return {name: dict(ops) for name, ops in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as a text table, modules nested at most ``depth`` deep."""
        depth = self.depth if depth is None else depth
        rows = [("Module", "FLOP")]
        for name, ops in self.flop_counts.items():
            level = 0 if name == "Global" else name.count(".") + 1
            if level <= depth:
                rows.append(("  " * level + name, f"{sum(ops.values()):,}"))
                rows += [("  " * (level + 1) + f"- {op}", f"{n:,}") for op, n in ops.items()]
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{a:<{width}}  {b:>15}" for a, b in rows)

    def __enter__(self):
        self.flop_counts.clear()
        self._saved_scope = _module.CALL_SCOPE[0]
        _module.CALL_SCOPE[0] = self._module_call
        self._intercept.__enter__()
        return self

    def __exit__(self, *exc):
        self._intercept.__exit__(*exc)
        _module.CALL_SCOPE[0] = self._saved_scope
        for handle in self._hooks:
            handle.remove()
        self._hooks.clear()
        self._backward.clear()
        if self.display:
            print(self.get_table())

    def _name(self, mod) -> str:
        name = self._names.get(mod)
        if name is None:
            name = self._names[mod] = type(mod).__name__
        for child_name, child in mod.named_children():
            self._names.setdefault(child, f"{name}.{child_name}")
        return name

    def _module_call(self, mod, args, kwargs):
        """The module-call hook: ``mod``'s name is a parent of the ops its forward runs, and of those of its
        backward (from its outputs' gradients to its inputs')."""
        name = self._name(mod)
        self._grad_hook(args, kwargs, lambda *_: self._backward.discard(name))
        self._forward.append(name)
        try:
            out = self._saved_scope(mod, args, kwargs) if self._saved_scope else mod._call(args, kwargs)
        finally:
            self._forward.pop()
        self._grad_hook(out, None, lambda *_: self._backward.add(name))
        return out

    def _grad_hook(self, tree, extra, fn):
        tensors = [t for t in tree_leaves((tree, extra)) if isinstance(t, Tensor) and t.requires_grad]
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, fn))

    def _count(self, kind, op, args, run):
        out = run(*args)
        entry = self.flop_registry.get(op)
        if entry is not None:
            name, formula = entry
            flops = formula(*args, out=out)
            if TASK.current is None:  # not in a backward: the modules of an earlier backward are done
                self._backward.clear()
            for parent in {"Global", *self._forward, *self._backward}:
                self.flop_counts[parent][name] += flops
        return out
