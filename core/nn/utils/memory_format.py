"""``nn.utils.convert_conv{2,3}d_weight_memory_format``: the weight layout of convolution layers.

ember tensors have one (row-major) layout, so there is no channels-last storage to convert to: the
functions walk the module tree as PyTorch's do, give every (transposed) convolution weight a
contiguous copy of its values, and return the module; results are unchanged.

>>> import ember
>>> net = ember.nn.Sequential(ember.nn.Conv2d(8, 4, 3), ember.nn.ReLU())
>>> ember.nn.utils.convert_conv2d_weight_memory_format(net, "channels_last") is net
True
"""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d


def _convert(module, kinds, memory_format):
    if isinstance(module, kinds):
        with no_grad():
            module.weight.data = module.weight.detach().contiguous()
    for child in module.children():
        _convert(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Give every ``Conv2d``/``ConvTranspose2d`` weight in ``module`` the layout ``memory_format``; returns it."""
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module, memory_format):
    """Give every ``Conv3d``/``ConvTranspose3d`` weight in ``module`` the layout ``memory_format``; returns it."""
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
