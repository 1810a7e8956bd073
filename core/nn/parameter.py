"""``nn.Parameter``: a Tensor that a Module registers as learnable state."""
from __future__ import annotations

from ..ops.creation import empty
from ..tensor import Tensor, _disabled_torch_function_impl

_new = object.__new__


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and registers itself when assigned to a Module.

    >>> import ember
    >>> p = ember.nn.Parameter(ember.ones(2))
    >>> p.requires_grad
    True
    """

    _is_param = True
    __torch_function__ = _disabled_torch_function_impl  # ops on a Parameter give plain Tensors, without dispatch

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor as data, got {type(data).__name__}")
        if data.is_sparse or data.is_sparse_csr:  # a sparse tensor's storage is a shell, not its data
            raise NotImplementedError(f"Parameter: a tensor of layout {data.layout} cannot be a Parameter in ember")
        p = _new(cls)
        p._data = data._data
        p._dev = data._dev
        p._rg = False
        p._fn = None
        if requires_grad:
            p.requires_grad = True
        return p

    def __init__(self, data=None, requires_grad=True):
        pass


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` for the plain tensors that :class:`Buffer` returns (they carry ``_is_buffer``)."""

    def __instancecheck__(cls, obj):
        if cls is Buffer:
            return isinstance(obj, Tensor) and getattr(obj, "_is_buffer", False)
        return super().__instancecheck__(obj)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that registers itself as a buffer (``persistent`` or not) when assigned to a Module.

    >>> import ember
    >>> m = ember.nn.Module()
    >>> m.steps = ember.nn.Buffer(ember.zeros(()))
    >>> [name for name, _ in m.named_buffers()]
    ['steps']
    """

    __torch_function__ = _disabled_torch_function_impl  # its instances are plain Tensors

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """A placeholder of unknown shape, until :meth:`materialize` gives it storage (the Lazy modules' state)."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the placeholder storage of ``shape`` (uninitialised), on its device and dtype unless given;
        it becomes a ``cls_to_become`` (Parameter or Tensor)."""
        t = empty(shape, device=device if device is not None else self._dev,
                  dtype=dtype if dtype is not None else self.dtype)
        self._data, self._dev = t._data, t._dev
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        # a new placeholder of the same kind, device and dtype (a Tensor's copy would pass data to its __new__)
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self._dev, self.dtype)
        return memo[id(self)]


def _placeholder(cls, requires_grad, device, dtype):
    t = empty(0, device=device, dtype=dtype)
    p = _new(cls)
    p._data, p._dev, p._rg, p._fn = t._data, t._dev, False, None
    if requires_grad:
        p.requires_grad = True
    return p


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (see the ``Lazy*`` modules)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet."""

    cls_to_become = Tensor
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad: bool = False, device=None, dtype=None):
        pass


def is_lazy(obj) -> bool:
    """Whether ``obj`` is a placeholder of an uninitialised parameter or buffer."""
    return isinstance(obj, UninitializedTensorMixin)
