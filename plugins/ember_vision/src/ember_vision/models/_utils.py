"""Helpers the detection, segmentation and video builders share, under torchvision's names."""
from __future__ import annotations

from collections import OrderedDict

from ember import nn


class IntermediateLayerGetter(nn.ModuleDict):
    """The direct children of ``model`` up to the last one named in ``return_layers``, run in order; the
    output is a dict of the named children's outputs under their new names.

    >>> from ember_vision.models import resnet18
    >>> getter = IntermediateLayerGetter(resnet18(), {"layer1": "feat1"})
    >>> list(getter)[-1]
    'layer1'
    """

    _version = 2

    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        if not set(return_layers).issubset(name for name, _ in model.named_children()):
            raise ValueError("return_layers are not present in model")
        wanted = {str(k) for k in return_layers}
        layers = OrderedDict()
        for name, module in model.named_children():
            if not wanted:
                break
            layers[name] = module
            wanted.discard(name)
        super().__init__(layers)
        self.return_layers = {str(k): str(v) for k, v in return_layers.items()}

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


def _ovewrite_value_param(param: str, actual, expected):
    """``expected``, after checking that ``actual`` (a user's argument) is None or equal to it."""
    if actual is not None and actual != expected:
        raise ValueError(f"The parameter '{param}' expected value {expected} but got {actual} instead.")
    return expected
