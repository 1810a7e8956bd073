"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, ``rnn`` packing, ``parametrize`` and
``parametrizations``, ``prune``, the legacy ``weight_norm``/``spectral_norm`` hooks, ``stateless.functional_call``,
conv/linear-batch-norm fusion, ``skip_init`` and the conv weight memory-format conversions."""
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from . import rnn  # noqa: F401
from . import parametrizations, parametrize, prune, stateless  # noqa: F401,E402
from .clip_grad import clip_grads_with_norm_, get_total_norm  # noqa: F401,E402
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401,E402,E501
from .init import skip_init  # noqa: F401,E402
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format  # noqa: F401,E402,E501
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401,E402
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401,E402
