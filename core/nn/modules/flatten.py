"""PyTorch's module path ``torch.nn.modules.flatten``."""
from .linear import Flatten, Unflatten  # noqa: F401
from .module import Module  # noqa: F401
