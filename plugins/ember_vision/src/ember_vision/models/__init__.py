"""Model architectures with torchvision's layer and state-dict names, and their pretrained weights.

>>> from ember_vision import models
>>> model = models.resnet18(num_classes=4)
>>> sorted(model.state_dict())[:2]
['bn1.bias', 'bn1.num_batches_tracked']
"""
from ._api import (
    Weights, WeightsEnum, get_dir, get_model, get_model_builder, get_model_weights, get_weight, list_models,
    load_state_dict_from_url, register_model,
)
from .convnext import (
    ConvNeXt, ConvNeXt_Base_Weights, ConvNeXt_Large_Weights, ConvNeXt_Small_Weights, ConvNeXt_Tiny_Weights,
    convnext_base, convnext_large, convnext_small, convnext_tiny,
)
from .densenet import (
    DenseNet, DenseNet121_Weights, DenseNet161_Weights, DenseNet169_Weights, DenseNet201_Weights, densenet121,
    densenet161, densenet169, densenet201,
)
from .shufflenetv2 import (
    ShuffleNet_V2_X0_5_Weights, ShuffleNet_V2_X1_0_Weights, ShuffleNet_V2_X1_5_Weights, ShuffleNet_V2_X2_0_Weights,
    ShuffleNetV2, shufflenet_v2_x0_5, shufflenet_v2_x1_0, shufflenet_v2_x1_5, shufflenet_v2_x2_0,
)
from .squeezenet import SqueezeNet, SqueezeNet1_0_Weights, SqueezeNet1_1_Weights, squeezenet1_0, squeezenet1_1
from .swin_transformer import (
    Swin_B_Weights, Swin_S_Weights, Swin_T_Weights, Swin_V2_B_Weights, Swin_V2_S_Weights, Swin_V2_T_Weights,
    SwinTransformer, swin_b, swin_s, swin_t, swin_v2_b, swin_v2_s, swin_v2_t,
)
from .vision_transformer import (
    ViT_B_16_Weights, ViT_B_32_Weights, ViT_H_14_Weights, ViT_L_16_Weights, ViT_L_32_Weights, VisionTransformer,
    vit_b_16, vit_b_32, vit_h_14, vit_l_16, vit_l_32,
)
from .alexnet import AlexNet, AlexNet_Weights, alexnet
from .lenet import LeNet5, lenet5
from .mobilenetv2 import MobileNet_V2_Weights, MobileNetV2, mobilenet_v2
from .efficientnet import (
    EfficientNet, EfficientNet_B0_Weights, EfficientNet_B1_Weights, EfficientNet_B2_Weights, EfficientNet_B3_Weights,
    EfficientNet_B4_Weights, EfficientNet_B5_Weights, EfficientNet_B6_Weights, EfficientNet_B7_Weights,
    EfficientNet_V2_L_Weights, EfficientNet_V2_M_Weights, EfficientNet_V2_S_Weights, efficientnet_b0,
    efficientnet_b1, efficientnet_b2, efficientnet_b3, efficientnet_b4, efficientnet_b5, efficientnet_b6,
    efficientnet_b7, efficientnet_v2_l, efficientnet_v2_m, efficientnet_v2_s,
)
from .googlenet import GoogLeNet, GoogLeNet_Weights, GoogLeNetOutputs, googlenet
from .inception import Inception3, Inception_V3_Weights, InceptionOutputs, inception_v3
from .maxvit import MaxVit, MaxVit_T_Weights, maxvit_t
from .mnasnet import (
    MNASNet, MNASNet0_5_Weights, MNASNet0_75_Weights, MNASNet1_0_Weights, MNASNet1_3_Weights, mnasnet0_5,
    mnasnet0_75, mnasnet1_0, mnasnet1_3,
)
from .mobilenetv3 import (
    MobileNet_V3_Large_Weights, MobileNet_V3_Small_Weights, MobileNetV3, mobilenet_v3_large, mobilenet_v3_small,
)
from .regnet import (
    RegNet, RegNet_Y_400MF_Weights, RegNet_Y_800MF_Weights, RegNet_Y_1_6GF_Weights, RegNet_Y_3_2GF_Weights,
    RegNet_Y_8GF_Weights, RegNet_Y_16GF_Weights, RegNet_Y_32GF_Weights, RegNet_Y_128GF_Weights,
    RegNet_X_400MF_Weights, RegNet_X_800MF_Weights, RegNet_X_1_6GF_Weights, RegNet_X_3_2GF_Weights,
    RegNet_X_8GF_Weights, RegNet_X_16GF_Weights, RegNet_X_32GF_Weights, regnet_y_400mf, regnet_y_800mf,
    regnet_y_1_6gf, regnet_y_3_2gf, regnet_y_8gf, regnet_y_16gf, regnet_y_32gf, regnet_y_128gf, regnet_x_400mf,
    regnet_x_800mf, regnet_x_1_6gf, regnet_x_3_2gf, regnet_x_8gf, regnet_x_16gf, regnet_x_32gf,
)
from .resnet import (
    ResNet, ResNet18_Weights, ResNet34_Weights, ResNet50_Weights, ResNet101_Weights, ResNet152_Weights,
    ResNeXt50_32X4D_Weights, ResNeXt101_32X8D_Weights, ResNeXt101_64X4D_Weights, Wide_ResNet50_2_Weights,
    Wide_ResNet101_2_Weights, resnet18, resnet34, resnet50, resnet101, resnet152, resnext50_32x4d, resnext101_32x8d,
    resnext101_64x4d, wide_resnet50_2, wide_resnet101_2,
)
from .vgg import (
    VGG, VGG11_BN_Weights, VGG11_Weights, VGG13_BN_Weights, VGG13_Weights, VGG16_BN_Weights, VGG16_Weights,
    VGG19_BN_Weights, VGG19_Weights, vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn,
)

for _builder, _weights in [(alexnet, AlexNet_Weights), (mobilenet_v2, MobileNet_V2_Weights), (vgg11, VGG11_Weights),
                           (vgg11_bn, VGG11_BN_Weights), (vgg13, VGG13_Weights), (vgg13_bn, VGG13_BN_Weights),
                           (vgg16, VGG16_Weights), (vgg16_bn, VGG16_BN_Weights),
                           (vgg19, VGG19_Weights), (vgg19_bn, VGG19_BN_Weights)]:
    register_model(_weights)(_builder)  # builders declared before the registry existed

from . import detection, mobilenet, optical_flow, segmentation, video  # noqa: E402  (after the backbones they build on)
