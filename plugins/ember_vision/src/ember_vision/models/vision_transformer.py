"""Vision Transformer B/16, B/32, L/16, L/32, H/14 (Dosovitskiy et al. 2020), torchvision's names."""
from __future__ import annotations

import math
from functools import partial
from typing import Callable, NamedTuple

import ember
from ember import nn

from ..ops.misc import MLP, Conv2dNormActivation
from ._api import (
    IMAGENET_TRANSFORMS, Weights, build, classification_transforms, register_model, swag_transforms, weights_enum,
)

_URL = "https://download.pytorch.org/models/"


_LAYER_NORM = partial(nn.LayerNorm, eps=1e-6)


class ConvStemConfig(NamedTuple):
    out_channels: int
    kernel_size: int
    stride: int
    norm_layer: Callable[..., nn.Module] = nn.BatchNorm2d
    activation_layer: Callable[..., nn.Module] = nn.ReLU


class MLPBlock(MLP):
    """Linear, GELU, Dropout, Linear, Dropout (children ``0``..``4``); old checkpoints' ``linear_1`` and
    ``linear_2`` keys load as ``0`` and ``3``."""

    _version = 2

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args):
        if (local_metadata or {}).get("version") is None or local_metadata["version"] < 2:
            for i in range(2):
                for kind in ("weight", "bias"):
                    old = f"{prefix}linear_{i + 1}.{kind}"
                    if old in state_dict:
                        state_dict[f"{prefix}{3 * i}.{kind}"] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)


def _check_3d(input):
    if input.dim() != 3:
        raise AssertionError(f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")


class EncoderBlock(nn.Module):
    """Pre-norm self-attention and MLP, each with a residual connection."""

    def __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float, attention_dropout: float,
                 norm_layer=_LAYER_NORM):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout,
                                                    batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input):
        _check_3d(input)
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Learned position embedding, ``layers`` (``encoder_layer_{i}``), final LayerNorm ``ln``."""

    def __init__(self, seq_length: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
                 dropout: float, attention_dropout: float, norm_layer=_LAYER_NORM):
        super().__init__()
        self.pos_embedding = nn.Parameter(ember.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.Sequential()
        for i in range(num_layers):
            self.layers.add_module(f"encoder_layer_{i}", EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout,
                                                                      attention_dropout, norm_layer))
        self.ln = norm_layer(hidden_dim)

    def forward(self, input):
        _check_3d(input)
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(nn.Module):
    """ViT for ``image_size`` x ``image_size`` inputs: patch projection ``conv_proj`` (or a conv stem), class
    token, ``encoder``, ``heads``."""

    def __init__(self, image_size: int, patch_size: int, num_layers: int, num_heads: int, hidden_dim: int,
                 mlp_dim: int, dropout: float = 0.0, attention_dropout: float = 0.0, num_classes: int = 1000,
                 representation_size: int | None = None, norm_layer=_LAYER_NORM,
                 conv_stem_configs: list[ConvStemConfig] | None = None):
        super().__init__()
        if image_size % patch_size != 0:
            raise AssertionError("Input shape indivisible by patch size!")
        self.image_size, self.patch_size, self.hidden_dim, self.mlp_dim = image_size, patch_size, hidden_dim, mlp_dim
        self.attention_dropout, self.dropout, self.num_classes = attention_dropout, dropout, num_classes
        self.representation_size, self.norm_layer = representation_size, norm_layer
        if conv_stem_configs is not None:
            self.conv_proj = nn.Sequential()
            prev = 3
            for i, cfg in enumerate(conv_stem_configs):
                self.conv_proj.add_module(f"conv_bn_relu_{i}", Conv2dNormActivation(
                    prev, cfg.out_channels, kernel_size=cfg.kernel_size, stride=cfg.stride,
                    norm_layer=cfg.norm_layer, activation_layer=cfg.activation_layer))
                prev = cfg.out_channels
            self.conv_proj.add_module("conv_last", nn.Conv2d(prev, hidden_dim, kernel_size=1))
        else:
            self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        self.class_token = nn.Parameter(ember.zeros(1, 1, hidden_dim))
        self.seq_length = (image_size // patch_size) ** 2 + 1
        self.encoder = Encoder(self.seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout,
                               attention_dropout, norm_layer)
        self.heads = nn.Sequential()
        if representation_size is not None:
            self.heads.add_module("pre_logits", nn.Linear(hidden_dim, representation_size))
            self.heads.add_module("act", nn.Tanh())
        self.heads.add_module("head", nn.Linear(representation_size or hidden_dim, num_classes))
        if isinstance(self.conv_proj, nn.Conv2d):
            fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            nn.init.zeros_(self.conv_proj.bias)
        else:
            last = self.conv_proj.conv_last
            nn.init.normal_(last.weight, mean=0.0, std=math.sqrt(2.0 / last.out_channels))
            nn.init.zeros_(last.bias)
        if representation_size is not None:
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / hidden_dim))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x):
        n, _, h, w = x.shape
        if h != self.image_size:
            raise AssertionError(f"Wrong image height! Expected {self.image_size} but got {h}!")
        if w != self.image_size:
            raise AssertionError(f"Wrong image width! Expected {self.image_size} but got {w}!")
        p = self.patch_size
        return self.conv_proj(x).reshape(n, self.hidden_dim, (h // p) * (w // p)).permute(0, 2, 1)

    def forward(self, x):
        x = self._process_input(x)
        x = ember.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


def _weights(name: str, members: dict, default: str = "IMAGENET1K_V1", v1_transforms=IMAGENET_TRANSFORMS):
    """``members``: ``{member: (file, input side)}``; the SWAG members resize bicubically to their side."""
    return weights_enum(name, default, **{k: Weights(_URL + f, 1000, {"min_size": (s, s)},
                                                     swag_transforms(s) if "SWAG" in k else v1_transforms)
                                          for k, (f, s) in members.items()})


ViT_B_16_Weights = _weights("ViT_B_16_Weights", {"IMAGENET1K_V1": ("vit_b_16-c867db91.pth", 224),
                                                 "IMAGENET1K_SWAG_E2E_V1": ("vit_b_16_swag-9ac1b537.pth", 384),
                                                 "IMAGENET1K_SWAG_LINEAR_V1": ("vit_b_16_lc_swag-4e70ced5.pth", 224)})
ViT_B_32_Weights = _weights("ViT_B_32_Weights", {"IMAGENET1K_V1": ("vit_b_32-d86f8d99.pth", 224)})
ViT_L_16_Weights = _weights("ViT_L_16_Weights", {"IMAGENET1K_V1": ("vit_l_16-852ce7e3.pth", 224),
                                                 "IMAGENET1K_SWAG_E2E_V1": ("vit_l_16_swag-4f3808c9.pth", 512),
                                                 "IMAGENET1K_SWAG_LINEAR_V1": ("vit_l_16_lc_swag-4d563306.pth", 224)},
                            v1_transforms=classification_transforms(224, 242))
ViT_L_32_Weights = _weights("ViT_L_32_Weights", {"IMAGENET1K_V1": ("vit_l_32-c7638314.pth", 224)})
ViT_H_14_Weights = _weights("ViT_H_14_Weights", {"IMAGENET1K_SWAG_E2E_V1": ("vit_h_14_swag-80465313.pth", 518),
                                                 "IMAGENET1K_SWAG_LINEAR_V1": ("vit_h_14_lc_swag-c1eb923e.pth", 224)},
                            "IMAGENET1K_SWAG_E2E_V1")


def _vit(patch_size, num_layers, num_heads, hidden_dim, mlp_dim, weights_cls, weights, pretrained, kwargs,
         progress) -> VisionTransformer:
    member = weights_cls.verify(weights) or (weights_cls.__members__.get("IMAGENET1K_V1", weights_cls.DEFAULT)
                                             if pretrained else None)
    if member is not None:  # the checkpoint's position embedding fixes the image size
        kwargs["image_size"] = member.meta["min_size"][0]
    image_size = kwargs.pop("image_size", 224)
    return build((VisionTransformer, (image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim)),
                 weights_cls, member, False, kwargs, progress)


@register_model(ViT_B_16_Weights)
def vit_b_16(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VisionTransformer:
    """ViT-B/16 (12 layers, 12 heads, width 768)."""
    return _vit(16, 12, 12, 768, 3072, ViT_B_16_Weights, weights, pretrained, kwargs, progress)


@register_model(ViT_B_32_Weights)
def vit_b_32(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VisionTransformer:
    """ViT-B/32 (12 layers, 12 heads, width 768)."""
    return _vit(32, 12, 12, 768, 3072, ViT_B_32_Weights, weights, pretrained, kwargs, progress)


@register_model(ViT_L_16_Weights)
def vit_l_16(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VisionTransformer:
    """ViT-L/16 (24 layers, 16 heads, width 1024)."""
    return _vit(16, 24, 16, 1024, 4096, ViT_L_16_Weights, weights, pretrained, kwargs, progress)


@register_model(ViT_L_32_Weights)
def vit_l_32(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VisionTransformer:
    """ViT-L/32 (24 layers, 16 heads, width 1024)."""
    return _vit(32, 24, 16, 1024, 4096, ViT_L_32_Weights, weights, pretrained, kwargs, progress)


@register_model(ViT_H_14_Weights)
def vit_h_14(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VisionTransformer:
    """ViT-H/14 (32 layers, 16 heads, width 1280)."""
    return _vit(14, 32, 16, 1280, 5120, ViT_H_14_Weights, weights, pretrained, kwargs, progress)
