"""PyTorch's module path ``torch.nn.modules.pixelshuffle``."""
from .misc import PixelShuffle, PixelUnshuffle  # noqa: F401
from .module import Module  # noqa: F401
