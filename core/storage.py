"""Storages: the flat memory a tensor views (``untyped_storage()``, legacy ``storage()``)."""
from __future__ import annotations

import os

import numpy as np

from .backend import resolve
from .shared_memory import is_shared  # noqa: F401


class UntypedStorage:
    """The bytes under a tensor; views of one tensor share one storage."""

    def __init__(self, root, device):
        self._root = root
        self.device = device

    @classmethod
    def _of(cls, t):
        return cls(t._storage_root(), t.device)

    @classmethod
    def from_file(cls, filename, shared: bool = False, nbytes: int = 0) -> "UntypedStorage":
        """``nbytes`` bytes of a file as a CPU storage: ``shared=True`` maps the file, so writes reach it.

        >>> import ember, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "b.bin")
        >>> open(path, "wb").write(bytes([1, 2, 3]))
        3
        >>> ember.UntypedStorage.from_file(path, nbytes=3).tolist()
        [1, 2, 3]
        """
        have = os.path.getsize(filename)
        if nbytes < 0 or have < nbytes:
            raise RuntimeError(f"unable to read {nbytes} bytes from file {filename}: it holds {have} bytes "
                               f"(UntypedStorage.from_file)")
        if shared and nbytes:
            root = np.memmap(filename, dtype=np.uint8, mode="r+", shape=(nbytes,))
        else:
            root = np.fromfile(filename, dtype=np.uint8, count=nbytes)
        return cls(root, resolve("cpu"))

    def nbytes(self) -> int:
        return int(self._root.nbytes)

    def size(self) -> int:
        return self.nbytes()

    __len__ = size

    def data_ptr(self) -> int:
        return _ptr(self._root)

    def element_size(self) -> int:
        return 1

    def untyped(self) -> "UntypedStorage":
        """The storage as bytes: itself (a :class:`TypedStorage` gives its untyped storage)."""
        return self

    def _bytes(self):
        return self._root.reshape(-1).view(np.uint8)  # (a 0-d root reshapes to one element too)

    def __getitem__(self, index):
        """Byte ``index`` as an int; a slice is a storage sharing these bytes (``storage[start:stop]``)."""
        if isinstance(index, slice):
            if index.step not in (None, 1):
                raise RuntimeError(f"UntypedStorage: a slice of a storage takes step 1, got {index.step}")
            return UntypedStorage(self._bytes()[index], self.device)
        return int(self._bytes()[index])

    def __eq__(self, other):
        return isinstance(other, UntypedStorage) and self.data_ptr() == other.data_ptr()

    def __hash__(self):
        return hash(self.data_ptr())

    def tolist(self):
        import numpy as np

        return np.asarray(self._root).reshape(-1).view(np.uint8).tolist()

    def __repr__(self):
        return f"ember.UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


class TypedStorage(UntypedStorage):
    """A storage seen as elements of the tensor's dtype (legacy ``Tensor.storage()``)."""

    def __init__(self, root, device, dtype):
        super().__init__(root, device)
        self.dtype = dtype

    @classmethod
    def _of(cls, t):
        return cls(t._storage_root(), t.device, t.dtype)

    def size(self) -> int:
        return self.nbytes() // self.dtype.itemsize

    __len__ = size

    def element_size(self) -> int:
        return self.dtype.itemsize

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._root, self.device)

    def tolist(self):
        import numpy as np

        return np.asarray(self._root).reshape(-1).tolist()

    def __getitem__(self, i):
        import numpy as np

        return np.asarray(self._root).reshape(-1)[i].item()

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        return f"{body}\n[ember.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size {self.size()}]"




def _addressable(a) -> bool:
    """Whether array ``a`` exposes its memory address (host arrays, and device arrays such as CuPy's)."""
    return hasattr(a, "__array_interface__") or hasattr(a, "__cuda_array_interface__")


def _ptr(a):
    ai = getattr(a, "__array_interface__", None)
    if ai is not None:
        return ai["data"][0]
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return cai["data"][0]
    return id(a)
