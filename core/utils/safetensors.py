"""Interchange through the ``safetensors`` format (needs the optional ``safetensors`` package).

>>> import ember, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
>>> ember.save_safetensors({"w": ember.ones(2)}, path)
>>> ember.load_safetensors(path)["w"]
tensor([1., 1.])
"""
from __future__ import annotations

import os

import numpy as np

from ..ops.creation import from_numpy
from ..serialization import _atomic_write
from ..tensor import Tensor


def _numpy_api():
    try:
        import safetensors.numpy as st
    except ImportError as e:
        raise ImportError("ember.save_safetensors/load_safetensors need the 'safetensors' package: "
                          "pip install safetensors") from e
    return st


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Write a flat ``{name: tensor}`` dict (atomically) in the safetensors format."""

    st = _numpy_api()
    arrays = {}
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"save_safetensors: value for {name!r} is a {type(t).__name__}, expected a Tensor")
        arrays[name] = np.ascontiguousarray(t._dev.backend.to_numpy(t.detach()._data))
    blob = st.save(arrays, metadata=metadata)
    _atomic_write(os.fspath(filename), lambda fh: fh.write(blob))


def load_file(filename, device="cpu") -> dict:
    """Read a safetensors file into ``{name: tensor}`` on ``device``."""
    st = _numpy_api()
    out = {}
    for name, arr in st.load_file(os.fspath(filename)).items():
        t = from_numpy(arr)
        out[name] = t if str(device) == "cpu" else t.to(device)
    return out
