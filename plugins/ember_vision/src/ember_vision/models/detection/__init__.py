"""Object detection, instance segmentation and person key points: torchvision's detection models with its
constructor arguments, module names and state-dict keys."""
from .faster_rcnn import (
    FasterRCNN, FasterRCNN_MobileNet_V3_Large_320_FPN_Weights, FasterRCNN_MobileNet_V3_Large_FPN_Weights,
    FasterRCNN_ResNet50_FPN_V2_Weights, FasterRCNN_ResNet50_FPN_Weights, fasterrcnn_mobilenet_v3_large_320_fpn,
    fasterrcnn_mobilenet_v3_large_fpn, fasterrcnn_resnet50_fpn, fasterrcnn_resnet50_fpn_v2,
)
from .fcos import FCOS, FCOS_ResNet50_FPN_Weights, fcos_resnet50_fpn
from .keypoint_rcnn import KeypointRCNN, KeypointRCNN_ResNet50_FPN_Weights, keypointrcnn_resnet50_fpn
from .mask_rcnn import (
    MaskRCNN, MaskRCNN_ResNet50_FPN_V2_Weights, MaskRCNN_ResNet50_FPN_Weights, maskrcnn_resnet50_fpn,
    maskrcnn_resnet50_fpn_v2,
)
from .retinanet import (
    RetinaNet, RetinaNet_ResNet50_FPN_V2_Weights, RetinaNet_ResNet50_FPN_Weights, retinanet_resnet50_fpn,
    retinanet_resnet50_fpn_v2,
)
from .ssd import SSD, SSD300_VGG16_Weights, ssd300_vgg16
from .ssdlite import SSDLite320_MobileNet_V3_Large_Weights, ssdlite320_mobilenet_v3_large
