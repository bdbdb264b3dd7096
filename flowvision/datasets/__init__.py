"""Datasets: small real data shipped with the package, and loaders for the standard ones."""
from .caltech import Caltech101, Caltech256
from .celeba import CelebA
from .cifar import CIFAR10, CIFAR100
from .cityscapes import Cityscapes
from .coco import CocoCaptions, CocoDetection
from .digits import load_digits
from .dtd import DTD
from .fakedata import FakeData
from .fgvc_aircraft import FGVCAircraft
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder
from .folder_sets import Country211, EuroSAT
from .flowers102 import Flowers102
from .food101 import Food101
from .gtsrb import GTSRB
from .imagenet import ImageNet
from .kitti import Kitti
from .mnist import MNIST, FashionMNIST
from .mnist_variants import EMNIST, KMNIST, QMNIST
from .oxford_iiit_pet import OxfordIIITPet
from .places365 import Places365
from .sbd import SBDataset
from .stanford_cars import StanfordCars
from .stl10 import STL10
from .sun397 import SUN397
from .svhn import SVHN
from .transforms_v2_wrapper import wrap_dataset_for_transforms_v2
from .usps import USPS
from .utils import VisionDataset
from .voc import VOCDetection, VOCSegmentation
from .widerface import WIDERFace

__all__ = ["Caltech101", "Caltech256", "CelebA", "CIFAR10", "CIFAR100", "Cityscapes", "CocoCaptions", "CocoDetection",
           "Country211", "DatasetFolder", "DTD", "EMNIST", "EuroSAT", "FakeData", "FashionMNIST", "FGVCAircraft",
           "Flowers102", "Food101", "GTSRB", "ImageFolder", "ImageNet", "IMG_EXTENSIONS", "Kitti", "KMNIST",
           "load_digits", "MNIST", "OxfordIIITPet", "Places365", "QMNIST", "SBDataset", "StanfordCars", "STL10",
           "SUN397", "SVHN", "USPS", "VisionDataset", "VOCDetection", "VOCSegmentation", "WIDERFace",
           "wrap_dataset_for_transforms_v2"]
