"""``ember.version`` (``torch.version`` under the alias): the PyTorch version whose API ember implements.

Two numbers describe ember, and they answer different questions:

- ``ember.__version__`` ("0.1.0") is ember's own release, what ``pip show ember`` reports; it is what
  ``import ember`` gives, alias or not being irrelevant to ember's own code.
- ``ember.version.__version__`` ("2.13.0") is the PyTorch release whose API ember follows. Under the alias
  (``python -m ember run``, :func:`ember.torch_compat.install`) ``torch.__version__`` and
  ``importlib.metadata.version("torch")`` answer this, since libraries gate whole code paths on it.

>>> from ember.version import __version__
>>> __version__ >= (2, 0) and __version__ > "2.1.5" and __version__ == "2.13.0"
True
"""
from __future__ import annotations

import re
EMBER_RELEASE = "0.1.0"  # ember's own release: ``ember.__version__``

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu", "TorchVersion"]

_PATTERN = re.compile(r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|alpha|beta|c)[-_.]?(\d*))?(?:[-_.]?post[-_.]?(\d*))?"
                      r"(?:[-_.]?dev[-_.]?(\d*))?(?:\+[a-z0-9.]+)?", re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


def _key(text: str):
    """A sortable key for a PEP 440 version string (release, pre, post, dev; the local part is ignored as in an
    ordering of releases), or None when ``text`` is not a version."""
    m = _PATTERN.fullmatch(text.strip())
    if m is None:
        return None
    release = [int(p) for p in m.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre, post, dev = m.group(2), m.group(4), m.group(5)
    # a dev release sorts before its pre-releases, which sort before the release, which sorts before a post
    if pre is not None:
        pre_key = (_PRE[pre.lower()], int(m.group(3) or 0))
    elif dev is not None and post is None:
        pre_key = (-1, 0)
    else:
        pre_key = (3, 0)
    post_key = -1 if post is None else int(post)
    dev_key = float("inf") if dev is None else int(dev)
    return (tuple(release), pre_key, post_key, dev_key)


def _as_key(other):
    if isinstance(other, str):
        return _key(other)
    if isinstance(other, (tuple, list)):
        return _key(".".join(str(p) for p in other))
    if type(other).__name__ == "Version":  # packaging.version.Version, compared through its text
        return _key(str(other))
    return None


class TorchVersion(str):
    """A version string that also compares as a version with strings, tuples and ``packaging`` Versions, as
    PyTorch's ``torch.__version__`` does (``"2.13.0" > "2.2"`` and ``>= (2, 0)``). Anything that is not a version
    compares as a plain string."""

    __slots__ = ()

    def _compare(self, other, op: str):
        mine, theirs = _key(self), _as_key(other)
        if mine is None or theirs is None:
            return getattr(str, op)(self, other)
        return getattr(mine, op)(theirs)

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    def __ne__(self, other):
        return not self.__eq__(other)

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    __hash__ = str.__hash__


__version__ = TorchVersion("2.13.0")
debug = False
# ember links no CUDA toolkit of its own (CUDA arrays come from CuPy, found at run time): None, as PyTorch's CPU
# build answers; ``ember.cuda.is_available()`` says whether the CUDA backend runs here.
cuda: str | None = None
git_version = "unknown"
hip: str | None = None
rocm: str | None = None
xpu: str | None = None
