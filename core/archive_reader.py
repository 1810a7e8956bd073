"""``ember.PyTorchFileReader``: the records of a checkpoint archive, as PyTorch's reader of its zip format gives
them (Lightning's lazy loading reads ``data.pkl`` and the storages this way)."""
from __future__ import annotations

import zipfile


class PyTorchFileReader:
    """The records of a checkpoint archive (a path or a binary file), named without the archive's top folder.

    >>> import ember, io
    >>> buf = io.BytesIO(); ember.save({"a": ember.ones(1)}, buf); _ = buf.seek(0)
    >>> ember.PyTorchFileReader(buf).has_record("data.pkl")
    True
    """

    def __init__(self, f):
        try:
            self._zip = zipfile.ZipFile(f)
        except (OSError, zipfile.BadZipFile) as e:
            raise RuntimeError(f"PyTorchFileReader: cannot read {f!r} as a checkpoint archive ({e})") from None
        names = self._zip.namelist()
        self._prefix = names[0].split("/")[0] + "/" if names and "/" in names[0] else ""

    def get_all_records(self) -> list:
        """Every record's name."""
        return [n[len(self._prefix):] for n in self._zip.namelist() if n.startswith(self._prefix)]

    def has_record(self, name: str) -> bool:
        return self._prefix + name in self._zip.NameToInfo

    def get_record(self, name: str) -> bytes:
        """The bytes of record ``name``; RuntimeError when the archive has none of that name."""
        if not self.has_record(name):
            raise RuntimeError(f"PyTorchFileReader failed locating file {name}: file not found")
        return self._zip.read(self._prefix + name)

    def get_record_size(self, name: str) -> int:
        return len(self.get_record(name))
