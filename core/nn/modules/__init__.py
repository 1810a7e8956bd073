"""Layer modules of ``ember.nn``."""
from .activation import (  # noqa: F401
    CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax,
    Mish, PReLU, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink,
    Threshold, RReLU, Softmax2d,
)
from .containers import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: F401
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten  # noqa: F401
from .loss import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, CTCLoss, GaussianNLLLoss, HingeEmbeddingLoss,
    HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss, TripletMarginLoss,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss2d, SoftMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .loss import LinearCrossEntropyLoss, LinearCrossEntropyOptions  # noqa: F401,E402
from .misc import (  # noqa: F401
    CircularPad2d, ConstantPad1d, ConstantPad2d, CosineSimilarity, Fold, PairwiseDistance, PixelShuffle,
    PixelUnshuffle, ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, Unfold, Upsample,
    UpsamplingBilinear2d, UpsamplingNearest2d, ZeroPad2d, ChannelShuffle, CircularPad1d, CircularPad3d,
    ConstantPad3d, ReflectionPad3d, ReplicationPad3d, ZeroPad1d, ZeroPad3d,
)
from .module import Module  # noqa: F401
from .normalization import (  # noqa: F401
    BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm,
    LocalResponseNorm, CrossMapLRN2d, RMSNorm, SyncBatchNorm,
)
from .pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
    AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d, AdaptiveMaxPool3d,
    FractionalMaxPool2d, FractionalMaxPool3d, LPPool1d, LPPool2d, LPPool3d, MaxUnpool3d,
)
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .transformer import (  # noqa: F401
    MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401,E402
from .lazy import (  # noqa: F401,E402
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear,
)
# every submodule PyTorch's torch.nn.modules imports, an attribute as there (pickled models and isinstance checks
# name them: torch.nn.modules.container.Sequential, torch.nn.modules.batchnorm._BatchNorm, ...)
from . import (  # noqa: F401,E402
    _functions, activation, adaptive, batchnorm, channelshuffle, container, conv, distance, dropout, flatten, fold,
    instancenorm, lazy, linear, linear_cross_entropy, linear_cross_entropy_options, loss, module, normalization,
    padding, pixelshuffle, pooling, rnn, sparse, transformer, upsampling, utils,
)

# ``from ember.nn.modules import *`` (ember.nn does it) takes the layer classes, not these submodules: ``utils``
# here is not ``ember.nn.utils``
__all__ = sorted(n for n, v in list(globals().items()) if isinstance(v, type) and not n.startswith("_"))
