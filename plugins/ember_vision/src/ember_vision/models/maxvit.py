"""MaxViT-T (Tu et al. 2022): MBConv, then block (window) and grid attention in every layer, torchvision's names."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..ops.stochastic_depth import StochasticDepth
from ..transforms.functional import InterpolationMode
from ._api import Weights, build, classification_transforms, register_model, weights_enum
from .swin_transformer import relative_position_index

MaxVit_T_Weights = weights_enum("MaxVit_T_Weights", IMAGENET1K_V1=Weights(
    "https://download.pytorch.org/models/maxvit_t-bc5ab103.pth", 1000, {"min_size": (224, 224)},
    classification_transforms(224, 224, InterpolationMode.BICUBIC)))


def _get_conv_output_shape(input_size, kernel_size: int, stride: int, padding: int):
    return tuple((s - kernel_size + 2 * padding) // stride + 1 for s in input_size)


def _make_block_input_shapes(input_size, n_blocks: int):
    """The feature-map size each block works at (after the stem and each block's stride-2 layer)."""
    shapes, shape = [], _get_conv_output_shape(input_size, 3, 2, 1)
    for _ in range(n_blocks):
        shape = _get_conv_output_shape(shape, 3, 2, 1)
        shapes.append(shape)
    return shapes


class MBConv(nn.Module):
    """Pre-norm inverted bottleneck (1x1, depthwise 3x3, SE, 1x1) plus a (pooled, projected) shortcut."""

    def __init__(self, in_channels: int, out_channels: int, expansion_ratio: float, squeeze_ratio: float,
                 stride: int, activation_layer, norm_layer, p_stochastic_dropout: float = 0.0):
        super().__init__()
        if stride != 1 or in_channels != out_channels:
            proj = [nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, bias=True)]
            if stride == 2:
                proj.insert(0, nn.AvgPool2d(kernel_size=3, stride=stride, padding=1))
            self.proj = nn.Sequential(*proj)
        else:
            self.proj = nn.Identity()
        mid, sqz = int(out_channels * expansion_ratio), int(out_channels * squeeze_ratio)
        self.stochastic_depth = (StochasticDepth(p_stochastic_dropout, mode="row") if p_stochastic_dropout
                                 else nn.Identity())
        conv = partial(Conv2dNormActivation, activation_layer=activation_layer, norm_layer=norm_layer, inplace=None)
        self.layers = nn.Sequential()
        for name, module in [("pre_norm", norm_layer(in_channels)),
                             ("conv_a", conv(in_channels, mid, kernel_size=1, stride=1, padding=0)),
                             ("conv_b", conv(mid, mid, kernel_size=3, stride=stride, padding=1, groups=mid)),
                             ("squeeze_excitation", SqueezeExcitation(mid, sqz, activation=nn.SiLU)),
                             ("conv_c", nn.Conv2d(mid, out_channels, kernel_size=1, bias=True))]:
            self.layers.add_module(name, module)

    def forward(self, x):
        return self.proj(x) + self.stochastic_depth(self.layers(x))


class RelativePositionalMultiHeadAttention(nn.Module):
    """Multi-head attention over the P positions of each of G partitions ([B, G, P, D]), with a learned
    relative position bias."""

    def __init__(self, feat_dim: int, head_dim: int, max_seq_len: int):
        super().__init__()
        if feat_dim % head_dim != 0:
            raise ValueError(f"feat_dim: {feat_dim} must be divisible by head_dim: {head_dim}")
        self.n_heads, self.head_dim = feat_dim // head_dim, head_dim
        self.size, self.max_seq_len = int(math.sqrt(max_seq_len)), max_seq_len
        self.to_qkv = nn.Linear(feat_dim, self.n_heads * self.head_dim * 3)
        self.scale_factor = feat_dim ** -0.5
        self.merge = nn.Linear(self.head_dim * self.n_heads, feat_dim)
        self.relative_position_bias_table = nn.Parameter(
            ember.empty(((2 * self.size - 1) * (2 * self.size - 1), self.n_heads), dtype=ember.float32))
        self.register_buffer("relative_position_index", relative_position_index(self.size, self.size))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def get_relative_positional_bias(self):
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)]
        return bias.view(self.max_seq_len, self.max_seq_len, -1).permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, x):
        b, g, p, d = x.shape
        q, k, v = (t.reshape(b, g, p, self.n_heads, self.head_dim).permute(0, 1, 3, 2, 4)
                   for t in ember.chunk(self.to_qkv(x), 3, dim=-1))
        attn = F.softmax(q @ (k * self.scale_factor).transpose(-2, -1) + self.get_relative_positional_bias(), dim=-1)
        return self.merge((attn @ v).permute(0, 1, 3, 2, 4).reshape(b, g, p, d))


class SwapAxes(nn.Module):
    """``x.swapaxes(a, b)`` as a Module."""

    def __init__(self, a: int, b: int):
        super().__init__()
        self.a, self.b = a, b

    def forward(self, x):
        return ember.swapaxes(x, self.a, self.b)


class WindowPartition(nn.Module):
    """[B, C, H, W] -> [B, (H/p)(W/p), p*p, C]: non-overlapping p x p windows."""

    def forward(self, x, p: int):
        b, c, h, w = x.shape
        return x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, (h // p) * (w // p),
                                                                                         p * p, c)


class WindowDepartition(nn.Module):
    """The inverse of :class:`WindowPartition`."""

    def forward(self, x, p: int, h_partitions: int, w_partitions: int):
        b, _, _, c = x.shape
        x = x.reshape(b, h_partitions, w_partitions, p, p, c).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(b, c, h_partitions * p, w_partitions * p)


class PartitionAttentionLayer(nn.Module):
    """Attention and MLP (pre-norm, residual) within windows (``"window"``) or across a strided grid
    (``"grid"``)."""

    def __init__(self, in_channels: int, head_dim: int, partition_size: int, partition_type: str, grid_size,
                 mlp_ratio: int, activation_layer, norm_layer, attention_dropout: float, mlp_dropout: float,
                 p_stochastic_dropout: float):
        super().__init__()
        self.n_heads, self.head_dim = in_channels // head_dim, head_dim
        self.n_partitions = grid_size[0] // partition_size
        self.partition_type, self.grid_size = partition_type, grid_size
        if partition_type not in ["grid", "window"]:
            raise ValueError("partition_type must be either 'grid' or 'window'")
        self.p, self.g = ((partition_size, self.n_partitions) if partition_type == "window"
                          else (self.n_partitions, partition_size))
        self.partition_op = WindowPartition()
        self.departition_op = WindowDepartition()
        self.partition_swap = SwapAxes(-2, -3) if partition_type == "grid" else nn.Identity()
        self.departition_swap = SwapAxes(-2, -3) if partition_type == "grid" else nn.Identity()
        self.attn_layer = nn.Sequential(norm_layer(in_channels),
                                        RelativePositionalMultiHeadAttention(in_channels, head_dim,
                                                                             partition_size ** 2),
                                        nn.Dropout(attention_dropout))
        self.mlp_layer = nn.Sequential(nn.LayerNorm(in_channels), nn.Linear(in_channels, in_channels * mlp_ratio),
                                       activation_layer(), nn.Linear(in_channels * mlp_ratio, in_channels),
                                       nn.Dropout(mlp_dropout))
        self.stochastic_dropout = StochasticDepth(p_stochastic_dropout, mode="row")

    def forward(self, x):
        if self.grid_size[0] % self.p or self.grid_size[1] % self.p:
            raise AssertionError(f"Grid size must be divisible by partition size. Got grid size of {self.grid_size} "
                                 f"and partition size of {self.p}")
        gh, gw = self.grid_size[0] // self.p, self.grid_size[1] // self.p
        x = self.partition_swap(self.partition_op(x, self.p))
        x = x + self.stochastic_dropout(self.attn_layer(x))
        x = x + self.stochastic_dropout(self.mlp_layer(x))
        return self.departition_op(self.departition_swap(x), self.p, gh, gw)


class MaxVitLayer(nn.Module):
    """``layers``: ``MBconv``, ``window_attention``, ``grid_attention``."""

    def __init__(self, in_channels: int, out_channels: int, squeeze_ratio: float, expansion_ratio: float,
                 stride: int, norm_layer, activation_layer, head_dim: int, mlp_ratio: int, mlp_dropout: float,
                 attention_dropout: float, p_stochastic_dropout: float, partition_size: int, grid_size):
        super().__init__()
        attention = partial(PartitionAttentionLayer, out_channels, head_dim, partition_size, grid_size=grid_size,
                            mlp_ratio=mlp_ratio, activation_layer=activation_layer, norm_layer=nn.LayerNorm,
                            attention_dropout=attention_dropout, mlp_dropout=mlp_dropout,
                            p_stochastic_dropout=p_stochastic_dropout)
        self.layers = nn.Sequential()
        self.layers.add_module("MBconv", MBConv(in_channels, out_channels, expansion_ratio, squeeze_ratio, stride,
                                                activation_layer, norm_layer, p_stochastic_dropout))
        self.layers.add_module("window_attention", attention(partition_type="window"))
        self.layers.add_module("grid_attention", attention(partition_type="grid"))

    def forward(self, x):
        return self.layers(x)


class MaxVitBlock(nn.Module):
    """``n_layers`` MaxVit layers, the first with stride 2."""

    def __init__(self, in_channels: int, out_channels: int, squeeze_ratio: float, expansion_ratio: float,
                 norm_layer, activation_layer, head_dim: int, mlp_ratio: int, mlp_dropout: float,
                 attention_dropout: float, partition_size: int, input_grid_size, n_layers: int, p_stochastic):
        super().__init__()
        if len(p_stochastic) != n_layers:
            raise ValueError(f"p_stochastic must have length n_layers={n_layers}, got p_stochastic={p_stochastic}.")
        self.grid_size = _get_conv_output_shape(input_grid_size, kernel_size=3, stride=2, padding=1)
        self.layers = nn.ModuleList([
            MaxVitLayer(in_channels if idx == 0 else out_channels, out_channels, squeeze_ratio, expansion_ratio,
                        2 if idx == 0 else 1, norm_layer, activation_layer, head_dim, mlp_ratio, mlp_dropout,
                        attention_dropout, p, partition_size, self.grid_size)
            for idx, p in enumerate(p_stochastic)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class MaxVit(nn.Module):
    """MaxViT for ``input_size`` inputs: ``stem``, ``blocks``, ``classifier``."""

    def __init__(self, input_size, stem_channels: int, partition_size: int, block_channels, block_layers,
                 head_dim: int, stochastic_depth_prob: float, norm_layer=None, activation_layer=nn.GELU,
                 squeeze_ratio: float = 0.25, expansion_ratio: float = 4, mlp_ratio: int = 4,
                 mlp_dropout: float = 0.0, attention_dropout: float = 0.0, num_classes: int = 1000):
        super().__init__()
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)
        block_input_sizes = _make_block_input_shapes(input_size, len(block_channels))
        for idx, size in enumerate(block_input_sizes):
            if size[0] % partition_size != 0 or size[1] % partition_size != 0:
                raise ValueError(
                    f"Input size {size} of block {idx} is not divisible by partition size {partition_size}. "
                    f"Consider changing the partition size or the input size.\n"
                    f"Current configuration yields the following block input sizes: {block_input_sizes}.")
        self.stem = nn.Sequential(
            Conv2dNormActivation(3, stem_channels, 3, stride=2, norm_layer=norm_layer,
                                 activation_layer=activation_layer, bias=False, inplace=None),
            Conv2dNormActivation(stem_channels, stem_channels, 3, stride=1, norm_layer=None, activation_layer=None,
                                 bias=True))
        input_size = _get_conv_output_shape(input_size, kernel_size=3, stride=2, padding=1)
        self.partition_size = partition_size
        self.blocks = nn.ModuleList()
        p_stochastic = np.linspace(0, stochastic_depth_prob, sum(block_layers)).tolist()
        p_idx = 0
        for cin, cout, n in zip([stem_channels] + block_channels[:-1], block_channels, block_layers):
            self.blocks.append(MaxVitBlock(cin, cout, squeeze_ratio, expansion_ratio, norm_layer, activation_layer,
                                           head_dim, mlp_ratio, mlp_dropout, attention_dropout, partition_size,
                                           input_size, n, p_stochastic[p_idx:p_idx + n]))
            input_size = self.blocks[-1].grid_size
            p_idx += n
        self.classifier = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(block_channels[-1]),
            nn.Linear(block_channels[-1], block_channels[-1]), nn.Tanh(),
            nn.Linear(block_channels[-1], num_classes, bias=False))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.classifier(x)


@register_model(MaxVit_T_Weights)
def maxvit_t(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> MaxVit:
    """MaxViT-T (stem 64, blocks 64-128-256-512 of 2-2-5-2 layers, partition 7, head width 32)."""
    member = MaxVit_T_Weights.verify(weights) or (MaxVit_T_Weights.IMAGENET1K_V1 if pretrained else None)
    if member is not None:
        kwargs["input_size"] = member.meta["min_size"]
    kwargs.update(input_size=kwargs.pop("input_size", (224, 224)), stem_channels=64,
                  block_channels=[64, 128, 256, 512], block_layers=[2, 2, 5, 2], head_dim=32,
                  stochastic_depth_prob=0.2, partition_size=7)
    return build((MaxVit, ()), MaxVit_T_Weights, member, False, kwargs, progress)
