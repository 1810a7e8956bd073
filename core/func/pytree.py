"""The pytrees ``ember.func``'s transforms map over: :mod:`ember.utils._pytree` (PyTorch's ``torch.utils._pytree``),
so a container type registered there is flattened by ``vmap``, ``grad`` and ``jacrev`` too; plus the prefix
broadcast that ``vmap``'s ``in_dims`` and ``out_dims`` need."""
from __future__ import annotations

from .._pytree import _LEAF as LEAF
from .._pytree import TreeSpec, tree_flatten, tree_map, tree_unflatten

__all__ = ["LEAF", "TreeSpec", "tree_flatten", "tree_unflatten", "tree_map", "broadcast_prefix"]


def broadcast_prefix(prefix, spec: TreeSpec, error):
    """Leaves of ``prefix`` (an int/None, or a structure that is a prefix of ``spec``) repeated to ``spec``'s
    leaves; ``error()`` gives the exception for a mismatch."""
    out = []
    _prefix(prefix, spec, error, out)
    return out


def _prefix(p, s, error, out):
    if s.type is None or not isinstance(p, (tuple, list, dict)):
        if isinstance(p, (tuple, list, dict)):
            raise error()
        out.extend([p] * s.num_leaves)
        return
    if s.type is dict:
        if not isinstance(p, dict) or set(p) != set(s.context):
            raise error()
        for k, c in zip(s.context, s.children_specs):
            _prefix(p[k], c, error, out)
        return
    if isinstance(p, dict) or len(p) != len(s.children_specs):
        raise error()
    for pi, c in zip(p, s.children_specs):
        _prefix(pi, c, error, out)
