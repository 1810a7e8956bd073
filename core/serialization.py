"""Checkpoints: ``ember.save`` / ``ember.load``, safe by default, in PyTorch's file layout.

``save`` writes PyTorch's zip checkpoint (entries stored uncompressed), so ``torch.load`` reads ember's files and
``ember.load`` reads PyTorch's:

* ``<name>/data.pkl``: the object, pickled (protocol 2) as ``torch.save`` pickles it: each tensor is
  ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)``, each Parameter
  ``torch._utils._rebuild_parameter(tensor, requires_grad, hooks)``, each sparse tensor
  ``torch._utils._rebuild_sparse_tensor(torch.serialization._get_layout(name), (indices..., values, size...))``,
  a storage the persistent id
  ``('storage', torch.FloatStorage, key, location, numel)``, dtypes, ``Size`` and devices under ``torch.*``;
* ``<name>/data/<key>``: the raw bytes of each storage, written once even when several saved tensors are views of
  it, starting at a multiple of 64 bytes in the file;
* ``<name>/version`` (``3``), ``byteorder``, ``.format_version``, ``.storage_alignment`` and
  ``.data/serialization_id``, as PyTorch writes them.  ``<name>`` is the file's name without its extension
  (``archive`` for a file object).

``load`` reads such files (ember's and PyTorch's) by a restricted unpickler (:mod:`ember.utils.pt_reader`):
with ``weights_only=True`` (the default) only tensors, plain containers and PyTorch's allow-list resolve;
``weights_only=False`` also loads whole objects (models), which runs code from the file: never do that with a
file from an untrusted source.  ember's earlier archives (``ember/header.json``, ``data.json`` or ``data.pkl``,
``storages/<n>``) still load.

Writes go to a temporary file in the target directory (``.<name>.<pid>.<random>.tmp``), flushed and
fsynced, then renamed over the target, so an interrupted save leaves the previous checkpoint intact; the
next save or load of the path removes the temporaries of saves whose process is gone.  A saved file
follows the umask as ``open()`` would, and an overwrite keeps the existing file's mode.  Loading checks
every declared size against the file's real size before allocating anything.

>>> import ember, io
>>> buf = io.BytesIO()
>>> ember.save({"w": ember.ones(2), "step": 3}, buf)
>>> _ = buf.seek(0)
>>> ember.load(buf)
{'w': tensor([1., 1.]), 'step': 3}
"""
from __future__ import annotations

import _compat_pickle
import base64
import hashlib
import io
import json
import math
import os
import pickle
import secrets
import struct
import sys
import tempfile
import threading
import warnings
import zipfile
import zlib
from collections import Counter, OrderedDict
from typing import Callable, Optional, Union

import numpy as np

from . import dtypes, layouts
from .backend import device as _device
from .backend import resolve
from .nn.parameter import Parameter
from .ops.creation import from_numpy
from .sparse.ops import sparse_compressed_tensor, sparse_coo_tensor
from .sparse.tensor import COMPRESSED, INDEX_NAMES
from .tensor import Size, Tensor, _ptr, _wrap

# ember's earlier archive format, still read
FORMAT = "ember"
VERSION = 1
PREFIX = "ember/"
DTYPES = {d.name: d for d in dtypes.ALL}
# what ``load(map_location=...)`` accepts, as PyTorch's type names it: a function of (tensor, saved location),
# a device or its name, or a dict from saved location to target
MAP_LOCATION = Optional[Union[Callable[[Tensor, str], Tensor], _device, str, dict]]


# other checkpoint formats: ``(recognises(zip member names), read(zf, names, map_location, weights_only))``,
# entered by their readers (ember.utils.pt_reader enters PyTorch's)
ARCHIVE_READERS: list = []


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read: corrupted, truncated, unknown, or unsafe to load."""


# ---------------------------------------------------------------------------- pickling of single tensors
def _rebuild_tensor(array, device, requires_grad, is_param=False):
    t = from_numpy(np.array(array, copy=True))
    if device != "cpu":
        t = t.to(device)
    return _finish_tensor(t, requires_grad, is_param)


def _reduce_tensor(t):
    arr = t._dev.backend.to_numpy(t._data)
    return (_rebuild_tensor, (np.ascontiguousarray(arr), str(t._dev), t._rg, t._is_param))


Tensor.__reduce_ex__ = lambda self, proto: _reduce_tensor(self)  # pickling a tensor is serialization's business


def _finish_tensor(t: Tensor, requires_grad: bool, is_param: bool) -> Tensor:
    if is_param:
        return Parameter(t, requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


# ---------------------------------------------------------------------------- saving, in PyTorch's layout
# the storage class PyTorch's pickles name for each dtype (torch.storage._dtype_to_storage_type_map)
STORAGE_TYPES = {"float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
                 "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                 "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                 "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}
ALIGNMENT = 64  # storages start at multiples of this in the file, as PyTorch writes them (mmap loading needs it)


class _StorageTable:
    """Storages of the saved tensors, each root array written once; tensors refer to them."""

    def __init__(self):
        self.records: list = []    # (numpy flat array of the storage, device string)
        self.meta: list = []
        self._by_root: dict = {}

    def add(self, t: Tensor) -> tuple:
        """``(storage index, offset, shape, strides)`` of ``t``, offset and strides in elements."""
        arr, dev = t._data, t._dev
        root = t._storage_root()
        shares = (root is not arr and _dense(root) and hasattr(arr, "strides")
                  and getattr(root, "dtype", None) == arr.dtype)
        if not shares:
            root = arr
        key = id(root)
        if key not in self._by_root:
            host = dev.backend.to_numpy(root)
            if not _dense(host):
                host = np.ascontiguousarray(host)
            self._by_root[key] = (len(self.records), root, host)
            self.records.append(host.ravel(order="K"))
            self.meta.append({"dtype": t.dtype.name, "numel": int(host.size), "device": str(dev),
                              "key": str(len(self.meta))})  # one key object per storage, memoized as PyTorch's
        sid, root, host = self._by_root[key]
        item = host.dtype.itemsize
        if 0 in arr.shape:  # NumPy gives empty arrays zero strides; PyTorch's are contiguous ones
            return sid, 0, tuple(arr.shape), _contiguous_strides(arr.shape)
        if root is arr:
            offset, strides = 0, tuple(s // item for s in host.strides)
        else:
            offset, strides = (_ptr(arr) - _ptr(root)) // item, tuple(s // item for s in arr.strides)
        return sid, offset, tuple(arr.shape), strides


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _dense(a) -> bool:
    """Whether ``a`` covers one contiguous block of memory (C or Fortran order)."""
    flags = getattr(a, "flags", None)
    return flags is not None and bool(flags.c_contiguous or flags.f_contiguous)


class _TorchGlobal:
    """A global spelled as PyTorch's pickles spell it (``torch._utils._rebuild_tensor_v2``): written by name,
    never imported, so ``torch.load`` finds its own function and ``ember.load`` maps the name to ember's.

    Each one is also this module's attribute ``local`` with an entry in the pickle module's Python 3 -> 2 name
    table (``_compat_pickle.REVERSE_NAME_MAPPING``, applied by every pickler at protocol 2): the C pickler
    finds it here by that name and writes PyTorch's.  The table's new keys name only these private objects."""

    __slots__ = ("module", "name", "local")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name
        self.local = f"_torch_global__{module.replace('.', '__')}__{name}"
        globals()[self.local] = self
        _compat_pickle.REVERSE_NAME_MAPPING[(__name__, self.local)] = (module, name)

    def __call__(self, *args):  # pickle wants a reduce function to be callable; this one only names PyTorch's
        raise TypeError(f"{self.module}.{self.name} is PyTorch's; ember only writes its name")


_REBUILD_TENSOR = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _TorchGlobal("torch._utils", "_rebuild_parameter")
_REBUILD_SPARSE = _TorchGlobal("torch._utils", "_rebuild_sparse_tensor")
_GET_LAYOUT = _TorchGlobal("torch.serialization", "_get_layout")
_SIZE, _DEVICE = _TorchGlobal("torch", "Size"), _TorchGlobal("torch", "device")
_STORAGE_GLOBALS = {name: _TorchGlobal("torch", cls) for name, cls in STORAGE_TYPES.items()}
_DTYPE_GLOBALS = {d.name: _TorchGlobal("torch", d.name) for d in dtypes.ALL}
# a dtype is written as a bare global, found by its own name in ember.dtypes: ``torch.<name>`` at protocol 2
_compat_pickle.REVERSE_NAME_MAPPING.update({(dtypes.__name__, d.name): ("torch", d.name) for d in dtypes.ALL})


class _StorageRef:
    __slots__ = ("sid",)

    def __init__(self, sid: int):
        self.sid = sid


class _Reductions:
    """How ``torch.save`` pickles: tensors rebuilt by ``torch._utils._rebuild_tensor_v2`` from storages that are
    persistent ids ``('storage', torch.<Type>Storage, key, location, numel)``, Parameters by
    ``_rebuild_parameter``, and dtypes, ``Size`` and devices under PyTorch's names."""

    def __init__(self, f, table: _StorageTable, protocol: int):
        super().__init__(f, protocol=protocol)
        self.table = table
        self.refs: dict = {}

    def persistent_id(self, obj):
        if type(obj) is not _StorageRef:
            return None
        m = self.table.meta[obj.sid]
        return ("storage", _STORAGE_GLOBALS[m["dtype"]], m["key"], m["device"], m["numel"])

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is _TorchGlobal:
            return obj.local  # a global: this module's attribute, written under PyTorch's name
        if kind is dtypes.dtype:
            return obj.name
        if kind is layouts.layout:
            return _GET_LAYOUT, (f"torch.{obj._name}",)
        if isinstance(obj, Tensor):
            if obj.layout is not layouts.strided:
                return _REBUILD_SPARSE, (obj.layout, _sparse_parts(obj))
            if obj._is_param:
                return _REBUILD_PARAMETER, (obj.detach(), obj.requires_grad, OrderedDict())
            sid, offset, shape, strides = self.table.add(obj)
            ref = self.refs.setdefault(sid, _StorageRef(sid))
            return _REBUILD_TENSOR, (ref, offset, shape, strides, obj.requires_grad, OrderedDict())
        if kind is Size:
            return _SIZE, (tuple(obj),)
        if kind is _device:
            return _DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index)
        return NotImplemented


def _sparse_parts(t) -> tuple:
    """What PyTorch's pickle holds of a sparse tensor: ``(indices, values, size, is_coalesced)`` of a COO one,
    ``(compressed indices, plain indices, values, size)`` of a compressed one."""
    if t.layout is layouts.sparse_coo:
        return t._indices(), t._values(), t.size(), t.is_coalesced()
    compressed, plain, _ = INDEX_NAMES[t.layout]
    return getattr(t, compressed)(), getattr(t, plain)(), t.values(), t.size()


def rebuild_sparse_tensor(layout, data):
    """``torch._utils._rebuild_sparse_tensor``: a sparse tensor of ``layout`` from the parts :func:`_sparse_parts`
    names (a COO tensor's ``is_coalesced`` may be missing, as in older files); every invariant is checked, so a
    hostile file cannot make one that points outside its values."""
    if layout is layouts.sparse_coo:
        indices, values, size, *coalesced = data
        return sparse_coo_tensor(indices, values, size, is_coalesced=bool(coalesced and coalesced[0]))
    if layout in COMPRESSED:
        compressed, plain, values, size = data
        return sparse_compressed_tensor(compressed, plain, values, size, layout=layout)
    raise pickle.UnpicklingError(f"Weights only load failed: a sparse tensor of layout {layout!r}")


def _get_layout(name: str):
    """``torch.serialization._get_layout``: the layout a checkpoint names (``'torch.sparse_coo'``)."""
    found = layouts.LAYOUTS.get(name.rpartition(".")[2]) if isinstance(name, str) else None
    if found is None:
        raise pickle.UnpicklingError(f"Weights only load failed: unknown layout {name!r}")
    return found


class _Pickler(_Reductions, pickle.Pickler):
    """The C pickler at protocol 2 (``torch.save``'s default), writing PyTorch's names through the name table."""


class _PyPickler(_Reductions, pickle._Pickler):
    """Python's pickler in Python, for protocols from 3 (where no name table applies): it writes each of
    PyTorch's globals by name itself."""

    def save(self, obj, save_persistent_id=True):
        name = obj if type(obj) is _TorchGlobal else _DTYPE_GLOBALS[obj.name] if type(obj) is dtypes.dtype else None
        if name is None:
            return super().save(obj, save_persistent_id)
        memo = self.memo.get(id(obj))
        if memo is not None:
            self.write(self.get(memo[0]))
            return None
        self.write(pickle.GLOBAL + f"{name.module}\n{name.name}\n".encode("ascii"))
        self.memoize(obj)
        return None


def save(obj, f, pickle_module=pickle, pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Write ``obj`` (tensors, state dicts, nested containers, or a whole model) to a path or file, in PyTorch's
    checkpoint layout: ``torch.load`` reads the file, and ``ember.load`` reads PyTorch's.

    Paths are written atomically: a crash mid-save leaves the previous file as it was.  The ``byteorder`` record
    is left out with ``_disable_byteorder_record=True`` (then a load takes the file as little-endian).

    >>> import ember, io
    >>> buf = io.BytesIO(); ember.save([ember.zeros(1), (1, "a")], buf); _ = buf.seek(0)
    >>> ember.load(buf)
    [tensor([0.]), (1, 'a')]
    """
    table = _StorageTable()
    buf = io.BytesIO()
    protocol = max(pickle_protocol, 2)
    (_Pickler if protocol == 2 else _PyPickler)(buf, table, protocol).dump(obj)
    if isinstance(f, (str, os.PathLike)):
        target = _save_target(os.fspath(f))
        _atomic_write(target, lambda fh: _write_zip(fh, buf.getvalue(), table, _archive_name(target),
                                                    not _disable_byteorder_record))
    else:
        _write_zip(f, buf.getvalue(), table, "archive", not _disable_byteorder_record)


def _archive_name(path: str) -> str:
    """The top folder of the archive's records: the file's name without its extension, as PyTorch names it."""
    stem = os.path.basename(path).rpartition(".")[0] or os.path.basename(path)
    return stem or "archive"


def _save_target(path: str) -> str:
    """The file a save to ``path`` replaces: a symlink's target (the link stays a link, as PyTorch writes through
    it), else ``path``; PyTorch's RuntimeError when its directory is missing or it is a directory itself."""
    real = os.path.realpath(path) if os.path.islink(path) else path
    parent = os.path.dirname(real)
    if parent and not os.path.isdir(parent):
        raise RuntimeError(f"Parent directory {parent} does not exist.")
    if os.path.isdir(real):
        raise RuntimeError(f"save: cannot write to {path}: it is a directory")
    return real


def _write_zip(fh, pkl: bytes, table: _StorageTable, archive: str, byteorder: bool = True) -> None:
    """The records in PyTorch's order: ``data.pkl``, ``.format_version``, ``.storage_alignment``, ``byteorder``,
    ``data/<key>`` (each storage's raw bytes, aligned), ``version``, ``.data/serialization_id``."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        def record(name, data):
            _write_record(zf, f"{archive}/{name}", memoryview(data).cast("B"))

        record("data.pkl", pkl)
        record(".format_version", b"1")
        record(".storage_alignment", str(ALIGNMENT).encode())
        if byteorder:
            record("byteorder", sys.byteorder.encode())
        for i, flat in enumerate(table.records):
            record(f"data/{i}", np.ascontiguousarray(flat).view(np.uint8))
        record("version", b"3\n")
        digest = int.from_bytes(hashlib.sha1(pkl).digest()[:8], "little")
        record(".data/serialization_id", f"{secrets.randbits(64):020d}{digest:020d}".encode())


def _write_record(zf: zipfile.ZipFile, name: str, data: memoryview) -> None:
    """One stored record whose bytes start at a multiple of ALIGNMENT, padded by an extra field as PyTorch's."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.file_size = len(data)
    zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT  # then Python's zipfile adds a 20-byte zip64 field
    start = zf.fp.tell() + 30 + len(name.encode()) + 4 + (20 if zip64 else 0)  # 30: the local header's fixed part
    pad = -start % ALIGNMENT
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


_TMP_SUFFIX = ".tmp"
_UMASK_LOCK = threading.Lock()


def _tmp_prefix(path: str) -> str:
    """Temporaries of a save to ``path`` are ``.<name>.<pid>.<random>.tmp`` beside it: the next save or load of
    the same path finds them and removes those whose process is gone (a save killed mid-write)."""
    return f".{os.path.basename(path)}."


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or cannot be told: keep its file
    return True


def remove_stale_temporaries(path: str) -> list:
    """Remove the temporaries that saves to ``path`` by processes no longer running left behind; returns them."""
    path = os.path.realpath(path)  # a save through a symlink writes beside its target
    directory = os.path.dirname(os.path.abspath(path))
    prefix = _tmp_prefix(path)
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for n in names:
        if not (n.startswith(prefix) and n.endswith(_TMP_SUFFIX)):
            continue
        pid = n[len(prefix):-len(_TMP_SUFFIX)].split(".", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(directory, n))
            removed.append(n)
        except FileNotFoundError:
            pass
    return removed


def _file_mode(path: str) -> int:
    """The mode a save gives ``path``: an existing file's, else what ``open()`` would (0o666 less the umask)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        with _UMASK_LOCK:  # the only way to read the umask is to set it
            mask = os.umask(0o022)
            os.umask(mask)
        return 0o666 & ~mask


def _atomic_write(path: str, write) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    remove_stale_temporaries(path)
    mode = _file_mode(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{_tmp_prefix(path)}{os.getpid()}.", suffix=_TMP_SUFFIX)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


# ---------------------------------------------------------------------------- loading
def _target(map_location, saved: str):
    """The device a storage saved on ``saved`` loads onto."""
    if map_location is None:
        where = saved
    elif isinstance(map_location, dict):
        where = map_location.get(saved, saved)
    elif callable(map_location):
        return map_location
    else:
        where = map_location
    dev = resolve(where)
    if not dev.backend.is_available():
        raise CheckpointError(f"Attempting to deserialize object on a {dev.type.upper()} device but "
                              f"{dev.type} is not available ({dev.backend.unavailable_reason()}). Pass "
                              f"map_location='cpu' to ember.load to map the storages to the CPU.")
    return dev


class _Storages:
    """Reads storages lazily from the archive and builds tensors viewing them."""

    def __init__(self, zf: zipfile.ZipFile, meta: list, map_location):
        self.zf, self.meta, self.map_location = zf, meta, map_location
        self.roots: dict = {}
        self.moved: dict = {}  # (id of a host storage, target device) -> that storage on the device

    def root(self, sid: int):
        if sid not in self.roots:
            if not isinstance(sid, int) or not 0 <= sid < len(self.meta):
                raise CheckpointError(f"checkpoint refers to storage {sid!r}, which it does not contain")
            m = self.meta[sid]
            d = DTYPES.get(m["dtype"])
            if d is None or d.np is None:
                raise CheckpointError(f"checkpoint storage {sid} has dtype {m['dtype']!r}, unknown to this ember")
            numel = m["numel"]
            if not isinstance(numel, int) or numel < 0:
                raise CheckpointError(f"checkpoint storage {sid} declares {numel!r} elements")
            name = f"{PREFIX}storages/{sid}"
            check_entry_size(self.zf, name, numel * np.dtype(d.np).itemsize)
            arr = np.empty(numel, d.np)
            _read_into(self.zf, name, memoryview(arr.view(np.uint8)))
            self.roots[sid] = (arr, m["device"])
        return self.roots[sid]

    def tensor(self, spec: dict) -> Tensor:
        arr, saved_dev = self.root(spec["storage"])
        if arr.dtype != DTYPES[spec["dtype"]].np:
            raise CheckpointError(f"checkpoint tensor of dtype {spec['dtype']} views a storage of {arr.dtype}")
        return storage_view(arr, int(spec["offset"]), tuple(spec["shape"]), tuple(spec["stride"]), saved_dev,
                            self.map_location, spec["requires_grad"], spec["param"], self.moved)


def storage_view(arr: np.ndarray, offset: int, shape: tuple, strides: tuple, saved_location: str, map_location,
                 requires_grad: bool, is_param: bool, moved: dict | None = None) -> Tensor:
    """A tensor viewing host storage ``arr`` (offset and strides in elements), moved per ``map_location``.

    ``moved`` (one dict per load) holds the storages already copied to a device: the tensors of one storage
    view one device copy of it, sharing memory there as they did when saved."""
    if math.prod(shape) == 0:
        view = np.empty(shape, arr.dtype)
    else:
        last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
        if offset < 0 or min(strides, default=0) < 0 or last >= arr.size:
            raise CheckpointError(f"checkpoint tensor of shape {list(shape)} and strides {list(strides)} at offset "
                                  f"{offset} does not fit its storage of {arr.size} elements")
        item = arr.dtype.itemsize
        view = np.ndarray(shape, arr.dtype, buffer=arr, offset=offset * item, strides=tuple(s * item for s in strides))
    t = _wrap(view, resolve("cpu"))
    target = _target(map_location, saved_location)
    if moved is not None and not callable(target) and target.type != "cpu" and view.size:
        root = moved.get((id(arr), target))
        if root is None:
            root = moved[id(arr), target] = (_wrap(arr, resolve("cpu")).to(target), arr)  # arr kept: its id stays
        dev = root[0]._dev
        t = _wrap(dev.kernels["as_strided"](root[0]._data, shape, strides, offset), dev)
        return _finish_tensor(t, requires_grad, is_param)
    if callable(target):
        mapped = target(t, saved_location)
        if mapped is not None:
            return _finish_tensor(mapped, requires_grad, is_param)
        target = _target(None, saved_location)  # None from the function: the default, where it was saved
    if target.type != "cpu":
        t = t.to(target)
    return _finish_tensor(t, requires_grad, is_param)


def archive_size(zf: zipfile.ZipFile) -> int:
    """The real size in bytes of the file an archive is read from."""
    fp = zf.fp
    try:
        return os.fstat(fp.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        pos = fp.tell()
        try:
            return fp.seek(0, 2)
        finally:
            fp.seek(pos)


def check_entry_size(zf: zipfile.ZipFile, name: str, expected: int | None = None) -> int:
    """The size of entry ``name``, refused (before anything is allocated for it) when it differs from the
    ``expected`` bytes a checkpoint declares or is more than the archive's real size could hold."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise CheckpointError(f"checkpoint has no entry {name}") from None
    size, real = info.file_size, archive_size(zf)
    limit = real if info.compress_type == zipfile.ZIP_STORED else 1032 * max(info.compress_size, 1) + 64
    if info.compress_size > real or size > limit:
        raise CheckpointError(f"checkpoint entry {name} claims {size} bytes, more than the {real}-byte file can "
                              f"hold: the file is corrupted or hostile")
    if expected is not None and size != expected:
        raise CheckpointError(f"checkpoint entry {name} holds {size} bytes, but the checkpoint declares {expected}: "
                              f"the file is corrupted or hostile")
    return size


def _read_into(zf: zipfile.ZipFile, name: str, out: memoryview) -> None:
    with zf.open(name) as fh:
        got = 0
        while got < len(out):
            n = fh.readinto(out[got:])
            if not n:
                break
            got += n
        if got != len(out) or fh.read(1):
            raise CheckpointError(f"checkpoint entry {name} has {got}+ bytes, expected {len(out)}")


def _decode(obj, st: _Storages):
    if isinstance(obj, list):
        return [_decode(v, st) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if len(obj) == 1 or (len(obj) == 2 and "frozen" in obj):
        (tag, v), = list(obj.items())[:1]
        decoder = _DECODERS.get(tag)
        if decoder is not None:
            return decoder(v, st, obj)
    return {k: _decode(v, st) for k, v in obj.items()}


_DECODERS = {
    "__tensor__": lambda v, st, o: st.tensor(v),
    "__ndarray__": lambda v, st, o: _decode_ndarray(v),
    "__int__": lambda v, st, o: int(v),
    "__float__": lambda v, st, o: float(v),
    "__complex__": lambda v, st, o: complex(*v),
    "__bytes__": lambda v, st, o: base64.b64decode(v),
    "__size__": lambda v, st, o: Size(v),
    "__dtype__": lambda v, st, o: DTYPES[v],
    "__device__": lambda v, st, o: _device(v),
    "__odict__": lambda v, st, o: OrderedDict((_decode(k, st), _decode(x, st)) for k, x in v),
    "__dict__": lambda v, st, o: {_decode(k, st): _decode(x, st) for k, x in v},
    "__tuple__": lambda v, st, o: tuple(_decode(x, st) for x in v),
    "__set__": lambda v, st, o: (frozenset if o.get("frozen") else set)(_decode(x, st) for x in v),
}


def _decode_ndarray(v: dict) -> np.ndarray:
    dt = np.dtype(v["dtype"])
    if dt.kind not in "biufc":
        raise CheckpointError(f"checkpoint holds a NumPy array of dtype {v['dtype']!r}, which is not plain data")
    return np.frombuffer(base64.b64decode(v["data"]), dt).reshape(v["shape"]).copy()


# --------------------------------------------------------------------------- globals allowed by weights_only
_SAFE_GLOBALS: set = set()  # what the user marked safe: functions/classes, or (object, "module.qualname")


def add_safe_globals(safe_globals: list) -> None:
    """Mark functions/classes (or ``(object, "module.qualname")`` pairs) safe for ``load(weights_only=True)``.

    A checkpoint that pickles a marked global (a custom class, a config dataclass) loads without
    ``weights_only=False``; anything else it names still stops the load.

    >>> import ember
    >>> ember.serialization.add_safe_globals([complex]); complex in ember.serialization.get_safe_globals()
    True
    >>> ember.serialization.clear_safe_globals()
    """
    global _SAFE_GLOBALS
    _SAFE_GLOBALS = _SAFE_GLOBALS.union(set(safe_globals))


def get_safe_globals() -> list:
    """The user-marked globals that ``weights_only`` loading allows."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    """Forget every global marked with :func:`add_safe_globals`."""
    global _SAFE_GLOBALS
    _SAFE_GLOBALS = set()


class safe_globals:  # noqa: N801 - PyTorch's name
    """Context manager: the given globals are safe for ``weights_only`` loading inside the block.

    >>> import ember
    >>> with ember.serialization.safe_globals([complex]):
    ...     complex in ember.serialization.get_safe_globals()
    True
    >>> ember.serialization.get_safe_globals()
    []
    """

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        global _SAFE_GLOBALS
        _SAFE_GLOBALS = _SAFE_GLOBALS.difference(set(self.safe_globals))


# Python 2's names that protocol-2 pickles spell (PyTorch's torch._utils mapping, a subset of Python's own):
# Python 3 writes ``builtins.set`` as ``__builtin__.set`` at protocol 2, which every whole-module pickle holds
IMPORT_MAPPING = {"__builtin__": "builtins", "copy_reg": "copyreg", "Queue": "queue", "repr": "reprlib",
                  "_abcoll": "collections.abc", "UserDict": "collections", "UserList": "collections",
                  "UserString": "collections", "whichdb": "dbm", "StringIO": "io", "cStringIO": "io"}
NAME_MAPPING = {
    ("__builtin__", "xrange"): ("builtins", "range"), ("__builtin__", "reduce"): ("functools", "reduce"),
    ("__builtin__", "intern"): ("sys", "intern"), ("__builtin__", "unichr"): ("builtins", "chr"),
    ("__builtin__", "unicode"): ("builtins", "str"), ("__builtin__", "long"): ("builtins", "int"),
    ("__builtin__", "basestring"): ("builtins", "str"), ("itertools", "izip"): ("builtins", "zip"),
    ("itertools", "imap"): ("builtins", "map"), ("itertools", "ifilter"): ("builtins", "filter"),
    ("itertools", "ifilterfalse"): ("itertools", "filterfalse"),
    ("itertools", "izip_longest"): ("itertools", "zip_longest"),
    ("UserDict", "IterableUserDict"): ("collections", "UserDict"),
    ("UserDict", "UserDict"): ("collections", "UserDict"),
    ("UserList", "UserList"): ("collections", "UserList"), ("UserString", "UserString"): ("collections", "UserString"),
    ("exceptions", "StandardError"): ("builtins", "Exception"),
}
# never resolved, even when the user marks one of their globals safe (as PyTorch's blocklist)
BLOCKED_MODULES = ("sys", "os", "posix", "nt")


def python3_name(module: str, name: str) -> tuple:
    """``(module, name)`` of a pickle's GLOBAL in Python 3's spelling (``__builtin__.set`` is ``builtins.set``)."""
    if (module, name) in NAME_MAPPING:
        return NAME_MAPPING[module, name]
    return IMPORT_MAPPING.get(module, module), name


def _latin1_encode(text, encoding="latin1"):
    # protocol-2 pickles spell bytes as _codecs.encode(str, 'latin1'): the only encoding honoured here
    if encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"Weights only load failed: _codecs.encode with encoding {encoding!r}")
    return text.encode(encoding)


def _default_globals() -> dict:
    """What ``weights_only`` loading allows without being told, by full name: PyTorch's default allow-list (plain
    containers, ``set``, ``complex``, ``bytearray``, bytes, ``Size``, ``device``, the dtypes, ``Parameter``,
    ``Tensor``), each also under ember's own path."""
    if _DEFAULTS:
        return _DEFAULTS
    found = {"collections.OrderedDict": OrderedDict, "collections.Counter": Counter, "builtins.set": set,
             "builtins.complex": complex, "builtins.bytearray": bytearray, "_codecs.encode": _latin1_encode,
             "torch.Size": Size, "torch.device": _device, "torch.Tensor": Tensor,
             "torch.nn.parameter.Parameter": Parameter, "torch._utils._rebuild_sparse_tensor": rebuild_sparse_tensor,
             "torch.serialization._get_layout": _get_layout}
    found.update((f"torch.{d.name}", d) for d in vars(dtypes).values() if isinstance(d, dtypes.dtype))
    found["ember.dtypes._by_name"] = dtypes._by_name  # how an ember dtype pickles: a lookup by its name
    for obj in list(found.values()):
        if isinstance(obj, type):
            found.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    _DEFAULTS.update(found)
    return _DEFAULTS


_DEFAULTS: dict = {}


def _ember_path(full: str) -> str:
    """A dotted name with PyTorch's package spelled as ember's (``torch.nn.Linear`` -> ``ember.nn.Linear``)."""
    return "ember" + full[5:] if full == "torch" or full.startswith("torch.") else full


def _named_object(module: str, name: str):
    """The object ``module.name`` denotes among ember's already imported modules (no import: a checkpoint's names
    never load code), or None."""
    mod = sys.modules.get(_ember_path(module))
    if mod is None or not _ember_path(module).startswith("ember"):
        return None
    obj = mod
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def allowed_global(module: str, name: str):
    """The object a ``weights_only`` pickle's GLOBAL ``module.name`` may resolve to, or None (checkpoint readers
    call this): PyTorch's default allow-list or a global the user marked safe.  Python 2 spellings are read as
    Python 3's, and a ``torch.*`` name as ember's: a checkpoint naming ``torch.nn.modules.linear.Linear`` loads
    under ``safe_globals([ember.nn.Linear])``.  A global of a blocked module (``os``, ``sys``) always raises."""
    module, name = python3_name(module, name)
    full = f"{module}.{name}"
    if module in BLOCKED_MODULES:
        raise pickle.UnpicklingError(f"Weights only load failed: Trying to load unsupported GLOBAL {full} whose "
                                     f"module {module} is blocked.")
    found = _default_globals().get(full)
    if found is None and full.startswith("ember."):
        found = _default_globals().get("torch." + full[6:])
    if found is not None:
        return found
    named = _named_object(module, name)
    for g in _SAFE_GLOBALS:
        if isinstance(g, tuple):
            if len(g) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                                 f"length: {len(g)}")
            if type(g[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                                f"{type(g[1])}")
            if _ember_path(g[1]) == _ember_path(full):
                return g[0]
        elif _ember_path(f"{g.__module__}.{g.__qualname__}") == _ember_path(full) or (named is not None and g is named):
            return g
    return None


def unsupported_global(module: str, name: str) -> pickle.UnpicklingError:
    """PyTorch's error for a global that ``weights_only`` loading does not allow."""
    return pickle.UnpicklingError(
        f"Weights only load failed: Unsupported global: GLOBAL {module}.{name} was not an allowed global by default. "
        f"Please use `ember.serialization.add_safe_globals([{name}])` or the "
        f"`ember.serialization.safe_globals([{name}])` context manager to allowlist this global if you trust this "
        f"class/function; or pass weights_only=False only if you trust the file's source.")


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, st: _Storages, weights_only: bool = False):
        super().__init__(f)
        self.st = st
        self.weights_only = weights_only

    def find_class(self, module, name):
        if not self.weights_only:
            return super().find_class(module, name)
        obj = allowed_global(module, name)
        if obj is None:
            raise unsupported_global(module, name)
        return obj

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "tensor"):
            raise CheckpointError(f"unknown persistent id in checkpoint: {pid!r}")
        return self.st.tensor(json.loads(pid[1]))


def _weights_only(weights_only, pickle_module) -> bool:
    """PyTorch's choice of ``weights_only``: unset is True unless a ``pickle_module`` is given;
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` forces True, ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` turns an unset one False."""
    unset = weights_only is None
    if unset:
        weights_only = pickle_module is None
    force = [os.getenv(var, "0").lower() in ("1", "y", "yes", "true")
             for var in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")]
    if all(force):
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force[0]:
        weights_only = True
    elif force[1] and unset:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the `weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        weights_only = False
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    return bool(weights_only)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, mmap=None,
         **pickle_load_args):
    """Read what :func:`save` wrote (or a PyTorch ``.pt``/``.pth`` checkpoint) without running code.

    ``map_location``: a device (``"cpu"``), a dict ``{saved: target}``, or ``fn(tensor, saved_location)``.
    ``weights_only=False`` also loads pickled objects (whole models): this runs code from the file,
    so use it only for files you trust. Unset, it is True, as in PyTorch: False where a ``pickle_module``
    is given or the environment sets ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``; ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1``
    forces it True.

    >>> import ember, io
    >>> buf = io.BytesIO(); ember.save({"a": ember.arange(3)}, buf); _ = buf.seek(0)
    >>> ember.load(buf, map_location="cpu")["a"]
    tensor([0, 1, 2])
    """
    weights_only = _weights_only(weights_only, pickle_module)
    if isinstance(f, (str, os.PathLike)):
        remove_stale_temporaries(os.fspath(f))
        with open(f, "rb") as fh:
            return _load(fh, os.fspath(f), map_location, weights_only)
    return _load(f, getattr(f, "name", "<file object>"), map_location, weights_only)


def _load(fh, name: str, map_location, weights_only: bool):
    if not fh.seekable():
        fh = io.BytesIO(fh.read())
    start = fh.tell()
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        fh.seek(start)
        if _is_legacy_torch(fh):
            raise CheckpointError(
                f"ember.load: {name} is a legacy PyTorch checkpoint (written with "
                "_use_new_zipfile_serialization=False, or by PyTorch before 1.6), which ember does not read. "
                "Re-save it in PyTorch's default zip format: torch.save(torch.load(path), path).") from None
        fh.seek(start)
        if not weights_only and _looks_like_pickle(fh):
            fh.seek(start)
            return pickle.load(fh)
        raise CheckpointError(f"ember.load: {name} is not an ember or PyTorch checkpoint, or it is truncated or "
                              f"corrupted ({e}). Legacy pickle files load only with weights_only=False, which runs "
                              "code from the file.") from None
    try:
        with zf:
            names = set(zf.namelist())
            if PREFIX + "header.json" in names:
                return _load_ember(zf, names, name, map_location, weights_only)
            for recognises, read in ARCHIVE_READERS:
                if recognises(names):
                    return read(zf, names, map_location, weights_only)
            raise CheckpointError(f"ember.load: {name} is a zip file but not an ember or PyTorch checkpoint")
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"ember.load: {name} is truncated or corrupted ({type(e).__name__}: {e})") from None


_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C  # the first object a legacy (pre-zip) torch.save pickles


def _is_legacy_torch(fh) -> bool:
    """Whether the file starts with the pickled magic number of PyTorch's legacy format (read without
    unpickling anything else: the first pickle is a bare integer)."""
    head = fh.read(32)
    return (len(head) > 4 and head[0] == 0x80 and
            _LEGACY_MAGIC.to_bytes(10, "little") in head[:20])


def _looks_like_pickle(fh) -> bool:
    head = fh.read(2)
    return len(head) == 2 and head[0] == 0x80


def _load_ember(zf, names, name, map_location, weights_only):
    header = json.loads(zf.read(PREFIX + "header.json"))
    if header.get("format") != FORMAT:
        raise CheckpointError(f"ember.load: {name} has unknown format {header.get('format')!r}")
    version = header.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CheckpointError(f"ember.load: {name} was written in checkpoint format version {version!r}, newer than "
                              f"this ember reads (up to {VERSION}); upgrade ember to load it")
    if header.get("byteorder", "little") != sys.byteorder:
        raise CheckpointError(f"ember.load: {name} was written on a {header['byteorder']}-endian machine")
    st = _Storages(zf, header.get("storages", []), map_location)
    if PREFIX + "data.json" in names:
        return _decode(json.loads(zf.read(PREFIX + "data.json")), st)
    # weights_only: only plain containers and the globals marked safe (add_safe_globals) resolve
    return _Unpickler(io.BytesIO(zf.read(PREFIX + "data.pkl")), st, weights_only).load()
