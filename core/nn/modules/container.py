"""PyTorch's module path ``torch.nn.modules.container``; the containers live in :mod:`.containers`."""
from ..parameter import Parameter  # noqa: F401
from .containers import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .module import Module  # noqa: F401
