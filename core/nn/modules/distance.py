"""PyTorch's module path ``torch.nn.modules.distance``."""
from .misc import CosineSimilarity, PairwiseDistance  # noqa: F401
from .module import Module  # noqa: F401
