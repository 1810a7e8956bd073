"""Model architectures with torchvision's layer and state-dict names, and their pretrained weights.

>>> from ember_vision import models
>>> model = models.resnet18(num_classes=4)
>>> sorted(model.state_dict())[:2]
['bn1.bias', 'bn1.num_batches_tracked']
"""
from ._api import Weights, WeightsEnum, get_dir, load_state_dict_from_url
from .alexnet import AlexNet, AlexNet_Weights, alexnet
from .lenet import LeNet5, lenet5
from .mobilenetv2 import MobileNet_V2_Weights, MobileNetV2, mobilenet_v2
from .resnet import ResNet, ResNet18_Weights, ResNet34_Weights, ResNet50_Weights, resnet18, resnet34, resnet50
from .vgg import (
    VGG, VGG11_BN_Weights, VGG11_Weights, VGG16_BN_Weights, VGG16_Weights, VGG19_BN_Weights, VGG19_Weights, vgg11,
    vgg11_bn, vgg16, vgg16_bn, vgg19, vgg19_bn,
)
