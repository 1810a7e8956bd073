"""PyTorch's module path ``torch.nn.modules.upsampling``."""
from .misc import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from .module import Module  # noqa: F401
