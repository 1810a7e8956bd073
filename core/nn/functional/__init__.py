"""``ember.nn.functional``: the functional form of every layer, activation and loss.

>>> import ember
>>> import ember.nn.functional as F
>>> F.relu(ember.tensor([-1., 2.])).tolist()
[0.0, 2.0]
"""
from .activation import (  # noqa: F401
    celu, elu, gelu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, leaky_relu, log_softmax, logsigmoid, mish,
    prelu, relu, relu6, selu, sigmoid, silu, softmax, softmin, softplus, softshrink, softsign, tanh, tanhshrink,
    threshold,
)
from .conv import (  # noqa: F401
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold, unfold,
)
from .distance import cosine_similarity, pairwise_distance, scaled_dot_product_attention  # noqa: F401
from .linear import (  # noqa: F401
    alpha_dropout, bilinear, dropout, dropout1d, dropout2d, dropout3d, embedding, embedding_bag, linear, one_hot,
)
from .loss import (  # noqa: F401
    binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss, cross_entropy, ctc_loss,
    gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div, l1_loss, margin_ranking_loss, mse_loss, nll_loss,
    poisson_nll_loss, smooth_l1_loss, triplet_margin_loss,
)
from .normalization import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, normalize  # noqa
from .padding import pad  # noqa: F401
from .pooling import (  # noqa: F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d,
    avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d, max_unpool1d, max_unpool2d,
)
from .resize import interpolate, pixel_shuffle, pixel_unshuffle, upsample  # noqa: F401
