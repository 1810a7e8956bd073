"""PyTorch's module path ``torch.nn.modules.linear_cross_entropy_options``; the options live in :mod:`.loss`."""
from .loss import LinearCrossEntropyOptions  # noqa: F401
