"""Image-caption datasets: Flickr8k (captions in the dataset's HTML page), Flickr30k (a tab-separated token file)
and SBU Captioned Photos (a list of Flickr URLs and a parallel list of captions)."""
import glob
import os
from collections import defaultdict
from html.parser import HTMLParser

from .folder import default_loader
from .utils import VisionDataset, check_integrity, download_and_extract_archive, download_url

__all__ = ["Flickr8k", "Flickr30k", "SBU"]


class Flickr8kParser(HTMLParser):
    """Collects, inside the page's table, each image link's id (resolved to ``root/<id>_*.jpg``) and the caption
    list items after it; an "Image Not Found" cell drops the captions that follow."""

    def __init__(self, root):
        super().__init__()
        self.root = root
        self.annotations = {}
        self.in_table = False
        self.current_tag = None
        self.current_img = None

    def handle_starttag(self, tag, attrs):
        self.current_tag = tag
        if tag == "table":
            self.in_table = True

    def handle_endtag(self, tag):
        self.current_tag = None
        if tag == "table":
            self.in_table = False

    def handle_data(self, data):
        if not self.in_table:
            return
        if data == "Image Not Found":
            self.current_img = None
        elif self.current_tag == "a":
            image_id = data.split("/")[-2]
            self.current_img = glob.glob(os.path.join(self.root, image_id + "_*.jpg"))[0]
            self.annotations[self.current_img] = []
        elif self.current_tag == "li" and self.current_img:
            self.annotations[self.current_img].append(data.strip())


class _CaptionedImages(VisionDataset):
    """Items (image, list of captions) of ``self.ids`` (sorted), loaded from ``self._path(id)``."""

    def __init__(self, root, ann_file, transform=None, target_transform=None, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.ann_file = os.path.expanduser(ann_file)
        self.loader = loader
        self.annotations = self._read_annotations()
        self.ids = sorted(self.annotations)

    def __getitem__(self, index):
        image_id = self.ids[index]
        return self._apply(self.loader(self._path(image_id)), self.annotations[image_id])

    def __len__(self):
        return len(self.ids)


class Flickr8k(_CaptionedImages):
    """Flickr8k: the images in ``root`` and ``ann_file`` the HTML page listing five captions per image."""

    def _read_annotations(self):
        parser = Flickr8kParser(self.root)
        with open(self.ann_file) as f:
            parser.feed(f.read())
        return parser.annotations

    def _path(self, image_id):
        return image_id


class Flickr30k(_CaptionedImages):
    """Flickr30k: the images in ``root`` and ``ann_file`` the lines "<file>#<n><TAB><caption>"."""

    def _read_annotations(self):
        annotations = defaultdict(list)
        with open(self.ann_file) as f:
            for line in f:
                image_id, caption = line.strip().split("\t")
                annotations[image_id[:-2]].append(caption)
        return annotations

    def _path(self, image_id):
        return os.path.join(self.root, image_id)


class SBU(VisionDataset):
    """SBU Captioned Photos: items are (image, caption) for the photos of the URL list present in
    ``root/dataset``. ``download`` (default True, as torchvision's) unpacks the lists, then fetches every photo,
    skipping those that fail (many are gone from Flickr)."""

    url = "https://www.cs.rice.edu/~vo9/sbucaptions/SBUCaptionedPhotoDataset.tar.gz"
    filename = "SBUCaptionedPhotoDataset.tar.gz"
    md5_checksum = "9aec147b3488753cf758b4d493422285"

    def __init__(self, root, transform=None, target_transform=None, download=True, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.loader = loader
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        self.photos, self.captions = [], []
        folder = os.path.join(self.root, "dataset")
        with open(os.path.join(folder, "SBU_captioned_photo_dataset_urls.txt")) as urls, \
                open(os.path.join(folder, "SBU_captioned_photo_dataset_captions.txt")) as captions:
            for url, caption in zip(urls, captions):
                photo = os.path.basename(url.rstrip())
                if os.path.exists(os.path.join(folder, photo)):
                    self.photos.append(photo)
                    self.captions.append(caption.rstrip())

    def __getitem__(self, index):
        image = self.loader(os.path.join(self.root, "dataset", self.photos[index]))
        return self._apply(image, self.captions[index])

    def __len__(self):
        return len(self.photos)

    def _check_integrity(self):
        return check_integrity(os.path.join(self.root, self.filename), self.md5_checksum)

    def download(self):
        """Unpack the lists archive, then fetch each listed photo that is missing; failures are skipped."""
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, self.root, self.filename, self.md5_checksum)
        folder = os.path.join(self.root, "dataset")
        with open(os.path.join(folder, "SBU_captioned_photo_dataset_urls.txt")) as f:
            for line in f:
                try:
                    download_url(line.rstrip(), folder)
                except (OSError, RuntimeError):
                    pass  # the photo is gone: the dataset keeps the photos present
