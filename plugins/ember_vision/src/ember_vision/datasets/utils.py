"""Checksums, resumable downloads and archive extraction for datasets and weights.

``download_url`` writes into ``<file>.part`` through :func:`ember.hub.fetch`, which resumes it with an
HTTP ``Range`` request on the next call; the file takes its final name only once its MD5 checks out.

>>> calculate_md5.__name__
'calculate_md5'
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import shutil
import tarfile
import zipfile
import zlib
import urllib.error
from urllib.parse import urlparse

import ember

USER_AGENT = "ember-vision"
CHUNK = 1 << 20


def calculate_md5(fpath: str, chunk_size: int = CHUNK) -> str:
    """The MD5 hex digest of a file."""
    md5 = hashlib.md5(usedforsecurity=False)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            md5.update(chunk)
    return md5.hexdigest()


def check_md5(fpath: str, md5: str, **kwargs) -> bool:
    """True when the file's MD5 is ``md5`` (``kwargs`` go to :func:`calculate_md5`)."""
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath: str, md5: str | None = None) -> bool:
    """True when ``fpath`` exists and (if ``md5`` is given) has that MD5."""
    if not os.path.isfile(fpath):
        return False
    return md5 is None or calculate_md5(fpath) == md5


def download_url(url: str, root: str, filename: str | None = None, md5: str | None = None,
                 timeout: float = 30.0, progress: bool = False) -> str:
    """Download ``url`` into ``root/filename`` (resuming a previous partial download); returns the path.

    The transfer is :func:`ember.hub.fetch`'s (HTTP ``Range`` resumption, the progress bar).  Raises
    ``RuntimeError`` naming the URL when the host cannot be reached (offline) or answers with an error,
    and when the downloaded file's MD5 is not ``md5`` (the partial file is then removed).
    """
    root = os.path.expanduser(root)
    os.makedirs(root, exist_ok=True)
    fpath = os.path.join(root, filename or os.path.basename(urlparse(url).path))
    if check_integrity(fpath, md5):
        return fpath
    part = fpath + ".part"
    try:
        ember.hub.fetch(url, part, progress, timeout, USER_AGENT, name=os.path.basename(fpath))
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"download of {url} failed: HTTP {e.code} {e.reason}") from e
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise RuntimeError(f"could not download {url} ({reason}): the host cannot be reached (offline?). "
                           f"Put the file at {fpath}{f' (md5 {md5})' if md5 else ''} and try again") from e
    if md5 is not None:
        got = calculate_md5(part)
        if got != md5:
            os.remove(part)
            raise RuntimeError(f"checksum mismatch for {url}: expected md5 {md5}, got {got}; "
                               f"the download was removed, try again")
    os.replace(part, fpath)
    return fpath


def extract_archive(from_path: str, to_path: str | None = None) -> str:
    """Extract a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` (safely: no paths outside ``to_path``) or a
    ``.gz``/``.xz``/``.bz2``
    file.

    A truncated or corrupt archive raises the archive module's own exception (``tarfile.ReadError``,
    ``EOFError``, ``zipfile.BadZipFile``, ``gzip.BadGzipFile``) with a message naming the file.
    """
    to_path = to_path or os.path.dirname(from_path)
    try:
        return _extract(from_path, to_path)
    except (tarfile.ReadError, tarfile.CompressionError, EOFError, zipfile.BadZipFile, gzip.BadGzipFile,
            zlib.error, lzma.LZMAError) as e:
        raise type(e)(f"extract_archive: {from_path} is truncated or corrupt ({e}); delete it and "
                      f"download it again") from e


def _extract(from_path: str, to_path: str) -> str:
    if from_path.endswith((".tar", ".tar.gz", ".tgz")):
        with tarfile.open(from_path) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(to_path, filter="data")
            else:  # Pythons without extraction filters: refuse members that would land outside to_path
                root = os.path.realpath(to_path)
                for m in tar.getmembers():
                    dest = os.path.realpath(os.path.join(root, m.name))
                    if os.path.commonpath([root, dest]) != root or m.issym() or m.islnk() or m.isdev():
                        raise RuntimeError(f"extract_archive: {from_path} holds an unsafe member {m.name!r}")
                tar.extractall(to_path)
        return to_path
    if from_path.endswith(".zip"):
        with zipfile.ZipFile(from_path) as archive:
            root = os.path.realpath(to_path)
            for name in archive.namelist():
                dest = os.path.realpath(os.path.join(root, name))
                if os.path.commonpath([root, dest]) != root:
                    raise RuntimeError(f"extract_archive: {from_path} holds an unsafe member {name!r}")
            archive.extractall(to_path)
        return to_path
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}.get(os.path.splitext(from_path)[1])
    if opener is not None:
        out = os.path.join(to_path, os.path.splitext(os.path.basename(from_path))[0])
        try:
            with opener(from_path, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, CHUNK)
        except BaseException:
            os.remove(out)  # no partial file is left behind
            raise
        return out
    raise ValueError(f"extract_archive: unsupported archive type of {from_path!r} "
                     "(.tar, .tar.gz, .tgz, .zip, .gz, .xz, .bz2)")


def download_and_extract_archive(url: str, download_root: str, extract_root: str | None = None,
                                 filename: str | None = None, md5: str | None = None) -> str:
    """``download_url`` then ``extract_archive`` into ``extract_root`` (default ``download_root``)."""
    path = download_url(url, download_root, filename, md5)
    return extract_archive(path, extract_root or download_root)


def download_file_from_google_drive(file_id: str, root: str, filename: str | None = None,
                                    md5: str | None = None) -> str:
    """Download the Google Drive file ``file_id`` into ``root/filename`` (default: the id) through
    :func:`download_url`; offline this raises its ``RuntimeError`` naming the URL and the file to place there."""
    url = f"https://drive.google.com/uc?export=download&id={file_id}&confirm=t"
    return download_url(url, root, filename or file_id, md5)


def list_dir(root: str, prefix: bool = False) -> list:
    """The directories in ``root`` (their paths when ``prefix``), in ``os.listdir`` order."""
    root = os.path.expanduser(root)
    names = [d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))]
    return [os.path.join(root, d) for d in names] if prefix else names


def list_files(root: str, suffix, prefix: bool = False) -> list:
    """The files in ``root`` whose names end with ``suffix`` (a str or a tuple of them); paths when ``prefix``."""
    root = os.path.expanduser(root)
    names = [f for f in os.listdir(root) if os.path.isfile(os.path.join(root, f)) and f.endswith(suffix)]
    return [os.path.join(root, f) for f in names] if prefix else names


def iterable_to_str(iterable) -> str:
    """The items quoted and comma-separated, as torchvision's error messages list valid values.

    >>> iterable_to_str(["a", 1])
    "'a', '1'"
    """
    return ", ".join(f"'{item}'" for item in iterable)


def verify_str_arg(value, arg: str | None = None, valid_values=None, custom_msg: str | None = None):
    """``value`` when it is a str among ``valid_values`` (any str when None); else ``ValueError`` naming ``arg``."""
    if not isinstance(value, str):
        raise ValueError(f"Expected type str{f' for argument {arg}' if arg else ''}, but got type {type(value)}.")
    if valid_values is not None and value not in valid_values:
        raise ValueError(custom_msg or f"Unknown value '{value}' for argument {arg}. "
                                       f"Valid values are {{{', '.join(repr(v) for v in valid_values)}}}.")
    return value
