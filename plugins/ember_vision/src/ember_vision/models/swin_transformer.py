"""Swin Transformer T/S/B (Liu et al. 2021) and Swin V2 T/S/B (Liu et al. 2022), torchvision's names."""
from __future__ import annotations

import math
from functools import partial

import ember
from ember import nn
from ember.nn import functional as F

from ..ops.misc import MLP, Permute
from ..ops.stochastic_depth import StochasticDepth
from ..transforms.functional import InterpolationMode
from ._api import Weights, build, classification_transforms, register_model, weights_enum

_URL = "https://download.pytorch.org/models/"


def _swin_weights(file: str, crop_size: int, resize_size: int) -> Weights:
    return Weights(_URL + file, transforms=classification_transforms(crop_size, resize_size, InterpolationMode.BICUBIC))


Swin_T_Weights = weights_enum("Swin_T_Weights", IMAGENET1K_V1=_swin_weights("swin_t-704ceda3.pth", 224, 232))
Swin_S_Weights = weights_enum("Swin_S_Weights", IMAGENET1K_V1=_swin_weights("swin_s-5e29d889.pth", 224, 246))
Swin_B_Weights = weights_enum("Swin_B_Weights", IMAGENET1K_V1=_swin_weights("swin_b-68c6b09e.pth", 224, 238))
Swin_V2_T_Weights = weights_enum("Swin_V2_T_Weights", IMAGENET1K_V1=_swin_weights("swin_v2_t-b137f0e2.pth", 256, 260))
Swin_V2_S_Weights = weights_enum("Swin_V2_S_Weights", IMAGENET1K_V1=_swin_weights("swin_v2_s-637d8ceb.pth", 256, 260))
Swin_V2_B_Weights = weights_enum("Swin_V2_B_Weights", IMAGENET1K_V1=_swin_weights("swin_v2_b-781e5279.pth", 256, 272))


def _patch_merging_pad(x):
    """[..., H, W, C] -> [..., H/2, W/2, 4C]: each 2x2 neighbourhood's pixels side by side (odd sides padded)."""
    h, w = x.shape[-3], x.shape[-2]
    x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
    return ember.cat([x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :], x[..., 1::2, 1::2, :]], -1)


def relative_position_index(height: int, width: int):
    """[H*W, H*W] indices into a (2H-1)(2W-1)-row table of the offset between each pair of window positions."""
    coords = ember.flatten(ember.stack(ember.meshgrid(ember.arange(height), ember.arange(width), indexing="ij")), 1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)  # H*W, H*W, 2
    return (rel[:, :, 0] + (height - 1)) * (2 * width - 1) + (rel[:, :, 1] + (width - 1))


def _get_relative_position_bias(table, index, window_size):
    n = window_size[0] * window_size[1]
    return table[index].view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)


class PatchMerging(nn.Module):
    """2x2 patch merging: LayerNorm over 4C, then Linear 4C -> 2C."""

    def __init__(self, dim: int, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        return self.reduction(self.norm(_patch_merging_pad(x)))


class PatchMergingV2(nn.Module):
    """Swin V2's patch merging: Linear 4C -> 2C, then LayerNorm over 2C."""

    def __init__(self, dim: int, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x):
        return self.norm(self.reduction(_patch_merging_pad(x)))


def _shift_mask(pad_h: int, pad_w: int, window_size, shift_size, like):
    """-100 between positions of a window that came from different regions of the rolled image, else 0."""
    regions = ember.zeros((pad_h, pad_w), dtype=like.dtype, device=like.device)
    count = 0
    for h in ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None)):
        for w in ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None)):
            regions[h[0]:h[1], w[0]:w[1]] = count
            count += 1
    num_windows = (pad_h // window_size[0]) * (pad_w // window_size[1])
    regions = regions.view(pad_h // window_size[0], window_size[0], pad_w // window_size[1], window_size[1])
    regions = regions.permute(0, 2, 1, 3).reshape(num_windows, window_size[0] * window_size[1])
    mask = regions.unsqueeze(1) - regions.unsqueeze(2)
    return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)


def shifted_window_attention(input, qkv_weight, proj_weight, relative_position_bias, window_size, num_heads: int,
                             shift_size, attention_dropout: float = 0.0, dropout: float = 0.0, qkv_bias=None,
                             proj_bias=None, logit_scale=None, training: bool = True):
    """Multi-head self-attention within (shifted) windows of an [N, H, W, C] input, with a relative position
    bias; cosine attention scaled by ``logit_scale`` (Swin V2) when it is given."""
    b, h, w, c = input.shape
    pad_r = (window_size[1] - w % window_size[1]) % window_size[1]
    pad_b = (window_size[0] - h % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_h, pad_w, _ = x.shape
    shift_size = [0 if window_size[i] >= (pad_h, pad_w)[i] else shift_size[i] for i in range(2)]
    if sum(shift_size) > 0:
        x = ember.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
    num_windows = (pad_h // window_size[0]) * (pad_w // window_size[1])
    x = x.view(b, pad_h // window_size[0], window_size[0], pad_w // window_size[1], window_size[1], c)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(b * num_windows, window_size[0] * window_size[1], c)
    if logit_scale is not None and qkv_bias is not None:  # V2 has no key bias
        length = qkv_bias.numel() // 3
        qkv_bias = ember.cat([qkv_bias[:length], ember.zeros_like(qkv_bias[length:2 * length]),
                              qkv_bias[2 * length:]])
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.shape[0], x.shape[1], 3, num_heads, c // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * ember.clamp(logit_scale, max=math.log(100.0)).exp()
    else:
        attn = (q * (c // num_heads) ** -0.5).matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias
    if sum(shift_size) > 0:
        mask = _shift_mask(pad_h, pad_w, window_size, shift_size, x)
        attn = attn.view(x.shape[0] // num_windows, num_windows, num_heads, x.shape[1], x.shape[1])
        attn = (attn + mask.unsqueeze(1).unsqueeze(0)).view(-1, num_heads, x.shape[1], x.shape[1])
    attn = F.dropout(F.softmax(attn, dim=-1), p=attention_dropout, training=training)
    x = attn.matmul(v).transpose(1, 2).reshape(x.shape[0], x.shape[1], c)
    x = F.dropout(F.linear(x, proj_weight, proj_bias), p=dropout, training=training)
    x = x.view(b, pad_h // window_size[0], pad_w // window_size[1], window_size[0], window_size[1], c)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(b, pad_h, pad_w, c)
    if sum(shift_size) > 0:
        x = ember.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    return x[:, :h, :w, :].contiguous()


class ShiftedWindowAttention(nn.Module):
    """See :func:`shifted_window_attention`; a learned table of relative position biases."""

    def __init__(self, dim: int, window_size, shift_size, num_heads: int, qkv_bias: bool = True,
                 proj_bias: bool = True, attention_dropout: float = 0.0, dropout: float = 0.0):
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError("window_size and shift_size must be of length 2")
        self.window_size, self.shift_size, self.num_heads = window_size, shift_size, num_heads
        self.attention_dropout, self.dropout = attention_dropout, dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self):
        wh, ww = self.window_size
        self.relative_position_bias_table = nn.Parameter(ember.zeros((2 * wh - 1) * (2 * ww - 1), self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self):
        self.register_buffer("relative_position_index", relative_position_index(*self.window_size).flatten())

    def get_relative_position_bias(self):
        return _get_relative_position_bias(self.relative_position_bias_table, self.relative_position_index,
                                           self.window_size)

    def _attend(self, x, **extra):
        return shifted_window_attention(x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(),
                                        self.window_size, self.num_heads, shift_size=self.shift_size,
                                        attention_dropout=self.attention_dropout, dropout=self.dropout,
                                        qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, training=self.training,
                                        **extra)

    def forward(self, x):
        return self._attend(x)


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    """Swin V2's attention: cosine similarity with a learned per-head scale, biases from a small MLP over
    log-spaced relative coordinates (``cpb_mlp``)."""

    def __init__(self, dim: int, window_size, shift_size, num_heads: int, qkv_bias: bool = True,
                 proj_bias: bool = True, attention_dropout: float = 0.0, dropout: float = 0.0):
        super().__init__(dim, window_size, shift_size, num_heads, qkv_bias=qkv_bias, proj_bias=proj_bias,
                         attention_dropout=attention_dropout, dropout=dropout)
        self.logit_scale = nn.Parameter(ember.log(10 * ember.ones((num_heads, 1, 1))))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 512, bias=True), nn.ReLU(inplace=True),
                                     nn.Linear(512, num_heads, bias=False))
        if qkv_bias:
            length = self.qkv.bias.numel() // 3
            with ember.no_grad():
                self.qkv.bias[length:2 * length].zero_()

    def define_relative_position_bias_table(self):
        wh, ww = self.window_size
        h = ember.arange(-(wh - 1), wh, dtype=ember.float32) / (wh - 1)
        w = ember.arange(-(ww - 1), ww, dtype=ember.float32) / (ww - 1)
        table = ember.stack(ember.meshgrid(h, w, indexing="ij")).permute(1, 2, 0).contiguous().unsqueeze(0) * 8
        table = ember.sign(table) * ember.log2(ember.abs(table) + 1.0) / 3.0
        self.register_buffer("relative_coords_table", table)

    def get_relative_position_bias(self):
        bias = _get_relative_position_bias(self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads),
                                           self.relative_position_index, self.window_size)
        return 16 * ember.sigmoid(bias)

    def forward(self, x):
        return self._attend(x, logit_scale=self.logit_scale)


class SwinTransformerBlock(nn.Module):
    """Pre-norm window attention and MLP, each a residual through stochastic depth."""

    def __init__(self, dim: int, num_heads: int, window_size, shift_size, mlp_ratio: float = 4.0,
                 dropout: float = 0.0, attention_dropout: float = 0.0, stochastic_depth_prob: float = 0.0,
                 norm_layer=nn.LayerNorm, attn_layer=ShiftedWindowAttention):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(dim, window_size, shift_size, num_heads, attention_dropout=attention_dropout,
                               dropout=dropout)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x):
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformerBlockV2(SwinTransformerBlock):
    """Swin V2's block: post-norm (the norm after attention and after the MLP)."""

    def __init__(self, dim: int, num_heads: int, window_size, shift_size, mlp_ratio: float = 4.0,
                 dropout: float = 0.0, attention_dropout: float = 0.0, stochastic_depth_prob: float = 0.0,
                 norm_layer=nn.LayerNorm, attn_layer=ShiftedWindowAttentionV2):
        super().__init__(dim, num_heads, window_size, shift_size, mlp_ratio, dropout, attention_dropout,
                         stochastic_depth_prob, norm_layer, attn_layer)

    def forward(self, x):
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        return x + self.stochastic_depth(self.norm2(self.mlp(x)))


def _stages(block, embed_dim, depths, num_heads, window_size, mlp_ratio, dropout, attention_dropout,
            stochastic_depth_prob, norm_layer, downsample_layer, **block_kwargs):
    """Swin's stages: ``depths[i]`` blocks (every second one shifted by half a window) of width
    ``embed_dim * 2**i``, stochastic depth rising linearly over all blocks, a downsampling layer between stages."""
    layers, total_blocks, block_id = [], sum(depths), 0
    for i_stage, depth in enumerate(depths):
        dim = embed_dim * 2 ** i_stage
        stage = []
        for i_layer in range(depth):
            stage.append(block(dim, num_heads[i_stage], window_size=window_size,
                               shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                               mlp_ratio=mlp_ratio, dropout=dropout, attention_dropout=attention_dropout,
                               stochastic_depth_prob=stochastic_depth_prob * block_id / (total_blocks - 1),
                               norm_layer=norm_layer, **block_kwargs))
            block_id += 1
        layers.append(nn.Sequential(*stage))
        if i_stage < len(depths) - 1:
            layers.append(downsample_layer(dim, norm_layer))
    return layers


class SwinTransformer(nn.Module):
    """Patch embedding, stages of (shifted) window blocks joined by patch merging, norm, pooling, ``head``."""

    def __init__(self, patch_size, embed_dim: int, depths, num_heads, window_size, mlp_ratio: float = 4.0,
                 dropout: float = 0.0, attention_dropout: float = 0.0, stochastic_depth_prob: float = 0.1,
                 num_classes: int = 1000, norm_layer=None, block=None, downsample_layer=PatchMerging):
        super().__init__()
        self.num_classes = num_classes
        block = block or SwinTransformerBlock
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-5)
        layers = [nn.Sequential(nn.Conv2d(3, embed_dim, kernel_size=tuple(patch_size), stride=tuple(patch_size)),
                                Permute([0, 2, 3, 1]), norm_layer(embed_dim))]
        layers += _stages(block, embed_dim, depths, num_heads, window_size, mlp_ratio, dropout, attention_dropout,
                          stochastic_depth_prob, norm_layer, downsample_layer)
        self.features = nn.Sequential(*layers)
        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.head(self.flatten(self.avgpool(self.permute(self.norm(self.features(x))))))


def _swin(embed_dim, depths, num_heads, window, sd_prob, v2, weights_cls, weights, pretrained, kwargs, progress):
    if v2:
        kwargs.update(block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2)
    kwargs.update(patch_size=[4, 4], embed_dim=embed_dim, depths=depths, num_heads=num_heads,
                  window_size=[window, window], stochastic_depth_prob=sd_prob)
    return build((SwinTransformer, ()), weights_cls, weights, pretrained, kwargs, progress)


_T, _SB = ([2, 2, 6, 2], [3, 6, 12, 24]), ([2, 2, 18, 2], [3, 6, 12, 24])


@register_model(Swin_T_Weights)
def swin_t(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> SwinTransformer:
    """Swin-T (embedding 96, depths 2-2-6-2, window 7)."""
    return _swin(96, *_T, 7, 0.2, False, Swin_T_Weights, weights, pretrained, kwargs, progress)


@register_model(Swin_S_Weights)
def swin_s(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> SwinTransformer:
    """Swin-S (embedding 96, depths 2-2-18-2, window 7)."""
    return _swin(96, *_SB, 7, 0.3, False, Swin_S_Weights, weights, pretrained, kwargs, progress)


@register_model(Swin_B_Weights)
def swin_b(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> SwinTransformer:
    """Swin-B (embedding 128, depths 2-2-18-2, heads 4-8-16-32, window 7)."""
    return _swin(128, [2, 2, 18, 2], [4, 8, 16, 32], 7, 0.5, False, Swin_B_Weights, weights, pretrained, kwargs,
                 progress)


@register_model(Swin_V2_T_Weights)
def swin_v2_t(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> SwinTransformer:
    """Swin V2-T (embedding 96, depths 2-2-6-2, window 8)."""
    return _swin(96, *_T, 8, 0.2, True, Swin_V2_T_Weights, weights, pretrained, kwargs, progress)


@register_model(Swin_V2_S_Weights)
def swin_v2_s(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> SwinTransformer:
    """Swin V2-S (embedding 96, depths 2-2-18-2, window 8)."""
    return _swin(96, *_SB, 8, 0.3, True, Swin_V2_S_Weights, weights, pretrained, kwargs, progress)


@register_model(Swin_V2_B_Weights)
def swin_v2_b(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> SwinTransformer:
    """Swin V2-B (embedding 128, depths 2-2-18-2, heads 4-8-16-32, window 8)."""
    return _swin(128, [2, 2, 18, 2], [4, 8, 16, 32], 8, 0.5, True, Swin_V2_B_Weights, weights, pretrained, kwargs,
                 progress)
