"""Flatten nested tuples, lists and dicts of values into leaves and back (what the transforms map over)."""
from __future__ import annotations


class Spec:
    """The structure of a flattened value: a leaf (``kind`` None), or a container and its children's specs."""

    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind, meta, children):
        self.kind, self.meta, self.children = kind, meta, children

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

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

    def walk(v):
        if isinstance(v, dict):
            keys = list(v.keys())
            return Spec(dict, tuple(keys), tuple(walk(v[k]) for k in keys))
        if _is_namedtuple(v):
            return Spec(type(v), None, tuple(walk(x) for x in v))
        if isinstance(v, (tuple, list)):
            return Spec(type(v) if type(v) in (tuple, list) else tuple, None, tuple(walk(x) for x in v))
        leaves.append(v)
        return LEAF

    return leaves, walk(value)


def tree_unflatten(leaves, spec):
    """The inverse of :func:`tree_flatten`."""
    it = iter(leaves)

    def build(s):
        if s.kind is None:
            return next(it)
        items = [build(c) for c in s.children]
        if s.kind is dict:
            return dict(zip(s.meta, items))
        if s.kind in (tuple, list):
            return s.kind(items)
        return s.kind(*items)

    return build(spec)


def tree_map(fn, value):
    leaves, spec = tree_flatten(value)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, spec, error):
    """Leaves of ``prefix`` (an int/None, or a structure that is a prefix of ``spec``) repeated to ``spec``'s
    leaves; ``error()`` gives the exception for a mismatch."""
    out = []

    def walk(p, s):
        if s.kind is None or not isinstance(p, (tuple, list, dict)):
            if isinstance(p, (tuple, list, dict)):
                raise error()
            out.extend([p] * s.num_leaves)
            return
        if s.kind is dict:
            if not isinstance(p, dict) or set(p) != set(s.meta):
                raise error()
            for k, c in zip(s.meta, s.children):
                walk(p[k], c)
            return
        if isinstance(p, dict) or len(p) != len(s.children):
            raise error()
        for pi, c in zip(p, s.children):
            walk(pi, c)

    walk(prefix, spec)
    return out
