"""Semantic segmentation: FCN, DeepLabV3 and LR-ASPP with torchvision's names and state-dict keys."""
from .deeplabv3 import (
    ASPP, DeepLabHead, DeepLabV3, DeepLabV3_MobileNet_V3_Large_Weights, DeepLabV3_ResNet50_Weights,
    DeepLabV3_ResNet101_Weights, deeplabv3_mobilenet_v3_large, deeplabv3_resnet50, deeplabv3_resnet101,
)
from .fcn import FCN, FCN_ResNet50_Weights, FCN_ResNet101_Weights, FCNHead, fcn_resnet50, fcn_resnet101
from .lraspp import LRASPP, LRASPP_MobileNet_V3_Large_Weights, LRASPPHead, lraspp_mobilenet_v3_large
