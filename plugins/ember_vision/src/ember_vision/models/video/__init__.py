"""Video classification: R3D, MC3, R(2+1)D, S3D, MViT and Video Swin with torchvision's names and state-dict keys.
Inputs are clips ``(N, 3, T, H, W)``."""
from .mvit import MSBlockConfig, MViT, MViT_V1_B_Weights, MViT_V2_S_Weights, mvit_v1_b, mvit_v2_s
from .resnet import (
    MC3_18_Weights, R2Plus1D_18_Weights, R3D_18_Weights, VideoResNet, mc3_18, r2plus1d_18, r3d_18,
)
from .s3d import S3D, S3D_Weights, s3d
from .swin_transformer import (
    Swin3D_B_Weights, Swin3D_S_Weights, Swin3D_T_Weights, SwinTransformer3d, swin3d_b, swin3d_s, swin3d_t,
)
