"""``ember.jit.annotations`` (``torch.jit.annotations``): the type names TorchScript code imports.

ember runs such code eagerly, so these are plain ``typing`` names; ``BroadcastingListN[T]`` (an argument given
as one value or as N of them) is ``List[T]`` as a hint.

>>> from ember.jit.annotations import BroadcastingList2
>>> BroadcastingList2[int]
typing.List[int]
"""
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: UP035

BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = List
__all__ = ["Any", "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Dict", "List", "Optional",
           "Tuple", "Union"]
