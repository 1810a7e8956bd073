"""``ember.ops.load_library`` (``torch.ops.load_library``): load a shared library of operators.

PyTorch's custom-op libraries are built against libtorch and register their operators from C++; ember has no
libtorch, so such a library is refused with a message saying what to do instead (``ember.library`` for the
operator, ``ember.utils.cpp_extension`` for a C/C++ kernel). Any other shared library is loaded into the
process (its exported functions reachable through ``ctypes``) and recorded in :data:`loaded_libraries`.
"""
from __future__ import annotations

import ctypes
import os

loaded_libraries: set = set()
_LIBTORCH_MARKS = (b"libtorch", b"libc10", b"_ZN3c10", b"_ZN2at")  # its libraries and its mangled namespaces


def load_library(path) -> None:
    """Load the shared library at ``path`` into the process (see the module's notes for PyTorch's libraries)."""
    path = os.path.realpath(os.fspath(path))
    if not os.path.isfile(path):
        raise OSError(f"{path}: cannot open shared object file: No such file or directory")
    with open(path, "rb") as f:
        data = f.read()
    if any(mark in data for mark in _LIBTORCH_MARKS):
        raise RuntimeError(f"ops.load_library: {path} is built against PyTorch's C++ library (libtorch), which "
                           f"ember does not have; define its operators with ember.library and their C/C++ kernels "
                           f"with ember.utils.cpp_extension")
    ctypes.CDLL(path)
    loaded_libraries.add(path)
