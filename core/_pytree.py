"""``ember.utils._pytree`` (``torch.utils._pytree``): nested containers flattened into leaves and a structure.

A *pytree* is a leaf, or a container whose type is registered (tuple, list, dict, namedtuple, OrderedDict,
defaultdict, deque and ``ember.Size`` out of the box; more through :func:`register_pytree_node`) holding pytrees.
:func:`tree_flatten` gives its leaves in order and a :class:`TreeSpec`; :func:`tree_unflatten` builds it back.
``None`` is a leaf, as in PyTorch. ``ember.func``'s transforms flatten their arguments with these functions, so a
type registered here is mapped over by ``vmap`` and ``grad`` too.

>>> from ember.utils._pytree import tree_flatten, tree_map, tree_unflatten
>>> leaves, spec = tree_flatten({"a": (1, 2), "b": [3]})
>>> leaves, tree_unflatten([x * 10 for x in leaves], spec)
([1, 2, 3], {'a': (10, 20), 'b': [30]})
>>> tree_map(lambda x, y: x + y, (1, [2]), (10, [20]))
(11, [22])
"""
from __future__ import annotations

import collections
import importlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .tensor import Size

__all__ = ["PyTree", "TreeSpec", "LeafSpec", "NodeDef", "SUPPORTED_NODES", "register_pytree_node", "tree_flatten",
           "tree_unflatten", "tree_leaves", "tree_structure", "tree_map", "tree_map_", "tree_map_only",
           "tree_all", "tree_any", "tree_all_only", "tree_any_only", "tree_iter", "treespec_pprint", "tree_is_leaf",
           "tree_map_only_", "SequenceKey", "MappingKey", "GetAttrKey", "KeyEntry", "KeyPath", "keystr", "key_get",
           "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "is_namedtuple",
           "is_namedtuple_class", "is_namedtuple_instance", "treespec_dumps", "treespec_loads", "Context",
           "FlattenFn", "UnflattenFn", "DumpableContext", "ToDumpableContextFn", "FromDumpableContextFn",
           "PyTreeSpec", "is_structseq", "is_structseq_class", "is_structseq_instance"]

PyTree = Any
Context = Any
DumpableContext = Any
FlattenFn = Callable[[PyTree], "tuple[list, Context]"]
UnflattenFn = Callable[[Iterable, Context], PyTree]
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]


class NodeDef(NamedTuple):
    """How a registered container type flattens (``node -> (children, context)``) and unflattens
    (``(children, context) -> node``)."""
    type: type
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Callable | None = None


SUPPORTED_NODES: dict[type, NodeDef] = {}
# for treespec_dumps/loads: type -> (its serialized name, to_dumpable_context, from_dumpable_context), and back
SUPPORTED_SERIALIZED_TYPES: dict = {}
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict = {}


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *,
                         serialized_type_name: str | None = None, to_dumpable_context: Callable | None = None,
                         from_dumpable_context: Callable | None = None,
                         flatten_with_keys_fn: Callable | None = None) -> None:
    """Make ``cls`` a container: ``flatten_fn(node) -> (children, context)`` and
    ``unflatten_fn(children, context) -> node``.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c))
    >>> tree_flatten(Pair(1, (2, 3)))[0]
    [1, 2, 3]
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
    if serialized_type_name is not None:
        SUPPORTED_SERIALIZED_TYPES[cls] = (serialized_type_name, to_dumpable_context, from_dumpable_context)
        SERIALIZED_TYPE_TO_PYTHON_TYPE[serialized_type_name] = cls


def is_namedtuple_class(cls) -> bool:
    """Whether ``cls`` is a namedtuple type."""
    return isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def is_namedtuple_instance(obj) -> bool:
    """Whether ``obj`` is a namedtuple."""
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    """Whether ``obj`` is a namedtuple or a namedtuple type."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


_is_namedtuple_instance = is_namedtuple_instance


def is_structseq_class(cls) -> bool:
    """Whether ``cls`` is a C struct sequence type (``os.stat_result``); ember's result tuples are namedtuples."""
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "n_sequence_fields") and \
        hasattr(cls, "n_fields") and hasattr(cls, "n_unnamed_fields")


def is_structseq_instance(obj) -> bool:
    """Whether ``obj`` is a C struct sequence."""
    return is_structseq_class(type(obj))


def is_structseq(obj) -> bool:
    """Whether ``obj`` is a struct sequence or its type."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def _node_type(x):
    """The key of ``x``'s entry in :data:`SUPPORTED_NODES` (``namedtuple`` for every namedtuple), or None."""
    t = type(x)
    if t in SUPPORTED_NODES:
        return t
    if _is_namedtuple_instance(x):
        return collections.namedtuple
    return None


def _get_node_type(tree: Any) -> Any:
    """PyTorch's node-type key of ``tree``: ``namedtuple`` for every namedtuple, else ``type(tree)`` (a leaf's
    type too, so ``_get_node_type(x) in SUPPORTED_NODES`` tells whether ``x`` is a node)."""
    return collections.namedtuple if is_namedtuple_class(type(tree)) else type(tree)


class TreeSpec:
    """The structure of a flattened pytree: its node type, the context that type's unflatten needs, and one
    spec per child (a leaf's type is None)."""

    __slots__ = ("type", "context", "children_specs", "num_leaves", "num_nodes")

    def __init__(self, type: Any, context: Any, children_specs: list[TreeSpec]):
        self.type, self.context, self.children_specs = type, context, children_specs
        leaves, nodes = (1, 1) if type is None else (0, 1)
        for c in children_specs:
            leaves += c.num_leaves
            nodes += c.num_nodes
        self.num_leaves, self.num_nodes = leaves, nodes

    @property
    def num_children(self) -> int:
        return len(self.children_specs)

    def is_leaf(self) -> bool:
        return self.type is None

    def children(self) -> list[TreeSpec]:
        return list(self.children_specs)

    def child(self, index: int) -> TreeSpec:
        return self.children_specs[index]

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """The pytree of this structure holding ``leaves``."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self}).")
        return _build(self, iter(leaves))

    def flatten_up_to(self, tree: PyTree) -> list[PyTree]:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` has at least this structure)."""
        out: list = []
        _up_to(self, tree, out)
        return out

    def __eq__(self, other):
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.type, self.context, list(self.children_specs)) == \
            (other.type, other.context, list(other.children_specs))

    __hash__ = None

    def __repr__(self, indent: int = 0):
        if self.type is None:
            return "*"
        name = "namedtuple" if self.type is collections.namedtuple else self.type.__name__
        pad = " " * (indent + 2)
        kids = f",\n{pad}".join(c.__repr__(indent + 2) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context}, [{kids}])"


class LeafSpec(TreeSpec):
    """The spec of a leaf."""

    __slots__ = ()

    def __init__(self):
        super().__init__(None, None, [])


_LEAF = LeafSpec()
PyTreeSpec = TreeSpec  # PyTorch's name for the C++ pytree's spec; ember has the one kind


def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> tuple[list[Any], TreeSpec]:
    """``(leaves, spec)``: the leaves of ``tree`` in order, and its structure. ``is_leaf(x)`` True stops the
    descent at ``x``."""
    leaves: list = []
    return leaves, _walk(tree, leaves, is_leaf)


# module-level recursion (a closure calling itself is a reference cycle, and the leaves it holds -- tensors of
# a transform -- would live until the cycle collector ran); dicts, tuples and lists take a direct path
def _walk(v, leaves, is_leaf):
    if is_leaf is not None and is_leaf(v):
        leaves.append(v)
        return _LEAF
    t = type(v)
    if t is list or t is tuple:
        return TreeSpec(t, None, _children(v, leaves, is_leaf))
    if t is dict:
        return TreeSpec(dict, list(v), _children(v.values(), leaves, is_leaf))
    key = _node_type(v)
    if key is None:
        leaves.append(v)
        return _LEAF
    children, context = SUPPORTED_NODES[key].flatten_fn(v)
    return TreeSpec(key, context, _children(children, leaves, is_leaf))


def _children(values, leaves, is_leaf):
    """The specs of a node's children, plain leaves appended directly (the common case: no call each)."""
    specs = []
    for x in values:
        if is_leaf is None and type(x) not in SUPPORTED_NODES and not isinstance(x, tuple):
            leaves.append(x)
            specs.append(_LEAF)
        else:
            specs.append(_walk(x, leaves, is_leaf))
    return specs


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The inverse of :func:`tree_flatten`."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but "
                        f"got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def _build(s, it):
    if s.type is None:
        return next(it)
    items = [next(it) if c.type is None else _build(c, it) for c in s.children_specs]
    if s.type is tuple or s.type is list:
        return s.type(items)
    if s.type is dict:
        return dict(zip(s.context, items))
    return SUPPORTED_NODES[s.type].unflatten_fn(items, s.context)


def _up_to(s, tree, out):
    if s.type is None:
        out.append(tree)
        return
    key = _node_type(tree)
    if key is not s.type:
        raise ValueError(f"Node type mismatch; expected {s.type}, but got {type(tree)}.")
    children, context = SUPPORTED_NODES[key].flatten_fn(tree)
    if len(children) != s.num_children:
        raise ValueError(f"Node arity mismatch; expected {s.num_children}, but got {len(children)}.")
    if context != s.context:
        raise ValueError(f"Node context mismatch for custom node type {s.type}.")
    for c, child in zip(s.children_specs, children):
        _up_to(c, child, out)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list[Any]:
    """The leaves of ``tree`` in order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None):
    """An iterator over the leaves of ``tree``."""
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    """The :class:`TreeSpec` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """``tree`` with each leaf ``x`` replaced by ``func(x, *(the same leaf of each of rests))``; each of
    ``rests`` has ``tree``'s structure (or a deeper one, whose subtrees are then passed whole)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    if not rests:
        return spec.unflatten([func(x) for x in leaves])
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(*xs) for xs in zip(leaves, *others)])


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Call ``func`` on each leaf (with the matching leaves of ``rests``) for its effect; returns ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    for xs in zip(leaves, *[spec.flatten_up_to(r) for r in rests]):
        func(*xs)
    return tree


def _only(type_or_types_or_pred) -> Callable[[Any], bool]:
    if isinstance(type_or_types_or_pred, (type, tuple)) or hasattr(type_or_types_or_pred, "__args__"):
        return lambda x: isinstance(x, type_or_types_or_pred)
    if callable(type_or_types_or_pred):
        return type_or_types_or_pred
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def tree_map_only(type_or_types_or_pred, /, func: Callable[[Any], Any], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """:func:`tree_map` on the leaves of the given type(s) (or passing the predicate); other leaves kept.

    >>> tree_map_only(int, lambda x: x * 2, (1, "a", 2.0))
    (2, 'a', 2.0)
    """
    pred = _only(type_or_types_or_pred)
    return tree_map(lambda x: func(x) if pred(x) else x, tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func: Callable[[Any], Any], tree: PyTree,
                   is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Call ``func`` on the leaves of the given type(s) for its effect; returns ``tree``."""
    pred = _only(type_or_types_or_pred)
    return tree_map_(lambda x: func(x) if pred(x) else None, tree, is_leaf=is_leaf)


def tree_is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``tree`` is a leaf: not a registered container (or ``is_leaf`` says so)."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) is None


def tree_all(pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(type_or_types, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for every leaf of the given type(s)."""
    only = _only(type_or_types)
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if only(x))


def tree_any_only(type_or_types, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for some leaf of the given type(s)."""
    only = _only(type_or_types)
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if only(x))


def treespec_pprint(treespec: TreeSpec) -> str:
    """A one-line picture of a structure with ``*`` for each leaf."""
    return repr(tree_unflatten([_Star()] * treespec.num_leaves, treespec))


class _Star:
    def __repr__(self):
        return "*"


# ------------------------------------------------------------------------------------------------- key paths
@dataclass(frozen=True)
class SequenceKey:
    """A child of a sequence, by position (shown ``[0]``)."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclass(frozen=True)
class MappingKey:
    """A child of a mapping, by key (shown ``['a']``)."""
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclass(frozen=True)
class GetAttrKey:
    """A child reached as an attribute (shown ``.name``): a namedtuple's fields."""
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


KeyEntry = Any
KeyPath = tuple


def keystr(kp: KeyPath) -> str:
    """A key path as the Python expression that reaches the leaf: ``['a'][0].x``."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp: KeyPath):
    """The part of ``obj`` at key path ``kp``."""
    for k in kp:
        obj = k.get(obj)
    return obj


def _keyed_children(node, key):
    """``[(key entry, child)]`` of a container whose node type is ``key``."""
    entry = SUPPORTED_NODES[key]
    if entry.flatten_with_keys_fn is not None:
        return entry.flatten_with_keys_fn(node)[0]
    if key is collections.namedtuple:
        return [(GetAttrKey(f), v) for f, v in zip(type(node)._fields, node)]
    if isinstance(node, dict):
        return [(MappingKey(k), v) for k, v in node.items()]
    if isinstance(node, (tuple, list, collections.deque)):
        return [(SequenceKey(i), v) for i, v in enumerate(node)]
    raise ValueError(f"Did not find a flatten_with_keys_fn for type: {key}. Please pass a flatten_with_keys_fn "
                     f"argument to register_pytree_node.")


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None):
    """``([(key path, leaf)], spec)``: :func:`tree_flatten` with the path to each leaf.

    >>> [keystr(kp) for kp, _ in tree_flatten_with_path({"a": [1, 2]})[0]]
    ["['a'][0]", "['a'][1]"]
    """
    out: list = []
    _with_path(tree, (), is_leaf, out)
    return out, tree_structure(tree, is_leaf)


def _with_path(node, path, is_leaf, out):
    if tree_is_leaf(node, is_leaf):
        out.append((path, node))
        return
    for k, child in _keyed_children(node, _node_type(node)):
        _with_path(child, (*path, k), is_leaf, out)


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list:
    """``[(key path, leaf)]`` in order."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
                       is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """:func:`tree_map` with ``func(key path, leaf, *matching leaves of rests)``."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(kp, x, *xs) for (kp, x), *xs in zip(pairs, *others)])


# ----------------------------------------------------------------------------------------------- serializing
_PROTOCOL = 1


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """A structure as JSON text (PyTorch's format, protocol 1), for :func:`treespec_loads`.

    >>> treespec_loads(treespec_dumps(tree_structure({"a": [1, (2,)]}))) == tree_structure({"a": [0, (0,)]})
    True
    """
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"treespec_dumps(treespec, protocol): Expected `treespec` to be instance of TreeSpec but "
                        f"got item of type {type(treespec)}.")
    if protocol not in (None, _PROTOCOL):
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [{_PROTOCOL}]")
    return json.dumps([_PROTOCOL, _dumpable(treespec)])


def _dumpable(s: TreeSpec) -> dict:
    if s.type is None:
        return {"type": None, "context": None, "children_spec": []}
    entry = SUPPORTED_SERIALIZED_TYPES.get(s.type)
    if entry is None:
        raise NotImplementedError(f"No registered serialization name for {s.type} found. Please update your "
                                  f"register_pytree_node call with a `serialized_type_name` kwarg.")
    name, to_dumpable, _ = entry
    context = to_dumpable(s.context) if to_dumpable is not None else json.dumps(s.context)
    return {"type": name, "context": context, "children_spec": [_dumpable(c) for c in s.children_specs]}


def treespec_loads(serialized: str) -> TreeSpec:
    """The structure :func:`treespec_dumps` wrote."""
    protocol, data = json.loads(serialized)
    if protocol != _PROTOCOL:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [{_PROTOCOL}]")
    return _loaded(data)


def _loaded(d: dict) -> TreeSpec:
    if d["type"] is None:
        return _LEAF
    cls = SERIALIZED_TYPE_TO_PYTHON_TYPE.get(d["type"])
    if cls is None:
        raise NotImplementedError(f"No registered serialization name for {d['type']} found.")
    from_dumpable = SUPPORTED_SERIALIZED_TYPES[cls][2]
    context = from_dumpable(d["context"]) if from_dumpable is not None else json.loads(d["context"])
    return TreeSpec(cls, context, [_loaded(c) for c in d["children_spec"]])


def _defaultdict_to_dumpable(context) -> dict:
    factory, keys = context
    return {"default_factory_module": factory.__module__, "default_factory_name": factory.__qualname__,
            "dict_context": keys}


def _defaultdict_from_dumpable(d: dict):
    factory = getattr(importlib.import_module(d["default_factory_module"]), d["default_factory_name"])
    return [factory, d["dict_context"]]


def _namedtuple_to_dumpable(cls):
    raise NotImplementedError(f"Can't serialize TreeSpec of namedtuple class {cls} because we didn't register a "
                              f"serializated_type_name.")


# ------------------------------------------------------------------------------------ the built-in containers
# PyTorch's names for these functions, which libraries pass to register_pytree_node for their own containers
# (transformers registers its ModelOutput with ``flatten_with_keys_fn=_dict_flatten_with_keys``).
def _seq_flatten(x):
    return list(x), None


_tuple_flatten = _list_flatten = _seq_flatten


def _seq_flatten_with_keys(x):
    return [(SequenceKey(i), v) for i, v in enumerate(x)], None


_tuple_flatten_with_keys = _list_flatten_with_keys = _seq_flatten_with_keys


def _tuple_unflatten(values, context):
    return tuple(values)


def _list_unflatten(values, context):
    return list(values)


def _dict_flatten(d):
    """``(values, keys)`` of a mapping, in its order."""
    return list(d.values()), list(d)


def _dict_flatten_with_keys(d):
    """``([(MappingKey(key), value)], keys)`` of a mapping, in its order."""
    values, keys = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(keys, values)], keys


def _dict_unflatten(values, context):
    return dict(zip(context, values))


register_pytree_node(tuple, _tuple_flatten, _tuple_unflatten, serialized_type_name="builtins.tuple",
                     flatten_with_keys_fn=_tuple_flatten_with_keys)
register_pytree_node(list, _list_flatten, _list_unflatten, serialized_type_name="builtins.list",
                     flatten_with_keys_fn=_list_flatten_with_keys)
register_pytree_node(dict, _dict_flatten, _dict_unflatten, serialized_type_name="builtins.dict",
                     flatten_with_keys_fn=_dict_flatten_with_keys)
register_pytree_node(collections.namedtuple, lambda t: (list(t), type(t)), lambda c, cls: cls(*c),
                     serialized_type_name="collections.namedtuple", to_dumpable_context=_namedtuple_to_dumpable)
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), list(d)),
                     lambda c, keys: collections.OrderedDict(zip(keys, c)),
                     serialized_type_name="collections.OrderedDict")
register_pytree_node(collections.defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d)]),
                     lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)),
                     serialized_type_name="collections.defaultdict", to_dumpable_context=_defaultdict_to_dumpable,
                     from_dumpable_context=_defaultdict_from_dumpable)
register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen),
                     lambda c, maxlen: collections.deque(c, maxlen=maxlen), serialized_type_name="collections.deque")
register_pytree_node(Size, _seq_flatten, lambda c, _: Size(c))
