"""Feature Pyramid Network (Lin et al. 2017) with torchvision's module names and extra blocks."""
from __future__ import annotations

from collections import OrderedDict

from ember import Tensor, nn
from ember.nn import functional as F

from .misc import Conv2dNormActivation


class ExtraFPNBlock(nn.Module):
    """Base class of the blocks that extend an FPN's outputs: ``forward(results, x, names)`` returns the
    extended ``(results, names)``."""

    def forward(self, results: list, x: list, names: list):
        raise NotImplementedError


class FeaturePyramidNetwork(nn.Module):
    """FPN over an ordered dict of feature maps of increasing depth: a 1x1 lateral conv per level
    (``inner_blocks``), a top-down pathway by nearest upsampling, and a 3x3 output conv per level
    (``layer_blocks``); ``extra_blocks`` may add levels."""

    def __init__(self, in_channels_list: list[int], out_channels: int, extra_blocks: ExtraFPNBlock | None = None,
                 norm_layer=None):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError("in_channels=0 is currently not supported")
            self.inner_blocks.append(Conv2dNormActivation(in_channels, out_channels, kernel_size=1, padding=0,
                                                          norm_layer=norm_layer, activation_layer=None))
            self.layer_blocks.append(Conv2dNormActivation(out_channels, out_channels, kernel_size=3,
                                                          norm_layer=norm_layer, activation_layer=None))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        if extra_blocks is not None and not isinstance(extra_blocks, ExtraFPNBlock):
            raise TypeError(f"extra_blocks should be of type ExtraFPNBlock not {type(extra_blocks)}")
        self.extra_blocks = extra_blocks

    def get_result_from_inner_blocks(self, x: Tensor, idx: int) -> Tensor:
        """``self.inner_blocks[idx](x)``."""
        return self.inner_blocks[idx](x)

    def get_result_from_layer_blocks(self, x: Tensor, idx: int) -> Tensor:
        """``self.layer_blocks[idx](x)``."""
        return self.layer_blocks[idx](x)

    def forward(self, x: dict) -> dict:
        names, x = list(x.keys()), list(x.values())
        last_inner = self.get_result_from_inner_blocks(x[-1], -1)
        results = [self.get_result_from_layer_blocks(last_inner, -1)]
        for idx in range(len(x) - 2, -1, -1):
            lateral = self.get_result_from_inner_blocks(x[idx], idx)
            last_inner = lateral + F.interpolate(last_inner, size=lateral.shape[-2:], mode="nearest")
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, x, names)
        return OrderedDict(zip(names, results))


class LastLevelMaxPool(ExtraFPNBlock):
    """Adds a ``pool`` level: the last output subsampled by 2."""

    def forward(self, x: list, y: list, names: list):
        names.append("pool")
        x.append(F.max_pool2d(x[-1], kernel_size=1, stride=2, padding=0))
        return x, names


class LastLevelP6P7(ExtraFPNBlock):
    """RetinaNet's extra levels ``p6`` and ``p7`` (stride-2 3x3 convs), from P5 when the channel counts match,
    else from C5."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        for module in (self.p6, self.p7):
            nn.init.kaiming_uniform_(module.weight, a=1)
            nn.init.constant_(module.bias, 0)
        self.use_P5 = in_channels == out_channels

    def forward(self, p: list, c: list, names: list):
        p6 = self.p6(p[-1] if self.use_P5 else c[-1])
        p7 = self.p7(F.relu(p6))
        p.extend([p6, p7])
        names.extend(["p6", "p7"])
        return p, names
