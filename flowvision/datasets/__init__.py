"""Datasets: small real data shipped with the package, and loaders for the standard ones."""
from .action_recognition import HMDB51, UCF101
from .caltech import Caltech101, Caltech256
from .captions import SBU, Flickr8k, Flickr30k
from .celeba import CelebA
from .cifar import CIFAR10, CIFAR100
from .cityscapes import Cityscapes
from .clevr import CLEVRClassification
from .coco import CocoCaptions, CocoDetection
from .digits import load_digits
from .dtd import DTD
from .fakedata import FakeData
from .fer2013 import FER2013
from .fgvc_aircraft import FGVCAircraft
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder
from .folder_sets import Country211, EuroSAT
from .flowers102 import Flowers102
from .food101 import Food101
from .gtsrb import GTSRB
from .imagenet import ImageNet
from .imagenette import Imagenette
from .inaturalist import INaturalist
from .kinetics import Kinetics
from .kitti import Kitti
from .lfw import LFWPairs, LFWPeople
from .lsun import LSUN, LSUNClass
from .mnist import MNIST, FashionMNIST
from .mnist_variants import EMNIST, KMNIST, QMNIST
from .moving_mnist import MovingMNIST
from .omniglot import Omniglot
from .optical_flow import HD1K, FlyingChairs, FlyingThings3D, KittiFlow, Sintel
from .oxford_iiit_pet import OxfordIIITPet
from .pcam import PCAM
from .phototour import PhotoTour
from .places365 import Places365
from .rendered_sst2 import RenderedSST2
from .sbd import SBDataset
from .semeion import SEMEION
from .stanford_cars import StanfordCars
from .stereo import ETH3DStereo, InStereo2k, Kitti2012Stereo, Kitti2015Stereo, Middlebury2014Stereo
from .stereo_synthetic import CarlaStereo, CREStereo, FallingThingsStereo, SceneFlowStereo, SintelStereo
from .stl10 import STL10
from .sun397 import SUN397
from .svhn import SVHN
from .transforms_v2_wrapper import wrap_dataset_for_transforms_v2
from .usps import USPS
from .utils import VisionDataset
from .voc import VOCDetection, VOCSegmentation
from .widerface import WIDERFace

__all__ = ["Caltech101", "Caltech256", "CarlaStereo", "CelebA", "CIFAR10", "CIFAR100", "Cityscapes",
           "CLEVRClassification", "CocoCaptions", "CocoDetection", "Country211", "CREStereo", "DatasetFolder", "DTD",
           "EMNIST", "ETH3DStereo", "EuroSAT", "FakeData", "FallingThingsStereo", "FashionMNIST", "FER2013",
           "FGVCAircraft", "Flickr30k", "Flickr8k", "Flowers102", "FlyingChairs", "FlyingThings3D", "Food101",
           "GTSRB", "HD1K", "HMDB51", "ImageFolder", "ImageNet", "Imagenette", "IMG_EXTENSIONS", "INaturalist", "InStereo2k",
           "Kinetics", "Kitti", "Kitti2012Stereo", "Kitti2015Stereo", "KittiFlow", "KMNIST", "LFWPairs", "LFWPeople",
           "load_digits", "LSUN", "LSUNClass", "Middlebury2014Stereo", "MNIST", "MovingMNIST", "Omniglot",
           "OxfordIIITPet", "PCAM", "PhotoTour", "Places365", "QMNIST", "RenderedSST2", "SBDataset", "SBU",
           "SceneFlowStereo", "SEMEION", "Sintel", "SintelStereo", "StanfordCars", "STL10", "SUN397", "SVHN", "UCF101", "USPS",
           "VisionDataset", "VOCDetection", "VOCSegmentation", "WIDERFace", "wrap_dataset_for_transforms_v2"]
