"""Vision datasets in torchvision's on-disk layouts: image folders, FakeData, the MNIST family, CIFAR, SVHN,
STL-10, FER2013, Food101, DTD, GTSRB, Flowers102, OxfordIIITPet, VOC, COCO, CelebA, Caltech101, EuroSAT,
Country211, RenderedSST2, USPS, SEMEION, Imagenette, SUN397, FGVCAircraft, StanfordCars, Places365,
INaturalist, CLEVRClassification, MovingMNIST, Omniglot, ImageNet (unpacked), the optical-flow sets
FlyingChairs, FlyingThings3D, Sintel, KittiFlow and HD1K, the stereo-matching sets (KITTI 2012/2015, Middlebury
2014, Carla, CREStereo, FallingThings, SceneFlow, Sintel, InStereo2k, ETH3D), LFWPeople/LFWPairs, WIDERFace,
Kitti, Cityscapes, SBDataset, PhotoTour, Flickr8k/30k, SBU, PCAM (with h5py), LSUN (with lmdb), and the video sets
Kinetics, HMDB51 and UCF101 (with PyAV).

>>> from ember_vision import datasets
>>> len(datasets.FakeData(size=3))
3
"""
from ._optical_flow import HD1K, FlyingChairs, FlyingThings3D, KittiFlow, Sintel
from ._stereo_matching import (CarlaStereo, CREStereo, ETH3DStereo, FallingThingsStereo, InStereo2k, Kitti2012Stereo,
                               Kitti2015Stereo, Middlebury2014Stereo, SceneFlowStereo, SintelStereo)
from .caltech import Caltech101, Caltech256
from .cityscapes import Cityscapes
from .clevr import CLEVRClassification
from .celeba import CelebA
from .cifar import CIFAR10, CIFAR100
from .coco import CocoCaptions, CocoDetection
from .digits import SEMEION, USPS
from .dtd import DTD
from .fakedata import FakeData
from .flowers102 import Flowers102
from .food101 import Food101
from .folder_sets import Country211, EuroSAT, RenderedSST2
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader, find_classes, make_dataset
from .fer2013 import FER2013
from .fgvc_aircraft import FGVCAircraft
from .flickr import Flickr8k, Flickr30k
from .gtsrb import GTSRB
from .hmdb51 import HMDB51
from .imagenet import ImageNet
from .inaturalist import INaturalist
from .imagenette import Imagenette
from .kinetics import Kinetics
from .kitti import Kitti
from .lfw import LFWPairs, LFWPeople
from .lsun import LSUN, LSUNClass
from .mnist import EMNIST, KMNIST, MNIST, QMNIST, FashionMNIST, read_idx
from .moving_mnist import MovingMNIST
from .omniglot import Omniglot
from .oxford_iiit_pet import OxfordIIITPet
from .pcam import PCAM
from .phototour import PhotoTour
from .places365 import Places365
from .sbd import SBDataset
from .sbu import SBU
from .stanford_cars import StanfordCars
from .stl10 import STL10
from .sun397 import SUN397
from .svhn import SVHN
from .ucf101 import UCF101
from .vision import VisionDataset
from .voc import VOCDetection, VOCSegmentation
from .widerface import WIDERFace
from . import country211, eurosat, hmdb51, kinetics, rendered_sst2, semeion, ucf101, usps, utils, video_utils
