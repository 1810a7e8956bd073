"""PyTorch's module path ``torch.nn.modules.batchnorm`` (pickled models name it);
the layers live in :mod:`.normalization` and :mod:`.lazy`."""
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: F401
from .module import Module  # noqa: F401
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, _BatchNorm, _NormBase  # noqa: F401
