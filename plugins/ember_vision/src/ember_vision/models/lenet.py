"""LeNet-5 for 1x32x32 inputs, as the classic PyTorch tutorial network (no pretrained weights)."""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F


class LeNet5(nn.Module):
    """conv(1->6, 5) - pool - conv(6->16, 5) - pool - fc 400->120->84->``num_classes``."""

    def __init__(self, num_classes: int = 10, in_channels: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.reshape(x.shape[0], -1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def lenet5(*, weights=None, pretrained: bool = False, **kwargs) -> LeNet5:
    """LeNet-5; it has no published weights, so ``weights``/``pretrained`` must be left unset.

    >>> lenet5().fc3.out_features
    10
    """
    if weights is not None or pretrained:
        raise ValueError("lenet5: no pretrained weights are published for LeNet-5")
    return LeNet5(**kwargs)
