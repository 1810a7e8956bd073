"""``ember.cond`` and ``ember.while_loop``: PyTorch's structured control-flow operators, run eagerly.

Under define-by-run both simply run Python control flow, so their results (and gradients) are those of the
branch or loop body taken; they keep PyTorch's argument checks, so that code written for ``torch.cond`` and
``torch.while_loop`` behaves the same here.

>>> import ember
>>> x = ember.tensor([1., 2.])
>>> ember.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, (x,))
tensor([2., 4.])
>>> ember.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (ember.tensor(0), x))
(tensor(3), tensor([ 8., 16.]))
"""
from __future__ import annotations

from .registry import export
from .tensor import Tensor

__all__ = ["cond", "while_loop"]


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    if isinstance(tree, dict):
        return [leaf for t in tree.values() for leaf in _leaves(t)]
    return [tree]


@export(to=("torch",))
def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    ``pred`` is a bool or a one-element tensor; ``operands`` a tuple or list whose leaves are tensors.
    """
    if not isinstance(pred, (bool, Tensor)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if isinstance(pred, Tensor) and pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or any(not isinstance(t, Tensor) for t in _leaves(operands)):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple that only consists "
                           f"of tensor leaves, but got {operands}.")
    return (true_fn if bool(pred) else false_fn)(*operands)


def _meta(x):
    return (tuple(x.shape), x.dtype, x.device) if isinstance(x, Tensor) else type(x)


@export(to=("torch",))
def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)``; returns the final carried values.

    ``cond_fn`` returns a bool or a one-element boolean tensor; ``body_fn`` returns as many values as
    ``carried_inputs`` holds, each with the shape and dtype of the value it replaces.
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)) or any(
            not isinstance(t, (Tensor, int)) for t in _leaves(carried_inputs)):
        raise RuntimeError("Expect carried_inputs to be a tuple of possibly nested dict/list/tuple that only "
                           f"consists of tensor or int leaves, but got {carried_inputs}.")
    carried, single = tuple(carried_inputs), False
    before = [_meta(x) for x in _leaves(carried)]
    while True:
        p = cond_fn(*carried)
        if isinstance(p, Tensor) and (p.numel() != 1 or p.dtype.name != "bool"):
            raise RuntimeError(f"torch.while_loop: expected cond_fn to return a boolean scalar tensor or a bool, "
                               f"but got a tensor of shape {tuple(p.shape)} and dtype {p.dtype}")
        if not isinstance(p, (bool, Tensor)):
            raise RuntimeError(f"torch.while_loop: expected cond_fn to return a scalar tensor or a bool, but "
                               f"got {type(p).__name__}")
        if not bool(p):
            return carried[0] if single else carried  # a body returning one bare value gives it back bare
        out = body_fn(*carried)
        single = not isinstance(out, (tuple, list))
        out = (out,) if single else tuple(out)
        after = [_meta(x) for x in _leaves(out)]
        if len(after) != len(before):
            raise RuntimeError(f"torch.while_loop: expected body_fn_output and carried_inputs to have the same "
                               f"number of outputs, but got {len(after)} and {len(before)}")
        for i, (a, b) in enumerate(zip(after, before)):
            if a != b and not (isinstance(b, type) and isinstance(a, type)):
                raise RuntimeError(f"torch.while_loop: expected body_fn_output and carried_inputs to have the same "
                                   f"metadata, but output {i} is {a} and the carried input {b}")
        carried = out
