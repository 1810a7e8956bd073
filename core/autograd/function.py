"""Graph nodes and Functions.

Every differentiable operation is an :class:`Op`: a class whose ``forward``
computes on backend arrays through the device's kernel table and whose
``backward`` is written with ember operations (so ``create_graph=True`` and
higher-order gradients need nothing more).  An Op instance is both the
``ctx`` of one call and the ``grad_fn`` node it leaves in the graph.

User-defined functions subclass :class:`Function` (PyTorch's ctx style):

>>> import ember
>>> class Cube(ember.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x ** 3
...     @staticmethod
...     def backward(ctx, g):
...         (x,) = ctx.saved_tensors
...         return 3 * x ** 2 * g
>>> x = ember.tensor([2.0], requires_grad=True)
>>> Cube.apply(x).backward()
>>> x.grad
tensor([12.])
"""
from __future__ import annotations

import functools
import threading
import traceback
import warnings
import weakref

from ..backend import resolve as resolve_device
from ..tensor import RemovableHandle, Tensor, _Handle, _vowner, _wrap  # noqa: F401
from ..state import is_grad_enabled
from .grad_mode import STATE, no_grad

_new = object.__new__
_FREED = object()  # a saved tensor's place once its node released it
_ABSENT = object()  # a saved argument this node does not keep
_KEPT_AFTER_RELEASE = frozenset({type(None), bool, int, float, complex})


class Node:
    """A node of the backward graph: a tensor's ``grad_fn``.

    ``next_functions`` holds one ``(node, output_nr)`` edge per input
    (``(None, 0)`` for inputs that need no gradient).  The node keeps them as two tuples, ``_next`` (the nodes)
    and ``_nrs`` (the output numbers, one shared tuple of zeros for most nodes), and builds the pairs when
    ``next_functions`` is read: one tuple per node instead of one per edge, in graphs that stay alive
    until their backward.
    """

    _next: tuple = ()
    _nrs: tuple = ()
    _shapes: tuple = ()
    _saved = None
    _vers = None
    _out = None
    _pre_hooks = None      # {output_nr: [hook, ...]} from Tensor.register_hook
    _retain = None         # {output_nr: weakref to tensor} from retain_grad
    _hooks = None          # node hooks: fn(grad_inputs, grad_outputs)
    _node_pre_hooks = None  # node pre-hooks: fn(grad_outputs)
    _released = False
    _hooked = False        # set once any hook or retain_grad is registered on this node
    _plain = False         # the engine's short path: a built-in single-output Op without hooks
    _origin = ""           # plugin ops: " (op ember.ops.ns.name from plugin 'p')", for error messages
    _op = False            # a built-in Op: backward(ctx, *grads) returns one gradient per input
    _trace = None          # forward stack when anomaly detection is on
    _packed = False        # saved values went through saved-tensor hooks (see ember.autograd.graph)
    n_outputs = 1

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def next_functions(self) -> tuple:
        """One ``(node, output_nr)`` edge per input, ``(None, 0)`` for an input that needs no gradient."""
        return tuple(zip(self._next, self._nrs))

    @next_functions.setter
    def next_functions(self, edges):
        self._next = tuple(e[0] for e in edges)
        self._nrs = tuple(e[1] for e in edges)

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward; it may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        self._hooked = True
        self._plain = False
        self._hooks.append(fn)
        return _Handle(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node's backward; it may return new grad_outputs."""
        if self._node_pre_hooks is None:
            self._node_pre_hooks = []
        self._hooked = True
        self._plain = False
        self._node_pre_hooks.append(fn)
        return _Handle(self._node_pre_hooks, fn)

    @property
    def metadata(self) -> dict:
        """A dict for user data attached to this node."""
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    # -- saved values
    def _check_released(self):
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward.")

    def _check_version(self, t, saved_version, index):
        if t._version != saved_version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{t.type()} {list(t.shape)}], which is output {t._nr} of "
                f"{type(t._fn).__name__ if t._fn is not None else 'a leaf'} (saved as input {index} of "
                f"{type(self).__name__}), is at version {t._version}; expected version {saved_version} instead. "
                "Hint: the operation that produced it must not be followed by an in-place change before "
                "backward, or clone() it first.")

    @property
    def inputs(self) -> tuple:
        """The saved inputs (Tensors as given to forward, non-tensors as they were)."""
        if self._released or self._packed:
            self._check_released()
            return unpack_saved(self._saved)
        saved = self._saved
        for t, v in zip(saved, self._vers):  # (the positions are counted only for the error)
            if v is not None and _vowner(t)._ver != v:
                self._check_versions(saved, ())
        return saved

    def inputs_except(self, unchecked) -> tuple:
        """:attr:`inputs`, those at the positions in ``unchecked`` not version-checked: values this node keeps that
        PyTorch's node does not save and that no formula reads (an in-place change of them refuses nothing)."""
        if self._released or self._packed or not unchecked:
            return self.inputs
        self._check_versions(self._saved, unchecked)
        return self._saved

    def _check_versions(self, saved, unchecked):
        """Refuse a saved tensor, at a position not in ``unchecked``, changed in place since it was saved."""
        for i, (t, v) in enumerate(zip(saved, self._vers)):
            if v is not None and i not in unchecked:
                if _vowner(t)._ver != v:
                    self._check_version(t, v, i)

    def check_saved(self):
        """Refuse the backward when a value this node keeps was changed in place since the forward, as PyTorch's
        node does when it unpacks what it saved, for a backward whose formula reads none of them."""
        self.inputs  # noqa: B018 - the property checks the versions
        if self._out is not None:
            self.output_data()

    def output_data(self):
        """The saved output's array (version-checked), for backward formulas that need only its values."""
        if self._released or self._packed:
            self._check_released()
            return self._unpacked_output()._data
        arr, dev, ref, ver = self._out
        t = ref()
        if t is not None and t._version != ver:  # (t: the output, or a stand-in for one overwritten in place)
            self._check_version(t, ver, "output")
        return arr

    @property
    def output(self):
        """The saved output, as a tensor whose grad_fn is this node (for double backward)."""
        self._check_released()
        if self._packed:
            out = self._unpacked_output()
            out._fn = self
        else:
            arr, dev, ref, ver = self._out
            t = ref()
            if t is not None and t._version != ver:
                self._check_version(t, ver, "output")
            out = _wrap(arr, dev)
            out._rg = True
            out._fn = self
        d = self.__dict__
        if "_fw" in d:  # the output's forward-mode tangent (ember.autograd.forward_ad)
            out.__dict__["_fw"] = d["_fw"]
        return out

    def _unpacked_output(self):
        out = self._out
        if type(out) is not _Packed:  # saved before the hooks were on; only the inputs were packed
            return _wrap(out[0], out[1])
        return out.unpack()

    def release(self):
        # only the fields this node set are written: a field new to the instance grows its attribute storage
        # into a dict (~0.2 us, and one more object for the garbage collector)
        saved = self._saved
        if saved is not None:
            self._saved = None
            for v in saved:
                if type(v) in _KEPT_AFTER_RELEASE:  # numbers and unsaved slots stay readable: PyTorch frees tensors
                    self._saved = tuple(v if type(v) in _KEPT_AFTER_RELEASE else _FREED for v in saved)
                    break
        if self._out is not None:
            self._out = None
        self._released = True

    # -- saved values by PyTorch's names: ``_saved_self``, ``_saved_other``, ``_saved_result``, ``_raw_saved_*``
    saved_names = None  # PyTorch's name of each saved input, in input order (None: not one PyTorch saves)
    result_name = "result"  # PyTorch's name of the saved output (``_saved_inverse`` for linalg.inv)

    def _slots_saved(self) -> dict:
        """``{PyTorch's name: input index, or "result"}`` for what this node keeps."""
        cls = type(self)
        names = cls.saved_names
        if names is None:  # a one- or two-operand op keeps ``self`` and ``other``
            names = ("self", "other") if getattr(cls, "save_inputs", False) and len(self._shapes) <= 2 else ()
        slots = {n: i for i, n in enumerate(names[:len(self._shapes)]) if n is not None}
        if getattr(cls, "save_output", False) and (self._out is not None or self._released):
            slots[cls.result_name] = "result"
        return slots

    # PyTorch's non-tensor saved arguments (``_saved_dim``, ``_saved_keepdim``, ``_saved_self_sym_sizes``...):
    # ``{PyTorch's name: the attribute the op keeps on its node, or a function of the node}``; a value of None is
    # an argument this node (this overload) does not keep
    saved_args = None

    def _args_saved(self) -> dict:
        """``{PyTorch's name: value}`` of the non-tensor arguments this node keeps (those of the op it stands for,
        where :func:`keep_args` gave them)."""
        hows, given = self._arg_hows()
        out = {}
        for key, how in hows.items():
            v = self._arg_saved(key, how, given)
            if v is not _ABSENT:
                out[key] = v
        return out

    def _arg_hows(self) -> tuple:
        """``({PyTorch's name: how its value is read}, whether keep_args gave them)``."""
        given = self.__dict__.get("_args")
        return (type(self).saved_args or {}) if given is None else given, given is not None

    def _arg_saved(self, key, how, given):
        """The one saved argument ``key`` (read by ``how``), :data:`_FREED` after the backward where it is a tensor,
        or ``_ABSENT`` where this node does not keep it."""
        try:
            if given:
                v = how() if callable(how) else how
            else:
                v = how(self) if callable(how) else getattr(self, how)
            if type(v) is SavedOf:  # (read through its node when asked for by name: only its version is checked)
                if self._released:
                    n = v.node
                    kept = v.slot == "result" or n._saved is None or n._saved[v.slot] is not None
                    v = _FREED if kept else _NONE
            elif self._released and (isinstance(v, Tensor) or type(v) is tuple
                                     and any(isinstance(e, Tensor) for e in v)):
                v = _FREED  # (tensors made when read count as saved tensors: freed with the others)
        except AttributeError:  # (the forward did not get as far as keeping it)
            return _ABSENT
        except RuntimeError:  # (a value made when read from saved tensors the backward freed)
            if not self._released:
                raise
            v = _FREED
        if v is _NONE:
            return None
        if v is None:
            return _ABSENT
        v = _plain(v)
        return _unsigned(v) if key in INT_ARGS else v

    def __getattr__(self, name):
        # only reached for names the class and instance lack (never on the hot path)
        raw = name.startswith("_raw_saved_")
        if raw or name.startswith("_saved_"):
            key = name[11:] if raw else name[7:]
            hows, given = self._arg_hows() if not raw else ({}, False)
            if key in hows:  # (first: a number operand that PyTorch keeps as a Scalar argument)
                v = self._arg_saved(key, hows[key], given)
                if v is not _ABSENT:
                    if v is _FREED:
                        self._check_released()
                    return v.node._value_saved(v.slot) if type(v) is SavedOf else v
            slot = self._slots_saved().get(key) if self._op else None
            if slot is not None:
                return SavedTensor(self, slot) if raw else self._value_saved(slot)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self):
        names = list(super().__dir__())
        args = self._args_saved()
        if self._op:
            names += [f"_{p}saved_{k}" for k in self._slots_saved() if k not in args for p in ("", "raw_")]
        names += [f"_saved_{k}" for k in args]
        return names

    def _value_saved(self, slot):
        """The value saved at ``slot`` (version-checked, through its hooks), None where it was not kept."""
        if self._released and (slot == "result" or self._saved is None or self._saved[slot] is not None):
            self._check_released()
        if slot == "result":
            return self.output
        v = self._saved[slot]
        if type(v) is _Packed:
            return v.unpack()
        if isinstance(v, Tensor):
            ver = self._vers[slot]
            if ver is not None and _vowner(v)._ver != ver:
                self._check_version(v, ver, slot)
            return v
        if v is None:
            return None
        # a Python number operand: PyTorch keeps it as a 0-d tensor (int64, float64 or complex128)
        return _wrap(resolve_device("cpu").backend.as_array(v), resolve_device("cpu"))


# PyTorch's names of the int64 (and int64[]) arguments its nodes keep: they read a negative value back as its
# unsigned 64-bit form (a dim given as -1 reads 18446744073709551615); the other names are Scalars, read signed
INT_ARGS = frozenset({"dim", "dim0", "dim1", "dim2", "dims", "index", "diagonal", "offset", "shifts", "ignore_index",
                      "start", "end", "step", "split_size", "split_sizes", "dimension", "size", "repeats", "pad",
                      "source_dim", "n"})


def _unsigned(v):
    if isinstance(v, tuple):
        return tuple(_unsigned(e) for e in v)
    return v + (1 << 64) if type(v) is int and v < 0 else v


def number_operand(i: int, node_name: str):
    """A ``saved_args`` entry: the number operand at input ``i`` of a node named ``node_name`` (an overload whose
    PyTorch node keeps it as a Scalar argument: ``x ** 2``'s ``_saved_exponent`` is 2, where ``x * 2``'s
    ``_saved_other`` is a 0-d tensor), as a Python number; None for other nodes, and once the backward freed it."""
    def read(node):
        saved = node._saved
        if type(node).__name__ != node_name or saved is None or i >= len(saved):
            return None
        v = saved[i]
        return v.item() if isinstance(v, Tensor) else v
    return read


def _plain(v):
    """A kept argument in PyTorch's Python form: sequences as tuples, array-library numbers as Python numbers, a
    dimension as it was given (see :func:`ember.tensor._wrap_dim`)."""
    if isinstance(v, (list, tuple)):
        return tuple(_plain(e) for e in v)
    given = getattr(v, "given", None)
    if given is not None:
        return given
    item = getattr(v, "item", None)
    if item is not None and not isinstance(v, Tensor) and getattr(v, "ndim", None) == 0:
        return item()
    return v


# --------------------------------------------------------------------------- saved-tensor hooks
SAVED_ON: list = []  # one entry per thread whose stack of saved-tensor hooks is not empty (the hot paths' test)


class _SavedHooks(threading.local):
    """This thread's saved-tensor hooks: ``stack`` of ``(pack, unpack)`` (innermost last), and the message
    that refuses new ones while they are disabled (None when allowed)."""

    _stack = ()
    disabled = None

    @property
    def stack(self) -> tuple:
        return self._stack

    @stack.setter
    def stack(self, hooks):
        if bool(hooks) != bool(self._stack):
            if hooks:
                SAVED_ON.append(None)
            else:
                SAVED_ON.pop()
        self._stack = hooks


SAVED_HOOKS = _SavedHooks()


class _Packed:
    """One saved tensor as its pack hook returned it, with the graph position to give back on unpack."""

    __slots__ = ("obj", "unpack_hook", "fn", "nr", "rg", "acc")

    def __init__(self, t, pack, unpack, output=False):
        fn = t._fn
        self.fn = None if output else fn  # an output's node is the node holding it (no cycle)
        self.nr = t._nr if fn is not None else 0
        self.rg = t._rg
        self.acc = grad_edge(t)[0] if fn is None and t._rg else None
        self.unpack_hook = unpack
        hooks = SAVED_HOOKS.stack
        SAVED_HOOKS.stack = ()  # the hook's own ops save nothing through it
        prev = STATE.enabled
        STATE.enabled = False
        try:
            self.obj = pack(t)
        finally:
            STATE.enabled = prev
            SAVED_HOOKS.stack = hooks

    def unpack(self):
        u = self.unpack_hook(self.obj)
        if not isinstance(u, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(u).__name__}")
        t = _wrap(u._data, u._dev)  # the hook's values at the saved tensor's place in the graph
        if self.fn is not None:
            t._rg, t._fn, t._nr = True, self.fn, self.nr
        elif self.rg:
            t._rg = True
            if self.acc is not None:
                t._acc = self.acc
        return t


def saved_for(uses, inputs, nodes):
    """``inputs`` with None for each one that no needed gradient reads (``uses``: see ``Op.save_for``; ``nodes``:
    the node each input's gradient goes to, None where none)."""
    kept = []
    for t, u in zip(inputs, uses):
        if u is not None:  # (None: always kept)
            for i in u:
                if nodes[i] is not None:
                    break
            else:
                t = None
        kept.append(t)
    return kept


def keep_saved(t, *tensors):
    """Make the node of ``t`` (the last node of an op that ember composes from others) refuse its backward once
    one of ``tensors`` was changed in place after this call: the values PyTorch's one node of the op saves (its
    inputs), which ember's own nodes may not keep (they keep a copy, a product, or only indices).  Gradients are
    unchanged; the tensors' storages are held weakly (a view's base: a storage that is gone cannot be changed).
    Returns ``t``."""
    fn = t._fn if isinstance(t, Tensor) else None
    if fn is None or not fn._op:
        return t
    kept = [(weakref.ref(_vowner(x)), x._version) for x in tensors if isinstance(x, Tensor)]
    node = weakref.ref(fn)

    def check(grads):
        for i, (ref, ver) in enumerate(kept):
            x = ref()
            if x is not None and x._version != ver:
                node()._check_version(x, ver, i)

    if kept:
        fn.register_prehook(check)
    return t


_NONE = object()  # an optional argument kept as None (see optional)


class SavedOf:
    """A value for :func:`keep_args` (or one a ``saved_args`` entry gives): the tensor that another node of the
    same op keeps at ``slot`` (an input's index, or "result"), such as the operands a composite's product node
    saved, read (version-checked) when asked for, and freed with the backward; None where that node did not keep
    it."""

    __slots__ = ("node", "slot")

    def __init__(self, node, slot):
        self.node, self.slot = node, slot


def optional(v):
    """``v`` as an optional argument of PyTorch's op that a node keeps (:func:`keep_args`, ``saved_args``): None is
    kept and read back as None, where a plain None is an argument the node does not keep."""
    return _NONE if v is None else v


def keep_args(t, **args):
    """Make the node of ``t`` (the last node of an op that ember composes from others, or an op whose arguments its
    node does not see) give PyTorch's arguments of that op, ``args``, as its saved values (``grad_fn._saved_<name>``;
    None: not kept; a function of no arguments: called when read, for values made only when asked for, such as
    index's tensors, which are freed with the node's saved tensors; a :class:`SavedOf`: a tensor another node
    keeps, which makes this node one with saved tensors, released by the backward), in place of its own op's.
    Returns ``t``."""
    fn = t._fn
    if fn is not None and fn._op:
        fn.__dict__["_args"] = args
        if fn._saved is None and SavedOf in map(type, args.values()):
            fn._saved = ()
    return t


def pack_saved(ctx, values):
    """Save ``values`` on ``ctx`` through this thread's innermost saved-tensor hooks."""
    pack, unpack = SAVED_HOOKS.stack[-1]
    ctx._saved = tuple(_Packed(v, pack, unpack) if isinstance(v, Tensor) else v for v in values)
    ctx._vers = (None,) * len(values)
    ctx._packed = True


def pack_output(ctx, t):
    """Save output ``t`` of ``ctx`` through this thread's innermost saved-tensor hooks."""
    pack, unpack = SAVED_HOOKS.stack[-1]
    ctx._out = _Packed(t, pack, unpack, output=True)
    ctx._packed = True


def unpack_saved(saved):
    return tuple(v.unpack() if type(v) is _Packed else v for v in saved)


class SavedTensor:
    """One value a node keeps for backward (``grad_fn._raw_saved_self``): ``register_hooks(pack, unpack)`` packs
    it now and unpacks it wherever it is read (the backward included), once per saved value."""

    __slots__ = ("node", "slot")

    def __init__(self, node, slot):
        self.node, self.slot = node, slot

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Replace the saved value by ``pack_hook(value)``; reading it calls ``unpack_hook(packed)``."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks: expected two callables (pack_hook, unpack_hook)")
        node, slot = self.node, self.slot
        node._check_released()
        held = node._out if slot == "result" else node._saved[slot]
        if type(held) is _Packed:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: "
                               "only one pair of hooks is allowed at a time.")
        if held is None or (slot != "result" and not isinstance(held, Tensor)):
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")
        value = node._value_saved(slot)  # (version-checked)
        if slot == "result":
            node._out = _Packed(value, pack_hook, unpack_hook, output=True)
        else:
            saved = list(node._saved)
            saved[slot] = _Packed(value, pack_hook, unpack_hook)
            node._saved = tuple(saved)
        node._packed = True


OPS: dict = {}  # every Op class by name ("Mul", "Cast", a row's name, a plugin op's qualified name)
# the kinds of op a declaration's ``tags`` name (PyTorch's ``tags`` in native_functions.yaml, those ember reads)
TAGS = frozenset({"pointwise", "reduction", "view", "data-dependent", "nondeterministic", "random"})


class Op(Node):
    """A built-in differentiable operation: ``forward`` on arrays, ``backward`` with ember ops.

    Class options:
      ``save_inputs``: keep the Tensor inputs for backward (``ctx.inputs``);
      ``save_for``: with ``save_inputs``, one tuple per input of the inputs whose gradient reads it (None:
      always kept): an input, or a number operand, is kept only when one of those needs a gradient, else
      ``ctx.inputs`` holds None in its place (``Mul``: ``((1,), (0,))``, PyTorch's rule: ``a * b`` keeps ``b``
      for ``a``'s gradient only);
      ``save_output``: keep the output (``ctx.output``);
      ``nondiff_outputs``: indices of outputs that carry no gradient (indices of ``max``);
      ``backward_name``: the grad_fn's name when not ``<Class>Backward0``;
      ``op_name``: its key in :data:`OPS` when not the class's own name (set on every Op class: the one key
      that vmap rules, ONNX symbolics, autocast and forward-mode rules are written against).

    The op's cross-cutting facts, read by every subsystem rather than kept in side tables:
      ``tags``: what kind of op it is, a frozenset of :data:`TAGS` ("pointwise": vmap maps it over the
      batch as it is; "data-dependent": its result's shape depends on the values, so meta tensors refuse it);
      ``promotion``: PyTorch's type-promotion kind, one of :data:`ember.dtypes.PROMOTION_KINDS`
      ("default", "int_to_float", "always_bool", "keep", ...);
      ``onnx``: the ONNX operator computing it, where the mapping is one-to-one (its symbolic is derived);
      ``autocast``: ``{device type: policy}`` under ``ember.autocast`` ("lower_precision_fp", "fp32",
      "promote"; a device type not named follows "cuda"'s entry).
    """

    save_inputs = False
    save_for = None
    save_output = False
    nondiff_outputs = ()
    tags: frozenset = frozenset()
    promotion = "default"
    onnx = None
    autocast = None
    _op = True
    _plain = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_overload_of" in cls.__dict__:  # a node name of an overload (see named_node): not an op of its own
            return
        key = cls.op_name = cls.__dict__.get("op_name") or cls.__name__
        tags = cls.__dict__.get("tags")
        if tags is not None:
            cls.tags = frozenset(tags)
            if not cls.tags <= TAGS:
                raise ValueError(f"Op {key}: unknown tags {sorted(cls.tags - TAGS)} (known: {sorted(TAGS)})")
        OPS[key] = cls
        name = cls.__dict__.get("backward_name") or cls.__name__ + "Backward0"
        cls.__name__ = cls.__qualname__ = name

    @staticmethod
    def forward(ctx, k, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError


_NAMED: dict = {}  # (node class, grad_fn name) -> the class that only renames it


def named_node(cls, name: str, saved_names: tuple | None = None, composite: bool = False) -> type:
    """Node class ``cls`` under the grad_fn name ``name``.

    PyTorch names a node per overload (``sum(x)`` leaves ``SumBackward0``, ``sum(x, dim)`` ``SumBackward1``) and
    names the root node of an op that ember composes (``dist`` is ``DistBackward0``).  The class returned
    changes nothing but the name: it shares ``cls``'s key in :data:`OPS`, and every table keyed by the op (vmap,
    ONNX, autocast, tracing) sees the op itself: an interception handler is given ``cls`` (see
    ``interception.intercepted``), and its ``run`` applies the named class.  ``saved_names``:
    the overload's names of the saved inputs, where they differ (``mv`` keeps ``self`` and ``vec``);
    ``composite``: the node stands for an op ember composes (see :func:`composite_node`).
    """
    twin = _NAMED.get((cls, name, saved_names, composite))  # (by the class given: a renamed one finds its twin too)
    if twin is None:
        base = cls.__dict__.get("_overload_of", cls)
        key = (base, name, saved_names, composite)
        twin = _NAMED.get(key)
        if twin is None:
            attrs = {"__slots__": (), "_overload_of": base}
            if saved_names is not None:
                attrs["saved_names"] = saved_names
            if composite:
                attrs["composite"] = True
            twin = _NAMED[key] = type(base)(name, (base,), attrs)
            twin.__qualname__ = name
        _NAMED[cls, name, saved_names, composite] = twin
    return twin


def rename_node(t, name: str, saved_names: tuple | None = None):
    """Give the node that made tensor ``t`` (a composite's last node, made by that call) PyTorch's name ``name``
    (and its names of the saved inputs, where given)."""
    fn = t._fn
    if fn is not None and fn._op:
        fn.__class__ = named_node(type(fn), name, saved_names)
    return t


def composite_node(t, name: str):
    """Give the last node of an op that ember composes from others (made by that call, the node of ``t``)
    PyTorch's name ``name`` of the op's one node.  The node keeps what its own op saved, not PyTorch's saved
    values, so its class is marked ``composite`` (code reading ``_saved_*`` by PyTorch's names can tell)."""
    fn = t._fn
    if fn is not None and fn._op:
        fn.__class__ = named_node(type(fn), name, None, True)
    return t


class AccumulateGrad(Node):
    """The node that adds incoming gradients into a leaf tensor's ``.grad``.

    The leaf keeps its node (``Tensor._acc``) and the node refers to the leaf
    weakly: no reference cycle, and one node per leaf for its whole life
    rather than a new one for every graph.
    """

    def __init__(self, variable):
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        """The leaf tensor, or None once it has been freed."""
        return self._variable()

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


class _Volatile(Node):
    """The history of every tensor computed from a volatile Variable (deprecated): nothing to backpropagate."""

    def __repr__(self):
        return "<volatile>"


VOLATILE = _Volatile()




def grad_edge(t):
    """The edge a gradient for tensor ``t`` travels along: ``(node, output_nr)``."""
    fn = t._fn
    if fn is not None:
        return (fn, t._nr)
    if not t._rg or t._nograd_view:  # (a view made under no_grad: no gradient flows into it, as in PyTorch)
        return (None, 0)
    node = t._acc
    if node is None:
        node = t._acc = AccumulateGrad(t)
    return (node, 0)


def anomaly_trace(ctx):
    ctx._trace = "".join(traceback.format_stack()[:-3])


# --------------------------------------------------------------------------- user Functions
class FunctionCtx:
    """The ``ctx`` handed to a user :class:`Function`'s forward and backward."""

    def save_for_backward(self, *tensors):
        self.to_save = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one call to a user Function (the ctx the user sees)."""

    materialize_grads = True
    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()
    needs_input_grad = ()
    _fn_cls = None

    @property
    def saved_tensors(self):
        self._check_released()
        if self._saved is None:
            return ()
        if self._packed:
            return unpack_saved(self._saved)
        out = []
        for i, (t, v) in enumerate(zip(self._saved, self._vers)):
            if v is not None:
                self._check_version(t, v, i)
            out.append(t)
        return tuple(out)

    saved_variables = saved_tensors

    def name(self):
        return type(self).__name__


class FunctionMeta(type):
    """Gives each Function subclass its own backward-node class (``<Name>Backward``)."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_fn_cls": cls})


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class for custom differentiable operations (PyTorch's ``autograd.Function``).

    Write static ``forward(ctx, *args)`` with ember operations and
    ``backward(ctx, *grad_outputs)`` returning one gradient (or ``None``)
    per forward argument; call ``YourFunction.apply(*args)``.
    The old style, an instance with ``forward(self, *tensors)`` called as
    ``YourFunction()(x)``, still works and warns that it is deprecated.
    """

    def __call__(self, *args):
        warnings.warn(
            "Legacy autograd function with non-static forward method is deprecated; define forward and "
            "backward as static methods taking ctx and call Function.apply",
            DeprecationWarning, stacklevel=2)
        return apply_legacy(self, args)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        return None

    @classmethod
    def apply(cls, *args, **kwargs):
        return apply_function(cls, args, kwargs)


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        self.inplace = inplace


class NestedIOFunction(Function):
    pass


def once_differentiable(fn):
    """Mark a backward as not differentiable twice: it runs without recording a graph."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)

    return wrapper


def is_recording() -> bool:
    return is_grad_enabled()


# --------------------------------------------------------------------------- running a user Function
def apply_function(cls, args, kwargs):
    ctx = cls._backward_cls.__new__(cls._backward_cls)
    tensors = [a for a in args if isinstance(a, Tensor)]
    recording = is_grad_enabled() and any(t._rg for t in tensors)
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
    has_setup = cls.setup_context is not Function.setup_context
    with no_grad():
        if has_setup:
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
        else:
            out = cls.forward(ctx, *args, **kwargs)
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    dirty = set(map(id, ctx.dirty_tensors))
    non_diff = set(map(id, ctx.non_differentiable))
    if not recording:
        return out
    ctx.next_functions = tuple(grad_edge(a) if isinstance(a, Tensor) else (None, 0) for a in args)
    ctx._shapes = tuple((a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None for a in args)
    ctx.n_outputs = len(outs)
    ctx._out_meta = tuple((o._data.shape, o.dtype, o._dev) if isinstance(o, Tensor) else ((), None, None)
                          for o in outs)
    if STATE.anomaly:
        anomaly_trace(ctx)
    results = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            results.append(o)
            continue
        if id(o) in dirty:
            o._bump()
            t = o
        elif any(o is a for a in tensors) or o._fn is not None or o._base is not None:
            t = _alias(o)
        else:
            t = o
        if id(o) not in non_diff and t.dtype.category >= 2:
            t._rg, t._fn, t._nr = True, ctx, i
        results.append(t)
    saved = ctx.to_save
    if saved:
        if SAVED_HOOKS.stack:
            pack_saved(ctx, saved)
        else:
            ctx._saved = tuple(saved)
            ctx._vers = tuple(t._version if isinstance(t, Tensor) else None for t in saved)
    return results[0] if single else tuple(results)


def _alias(o):
    """A new tensor object sharing ``o``'s data (an output that is an input must be a new node's output)."""
    t = _wrap(o._data, o._dev)
    b = o._base
    t._base = o if b is None else b
    return t


# --------------------------------------------------------------------------- instance-style (legacy) Functions
class _LegacyNode(BackwardCFunction):
    pass


def apply_legacy(fn, args):
    """Run an instance-style Function ``fn(*inputs)``: ``self.save_for_backward``, ``self.saved_tensors``."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    node = _LegacyNode()
    node._fn_cls = _LegacyBridge(fn)
    fn.saved_tensors = ()
    fn.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
    node.needs_input_grad = fn.needs_input_grad
    with no_grad():
        out = type(fn).forward(fn, *args)
    fn.saved_tensors = getattr(fn, "to_save", ())
    if not (is_grad_enabled() and any(t._rg for t in tensors)):
        return out
    outs = (out,) if isinstance(out, Tensor) else tuple(out)
    node.next_functions = tuple(grad_edge(a) if isinstance(a, Tensor) else (None, 0) for a in args)
    node._shapes = tuple((a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None for a in args)
    node.n_outputs = len(outs)
    node._out_meta = tuple((o._data.shape, o.dtype, o._dev) for o in outs)
    res = []
    for i, o in enumerate(outs):
        if o._fn is not None or any(o is a for a in tensors):
            o = o.detach()
            o._vo = None
        o._rg, o._fn, o._nr = True, node, i
        res.append(o)
    return res[0] if isinstance(out, Tensor) else tuple(res)


class _LegacyBridge:
    def __init__(self, fn):
        self.fn = fn

    def backward(self, node, *grads):
        return type(self.fn).backward(self.fn, *grads)
