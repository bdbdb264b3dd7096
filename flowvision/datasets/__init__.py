"""Datasets: small real data shipped with the package, and loaders for the standard ones."""
from .cifar import CIFAR10, CIFAR100
from .digits import load_digits
from .fakedata import FakeData
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder
from .mnist import MNIST, FashionMNIST
from .utils import VisionDataset

__all__ = ["CIFAR10", "CIFAR100", "DatasetFolder", "FakeData", "FashionMNIST", "IMG_EXTENSIONS", "ImageFolder",
           "MNIST", "VisionDataset", "load_digits"]
