"""PyTorch's ``torch.nn.modules.utils``: the argument helpers layers use (``_pair(3) == (3, 3)``) and
``consume_prefix_in_state_dict_if_present``."""
from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """``(a, b)`` to ``(b, b, a, a)`` for ``n = 2``: per-dimension values in F.pad's order."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` (and its ``_metadata``) that have it, in place.

    >>> from collections import OrderedDict
    >>> sd = OrderedDict([("module.fc.weight", 1)])
    >>> consume_prefix_in_state_dict_if_present(sd, "module.")
    >>> list(sd)
    ['fc.weight']
    """
    for key in sorted(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
