"""Flatten nested tuples, lists and dicts of values into leaves and back (what the transforms map over)."""
from __future__ import annotations


class Spec:
    """The structure of a flattened value: a leaf (``kind`` None), or a container and its children's specs."""

    __slots__ = ("kind", "meta", "children", "num_leaves")

    def __init__(self, kind, meta, children):
        self.kind, self.meta, self.children = kind, meta, children
        if kind is None:
            self.num_leaves = 1
        else:
            n = 0
            for c in children:
                n += c.num_leaves
            self.num_leaves = n

    def __eq__(self, other):
        return isinstance(other, Spec) and (self.kind, self.meta, self.children) == \
            (other.kind, other.meta, other.children)

    def __repr__(self):
        if self.kind is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children)) + "}"
        return f"({inner},)" if self.kind is tuple else f"[{inner}]" if self.kind is list else \
            f"{self.kind.__name__}({inner})"


LEAF = Spec(None, None, ())


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(value):
    """``(leaves, spec)``: the leaves of nested tuples/lists/dicts in order, and the structure."""
    leaves = []
    return leaves, _walk(value, leaves)


# module-level recursions (not closures over themselves: a closure that calls itself is a reference cycle,
# and the leaves it holds -- the tensors of a transform -- would then live until the cycle collector ran)
def _walk(v, leaves):
    t = type(v)
    if t is dict or isinstance(v, dict):
        keys = tuple(v.keys())
        return Spec(dict, keys, _children(v.values(), leaves))
    if t is tuple or t is list:
        return Spec(t, None, _children(v, leaves))
    if isinstance(v, (tuple, list)):
        return Spec(type(v) if _is_namedtuple(v) else tuple, None, tuple(_walk(x, leaves) for x in v))
    leaves.append(v)
    return LEAF


_CONTAINERS = (dict, tuple, list)


def _children(values, leaves):
    """The specs of a container's children, its leaves appended directly (the common case: no call each)."""
    specs = []
    for x in values:
        if type(x) in _CONTAINERS or isinstance(x, _CONTAINERS):
            specs.append(_walk(x, leaves))
        else:
            leaves.append(x)
            specs.append(LEAF)
    return tuple(specs)


def tree_unflatten(leaves, spec):
    """The inverse of :func:`tree_flatten`."""
    return _build(spec, iter(leaves))


def _build(s, it):
    if s.kind is None:
        return next(it)
    items = [next(it) if c is LEAF else _build(c, it) for c in s.children]
    if s.kind is dict:
        return dict(zip(s.meta, items))
    if s.kind in (tuple, list):
        return s.kind(items)
    return s.kind(*items)


def tree_map(fn, value):
    leaves, spec = tree_flatten(value)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, spec, error):
    """Leaves of ``prefix`` (an int/None, or a structure that is a prefix of ``spec``) repeated to ``spec``'s
    leaves; ``error()`` gives the exception for a mismatch."""
    out = []
    _prefix(prefix, spec, error, out)
    return out


def _prefix(p, s, error, out):
    if s.kind is None or not isinstance(p, (tuple, list, dict)):
        if isinstance(p, (tuple, list, dict)):
            raise error()
        out.extend([p] * s.num_leaves)
        return
    if s.kind is dict:
        if not isinstance(p, dict) or set(p) != set(s.meta):
            raise error()
        for k, c in zip(s.meta, s.children):
            _prefix(p[k], c, error, out)
        return
    if isinstance(p, dict) or len(p) != len(s.children):
        raise error()
    for pi, c in zip(p, s.children):
        _prefix(pi, c, error, out)
