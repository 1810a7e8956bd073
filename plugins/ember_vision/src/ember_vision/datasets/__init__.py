"""Vision datasets: folders of images, FakeData, MNIST, FashionMNIST and CIFAR-10.

>>> from ember_vision import datasets
>>> len(datasets.FakeData(size=3))
3
"""
from .cifar import CIFAR10
from .fakedata import FakeData
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader, find_classes, make_dataset
from .mnist import MNIST, FashionMNIST, read_idx
from .vision import VisionDataset
from . import utils
