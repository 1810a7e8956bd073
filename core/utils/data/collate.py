"""Batch assembly: ``default_collate`` stacks samples (nested dicts, tuples, NumPy arrays, numbers).

>>> import ember
>>> from ember.utils.data import default_collate
>>> default_collate([{"x": ember.ones(2), "y": 0}, {"x": ember.zeros(2), "y": 1}])
{'x': tensor([[1., 1.],
        [0., 0.]]), 'y': tensor([0, 1])}
"""
from __future__ import annotations

import collections.abc as abc
import numbers

import numpy as np

from ... import dtypes
from ...ops.creation import from_numpy, tensor
from ...ops.shape import stack
from ...tensor import Tensor

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _where(path: str) -> str:
    return f" at field {path}" if path else ""


def _stack(batch: list, path: str) -> Tensor:
    shapes = {tuple(t.shape) for t in batch}
    if len(shapes) > 1:
        listed = ", ".join(str(tuple(t.shape)) for t in batch)
        raise RuntimeError(f"default_collate: stack expects each tensor to be equal size{_where(path)}, "
                           f"but got shapes {listed}")
    return stack(batch, 0)


def _from_numpy(a: np.ndarray) -> Tensor:
    return from_numpy(np.ascontiguousarray(a))


def _collate(batch: list, path: str):
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack(batch, path)
    if isinstance(elem, np.ndarray) and elem.dtype.kind not in "SaUO":
        return _stack([_from_numpy(b) for b in batch], path)
    if isinstance(elem, np.generic) and elem.dtype.kind not in "SaUO":
        return _from_numpy(np.array(batch))
    if isinstance(elem, bool):
        return _tensor(batch, "bool")
    if isinstance(elem, numbers.Integral):
        return _tensor(batch, "int64")
    if isinstance(elem, numbers.Real):
        return _tensor(batch, "float64")
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, abc.Mapping):
        out = {k: _collate([d[k] for d in batch], f"{path}[{k!r}]") for k in elem}
        try:
            return type(elem)(out) if type(elem) is not dict else out
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(_collate(list(s), f"{path}.{f}") for f, s in zip(elem._fields, zip(*batch))))
    if isinstance(elem, abc.Sequence):
        n = len(elem)
        if any(len(b) != n for b in batch):
            raise RuntimeError(f"each element in list of batch should be of equal size{_where(path)}: got lengths "
                               f"{[len(b) for b in batch]}")
        cols = [_collate(list(s), f"{path}[{i}]") for i, s in enumerate(zip(*batch))]
        if isinstance(elem, tuple):
            return cols
        try:
            return type(elem)(cols)
        except TypeError:
            return cols
    raise TypeError(_ERR.format(type(elem)) + _where(path))


def _tensor(values: list, dtype_name: str) -> Tensor:
    return tensor(values, dtype=getattr(dtypes, dtype_name), device="cpu")


def default_collate(batch: list):
    """Stack a list of samples into a batch, recursing into dicts, tuples, lists and namedtuples.

    Tensors and NumPy arrays are stacked along a new first dimension; Python ints become an
    int64 tensor, floats a float64 tensor, strings stay a list.  Samples of unequal shape raise
    an error naming the field and the shapes.
    """
    return _collate(batch, "")


def default_convert(data):
    """Without batching: NumPy arrays become tensors, containers are converted element-wise."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SaUO":
        return _from_numpy(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "SaUO":
        return _from_numpy(np.asarray(data))
    if isinstance(data, abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, abc.Sequence) and not isinstance(data, (str, bytes)):
        return [default_convert(d) for d in data]
    return data
