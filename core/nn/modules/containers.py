"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import islice

from ..parameter import Parameter
from .module import Module


class Sequential(Module):
    """Modules applied in order; built from modules or an ``OrderedDict`` of named modules.

    >>> import ember
    >>> net = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.ReLU())
    >>> net(ember.ones(1, 2)).shape
    ember.Size([1, 3])
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _index(self, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return idx % size

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return next(islice(self._modules.values(), self._index(idx), None))

    def __setitem__(self, idx, module):
        key = list(self._modules)[self._index(idx)]
        setattr(self, key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[self._index(idx)]]):
            del self._modules[key]
        _renumber(self._modules, list(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        return Sequential(*self, *other)

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> "Sequential":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        mods = list(self._modules.values())
        mods.insert(index, module)
        _renumber(self._modules, mods)
        return self

    def forward(self, input):  # noqa: A002
        for module in self._modules.values():
            input = module(input)
        return input


def _renumber(items: dict, values) -> None:
    """Refill a registry with ``values`` under keys "0", "1", ... (after an insertion or a deletion)."""
    items.clear()
    for i, v in enumerate(values):
        items[str(i)] = v


class _Store:
    """Dict-like access to one of a Module's registries (``_store``), shared by the list and dict containers."""

    _store = "_modules"

    def _items(self):
        return getattr(self, self._store)

    def _put(self, key, value):
        self.add_module(key, value)

    def __len__(self):
        return len(self._items())



class _ListMixin(_Store):
    def __getitem__(self, idx):
        values = list(self._items().values())
        return type(self)(values[idx]) if isinstance(idx, slice) else values[idx]

    def __setitem__(self, idx, value):
        self._put(list(self._items())[idx], value)

    def __delitem__(self, idx):
        values = list(self._items().values())
        del values[idx]
        _renumber(self._items(), values)

    def __iter__(self):
        return iter(self._items().values())

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        self._put(str(len(self)), value)
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def insert(self, index: int, value) -> None:
        values = list(self._items().values())
        values.insert(index, value)
        _renumber(self._items(), values)


class _DictMixin(_Store):
    def __getitem__(self, key):
        return self._items()[key]

    def __setitem__(self, key, value):
        self._put(key, value)

    def __delitem__(self, key):
        del self._items()[key]

    def __iter__(self):
        return iter(self._items())

    def __contains__(self, key):
        return key in self._items()

    def keys(self):
        return self._items().keys()

    def items(self):
        return self._items().items()

    def values(self):
        return self._items().values()

    def pop(self, key):
        return self._items().pop(key)

    def clear(self):
        self._items().clear()

    def update(self, values):
        for k, v in (values.items() if hasattr(values, "items") else values):
            self[k] = v


class ModuleList(_ListMixin, Module):
    """A list of modules registered as children (``"0"``, ``"1"``, ...)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)


class ModuleDict(_DictMixin, Module):
    """An ordered dict of modules registered as children."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)


class _ParamStore:
    _store = "_parameters"

    def _put(self, key, value):
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))

    _describe = staticmethod(lambda p: p.type())

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): Parameter containing: [{self._describe(p)} of size "
                         f"{'x'.join(map(str, p.shape))}]" for k, p in self._items().items())


class ParameterList(_ParamStore, _ListMixin, Module):
    """A list of Parameters registered under ``"0"``, ``"1"``, ... (tensors are wrapped as Parameters)."""

    _describe = staticmethod(lambda p: p.dtype)

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)


class ParameterDict(_ParamStore, _DictMixin, Module):
    """An ordered dict of Parameters."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)


class Container(Module):
    """Deprecated: a Module holding the modules given as keyword arguments (subclass :class:`Module` instead)."""

    def __init__(self, **kwargs):
        super().__init__()
        import warnings  # noqa: PLC0415 - only the deprecated class needs it
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)
