"""PyTorch's module path ``torch.nn.modules.fold``."""
from .misc import Fold, Unfold  # noqa: F401
from .module import Module  # noqa: F401
