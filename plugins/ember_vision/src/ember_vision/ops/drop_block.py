"""DropBlock (Ghiasi et al. 2018): drop contiguous square (cubic) regions of feature maps, rescaling the rest."""
from __future__ import annotations

import math

import ember
from ember import Tensor, nn
from ember.nn import functional as F


def _drop_block(input: Tensor, p: float, block_size: int, inplace: bool, eps: float, training: bool,
                dims: int) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}.")
    if input.ndim != dims + 2:
        raise ValueError(f"input should be {dims + 2} dimensional. Got {input.ndim} dimensions.")
    if not training or p == 0.0:
        return input
    spatial = list(input.shape[2:])
    block_size = min([block_size] + spatial)
    if block_size % 2 == 0:
        raise ValueError(f"block size should be odd. Got {block_size} which is even.")
    valid = [s - block_size + 1 for s in spatial]
    gamma = p * math.prod(spatial) / (block_size ** dims * math.prod(valid))
    noise = ember.empty(list(input.shape[:2]) + valid, dtype=input.dtype, device=input.device).bernoulli_(gamma)
    noise = F.pad(noise, [block_size // 2] * (2 * dims), value=0)
    pool = F.max_pool2d if dims == 2 else F.max_pool3d
    noise = 1 - pool(noise, kernel_size=block_size, stride=1, padding=block_size // 2)
    scale = noise.numel() / (eps + noise.sum())
    if inplace:
        return input.mul_(noise).mul_(scale)
    return input * noise * scale


def drop_block2d(input: Tensor, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06,
                 training: bool = True) -> Tensor:
    """DropBlock on ``[N, C, H, W]``: ``block_size`` squares dropped so that about a share ``p`` of the
    positions is zeroed, the rest scaled to keep the mean."""
    return _drop_block(input, p, block_size, inplace, eps, training, 2)


def drop_block3d(input: Tensor, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06,
                 training: bool = True) -> Tensor:
    """DropBlock on ``[N, C, D, H, W]`` with cubic blocks."""
    return _drop_block(input, p, block_size, inplace, eps, training, 3)


class DropBlock2d(nn.Module):
    """See :func:`drop_block2d`."""

    def __init__(self, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06) -> None:
        super().__init__()
        self.p, self.block_size, self.inplace, self.eps = p, block_size, inplace, eps

    def forward(self, input: Tensor) -> Tensor:
        return drop_block2d(input, self.p, self.block_size, self.inplace, self.eps, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, block_size={self.block_size}, inplace={self.inplace})"


class DropBlock3d(DropBlock2d):
    """See :func:`drop_block3d`."""

    def forward(self, input: Tensor) -> Tensor:
        return drop_block3d(input, self.p, self.block_size, self.inplace, self.eps, self.training)
