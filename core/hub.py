"""``ember.hub``: PyTorch Hub's API over a local cache.

* ``load(repo_or_dir, model, *args, source="github"|"local", ...)``, ``list`` and ``help`` read a repository's
  ``hubconf.py``: from a directory (``source="local"``), or for ``"owner/repo[:ref]"`` from the cache
  ``get_dir()/owner_repo_ref`` (downloaded from GitHub when the network allows; otherwise the error names the
  directory to fill with the repository's files).
* ``load_state_dict_from_url(url, ...)`` reads ``get_dir()/checkpoints/<file name>``, downloading it first when
  missing (through ``<file name>.partial``, resumed after an interruption; a progress bar where tqdm is
  installed); with ``check_hash`` the file's SHA-256 must start with the hex digits after the last ``-`` of its
  name (PyTorch's convention: ``resnet18-f37072fd.pth``). Offline, the error names the path to put the file at.
  A checkpoint PyTorch has already downloaded (``$TORCH_HOME/hub/checkpoints``) is read where it is.
* ``get_dir()`` is ``$EMBER_HOME/hub`` (``EMBER_HOME`` defaults to ``~/.cache/ember``); ``set_dir`` overrides it.

Loading checkpoints is safe (``weights_only=True`` by default): no code from the file runs. A hub repository's
``hubconf.py`` is code, run only from repositories you trust (``trust_repo``), as in PyTorch.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
import warnings
import zipfile
from urllib.parse import urlparse

from .serialization import load as _load

_HUB_DIR = [None]
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # the sha256 prefix in a checkpoint's name, ``name-<hash>.ext``
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"


def get_dir() -> str:
    """The hub cache: :func:`set_dir`'s, else ``$EMBER_HOME/hub`` (``EMBER_HOME`` defaults to ``~/.cache/ember``)."""
    if _HUB_DIR[0] is not None:
        return _HUB_DIR[0]
    return os.path.join(_get_torch_home(), "hub")


def _get_torch_home() -> str:
    """ember's cache root, the role ``TORCH_HOME`` plays for PyTorch: ``$EMBER_HOME``, else
    ``$XDG_CACHE_HOME/ember`` (``~/.cache/ember``)."""
    home = os.environ.get("EMBER_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join("~", ".cache")), "ember")
    return os.path.expanduser(home)


def set_dir(d) -> None:
    """Use ``d`` as the hub cache from now on."""
    _HUB_DIR[0] = os.path.expanduser(os.fspath(d))


# ------------------------------------------------------------------------------------------------ downloads
def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


CHUNK = 1 << 20


def fetch(url: str, part: str, progress: bool = True, timeout: float = 30.0, user_agent: str = "ember",
          name: str | None = None) -> None:
    """Download ``url`` into ``part``, resuming what an earlier attempt left there (an HTTP ``Range`` request
    from its size; a server that ignores it sends the whole file, which then replaces the part).  With
    ``progress``, a progress bar on stderr labelled ``name`` (default: the URL's file name) where tqdm is
    installed.  ember's own (PyTorch's hub has no such function): :func:`download_url_to_file` and plugins'
    downloads (``ember_vision``'s datasets and weights) all go through it.

    Raises ``urllib.error.HTTPError`` for an error answer (but a 416 for a part already complete) and
    ``urllib.error.URLError``/``OSError`` when the host cannot be reached; what arrived stays in ``part``.
    """
    offset = os.path.getsize(part) if os.path.isfile(part) else 0
    headers = {"User-Agent": user_agent}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset:  # the range starts at the end: the part is complete
            return
        raise
    with resp, open(part, "ab" if offset and resp.status == 206 else "wb") as out:
        bar = _bar(resp, progress, name or os.path.basename(urlparse(url).path))
        try:
            for chunk in iter(lambda: resp.read(CHUNK), b""):
                out.write(chunk)
                if bar is not None:
                    bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to ``dst`` (through ``dst + ".partial"``, resumed by the next call if interrupted; ``dst``
    appears only complete); ``hash_prefix``: the SHA-256 must start with it (else the download is removed).

    Raises RuntimeError naming ``dst`` when the host cannot be reached, so the file can be put there by hand.
    """
    dst = os.path.expanduser(dst)
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    part = dst + ".partial"
    try:
        fetch(url, part, progress, name=os.path.basename(dst))
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"download of {url} failed: HTTP {e.code} {e.reason}") from e
    except (urllib.error.URLError, OSError) as e:
        if os.path.isfile(part) and not os.path.getsize(part):
            os.remove(part)
        raise RuntimeError(f"could not download {url} ({getattr(e, 'reason', e)}): the network cannot reach it. "
                           f"Put the file at {dst}{_expect(hash_prefix)} and try again") from e
    if hash_prefix is not None:
        digest = _sha256(part)
        if not digest.startswith(hash_prefix):
            os.remove(part)
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}"): the download of '
                               f"{url} as {dst} has the wrong checksum and was removed")
    os.replace(part, dst)


def _expect(prefix):
    return f" (its SHA-256 starts with {prefix})" if prefix else ""


def _bar(resp, progress, name):
    if not progress:
        return None
    try:
        from tqdm import tqdm  # optional: a progress bar where tqdm is installed
    except ImportError:
        return None
    total = resp.headers.get("Content-Length")
    return tqdm(total=int(total) if total else None, unit="B", unit_scale=True, unit_divisor=1024, desc=name)


def _pytorch_cached(name: str) -> str:
    """Where PyTorch's own hub keeps checkpoint ``name``: ``$TORCH_HOME/hub/checkpoints`` (``TORCH_HOME``
    defaults to ``$XDG_CACHE_HOME/torch``, ``~/.cache/torch``)."""
    home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join("~", ".cache")), "torch")
    return os.path.join(os.path.expanduser(home), "hub", "checkpoints", name)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = True):
    """The object saved in ``url``'s file, read from ``model_dir`` (default ``get_dir()/checkpoints``), downloaded
    there first when missing; ``check_hash`` checks the SHA-256 prefix in the file's name.  Without ``model_dir``,
    a file missing from ember's cache but present in PyTorch's (``$TORCH_HOME/hub/checkpoints``) is read there."""
    name = file_name or os.path.basename(urlparse(url).path)
    path = os.path.join(os.path.expanduser(model_dir or os.path.join(get_dir(), "checkpoints")), name)
    if model_dir is None and not os.path.isfile(path) and os.path.isfile(theirs := _pytorch_cached(name)):
        path = theirs  # a checkpoint PyTorch already downloaded is read where it is
    m = HASH_REGEX.search(name)
    prefix = m.group(1) if check_hash and m and m.group(1) else None
    if not os.path.isfile(path):
        download_url_to_file(url, path, prefix, progress=progress)
    elif prefix is not None and not (digest := _sha256(path)).startswith(prefix):
        raise RuntimeError(f"{path} has the wrong checksum: its SHA-256 is {digest}, expected one starting with "
                           f"{prefix}; delete it to download it again")
    return _load(path, map_location=map_location, weights_only=weights_only)


# --------------------------------------------------------------------------------------------------- hubconf
def _parse_repo(github: str):
    repo, _, ref = github.partition(":")
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f'Invalid input: repo_or_dir should be of the form "repo_owner/repo_name[:ref]", '
                         f"got {github!r}")
    return owner, name, ref or "main"


def _trusted_file() -> str:
    return os.path.join(get_dir(), "trusted_list")


def _check_trust(owner, name, trust_repo):
    key = f"{owner}_{name}"
    trusted = set()
    if os.path.exists(_trusted_file()):
        with open(_trusted_file()) as f:
            trusted = {line.strip() for line in f}
    if key in trusted or owner == "pytorch":
        return
    if trust_repo is None:
        warnings.warn("You are about to download and run code from an untrusted repository. Pass trust_repo=True "
                      "to trust it (it is then added to the trusted list), trust_repo='check' or False to be asked "
                      "first.", UserWarning, stacklevel=4)
        return
    if trust_repo is False or trust_repo == "check":
        answer = input(f"The repository {owner}/{name} does not belong to the list of trusted repositories and as "
                       "such cannot be downloaded. Do you trust this repository and wish to add it to the trusted "
                       "list of repositories (y/N)?")
        if answer.strip().lower() not in ("y", "yes"):
            raise Exception("Untrusted repository.")
    os.makedirs(get_dir(), exist_ok=True)
    with open(_trusted_file(), "a") as f:
        f.write(key + "\n")


def _repo_dir(github: str, force_reload: bool, trust_repo, verbose: bool) -> str:
    owner, name, ref = _parse_repo(github)
    _check_trust(owner, name, trust_repo)
    path = os.path.join(get_dir(), f"{owner}_{name}_{ref.replace('/', '_')}")
    if os.path.isdir(path) and not force_reload:
        if verbose:
            print(f"Using cache found in {path}", file=sys.stderr)
        return path
    url = f"https://github.com/{owner}/{name}/zipball/{ref}"
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, "repo.zip")
        try:
            download_url_to_file(url, archive, progress=False)
        except RuntimeError as e:
            raise RuntimeError(f"could not download {github} from {url} ({e.__cause__ or e}). Put the "
                               f"repository's files (with {MODULE_HUBCONF} at the top) in {path} and try "
                               "again") from e
        with zipfile.ZipFile(archive) as z:
            top = z.namelist()[0].split("/")[0]
            z.extractall(tmp)
        shutil.rmtree(path, ignore_errors=True)
        shutil.move(os.path.join(tmp, top), path)
    return path


def _hubconf(repo_dir: str, skip_validation: bool = False):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Cannot find {MODULE_HUBCONF} in {repo_dir}")
    sys.path.insert(0, repo_dir)
    try:
        spec = importlib.util.spec_from_file_location(f"hubconf_{uuid.uuid4().hex}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    missing = [d for d in getattr(module, VAR_DEPENDENCY, []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _resolve(repo_or_dir, source, force_reload, trust_repo, verbose):
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        if not os.path.isdir(repo_or_dir):
            raise FileNotFoundError(f"ember.hub: {repo_or_dir} is not a directory")
        return repo_or_dir
    return _repo_dir(repo_or_dir, force_reload, trust_repo, verbose)


def _entry(module, model: str):
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True, source="github"):  # noqa: A001
    """The entry points (public callables) of a repository's ``hubconf.py``."""
    module = _hubconf(_resolve(github, source, force_reload, trust_repo, verbose), skip_validation)
    return [n for n in dir(module) if callable(getattr(module, n)) and not n.startswith("_")
            and not isinstance(getattr(module, n), type(sys))]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None, source="github"):  # noqa: A001
    """The docstring of entry point ``model``."""
    module = _hubconf(_resolve(github, source, force_reload, trust_repo, True), skip_validation)
    return _entry(module, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """Call entry point ``model`` of the repository's ``hubconf.py`` with ``*args, **kwargs``."""
    module = _hubconf(_resolve(repo_or_dir, source, force_reload, trust_repo, verbose), skip_validation)
    return _entry(module, model)(*args, **kwargs)
