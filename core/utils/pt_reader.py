"""Read PyTorch's ``.pt``/``.pth`` zip checkpoints (``torch.save``'s and ``ember.save``'s) into ember tensors,
without torch.

The archive's ``data.pkl`` is read by a restricted unpickler: with ``weights_only`` (the default) the only
globals it resolves are PyTorch's tensor-rebuild functions, storage types, dtypes, ``torch.Size``/``torch.device``,
``collections.OrderedDict`` and the rest of PyTorch's allow-list, each mapped to an ember equivalent, and the
globals marked safe.  Any other global (``os.system``, a model class, ...) stops the load with an error naming
it, before anything runs.  ``weights_only=False`` resolves every global, a ``torch.*`` name as ember's.

>>> from ember.utils.pt_reader import STORAGE_DTYPES
>>> STORAGE_DTYPES["FloatStorage"]
'float32'
"""
from __future__ import annotations

import io
import pickle
from collections import OrderedDict

import numpy as np

from .. import dtypes
from ..backend import device as _device
from ..serialization import (ARCHIVE_READERS, STORAGE_TYPES, CheckpointError, _ember_path, _finish_tensor, _read_into,
                             allowed_global, check_entry_size, python3_name, rebuild_sparse_tensor, storage_view,
                             unsupported_global)
from ..tensor import Size

STORAGE_DTYPES = {**{storage: name for name, storage in STORAGE_TYPES.items()}, "UntypedStorage": "uint8"}


class _StorageType:
    def __init__(self, dtype_name: str):
        self.dtype_name = dtype_name


def _rebuild_tensor(storage, storage_offset, size, stride, *rest):
    """torch._utils._rebuild_tensor(_v2): a view of a storage."""
    arr, location, reader = storage
    requires_grad = bool(rest[0]) if rest else False
    return reader.tensor(arr, location, int(storage_offset), tuple(size), tuple(stride), requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks, *state):
    return _finish_tensor(data.detach(), bool(requires_grad), True)


def _encode(text, encoding="latin1"):
    # protocol-2 pickles spell bytes as _codecs.encode(str, 'latin1')
    if encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"Weights only load failed: _codecs.encode with encoding {encoding!r}")
    return text.encode(encoding)


def _allowed(module: str, name: str):
    if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
        return _rebuild_tensor
    if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
        return _rebuild_parameter
    if module == "torch._utils" and name == "_rebuild_sparse_tensor":
        return rebuild_sparse_tensor
    if module == "collections" and name == "OrderedDict":
        return OrderedDict
    if module == "_codecs" and name == "encode":
        return _encode
    if module in ("torch", "torch.storage") and name in STORAGE_DTYPES:
        return _StorageType(STORAGE_DTYPES[name])
    if module == "torch" and name == "Size":
        return Size
    if module == "torch" and name == "device":
        return _device
    if module == "torch" and isinstance(getattr(dtypes, name, None), dtypes.dtype):
        return getattr(dtypes, name)
    if module == "builtins" and name in ("set", "frozenset", "complex", "slice"):
        return {"set": set, "frozenset": frozenset, "complex": complex, "slice": slice}[name]
    return None


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, f, reader: "_Reader", weights_only: bool = True):
        super().__init__(f)
        self.reader = reader
        self.weights_only = weights_only

    def find_class(self, module, name):
        obj = _allowed(module, name)
        if obj is None and not self.weights_only:  # a whole object: its classes, PyTorch's read as ember's
            module, name = python3_name(module, name)
            return super().find_class(_ember_path(module), name)
        if obj is None:
            obj = allowed_global(module, name)  # PyTorch's defaults, or marked safe with add_safe_globals
        if obj is None:
            raise unsupported_global(module, name)
        return obj

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"Weights only load failed: unknown persistent id {pid!r}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType):
            raise pickle.UnpicklingError(f"Weights only load failed: storage type {stype!r} is not a torch storage")
        return self.reader.storage(str(key), stype.dtype_name, str(location), int(numel))


class _Reader:
    def __init__(self, zf, prefix: str, map_location):
        self.zf, self.prefix, self.map_location = zf, prefix, map_location
        self.storages: dict = {}
        self.moved: dict = {}  # (id of a host storage, target device) -> that storage on the device

    def storage(self, key: str, dtype_name: str, location: str, numel: int):
        if key not in self.storages:
            d = getattr(dtypes, dtype_name)
            if d.np is None:
                raise CheckpointError(f"torch checkpoint storage {key} has dtype {dtype_name}, which this ember "
                                      "cannot hold")
            name = f"{self.prefix}data/{key}"
            if numel < 0:
                raise CheckpointError(f"torch checkpoint storage {key} declares {numel} elements")
            size = check_entry_size(self.zf, name)
            if size < numel * np.dtype(d.np).itemsize:
                raise CheckpointError(f"torch checkpoint storage {key} declares {numel} elements but its entry "
                                      f"holds {size} bytes: the file is corrupted or hostile")
            if size % d.np.itemsize:
                raise CheckpointError(f"torch checkpoint entry {name} holds {size} bytes, not a whole number of "
                                      f"{dtype_name} elements")
            arr = np.empty(size // d.np.itemsize, d.np)
            _read_into(self.zf, name, memoryview(arr.view(np.uint8)))
            self.storages[key] = arr
        return self.storages[key], location, self

    def tensor(self, arr, location, offset, shape, stride, requires_grad):
        return storage_view(arr, offset, shape, stride, location, self.map_location, requires_grad, False, self.moved)


def is_torch_archive(names) -> bool:
    """Whether the zip entry names are those of a PyTorch checkpoint (``<prefix>/data.pkl``)."""
    return any(n.endswith("/data.pkl") and n.count("/") == 1 for n in names)


def load_torch_archive(zf, names, map_location=None, weights_only: bool = True):
    """The object in a PyTorch zip checkpoint, tensors as ember tensors; ``weights_only=False`` also builds whole
    objects (it runs code from the file)."""
    pkl = next(n for n in names if n.endswith("/data.pkl") and n.count("/") == 1)
    prefix = pkl[: -len("data.pkl")]
    if prefix + "byteorder" in names and zf.read(prefix + "byteorder").decode().strip() != "little":
        raise CheckpointError("torch checkpoint was written on a big-endian machine; ember reads little-endian ones")
    reader = _Reader(zf, prefix, map_location)
    return _RestrictedUnpickler(io.BytesIO(zf.read(pkl)), reader, weights_only).load()


ARCHIVE_READERS.append((is_torch_archive, load_torch_archive))
