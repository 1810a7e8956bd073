"""RAFT (Teed & Deng 2020): recurrent all-pairs field transforms for optical flow, torchvision's names."""
from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F

from ...ops.misc import Conv2dNormActivation
from ...transforms._presets import OpticalFlow
from .._api import Weights, register_model, weights_enum
from ._utils import grid_sample, make_coords_grid, upsample_flow

_URL = "https://download.pytorch.org/models/raft_"


def _flow_weights(name: str, default: str, **files: str):
    return weights_enum(name, default, **{key: Weights(_URL + f, 0, {"min_size": (128, 128)}, OpticalFlow)
                                          for key, f in files.items()})


Raft_Large_Weights = _flow_weights(
    "Raft_Large_Weights", "C_T_SKHT_V2", C_T_V1="large_C_T_V1-22a6c225.pth", C_T_V2="large_C_T_V2-1bb1363a.pth",
    C_T_SKHT_V1="large_C_T_SKHT_V1-0b8c9e55.pth", C_T_SKHT_V2="large_C_T_SKHT_V2-ff5fadd5.pth",
    C_T_SKHT_K_V1="large_C_T_SKHT_K_V1-4a6a5039.pth", C_T_SKHT_K_V2="large_C_T_SKHT_K_V2-b5c70766.pth")
Raft_Small_Weights = _flow_weights("Raft_Small_Weights", "C_T_V2", C_T_V1="small_C_T_V1-ad48884c.pth",
                                   C_T_V2="small_C_T_V2-01064c6d.pth")


def _cna(in_channels: int, out_channels: int, norm_layer, kernel_size: int, stride: int = 1, **kwargs):
    return Conv2dNormActivation(in_channels, out_channels, norm_layer=norm_layer, kernel_size=kernel_size,
                                stride=stride, bias=True, **kwargs)


class _Residual(nn.Module):
    def forward(self, x):
        return self.relu(self.downsample(x) + self.branch(x))


class ResidualBlock(_Residual):
    """Two 3x3 conv-norm-ReLUs (with biases) and a 1x1 projection of the shortcut when strided; ReLU after."""

    def __init__(self, in_channels: int, out_channels: int, *, norm_layer, stride: int = 1,
                 always_project: bool = False):
        super().__init__()
        self.convnormrelu1 = _cna(in_channels, out_channels, norm_layer, 3, stride)
        self.convnormrelu2 = _cna(out_channels, out_channels, norm_layer, 3)
        self.downsample = (nn.Identity() if stride == 1 and not always_project else
                           _cna(in_channels, out_channels, norm_layer, 1, stride, activation_layer=None))
        self.relu = nn.ReLU(inplace=True)

    def branch(self, x):
        return self.convnormrelu2(self.convnormrelu1(x))


class BottleneckBlock(_Residual):
    """1x1 to a quarter of the channels, 3x3 (strided), 1x1 back, each conv-norm-ReLU with biases; ReLU after."""

    def __init__(self, in_channels: int, out_channels: int, *, norm_layer, stride: int = 1):
        super().__init__()
        self.convnormrelu1 = _cna(in_channels, out_channels // 4, norm_layer, 1)
        self.convnormrelu2 = _cna(out_channels // 4, out_channels // 4, norm_layer, 3, stride)
        self.convnormrelu3 = _cna(out_channels // 4, out_channels, norm_layer, 1)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = (nn.Identity() if stride == 1 else
                           _cna(in_channels, out_channels, norm_layer, 1, stride, activation_layer=None))

    def branch(self, x):
        return self.convnormrelu3(self.convnormrelu2(self.convnormrelu1(x)))


class FeatureEncoder(nn.Module):
    """The feature (and context) encoder: a 7x7 conv and three stages of two blocks, downsampling by 8."""

    def __init__(self, *, block=ResidualBlock, layers=(64, 64, 96, 128, 256), strides=(2, 1, 2, 2),
                 norm_layer=nn.BatchNorm2d):
        super().__init__()
        if len(layers) != 5:
            raise ValueError(f"The expected number of layers is 5, instead got {len(layers)}")
        self.convnormrelu = _cna(3, layers[0], norm_layer, 7, strides[0])
        self.layer1 = self._make_2_blocks(block, layers[0], layers[1], norm_layer, strides[1])
        self.layer2 = self._make_2_blocks(block, layers[1], layers[2], norm_layer, strides[2])
        self.layer3 = self._make_2_blocks(block, layers[2], layers[3], norm_layer, strides[3])
        self.conv = nn.Conv2d(layers[3], layers[4], kernel_size=1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.InstanceNorm2d)):
                if m.weight is not None:
                    nn.init.ones_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        self.output_dim = layers[-1]
        self.downsample_factor = 2 ** sum(s == 2 for s in strides)

    @staticmethod
    def _make_2_blocks(block, in_channels: int, out_channels: int, norm_layer, first_stride: int):
        return nn.Sequential(block(in_channels, out_channels, norm_layer=norm_layer, stride=first_stride),
                             block(out_channels, out_channels, norm_layer=norm_layer, stride=1))

    def forward(self, x):
        return self.conv(self.layer3(self.layer2(self.layer1(self.convnormrelu(x)))))


class MotionEncoder(nn.Module):
    """Encodes the current flow and the correlation features; the flow itself is appended to the output."""

    def __init__(self, *, in_channels_corr: int, corr_layers=(256, 192), flow_layers=(128, 64),
                 out_channels: int = 128):
        super().__init__()
        if len(flow_layers) != 2:
            raise ValueError(f"The expected number of flow_layers is 2, instead got {len(flow_layers)}")
        if len(corr_layers) not in (1, 2):
            raise ValueError(f"The number of corr_layers should be 1 or 2, instead got {len(corr_layers)}")
        self.convcorr1 = Conv2dNormActivation(in_channels_corr, corr_layers[0], norm_layer=None, kernel_size=1)
        self.convcorr2 = (Conv2dNormActivation(corr_layers[0], corr_layers[1], norm_layer=None, kernel_size=3)
                          if len(corr_layers) == 2 else nn.Identity())
        self.convflow1 = Conv2dNormActivation(2, flow_layers[0], norm_layer=None, kernel_size=7)
        self.convflow2 = Conv2dNormActivation(flow_layers[0], flow_layers[1], norm_layer=None, kernel_size=3)
        self.conv = Conv2dNormActivation(corr_layers[-1] + flow_layers[-1], out_channels - 2, norm_layer=None,
                                         kernel_size=3)
        self.out_channels = out_channels

    def forward(self, flow, corr_features):
        corr = self.convcorr2(self.convcorr1(corr_features))
        motion = self.conv(ember.cat([corr, self.convflow2(self.convflow1(flow))], dim=1))
        return ember.cat([motion, flow], dim=1)


class ConvGRU(nn.Module):
    """A convolutional GRU cell: update gate z, reset gate r, candidate q."""

    def __init__(self, *, input_size: int, hidden_size: int, kernel_size, padding):
        super().__init__()
        channels = hidden_size + input_size
        self.convz = nn.Conv2d(channels, hidden_size, kernel_size=kernel_size, padding=padding)
        self.convr = nn.Conv2d(channels, hidden_size, kernel_size=kernel_size, padding=padding)
        self.convq = nn.Conv2d(channels, hidden_size, kernel_size=kernel_size, padding=padding)

    def forward(self, h, x):
        hx = ember.cat([h, x], dim=1)
        z, r = ember.sigmoid(self.convz(hx)), ember.sigmoid(self.convr(hx))
        q = ember.tanh(self.convq(ember.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q


def _pass_through_h(h, _):
    return h


class RecurrentBlock(nn.Module):
    """One or two ConvGRUs in sequence (RAFT-large: a 1x5 then a 5x1 one)."""

    def __init__(self, *, input_size: int, hidden_size: int, kernel_size=((1, 5), (5, 1)), padding=((0, 2), (2, 0))):
        super().__init__()
        if len(kernel_size) != len(padding):
            raise ValueError(f"kernel_size should have the same length as padding, instead got len(kernel_size) = "
                             f"{len(kernel_size)} and len(padding) = {len(padding)}")
        if len(kernel_size) not in (1, 2):
            raise ValueError(f"kernel_size should either 1 or 2, instead got {len(kernel_size)}")
        self.convgru1 = ConvGRU(input_size=input_size, hidden_size=hidden_size, kernel_size=kernel_size[0],
                                padding=padding[0])
        self.convgru2 = (ConvGRU(input_size=input_size, hidden_size=hidden_size, kernel_size=kernel_size[1],
                                 padding=padding[1]) if len(kernel_size) == 2 else _pass_through_h)
        self.hidden_size = hidden_size

    def forward(self, h, x):
        return self.convgru2(self.convgru1(h, x), x)


class FlowHead(nn.Module):
    """Two 3x3 convs from the hidden state to the flow update."""

    def __init__(self, *, in_channels: int, hidden_size: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, hidden_size, 3, padding=1)
        self.conv2 = nn.Conv2d(hidden_size, 2, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.conv2(self.relu(self.conv1(x)))


class UpdateBlock(nn.Module):
    """Motion encoder, recurrent block and flow head: (hidden, context, correlation, flow) -> (hidden, delta)."""

    def __init__(self, *, motion_encoder, recurrent_block, flow_head):
        super().__init__()
        self.motion_encoder, self.recurrent_block, self.flow_head = motion_encoder, recurrent_block, flow_head
        self.hidden_state_size = recurrent_block.hidden_size

    def forward(self, hidden_state, context, corr_features, flow):
        x = ember.cat([context, self.motion_encoder(flow, corr_features)], dim=1)
        hidden_state = self.recurrent_block(hidden_state, x)
        return hidden_state, self.flow_head(hidden_state)


class MaskPredictor(nn.Module):
    """The convex-upsampling weights (8 * 8 * 9 channels) from the hidden state, scaled by ``multiplier``."""

    def __init__(self, *, in_channels: int, hidden_size: int, multiplier: float = 0.25):
        super().__init__()
        self.convrelu = Conv2dNormActivation(in_channels, hidden_size, norm_layer=None, kernel_size=3)
        self.conv = nn.Conv2d(hidden_size, 8 * 8 * 9, 1, padding=0)
        self.multiplier = multiplier

    def forward(self, x):
        return self.multiplier * self.conv(self.convrelu(x))


class CorrBlock(nn.Module):
    """The all-pairs correlation pyramid (``num_levels`` average-pooled levels) and its lookup: each pixel's
    (2 radius + 1)^2 neighbourhood around its current match, bilinearly sampled at every level."""

    def __init__(self, *, num_levels: int = 4, radius: int = 4):
        super().__init__()
        self.num_levels, self.radius = num_levels, radius
        self.corr_pyramid = []
        self.out_channels = num_levels * (2 * radius + 1) ** 2

    def build_pyramid(self, fmap1, fmap2):
        """The correlation volume of every pixel pair, its last two dimensions pooled ``num_levels - 1`` times."""
        if fmap1.shape != fmap2.shape:
            raise ValueError(f"Input feature maps should have the same shape, instead got {fmap1.shape} "
                             f"(fmap1.shape) != {fmap2.shape} (fmap2.shape)")
        min_fmap_size = 2 * (2 ** (self.num_levels - 1))
        if any(size < min_fmap_size for size in fmap1.shape[-2:]):
            raise ValueError("Feature maps are too small to be down-sampled by the correlation pyramid. "
                             f"H and W of feature maps should be at least {min_fmap_size}; got: {fmap1.shape[-2:]}. "
                             "Remember that input images to the model are downsampled by 8, so that means their "
                             f"dimensions should be at least 8 * {min_fmap_size} = {8 * min_fmap_size}.")
        n, c, h, w = fmap1.shape
        corr = ember.matmul(fmap1.view(n, c, h * w).transpose(1, 2), fmap2.view(n, c, h * w)) / c ** 0.5
        corr = corr.reshape(n * h * w, 1, h, w)
        self.corr_pyramid = [corr]
        for _ in range(self.num_levels - 1):
            corr = F.avg_pool2d(corr, kernel_size=2, stride=2)
            self.corr_pyramid.append(corr)

    def index_pyramid(self, centroids_coords):
        """[N, out_channels, H, W] correlation features around ``centroids_coords`` [N, 2, H, W]."""
        side = 2 * self.radius + 1
        d = ember.linspace(-self.radius, self.radius, side)
        delta = ember.stack(ember.meshgrid(d, d, indexing="ij"), dim=-1).to(centroids_coords.device).view(1, side,
                                                                                                            side, 2)
        n, _, h, w = centroids_coords.shape
        coords = centroids_coords.permute(0, 2, 3, 1).reshape(n * h * w, 1, 1, 2)
        levels = []
        for corr in self.corr_pyramid:
            levels.append(grid_sample(corr, coords + delta, align_corners=True, mode="bilinear").view(n, h, w, -1))
            coords = coords / 2
        return ember.cat(levels, dim=-1).permute(0, 3, 1, 2).contiguous()


class RAFT(nn.Module):
    """``RAFT(*, feature_encoder, context_encoder, corr_block, update_block, mask_predictor=None)``;
    ``model(image1, image2, num_flow_updates=12)`` returns the list of upsampled flow estimates, one per update
    (the last is the best)."""

    def __init__(self, *, feature_encoder, context_encoder, corr_block, update_block, mask_predictor=None):
        super().__init__()
        self.feature_encoder, self.context_encoder = feature_encoder, context_encoder
        self.corr_block, self.update_block, self.mask_predictor = corr_block, update_block, mask_predictor
        if not hasattr(self.update_block, "hidden_state_size"):
            raise ValueError("The update_block parameter should expose a 'hidden_state_size' attribute.")

    def forward(self, image1, image2, num_flow_updates: int = 12):
        n, _, h, w = image1.shape
        if (h, w) != tuple(image2.shape[-2:]):
            raise ValueError(f"input images should have the same shape, instead got ({h}, {w}) != {image2.shape[-2:]}")
        if h % 8 or w % 8:
            raise ValueError(f"input image H and W should be divisible by 8, instead got {h} (h) and {w} (w)")
        fmap1, fmap2 = ember.chunk(self.feature_encoder(ember.cat([image1, image2], dim=0)), chunks=2, dim=0)
        if tuple(fmap1.shape[-2:]) != (h // 8, w // 8):
            raise ValueError("The feature encoder should downsample H and W by 8")
        self.corr_block.build_pyramid(fmap1, fmap2)
        context_out = self.context_encoder(image1)
        if tuple(context_out.shape[-2:]) != (h // 8, w // 8):
            raise ValueError("The context encoder should downsample H and W by 8")
        hidden_size = self.update_block.hidden_state_size
        context_size = context_out.shape[1] - hidden_size
        if context_size <= 0:
            raise ValueError(f"The context encoder outputs {context_out.shape[1]} channels, but it should have at "
                             f"strictly more than hidden_state={hidden_size} channels")
        hidden_state, context = ember.split(context_out, [hidden_size, context_size], dim=1)
        hidden_state, context = ember.tanh(hidden_state), F.relu(context)
        coords0 = make_coords_grid(n, h // 8, w // 8).to(fmap1.device)
        coords1 = coords0.clone()
        flow_predictions = []
        for _ in range(num_flow_updates):
            coords1 = coords1.detach()  # no gradient through the lookup positions (as in the paper)
            corr_features = self.corr_block.index_pyramid(coords1)
            hidden_state, delta_flow = self.update_block(hidden_state, context, corr_features, coords1 - coords0)
            coords1 = coords1 + delta_flow
            up_mask = None if self.mask_predictor is None else self.mask_predictor(hidden_state)
            flow_predictions.append(upsample_flow(coords1 - coords0, up_mask=up_mask))
        return flow_predictions


# (feature layers, feature block, context layers, context block, context norm, corr radius, motion corr layers,
#  motion flow layers, motion out, hidden size, GRU kernels, GRU paddings, flow head hidden, mask predictor)
_CONFIGS = {
    "large": ((64, 64, 96, 128, 256), ResidualBlock, (64, 64, 96, 128, 256), ResidualBlock, nn.BatchNorm2d, 4,
              (256, 192), (128, 64), 128, 128, ((1, 5), (5, 1)), ((0, 2), (2, 0)), 256, True),
    "small": ((32, 32, 64, 96, 128), BottleneckBlock, (32, 32, 64, 96, 160), BottleneckBlock, None, 3, (96,),
              (64, 32), 82, 96, (3,), (1,), 128, False),
}


def _raft(size: str, weights_cls, weights, progress: bool, kwargs) -> RAFT:
    if kwargs.pop("pretrained", False) and weights is None:
        weights = weights_cls.DEFAULT
    weights = weights_cls.verify(weights)
    (feature_layers, feature_block, context_layers, context_block, context_norm, radius, corr_layers, flow_layers,
     motion_out, hidden, kernels, paddings, head_hidden, use_mask) = _CONFIGS[size]
    feature_encoder = kwargs.pop("feature_encoder", None) or FeatureEncoder(
        block=feature_block, layers=feature_layers, norm_layer=nn.InstanceNorm2d)
    context_encoder = kwargs.pop("context_encoder", None) or FeatureEncoder(
        block=context_block, layers=context_layers, norm_layer=context_norm)
    corr_block = kwargs.pop("corr_block", None) or CorrBlock(num_levels=4, radius=radius)
    update_block = kwargs.pop("update_block", None)
    if update_block is None:
        motion = MotionEncoder(in_channels_corr=corr_block.out_channels, corr_layers=corr_layers,
                               flow_layers=flow_layers, out_channels=motion_out)
        recurrent = RecurrentBlock(input_size=motion.out_channels + context_layers[-1] - hidden, hidden_size=hidden,
                                   kernel_size=kernels, padding=paddings)
        update_block = UpdateBlock(motion_encoder=motion, recurrent_block=recurrent,
                                   flow_head=FlowHead(in_channels=hidden, hidden_size=head_hidden))
    mask_predictor = kwargs.pop("mask_predictor", None)
    if mask_predictor is None and use_mask:
        mask_predictor = MaskPredictor(in_channels=hidden, hidden_size=256, multiplier=0.25)
    model = RAFT(feature_encoder=feature_encoder, context_encoder=context_encoder, corr_block=corr_block,
                 update_block=update_block, mask_predictor=mask_predictor, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


@register_model(Raft_Large_Weights)
def raft_large(*, weights=None, progress: bool = True, **kwargs) -> RAFT:
    """RAFT-large: residual encoders (instance-normalised features, batch-normalised context), radius-4 lookup,
    two separable ConvGRUs and convex upsampling.  Images need H, W divisible by 8 and at least 128."""
    return _raft("large", Raft_Large_Weights, weights, progress, kwargs)


@register_model(Raft_Small_Weights)
def raft_small(*, weights=None, progress: bool = True, **kwargs) -> RAFT:
    """RAFT-small: bottleneck encoders, radius-3 lookup, one 3x3 ConvGRU and bilinear upsampling."""
    return _raft("small", Raft_Small_Weights, weights, progress, kwargs)
