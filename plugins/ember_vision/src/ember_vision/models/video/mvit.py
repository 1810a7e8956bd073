"""Multiscale Vision Transformers: MViT-V1-B (Fan et al. 2021) and MViT-V2-S (Li et al. 2022), torchvision's
names.  Tokens carry a class token in front; pooling attention shrinks the (T, H, W) grid stage by stage."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import ember
from ember import nn
from ember.nn import functional as F

from ...ops.misc import MLP
from ...ops.stochastic_depth import StochasticDepth
from ...transforms._presets import VideoClassification
from .._api import Weights, build, register_model, weights_enum

_META = {"min_size": (224, 224), "min_temporal_size": 16}
_TRANSFORMS = partial(VideoClassification, crop_size=(224, 224), resize_size=(256,), mean=(0.45, 0.45, 0.45),
                      std=(0.225, 0.225, 0.225))
MViT_V1_B_Weights = weights_enum("MViT_V1_B_Weights", "KINETICS400_V1", KINETICS400_V1=Weights(
    "https://download.pytorch.org/models/mvit_v1_b-dbeb1030.pth", 400, _META, _TRANSFORMS))
MViT_V2_S_Weights = weights_enum("MViT_V2_S_Weights", "KINETICS400_V1", KINETICS400_V1=Weights(
    "https://download.pytorch.org/models/mvit_v2_s-ae3be167.pth", 400, _META, _TRANSFORMS))


@dataclass
class MSBlockConfig:
    """One block: heads, channels in and out, and the pooling kernels and strides of queries and keys/values
    (an empty list: no pooling)."""

    num_heads: int
    input_channels: int
    output_channels: int
    kernel_q: list[int]
    kernel_kv: list[int]
    stride_q: list[int]
    stride_kv: list[int]


class Pool(nn.Module):
    """Pools the (T, H, W) grid of tokens ``[B, (heads,) 1 + THW, C]`` with ``pool``, the class token kept
    aside; then (or before, with ``norm_before_pool``) ``norm`` and ``activation``."""

    def __init__(self, pool: nn.Module, norm: nn.Module | None, activation: nn.Module | None = None,
                 norm_before_pool: bool = False) -> None:
        super().__init__()
        self.pool = pool
        layers = [m for m in (norm, activation) if m is not None]
        self.norm_act = nn.Sequential(*layers) if layers else None
        self.norm_before_pool = norm_before_pool

    def forward(self, x, thw):
        squeeze = x.dim() == 3
        if squeeze:
            x = x.unsqueeze(1)
        elif x.dim() != 4:
            raise ValueError(f"Unsupported input dimension {x.shape}")
        class_token, x = x[:, :, :1], x[:, :, 1:]
        b, n, length, c = x.shape
        x = x.transpose(2, 3).reshape((b * n, c) + tuple(thw))
        if self.norm_before_pool and self.norm_act is not None:
            x = self.norm_act(x)
        x = self.pool(x)
        thw = tuple(x.shape[2:])
        x = ember.cat((class_token, x.reshape(b, n, c, -1).transpose(2, 3)), dim=2)
        if not self.norm_before_pool and self.norm_act is not None:
            x = self.norm_act(x)
        return (x.squeeze(1) if squeeze else x), thw


def _interpolate(embedding, d: int):
    """A [L, C] table linearly resampled to ``d`` rows."""
    if embedding.shape[0] == d:
        return embedding
    return F.interpolate(embedding.permute(1, 0).unsqueeze(0), size=d, mode="linear").squeeze(0).permute(1, 0)


def _relative_table(table, q: int, k: int):
    """[q, k, C] rows of ``table`` for each query/key offset, the coarser grid's positions scaled up."""
    q_ratio, k_ratio = max(k / q, 1.0), max(q / k, 1.0)
    dist = ember.arange(q)[:, None] * q_ratio - (ember.arange(k)[None, :] + (1.0 - k)) * k_ratio
    return _interpolate(table, int(2 * max(q, k) - 1))[dist.long()]


def _add_rel_pos(attn, q, q_thw, k_thw, rel_pos_h, rel_pos_w, rel_pos_t):
    """MViT-V2's decomposed relative position terms (temporal, height, width) added to the token-token part
    of ``attn`` (not the class token's row and column)."""
    (q_t, q_h, q_w), (k_t, k_h, k_w) = q_thw, k_thw
    rh, rw = _relative_table(rel_pos_h, q_h, k_h), _relative_table(rel_pos_w, q_w, k_w)
    rt = _relative_table(rel_pos_t, q_t, k_t)
    b, heads, _, dim = q.shape
    r_q = q[:, :, 1:].reshape(b, heads, q_t, q_h, q_w, dim)
    rel_h = ember.einsum("bythwc,hkc->bythwk", r_q, rh)
    rel_w = ember.einsum("bythwc,wkc->bythwk", r_q, rw)
    rel_t = ember.einsum("bythwc,tkc->bythwk", r_q, rt)
    rel = (rel_h[:, :, :, :, :, None, :, None] + rel_w[:, :, :, :, :, None, None, :]
           + rel_t[:, :, :, :, :, :, None, None]).reshape(b, heads, q_t * q_h * q_w, k_t * k_h * k_w)
    return attn + F.pad(rel, (1, 0, 1, 0))


def _pool(channels: int, kernel, stride, norm_layer) -> Pool:
    """A depthwise Conv3d pooling of the heads' channels, then ``norm_layer``."""
    conv = nn.Conv3d(channels, channels, kernel, stride=stride, padding=[k // 2 for k in kernel], groups=channels,
                     bias=False)
    return Pool(conv, norm_layer(channels))


class MultiscaleAttention(nn.Module):
    """Multi-head attention whose queries and keys/values are pooled over the token grid (with MViT-V2's
    relative positions and pooled-query residual when asked); returns the tokens and the queries' grid."""

    def __init__(self, input_size: list[int], embed_dim: int, output_dim: int, num_heads: int, kernel_q, kernel_kv,
                 stride_q, stride_kv, residual_pool: bool, residual_with_cls_embed: bool, rel_pos_embed: bool,
                 dropout: float = 0.0, norm_layer=nn.LayerNorm) -> None:
        super().__init__()
        self.embed_dim, self.output_dim, self.num_heads = embed_dim, output_dim, num_heads
        self.head_dim = output_dim // num_heads
        self.scaler = 1.0 / math.sqrt(self.head_dim)
        self.residual_pool, self.residual_with_cls_embed = residual_pool, residual_with_cls_embed
        self.qkv = nn.Linear(embed_dim, 3 * output_dim)
        self.project = nn.Sequential(nn.Linear(output_dim, output_dim),
                                     *([nn.Dropout(dropout, inplace=True)] if dropout > 0.0 else []))
        pools_q = math.prod(kernel_q) > 1 or math.prod(stride_q) > 1
        pools_kv = math.prod(kernel_kv) > 1 or math.prod(stride_kv) > 1
        self.pool_q = _pool(self.head_dim, kernel_q, stride_q, norm_layer) if pools_q else None
        self.pool_k = _pool(self.head_dim, kernel_kv, stride_kv, norm_layer) if pools_kv else None
        self.pool_v = _pool(self.head_dim, kernel_kv, stride_kv, norm_layer) if pools_kv else None
        self.rel_pos_h = self.rel_pos_w = self.rel_pos_t = None
        if rel_pos_embed:
            size = max(input_size[1:])
            q_size = size // stride_q[1] if len(stride_q) > 0 else size
            kv_size = size // stride_kv[1] if len(stride_kv) > 0 else size
            spatial_dim = 2 * max(q_size, kv_size) - 1
            self.rel_pos_h = nn.Parameter(ember.zeros(spatial_dim, self.head_dim))
            self.rel_pos_w = nn.Parameter(ember.zeros(spatial_dim, self.head_dim))
            self.rel_pos_t = nn.Parameter(ember.zeros(2 * input_size[0] - 1, self.head_dim))
            for table in (self.rel_pos_h, self.rel_pos_w, self.rel_pos_t):
                nn.init.trunc_normal_(table, std=0.02)

    def forward(self, x, thw):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).transpose(1, 3).unbind(dim=2)
        k, k_thw = self.pool_k(k, thw) if self.pool_k is not None else (k, thw)
        if self.pool_v is not None:
            v = self.pool_v(v, thw)[0]
        if self.pool_q is not None:
            q, thw = self.pool_q(q, thw)
        attn = ember.matmul(self.scaler * q, k.transpose(2, 3))
        if self.rel_pos_h is not None:
            attn = _add_rel_pos(attn, q, thw, k_thw, self.rel_pos_h, self.rel_pos_w, self.rel_pos_t)
        x = ember.matmul(attn.softmax(dim=-1), v)
        if self.residual_pool:  # the pooled queries as a shortcut (without the class token's, unless asked)
            x = x + (q if self.residual_with_cls_embed else F.pad(q[:, :, 1:], (0, 0, 1, 0)))
        return self.project(x.transpose(1, 2).reshape(b, -1, self.output_dim)), thw


class MultiscaleBlock(nn.Module):
    """Pre-norm pooling attention and MLP, each residual through stochastic depth; the shortcut is max-pooled
    when the queries are and projected when the width changes (after attention in MViT-V2)."""

    def __init__(self, input_size: list[int], cnf: MSBlockConfig, residual_pool: bool, residual_with_cls_embed: bool,
                 rel_pos_embed: bool, proj_after_attn: bool, dropout: float = 0.0, stochastic_depth_prob: float = 0.0,
                 norm_layer=nn.LayerNorm) -> None:
        super().__init__()
        self.proj_after_attn = proj_after_attn
        self.pool_skip = None
        if math.prod(cnf.stride_q) > 1:
            kernel_skip = [s + 1 if s > 1 else s for s in cnf.stride_q]
            self.pool_skip = Pool(nn.MaxPool3d(kernel_skip, stride=cnf.stride_q,
                                               padding=[k // 2 for k in kernel_skip]), None)
        attn_dim = cnf.output_channels if proj_after_attn else cnf.input_channels
        self.norm1 = norm_layer(cnf.input_channels)
        self.norm2 = norm_layer(attn_dim)
        self.needs_transposal = isinstance(self.norm1, nn.BatchNorm1d)
        self.attn = MultiscaleAttention(input_size, cnf.input_channels, attn_dim, cnf.num_heads,
                                        kernel_q=cnf.kernel_q, kernel_kv=cnf.kernel_kv, stride_q=cnf.stride_q,
                                        stride_kv=cnf.stride_kv, rel_pos_embed=rel_pos_embed,
                                        residual_pool=residual_pool, residual_with_cls_embed=residual_with_cls_embed,
                                        dropout=dropout, norm_layer=norm_layer)
        self.mlp = MLP(attn_dim, [4 * attn_dim, cnf.output_channels], activation_layer=nn.GELU, dropout=dropout,
                       inplace=None)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.project = (nn.Linear(cnf.input_channels, cnf.output_channels)
                        if cnf.input_channels != cnf.output_channels else None)

    def _norm(self, norm, x):
        return norm(x.transpose(1, 2)).transpose(1, 2) if self.needs_transposal else norm(x)

    def forward(self, x, thw):
        x_norm1 = self._norm(self.norm1, x)
        x_attn, thw_new = self.attn(x_norm1, thw)
        x = x if self.project is None or not self.proj_after_attn else self.project(x_norm1)
        x_skip = x if self.pool_skip is None else self.pool_skip(x, thw)[0]
        x = x_skip + self.stochastic_depth(x_attn)
        x_norm2 = self._norm(self.norm2, x)
        x_proj = x if self.project is None or self.proj_after_attn else self.project(x_norm2)
        return x_proj + self.stochastic_depth(self.mlp(x_norm2)), thw_new


class PositionalEncoding(nn.Module):
    """Prepends the class token; adds learned temporal + spatial (and class) position embeddings unless the
    blocks use relative positions."""

    def __init__(self, embed_size: int, spatial_size: tuple[int, int], temporal_size: int,
                 rel_pos_embed: bool) -> None:
        super().__init__()
        self.spatial_size, self.temporal_size = spatial_size, temporal_size
        self.class_token = nn.Parameter(ember.zeros(embed_size))
        self.spatial_pos = self.temporal_pos = self.class_pos = None
        if not rel_pos_embed:
            self.spatial_pos = nn.Parameter(ember.zeros(spatial_size[0] * spatial_size[1], embed_size))
            self.temporal_pos = nn.Parameter(ember.zeros(temporal_size, embed_size))
            self.class_pos = nn.Parameter(ember.zeros(embed_size))

    def forward(self, x):
        x = ember.cat((self.class_token.expand(x.shape[0], -1).unsqueeze(1), x), dim=1)
        if self.spatial_pos is None:
            return x
        grid = (self.temporal_pos[:, None, :] + self.spatial_pos[None, :, :]).reshape(-1, self.spatial_pos.shape[1])
        return x + ember.cat((self.class_pos.unsqueeze(0), grid), dim=0).unsqueeze(0)


class MViT(nn.Module):
    """``MViT(spatial_size, temporal_size, block_setting, residual_pool, residual_with_cls_embed, rel_pos_embed,
    proj_after_attn, dropout=0.5, attention_dropout=0.0, stochastic_depth_prob=0.0, num_classes=400, block=None,
    norm_layer=None, patch_embed_kernel=(3, 7, 7), patch_embed_stride=(2, 4, 4), patch_embed_padding=(1, 3, 3))``.
    Input ``(N, 3, T, H, W)`` of the given sizes (``(N, 3, H, W)`` is one frame)."""

    def __init__(self, spatial_size: tuple[int, int], temporal_size: int, block_setting: Sequence[MSBlockConfig],
                 residual_pool: bool, residual_with_cls_embed: bool, rel_pos_embed: bool, proj_after_attn: bool,
                 dropout: float = 0.5, attention_dropout: float = 0.0, stochastic_depth_prob: float = 0.0,
                 num_classes: int = 400, block=None, norm_layer=None, patch_embed_kernel=(3, 7, 7),
                 patch_embed_stride=(2, 4, 4), patch_embed_padding=(1, 3, 3)) -> None:
        super().__init__()
        total = len(block_setting)
        if total == 0:
            raise ValueError("The configuration parameter can't be empty.")
        block = block or MultiscaleBlock
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.conv_proj = nn.Conv3d(3, block_setting[0].input_channels, kernel_size=patch_embed_kernel,
                                   stride=patch_embed_stride, padding=patch_embed_padding)
        input_size = [size // stride for size, stride in zip((temporal_size, *spatial_size), self.conv_proj.stride)]
        self.pos_encoding = PositionalEncoding(block_setting[0].input_channels, (input_size[1], input_size[2]),
                                               input_size[0], rel_pos_embed)
        self.blocks = nn.ModuleList()
        for i, cnf in enumerate(block_setting):
            self.blocks.append(block(input_size=input_size, cnf=cnf, residual_pool=residual_pool,
                                     residual_with_cls_embed=residual_with_cls_embed, rel_pos_embed=rel_pos_embed,
                                     proj_after_attn=proj_after_attn, dropout=attention_dropout,
                                     stochastic_depth_prob=stochastic_depth_prob * i / (total - 1.0),
                                     norm_layer=norm_layer))
            if len(cnf.stride_q) > 0:
                input_size = [size // stride for size, stride in zip(input_size, cnf.stride_q)]
        self.norm = norm_layer(block_setting[-1].output_channels)
        self.head = nn.Sequential(nn.Dropout(dropout, inplace=True),
                                  nn.Linear(block_setting[-1].output_channels, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                if m.weight is not None:
                    nn.init.ones_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, PositionalEncoding):
                for p in m.parameters():
                    nn.init.trunc_normal_(p, std=0.02)

    def forward(self, x):
        if x.dim() == 4:
            x = x.unsqueeze(2)
        elif x.dim() != 5:
            raise ValueError(f"Unsupported input dimension {x.shape}")
        x = self.pos_encoding(self.conv_proj(x).flatten(2).transpose(1, 2))
        thw = (self.pos_encoding.temporal_size, *self.pos_encoding.spatial_size)
        for block in self.blocks:
            x, thw = block(x, thw)
        return self.head(self.norm(x)[:, 0])


# 16 blocks; stages start where the queries are pooled 2x in space (blocks 1, 3 and 14)
_HEADS = [1, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8]
_STRIDE_KV = [[1, 8, 8], [1, 4, 4], [1, 4, 4]] + [[1, 2, 2]] * 11 + [[1, 1, 1]] * 2
_STAGE_STARTS = (1, 3, 14)


def _widths(first: int, changes_at) -> list[int]:
    """Channels per block: ``first``, doubled at each index of ``changes_at``."""
    return [first * 2 ** sum(i >= j for j in changes_at) for i in range(16)]


def _mvit(v2: bool, weights_cls, weights, progress: bool, kwargs) -> MViT:
    pretrained = kwargs.pop("pretrained", False)
    stride_q = [[1, 2, 2] if i in _STAGE_STARTS else ([1, 1, 1] if v2 else []) for i in range(16)]
    kernel_q = [[3, 3, 3] if v2 or i in _STAGE_STARTS else [] for i in range(16)]
    # V1 widens in the block before each stage; V2 in the stage's first block (projection after attention)
    inputs = _widths(96, [s + (0 if v2 else -1) + 1 for s in _STAGE_STARTS])
    outputs = _widths(96, [s + (0 if v2 else -1) for s in _STAGE_STARTS])
    setting = [MSBlockConfig(_HEADS[i], inputs[i], outputs[i], kernel_q[i], [3, 3, 3], stride_q[i], _STRIDE_KV[i])
               for i in range(16)]
    kwargs.setdefault("stochastic_depth_prob", 0.2)
    args = ((224, 224), 16, setting, v2, False, kwargs.pop("rel_pos_embed", v2), kwargs.pop("proj_after_attn", v2))
    return build((MViT, args), weights_cls, weights, pretrained, kwargs, progress)


@register_model(MViT_V1_B_Weights)
def mvit_v1_b(*, weights=None, progress: bool = True, **kwargs) -> MViT:
    """MViT-V1-B for 16-frame 224 x 224 clips (absolute position embeddings)."""
    return _mvit(False, MViT_V1_B_Weights, weights, progress, kwargs)


@register_model(MViT_V2_S_Weights)
def mvit_v2_s(*, weights=None, progress: bool = True, **kwargs) -> MViT:
    """MViT-V2-S for 16-frame 224 x 224 clips (relative positions, pooled-query residuals)."""
    return _mvit(True, MViT_V2_S_Weights, weights, progress, kwargs)
