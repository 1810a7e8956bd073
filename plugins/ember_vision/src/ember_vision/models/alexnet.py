"""AlexNet (Krizhevsky 2014's "one weird trick" variant, as torchvision)."""
from __future__ import annotations

import ember
from ember import nn

from ._api import _weights_enum, build

AlexNet_Weights = _weights_enum("AlexNet_Weights", "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth")


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000, dropout: float = 0.5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        return self.classifier(ember.flatten(self.avgpool(self.features(x)), 1))


def alexnet(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> AlexNet:
    """AlexNet; ``pretrained=True`` loads ImageNet weights."""
    return build((AlexNet, ()), AlexNet_Weights, weights, pretrained, kwargs, progress)
