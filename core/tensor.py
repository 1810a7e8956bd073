"""The Tensor: a backend array plus autograd state.

Operator methods (``+``, ``exp``, ``sum``, ...) are attached by the modules in
:mod:`ember.ops`; this module holds the state, metadata, conversions and the
autograd entry points.
"""
from __future__ import annotations

import math
import threading
import warnings
import weakref

import numpy as np

from . import dtypes
from ._printing import tensor_repr
from .state import INFERENCE_ON, is_inference
from .storage import TypedStorage, UntypedStorage, _addressable, _ptr
from . import layouts as _layout
from .shared_memory import is_shared as _is_shared
from .shared_memory import share_memory_ as _share_memory_
from .backend import resolve

_new = object.__new__


class _Handle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, container, item, key=None):
        self.container, self.item, self.key = container, item, key

    def remove(self):
        c = self.container
        if isinstance(c, dict):
            lst = c.get(self.key, [])
            if self.item in lst:
                lst.remove(self.item)
        elif self.item in c:
            c.remove(self.item)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


RemovableHandle = _Handle


# --------------------------------------------------------------------------- the __torch_function__ state
class _TorchFunctionState(threading.local):
    """This thread's ``__torch_function__`` state: ``level`` 0 (enabled), 1 (subclasses disabled) or 2 (all
    disabled, modes too), and ``modes``, the stack of TorchFunctionModes (innermost last)."""

    level = 0
    modes = ()


TORCH_FUNCTION = _TorchFunctionState()
# run with each Tensor subclass whose __torch_function__ dispatches (ember.overrides adds the Tensor methods' checks)
SUBCLASS_HOOKS: list = []


class DisableTorchFunctionSubclass:
    """Within the block, ``__torch_function__`` of Tensor subclasses and Tensor-likes is not called (modes still are).

    >>> import ember
    >>> with DisableTorchFunctionSubclass():
    ...     TORCH_FUNCTION.level
    1
    """

    level = 1

    def __init__(self):
        self._outer = []

    def __enter__(self):
        old = TORCH_FUNCTION.level
        self._outer.append(old)
        TORCH_FUNCTION.level = max(old, self.level)
        return self

    def __exit__(self, *exc):
        TORCH_FUNCTION.level = self._outer.pop()


class DisableTorchFunction(DisableTorchFunctionSubclass):
    """Within the block, no ``__torch_function__`` is called: neither subclasses' nor modes'."""

    level = 2


def _foreign(func) -> bool:
    """Whether ``func`` is real PyTorch's (its ``e != t`` hands ember's Tensor its ``Tensor.__ne__``): running it
    would only come back here, so the handler answers NotImplemented."""
    owner = getattr(func, "__objclass__", func)
    mod = getattr(owner, "__module__", None) or ""
    return mod == "torch" or mod.startswith("torch.")


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The ``__torch_function__`` of a subclass that takes no part in dispatch (``nn.Parameter``): ``func`` itself."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


def _convert(ret, cls):
    """``ret`` with each Tensor in it (nested in tuples and lists) made an instance of ``cls``."""
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        return type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


class Size(tuple):
    """The shape of a tensor: a tuple of ints.

    >>> import ember
    >>> ember.zeros(2, 3).shape
    ember.Size([2, 3])
    """

    def __repr__(self):
        return f"{dtypes.NAMESPACE[0]}.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))


class Tensor:
    """A multi-dimensional array on a device, with autograd.

    Hot fields are slots; rarely used state (hooks, version, grad, view base)
    falls back to class-level defaults and lives in the instance dict only
    once set, so creating a tensor stores four fields.
    """

    __slots__ = ("_data", "_dev", "_rg", "_fn", "__dict__", "__weakref__")
    __array_priority__ = 1000  # NumPy defers `ndarray + Tensor` to Tensor.__radd__

    _grad = None
    _grad_dtype = "same"  # the dtype .grad must have: "same" (the tensor's), a dtype, or None (any)
    _base = None        # the tensor whose storage a view shares (its version counter too)
    _view = None        # how a view was derived from _base: (parent chain, Op, params)
    _ver = 0            # version counter, kept on the base
    _vo = None          # a detached tensor (not a view): the tensor whose version counter it shares
    _nr = 0             # output number within grad_fn
    _acc = None         # the leaf's AccumulateGrad node (which refers back to it weakly)
    _hooks = None       # hooks of a leaf tensor
    _post_acc_hooks = None
    _retains = False
    _volatile = False
    _inference = False
    _is_param = False
    _vv = 0             # a view: the base's version its history reflects (older: replayed from the base)
    _nograd_view = False  # a view made with grad mode off (PyTorch forbids changing it in place under grad)

    def __init__(self, *args, **kwargs):
        pass

    # ------------------------------------------------------------------ subclasses
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Run ``func`` with subclass dispatch off and give its Tensor results the class ``cls``.

        The default of every subclass: ``ember.add(t.as_subclass(T), 1)`` is a ``T``.
        """
        if kwargs is None:
            kwargs = {}
        if not all(issubclass(cls, t) for t in types) or _foreign(func):
            return NotImplemented
        with DisableTorchFunctionSubclass():
            ret = func(*args, **kwargs)
            # a field read (.grad) keeps its identity: never re-wrapped
            return ret if func == Tensor.grad.__get__ else _convert(ret, cls)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__torch_function__ is not _disabled_torch_function_impl:
            for hook in SUBCLASS_HOOKS:
                hook(cls)

    @staticmethod
    def _make_subclass(cls, data, require_grad: bool = False, **kwargs):
        """A ``cls`` sharing ``data``'s storage and version counter, a leaf that requires grad if ``require_grad``."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"_make_subclass(): argument 'cls' must be a subclass of Tensor, not {cls!r}")
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): argument 'data' must be Tensor, not {type(data).__name__}")
        t = _new(cls)
        t._data, t._dev, t._rg, t._fn = data._data, data._dev, False, None
        t._vo = _vowner(data)
        if require_grad:
            t.requires_grad = True
        return t

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        """The shape, or the length of one dimension."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    @property
    def dtype(self) -> dtypes.dtype:
        d = self._data.dtype
        if type(d) in _NP_DTYPE_TYPES:  # other libraries' dtypes must not be compared with NumPy's
            return _FROM_NP[d]
        return self._dev.backend.dtype_of(self._data)

    @property
    def device(self):
        return self._dev

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return math.prod(self._data.shape)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def stride(self, dim=None):
        st = getattr(self._data, "strides", None)
        if st is None:
            st = _contiguous_strides(self._data.shape, 1)
        else:
            st = tuple(s // self.element_size() for s in st)
        return st if dim is None else st[_wrap_dim(dim, self.ndim, "stride")]

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format is not None and memory_format in (_layout.channels_last, _layout.channels_last_3d):
            return _layout.channels_last_contiguous(tuple(self.shape), self.stride(), memory_format)
        flags = getattr(self._data, "flags", None)
        return True if flags is None else bool(flags.c_contiguous)

    def storage_offset(self) -> int:
        base = self._storage_root()
        if base is self._data or not _addressable(self._data):
            return 0
        return (self.data_ptr() - _ptr(base)) // self.element_size()

    def data_ptr(self) -> int:
        return _ptr(self._data)

    def get_device(self) -> int:
        return -1 if self._dev.index is None else self._dev.index

    @property
    def is_cuda(self) -> bool:
        return self._dev.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._dev.type == "cpu"

    @property
    def layout(self):
        return _layout.strided

    def is_floating_point(self) -> bool:
        return self.dtype.category == dtypes.FLOAT

    def is_complex(self) -> bool:
        return self.dtype.category == dtypes.COMPLEX

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def is_sparse_csr(self) -> bool:
        return False

    @property
    def is_quantized(self) -> bool:
        return False

    @property
    def is_meta(self) -> bool:
        return self._dev.type == "meta"

    def is_inference(self) -> bool:
        return self._inference

    def _storage_root(self):
        a = self._data
        while getattr(a, "base", None) is not None and hasattr(a.base, "shape"):
            a = a.base
        return a

    def untyped_storage(self):
        """The storage (1-D bytes) this tensor is a view of."""
        return UntypedStorage._of(self)

    def storage(self):
        """The typed storage this tensor is a view of (legacy)."""
        return TypedStorage._of(self)

    def is_shared(self) -> bool:
        return _is_shared(self)

    def share_memory_(self) -> "Tensor":
        """Move the storage into shared memory (no-op if already shared or on a device); returns self."""
        return _share_memory_(self)

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        return self._rg and not self._volatile

    @requires_grad.setter
    def requires_grad(self, value):
        if self._fn is not None and not value:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
        if value and self.dtype.category < dtypes.FLOAT:
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients, "
                               f"got {self.dtype}")
        if value and self._inference and not is_inference():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if self._fn is None:
            self._rg = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place and return self."""
        self.requires_grad = requires_grad
        return self

    # (grad_fn: a property set by .writes, which refreshes a view whose base changed in place first)

    @property
    def is_leaf(self) -> bool:
        return self._fn is None or self._volatile

    @property
    def grad(self):
        if self._fn is not None and not self._retains:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"assigned grad has data of a different size: got {list(value.shape)}, "
                                   f"expected {list(self.shape)}")
            allowed = self.grad_dtype
            if allowed is not None and value.dtype is not allowed:
                if self._grad_dtype == "same":
                    raise RuntimeError(f"assigned grad has data of a different type: got {value.dtype}, "
                                       f"expected {self.dtype}")
                raise RuntimeError(f"attempting to assign a gradient with dtype {value.dtype} to a tensor with "
                                   f"grad_dtype {allowed}. The gradient must match the tensor's grad_dtype "
                                   "(defaults to the tensor's dtype); set grad_dtype to None to allow any dtype.")
            if value._dev is not self._dev:
                raise RuntimeError(f"assigned grad has data located on a different device: got {value.device}, "
                                   f"expected {self.device}")
        self._grad = value

    @property
    def grad_dtype(self):
        """The dtype ``.grad`` must have (default the tensor's dtype; None: any).  Gradients the engine
        accumulates into ``.grad`` are cast to it."""
        return self.dtype if self._grad_dtype == "same" else self._grad_dtype

    @grad_dtype.setter
    def grad_dtype(self, value):
        if value is not None and not isinstance(value, dtypes.dtype):
            raise RuntimeError(f"grad_dtype must be a ember.dtype or None, but got {type(value).__name__}")
        if not self.is_leaf:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if self._grad is not None and value is not None and self._grad.dtype is not value:
            raise RuntimeError(f"Cannot set grad_dtype to {value} because there is already a gradient with dtype "
                               f"{self._grad.dtype}. Please clear the gradient (.grad = None) before changing "
                               "grad_dtype, or ensure the new grad_dtype matches the existing gradient's dtype.")
        self._grad_dtype = value

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (``_base``); a detached tensor is not."""
        return self._base is not None

    @property
    def _version(self) -> int:
        return _vowner(self)._ver

    def _bump(self):
        _vowner(self)._ver += 1

    @property
    def data(self) -> "Tensor":
        """A tensor sharing this one's storage, outside autograd (in-place changes go unseen by it)."""
        return _wrap(self._data, self._dev)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._dev = value._dev

    @property
    def output_nr(self) -> int:
        return self._nr

    @property
    def retains_grad(self) -> bool:
        return self._retains

    @property
    def volatile(self) -> bool:
        """Deprecated (Variable API): True for tensors made from a volatile Variable."""
        warnings.warn("volatile is deprecated: use `with ember.no_grad():` instead", DeprecationWarning,
                      stacklevel=2)
        return self._volatile

    @property
    def creator(self):
        """Deprecated name of ``grad_fn``."""
        warnings.warn("creator is deprecated; use grad_fn", DeprecationWarning, stacklevel=2)
        return self._fn

    def detach(self) -> "Tensor":
        """A tensor sharing storage and version counter, cut from the graph."""
        t = _wrap(self._data, self._dev)
        t._vo = _vowner(self)
        return t

    def detach_(self) -> "Tensor":
        if self._base is not None and self._fn is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._fn = None
        self._rg = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._fn is None or self._retains:
            return
        fn = self._fn
        fn._hooked = True
        fn._plain = False
        if fn._retain is None:
            fn._retain = {}
        fn._retain[self._nr] = weakref.ref(self)
        self._retains = True

    def register_hook(self, hook):
        """Run ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it.

        >>> import ember
        >>> x = ember.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 2)
        >>> (x * 3).sum().backward(); x.grad
        tensor([6., 6.])
        """
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self._fn
        if fn is None:
            if self._hooks is None:
                self._hooks = []
            self._hooks.append(hook)
            return _Handle(self._hooks, hook)
        fn._hooked = True
        fn._plain = False
        if fn._pre_hooks is None:
            fn._pre_hooks = {}
        fn._pre_hooks.setdefault(self._nr, []).append(hook)
        return _Handle(fn._pre_hooks, hook, self._nr)

    def register_post_accumulate_grad_hook(self, hook):
        """Run ``hook(tensor)`` after a leaf's ``.grad`` has been accumulated."""
        if self._fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
        self._post_acc_hooks.append(hook)
        return _Handle(self._post_acc_hooks, hook)

    # ------------------------------------------------------------------ conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array, sharing memory on the CPU."""
        if force:
            return self._dev._backend.to_numpy(self.detach()._data).copy() if self._dev.type == "cpu" \
                else self._dev._backend.to_numpy(self._data)
        if self._rg:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if not self._dev._backend.host:
            raise TypeError(f"can't convert {self._dev} device type tensor to numpy. Use Tensor.cpu() to copy the "
                            f"tensor to host memory first.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        a = self._dev._backend.to_numpy(self._data)
        return a if dtype is None else a.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc's result on a tensor comes back as a CPU tensor, as in PyTorch (bool as uint8, PyTorch's
        choice here); an array of a dtype ember lacks stays an array."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        if array.dtype not in dtypes.FROM_NP:
            return array
        return _wrap(np.asarray(array), resolve("cpu"))

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._dev._backend.to_numpy(self._data).reshape(()).item()

    def tolist(self):
        """The data as (nested) Python lists of numbers."""
        return self._dev._backend.to_numpy(self._data).tolist()

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def _one_value(self):
        """The value of a one-element tensor for float(), int() and complex() (PyTorch's ValueError otherwise)."""
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self):
        return float(self._one_value())

    def __int__(self):
        return int(self._one_value())

    def __complex__(self):
        return complex(self._one_value())

    def __index__(self):
        if self.dtype.category > dtypes.INT or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0:  # a number's format, the empty spec included (``f"{t}"`` of a 0-d tensor)
            return format(self.item(), spec)
        return repr(self)

    def __deepcopy__(self, memo):
        if self._fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
        t = _wrap(self._dev.kernels["copy"](self._data), self._dev)
        if type(self) is not Tensor:
            t = type(self).__new__(type(self), t, self._rg) if self._is_param else t
        t._rg = self._rg
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        own = ("_grad", "_acc", "_base", "_ver", "_vo")
        t.__dict__.update({k: v for k, v in self.__dict__.items() if k not in own})
        memo[id(self)] = t
        return t

    def type(self, dtype=None, non_blocking=False):
        """Without arguments, the legacy type name (``'ember.FloatTensor'``); else a cast."""
        if dtype is None:
            package = dtypes.NAMESPACE[0]
            prefix = f"{package}." if self._dev.type == "cpu" else f"{package}.{self._dev.type}."
            return prefix + self.dtype.legacy
        if isinstance(dtype, str):
            name = dtype.rsplit(".", 1)[-1]
            if name in dtypes.LEGACY:
                dev = "cuda" if ".cuda." in dtype else None
                t = self.to(dtypes.LEGACY[name])
                return t.to(dev) if dev else t
        if isinstance(dtype, type) and hasattr(dtype, "_legacy_dtype"):
            return self.to(dtype._legacy_dtype)
        if not isinstance(dtype, (str, dtypes.dtype, type)):
            raise TypeError(f"type(): dtype must be a type, str, or dtype object, got {type(dtype).__name__}")
        try:
            return self.to(dtypes.as_dtype(dtype))
        except TypeError:
            raise ValueError(f"type(): invalid type: {dtype!r}") from None


_FROM_NP = dtypes.FROM_NP
_NP_DTYPE_TYPES = frozenset(type(d) for d in _FROM_NP)  # NumPy's dtype classes (a set test is cheaper than isinstance)


def _contiguous_strides(shape, item):
    st, acc = [], item
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


class GivenDim(int):
    """A negative dimension wrapped into range, which remembers the value it was given (``given``): ops compute with
    the wrapped one, graph nodes give the given one back as PyTorch's do (``grad_fn._saved_dim``)."""

    def __new__(cls, dim, given):
        self = int.__new__(cls, dim)
        self.given = given
        return self

    def __getnewargs__(self):
        return int(self), self.given


def _wrap_dim(dim, ndim, op="op"):
    """``dim`` (an int, possibly negative) checked against ``ndim`` and wrapped into range (a :class:`GivenDim`
    when it was negative; a plain int when it is one already wrapped, passed on by a composite, whose inner ops
    keep the wrapped value as PyTorch's do)."""
    if type(dim) is int and 0 <= dim < ndim:  # the common case, settled first
        return dim
    n = max(ndim, 1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        if hasattr(dim, "__index__") and not isinstance(dim, bool) and type(dim).__name__ != "bool":  # NumPy's too
            dim = dim.__index__()
        else:
            raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    if dim < -n or dim >= n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    if dim < 0:
        given = _GIVEN.get((dim, n))
        if given is None:
            given = _GIVEN[dim, n] = GivenDim(dim + n, dim)
        return given
    return dim if type(dim) is int else int(dim)


_GIVEN: dict = {}  # (negative dim, ndim) -> its GivenDim: one immutable instance each, not one per call


def _vowner(t) -> Tensor:
    """The tensor holding ``t``'s version counter: ``t``'s view base (or ``t``), or the tensor it was detached from."""
    b = t._base
    if b is None:
        b = t
    o = b._vo
    return b if o is None else o


def _wrap(arr, dev) -> Tensor:
    """A new leaf Tensor around backend array ``arr`` on device ``dev``: no argument parsing."""
    t = _new(Tensor)
    if type(arr) is not dev.atype:
        arr = dev.backend.as_array(arr)
    t._data = arr
    t._dev = dev
    t._rg = False
    t._fn = None
    if INFERENCE_ON and is_inference():
        t._inference = True
    return t


def is_tensor(obj) -> bool:
    """Whether ``obj`` is an ember Tensor."""
    return isinstance(obj, Tensor)


def is_storage(obj) -> bool:
    return isinstance(obj, (TypedStorage, UntypedStorage))


def device_of(dev):
    return resolve(dev)
