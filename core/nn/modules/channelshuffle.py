"""PyTorch's module path ``torch.nn.modules.channelshuffle``."""
from .misc import ChannelShuffle  # noqa: F401
from .module import Module  # noqa: F401
