"""Pretrained weights: where they are cached, how they are fetched and checked, how they load.

Files live in ``$EMBER_HOME/hub/checkpoints`` (default ``~/.cache/ember``), named as PyTorch names
them (``resnet18-f37072fd.pth``: the part after the last ``-`` is the start of the file's SHA-256).
A PyTorch checkpoint is read by ``ember.load`` (no torch needed, no code from the file runs).
"""
from __future__ import annotations

import enum
import os
import re
from typing import NamedTuple
from urllib.parse import urlparse

import ember

from ..datasets.utils import download_url

_HASH = re.compile(r"-([a-f0-9]*)\.")


def get_dir() -> str:
    """The hub directory: :func:`ember.hub.get_dir` (``$EMBER_HOME/hub``)."""
    return ember.hub.get_dir()


_sha256 = ember.hub._sha256  # the file's SHA-256, as the hub checks its downloads


def _check_hash(path: str, name: str) -> None:
    m = _HASH.search(name)
    if m is None:
        return
    digest = _sha256(path)
    if not digest.startswith(m.group(1)):
        raise RuntimeError(f"weights file {path} has the wrong checksum: its SHA-256 is {digest}, expected one "
                           f"starting with {m.group(1)}; delete it to download it again")


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = True, file_name: str | None = None) -> dict:
    """The state dict in ``url``'s file, from the cache directory or downloaded into it (then checked)."""
    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    name = file_name or os.path.basename(urlparse(url).path)
    path = os.path.join(model_dir, name)
    if not os.path.isfile(path):
        try:
            download_url(url, model_dir, name, progress=progress)
        except RuntimeError as e:
            m = _HASH.search(name)
            sha = f" (its SHA-256 starts with {m.group(1)})" if m and m.group(1) else ""
            raise RuntimeError(f"could not fetch the weights {url}: {e.__cause__ or e}. Put the file at "
                               f"{path}{sha} and try again") from e
        if check_hash:
            try:
                _check_hash(path, name)
            except RuntimeError:
                os.remove(path)
                raise
    elif check_hash:
        _check_hash(path, name)
    return ember.load(path, map_location=map_location or "cpu")


class Weights(NamedTuple):
    """A pretrained checkpoint: its URL and the number of classes it predicts."""

    url: str
    num_classes: int = 1000


class WeightsEnum(enum.Enum):
    """The checkpoints of one architecture (``IMAGENET1K_V1``, and ``DEFAULT``)."""

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def num_classes(self) -> int:
        return self.value.num_classes

    def get_state_dict(self, progress: bool = True, check_hash: bool = True) -> dict:
        return load_state_dict_from_url(self.url, progress=progress, check_hash=check_hash)

    @classmethod
    def verify(cls, weights):
        """``weights`` as a member: a member, its name (``"DEFAULT"``) or None."""
        if weights is None or isinstance(weights, cls):
            return weights
        if isinstance(weights, str) and weights.split(".")[-1] in cls.__members__:
            return cls[weights.split(".")[-1]]
        raise ValueError(f"weights {weights!r} are not {cls.__name__}: expected one of "
                         f"{', '.join(cls.__members__)}")


def _weights_enum(name: str, url: str):
    return WeightsEnum(name, {"IMAGENET1K_V1": Weights(url), "DEFAULT": Weights(url)})


def build(model_cls_args, weights_cls, weights, pretrained: bool, kwargs: dict, progress: bool = True):
    """Construct a model (``(cls, args)``) and load ``weights`` (or ``DEFAULT`` when ``pretrained``)."""
    weights = weights_cls.verify(weights)
    if weights is None and pretrained:
        weights = weights_cls.DEFAULT
    if weights is not None:
        given = kwargs.setdefault("num_classes", weights.num_classes)
        if given != weights.num_classes:
            raise ValueError(f"num_classes={given} does not match the {weights.num_classes} classes of {weights}")
    cls, args = model_cls_args
    model = cls(*args, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model
