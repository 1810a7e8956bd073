"""PyTorch's module path ``torch.nn.modules.instancenorm``;
the layers live in :mod:`.normalization` and :mod:`.lazy`."""
from .lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d  # noqa: F401
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm  # noqa: F401
