"""Video Swin Transformer T/S/B (Liu et al. 2022): Swin's shifted-window attention over (T, H, W) windows,
torchvision's names."""
from __future__ import annotations

import itertools
import math
from functools import partial

import ember
from ember import nn
from ember.nn import functional as F

from ...transforms._presets import IMAGENET_MEAN, IMAGENET_STD, VideoClassification
from .._api import Weights, build, register_model, weights_enum
from ..swin_transformer import PatchMerging, SwinTransformerBlock, _stages

_URL = "https://download.pytorch.org/models/"
_META = {"min_size": (1, 1), "min_temporal_size": 1}
_TRANSFORMS = partial(VideoClassification, crop_size=(224, 224), resize_size=(256,), mean=IMAGENET_MEAN,
                      std=IMAGENET_STD)
Swin3D_T_Weights = weights_enum("Swin3D_T_Weights", "KINETICS400_V1",
                                KINETICS400_V1=Weights(_URL + "swin3d_t-7615ae03.pth", 400, _META, _TRANSFORMS))
Swin3D_S_Weights = weights_enum("Swin3D_S_Weights", "KINETICS400_V1",
                                KINETICS400_V1=Weights(_URL + "swin3d_s-da41c237.pth", 400, _META, _TRANSFORMS))
Swin3D_B_Weights = weights_enum("Swin3D_B_Weights", "KINETICS400_V1",
                                KINETICS400_V1=Weights(_URL + "swin3d_b_1k-24f7c7c6.pth", 400, _META, _TRANSFORMS),
                                KINETICS400_IMAGENET22K_V1=Weights(_URL + "swin3d_b_22k-7c6ae6fa.pth", 400, _META,
                                                                   _TRANSFORMS))


def _pad_size(size, window) -> tuple:
    """How much to pad each side of ``size`` up to a multiple of ``window``."""
    return tuple((w - s % w) % w for s, w in zip(size, window))


def relative_position_index(window_size):
    """[V, V] indices (V the window's volume) into a prod(2w-1)-row table of the offset between each pair of
    positions in a window of any number of dimensions."""
    coords = ember.flatten(ember.stack(ember.meshgrid(*(ember.arange(w) for w in window_size), indexing="ij")), 1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)
    index = rel[:, :, 0] * 0
    for i, w in enumerate(window_size):
        index = index + (rel[:, :, i] + (w - 1)) * math.prod(2 * v - 1 for v in window_size[i + 1:])
    return index


def _partition(x, window):
    """[B, *S, C] -> [B * windows, prod(window), C]: the non-overlapping windows, each flattened."""
    b, sizes, c = x.shape[0], x.shape[1:-1], x.shape[-1]
    n = len(window)
    x = x.view(b, *itertools.chain.from_iterable((s // w, w) for s, w in zip(sizes, window)), c)
    order = [0, *range(1, 2 * n, 2), *range(2, 2 * n + 1, 2), 2 * n + 1]
    return x.permute(*order).reshape(-1, math.prod(window), c)


def _unpartition(x, window, b: int, sizes):
    """The inverse of :func:`_partition`."""
    n, c = len(window), x.shape[-1]
    x = x.view(b, *(s // w for s, w in zip(sizes, window)), *window, c)
    order = [0, *itertools.chain.from_iterable((1 + i, 1 + n + i) for i in range(n)), 2 * n + 1]
    return x.permute(*order).reshape(b, *sizes, c)


def _attention_mask(size, window, shift, like):
    """-100 between positions of a window that came from different regions of the rolled volume, else 0."""
    regions = ember.zeros(tuple(size), dtype=like.dtype, device=like.device)
    spans = [((0, -w), (-w, -s), (-s, None)) for w, s in zip(window, shift)]
    for count, span in enumerate(itertools.product(*spans)):
        regions[tuple(slice(a, b) for a, b in span)] = count
    regions = _partition(regions.unsqueeze(0).unsqueeze(-1), window).squeeze(-1)
    mask = regions.unsqueeze(1) - regions.unsqueeze(2)
    return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)


def shifted_window_attention_3d(input, qkv_weight, proj_weight, relative_position_bias, window_size, num_heads: int,
                                shift_size, attention_dropout: float = 0.0, dropout: float = 0.0, qkv_bias=None,
                                proj_bias=None, training: bool = True):
    """Multi-head self-attention within (shifted) windows of a [B, T, H, W, C] input, with a relative position
    bias; the input is padded to whole windows and cropped back."""
    b, t, h, w, c = input.shape
    pad = _pad_size((t, h, w), window_size)
    x = F.pad(input, (0, 0, 0, pad[2], 0, pad[1], 0, pad[0]))
    padded = tuple(x.shape[1:4])
    shifted = sum(shift_size) > 0
    if shifted:
        x = ember.roll(x, shifts=tuple(-s for s in shift_size), dims=(1, 2, 3))
    num_windows = math.prod(s // v for s, v in zip(padded, window_size))
    x = _partition(x, window_size)
    n = x.shape[1]
    qkv = F.linear(x, qkv_weight, qkv_bias).reshape(x.shape[0], n, 3, num_heads, c // num_heads)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)
    attn = (q * (c // num_heads) ** -0.5).matmul(k.transpose(-2, -1)) + relative_position_bias
    if shifted:
        mask = _attention_mask(padded, window_size, shift_size, x)
        attn = attn.view(x.shape[0] // num_windows, num_windows, num_heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, n, n)
    attn = F.dropout(F.softmax(attn, dim=-1), p=attention_dropout, training=training)
    x = attn.matmul(v).transpose(1, 2).reshape(x.shape[0], n, c)
    x = F.dropout(F.linear(x, proj_weight, proj_bias), p=dropout, training=training)
    x = _unpartition(x, window_size, b, padded)
    if shifted:
        x = ember.roll(x, shifts=tuple(shift_size), dims=(1, 2, 3))
    return x[:, :t, :h, :w, :].contiguous()


class ShiftedWindowAttention3d(nn.Module):
    """See :func:`shifted_window_attention_3d`; a learned table of relative position biases.  A window larger
    than the input shrinks to the input along that axis and is not shifted there."""

    def __init__(self, dim: int, window_size, shift_size, num_heads: int, qkv_bias: bool = True,
                 proj_bias: bool = True, attention_dropout: float = 0.0, dropout: float = 0.0) -> None:
        super().__init__()
        if len(window_size) != 3 or len(shift_size) != 3:
            raise ValueError("window_size and shift_size must be of length 2")  # torchvision's wording
        self.window_size, self.shift_size, self.num_heads = window_size, shift_size, num_heads
        self.attention_dropout, self.dropout = attention_dropout, dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.relative_position_bias_table = nn.Parameter(
            ember.zeros(math.prod(2 * w - 1 for w in window_size), num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        self.register_buffer("relative_position_index", relative_position_index(window_size))

    def get_relative_position_bias(self, window_size):
        # torchvision takes the top-left corner of the full window's index for a shrunken window
        volume = math.prod(window_size)
        index = self.relative_position_index[:volume, :volume].flatten()
        bias = self.relative_position_bias_table[index].view(volume, volume, -1)
        return bias.permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, x):
        size = x.shape[1:4]
        window = [min(w, s) for w, s in zip(self.window_size, size)]
        shift = [0 if s <= w else k for w, s, k in zip(self.window_size, size, self.shift_size)]
        return shifted_window_attention_3d(x, self.qkv.weight, self.proj.weight,
                                           self.get_relative_position_bias(window), window, self.num_heads,
                                           shift_size=shift, attention_dropout=self.attention_dropout,
                                           dropout=self.dropout, qkv_bias=self.qkv.bias, proj_bias=self.proj.bias,
                                           training=self.training)


class PatchEmbed3d(nn.Module):
    """Video to patch embedding: pad to whole patches, a strided Conv3d, channels last, optional norm."""

    def __init__(self, patch_size, in_channels: int = 3, embed_dim: int = 96, norm_layer=None) -> None:
        super().__init__()
        self.tuple_patch_size = tuple(patch_size[:3])
        self.proj = nn.Conv3d(in_channels, embed_dim, kernel_size=self.tuple_patch_size,
                              stride=self.tuple_patch_size)
        self.norm = norm_layer(embed_dim) if norm_layer is not None else nn.Identity()

    def forward(self, x):
        pad = _pad_size(x.shape[2:], self.tuple_patch_size)
        x = F.pad(x, (0, pad[2], 0, pad[1], 0, pad[0]))
        return self.norm(self.proj(x).permute(0, 2, 3, 4, 1))


class SwinTransformer3d(nn.Module):
    """Patch embedding, stages of (shifted) 3D window blocks joined by 2x2 spatial patch merging, norm,
    global average pooling, ``head``.  Input ``(N, 3, T, H, W)``."""

    def __init__(self, patch_size, embed_dim: int, depths, num_heads, window_size, mlp_ratio: float = 4.0,
                 dropout: float = 0.0, attention_dropout: float = 0.0, stochastic_depth_prob: float = 0.1,
                 num_classes: int = 400, norm_layer=None, block=None, downsample_layer=PatchMerging,
                 patch_embed=None) -> None:
        super().__init__()
        self.num_classes = num_classes
        block = block or partial(SwinTransformerBlock, attn_layer=ShiftedWindowAttention3d)
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-5)
        self.patch_embed = (patch_embed or PatchEmbed3d)(patch_size=patch_size, embed_dim=embed_dim,
                                                         norm_layer=norm_layer)
        self.pos_drop = nn.Dropout(p=dropout)
        layers = _stages(block, embed_dim, depths, num_heads, window_size, mlp_ratio, dropout, attention_dropout,
                         stochastic_depth_prob, norm_layer, downsample_layer,
                         attn_layer=ShiftedWindowAttention3d)
        self.features = nn.Sequential(*layers)
        self.num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(self.num_features)
        self.avgpool = nn.AdaptiveAvgPool3d(1)
        self.head = nn.Linear(self.num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.norm(self.features(self.pos_drop(self.patch_embed(x))))
        return self.head(ember.flatten(self.avgpool(x.permute(0, 4, 1, 2, 3)), 1))


def _swin3d(embed_dim: int, depths, num_heads, weights_cls, weights, progress, kwargs) -> SwinTransformer3d:
    pretrained = kwargs.pop("pretrained", False)
    kwargs.update(patch_size=[2, 4, 4], embed_dim=embed_dim, depths=depths, num_heads=num_heads,
                  window_size=[8, 7, 7], stochastic_depth_prob=0.1)
    return build((SwinTransformer3d, ()), weights_cls, weights, pretrained, kwargs, progress)


@register_model(Swin3D_T_Weights)
def swin3d_t(*, weights=None, progress: bool = True, **kwargs) -> SwinTransformer3d:
    """Video Swin-T (embedding 96, depths 2-2-6-2, window 8x7x7)."""
    return _swin3d(96, [2, 2, 6, 2], [3, 6, 12, 24], Swin3D_T_Weights, weights, progress, kwargs)


@register_model(Swin3D_S_Weights)
def swin3d_s(*, weights=None, progress: bool = True, **kwargs) -> SwinTransformer3d:
    """Video Swin-S (embedding 96, depths 2-2-18-2, window 8x7x7)."""
    return _swin3d(96, [2, 2, 18, 2], [3, 6, 12, 24], Swin3D_S_Weights, weights, progress, kwargs)


@register_model(Swin3D_B_Weights)
def swin3d_b(*, weights=None, progress: bool = True, **kwargs) -> SwinTransformer3d:
    """Video Swin-B (embedding 128, depths 2-2-18-2, heads 4-8-16-32, window 8x7x7)."""
    return _swin3d(128, [2, 2, 18, 2], [4, 8, 16, 32], Swin3D_B_Weights, weights, progress, kwargs)
