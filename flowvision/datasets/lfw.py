"""Labeled Faces in the Wild: ``lfw-py/<lfw|lfw_funneled|lfw-deepfunneled>/<Name>/<Name>_<nnnn>.jpg`` with the
identity lists (``people*.txt``, ``lfw-names.txt``) and the verification pairs (``pairs*.txt``) beside them.

The lists come as 10 folds (``people.txt`` / ``pairs.txt``, the first line giving the folds) or as the development
train/test split (``*DevTrain.txt`` / ``*DevTest.txt``). A people list is, per fold, a count then "name<TAB>images"
lines; a pairs list is, per fold, n matched "name<TAB>i<TAB>j" then n unmatched "name<TAB>i<TAB>other<TAB>j" lines.
"""
import os

from .folder import default_loader
from .utils import VisionDataset, check_integrity
from .vision import verify_str_arg

__all__ = ["LFWPeople", "LFWPairs"]


class _LFW(VisionDataset):
    """What both views share: the image set's folder and archive, the list file and the integrity checks."""

    base_folder = "lfw-py"
    download_url_prefix = "http://vis-www.cs.umass.edu/lfw/"
    file_dict = {
        "original": ("lfw", "lfw.tgz", "a17d05bd522c52d84eca14327a23d494"),
        "funneled": ("lfw_funneled", "lfw-funneled.tgz", "1b42dfed7d15c9b2dd63d5e5840c86ad"),
        "deepfunneled": ("lfw-deepfunneled", "lfw-deepfunneled.tgz", "68331da3eb755a505a502b5aacb3c201"),
    }
    checksums = {
        "pairs.txt": "9f1ba174e4e1c508ff7cdf10ac338a7d",
        "pairsDevTest.txt": "5132f7440eb68cf58910c8a45a2ac10b",
        "pairsDevTrain.txt": "4f27cbf15b2da4a85c1907eb4181ad21",
        "people.txt": "450f0863dd89e85e73936a6d71a3474b",
        "peopleDevTest.txt": "e4bf5be0a43b5dcd9dc5ccfcb8fb19c5",
        "peopleDevTrain.txt": "54eaac34beb6d042ed3a7d883e247a21",
        "lfw-names.txt": "a6d0a479bd074669f656265a6e693f6d",
    }
    annot_file = {"10fold": "", "train": "DevTrain", "test": "DevTest"}
    names = "lfw-names.txt"

    def __init__(self, root, split, image_set, view, transform=None, target_transform=None, download=False,
                 loader=default_loader):
        super().__init__(os.path.join(root, self.base_folder), transform=transform, target_transform=target_transform)
        self.image_set = verify_str_arg(image_set.lower(), "image_set", self.file_dict.keys())
        images_dir, self.filename, self.md5 = self.file_dict[self.image_set]
        self.view = verify_str_arg(view.lower(), "view", ["people", "pairs"])
        self.split = verify_str_arg(split.lower(), "split", ["10fold", "train", "test"])
        self.labels_file = f"{self.view}{self.annot_file[self.split]}.txt"
        self.data = []
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        self.images_dir = os.path.join(self.root, images_dir)
        self._loader = loader

    def download(self):
        """Refuses, as torchvision's does: the University of Massachusetts server no longer serves the archives."""
        raise ValueError("LFW dataset is no longer available for automatic download.Please download the dataset "
                         "manually and place it in the specified directory.A commonly used mirror is available "
                         "at: https://www.kaggle.com/datasets/jessicali9530/lfw-dataset")

    def _check_integrity(self):
        files = [(self.filename, self.md5), (self.labels_file, self.checksums[self.labels_file])]
        if self.view == "people":
            files.append((self.names, self.checksums[self.names]))
        return all(check_integrity(os.path.join(self.root, name), md5) for name, md5 in files)

    def _get_path(self, identity, number):
        return os.path.join(self.images_dir, identity, f"{identity}_{int(number):04d}.jpg")

    def _read_lines(self):
        with open(os.path.join(self.root, self.labels_file)) as f:
            return f.readlines()

    def extra_repr(self):
        return f"Alignment: {self.image_set}\nSplit: {self.split}"

    def __len__(self):
        return len(self.data)


class LFWPeople(_LFW):
    """Items are (image, identity index), the identities numbered in ``lfw-names.txt`` order."""

    def __init__(self, root, split="10fold", image_set="funneled", transform=None, target_transform=None,
                 download=False, loader=default_loader):
        super().__init__(root, split, image_set, "people", transform, target_transform, download, loader=loader)
        self.class_to_idx = self._get_classes()
        self.data, self.targets = self._get_people()

    def _get_people(self):
        lines = self._read_lines()
        folds, pos = (int(lines[0]), 1) if self.split == "10fold" else (1, 0)
        data, targets = [], []
        for _ in range(folds):
            count = int(lines[pos])
            for line in lines[pos + 1:pos + count + 1]:
                identity, images = line.strip().split("\t")
                for number in range(1, int(images) + 1):
                    data.append(self._get_path(identity, number))
                    targets.append(self.class_to_idx[identity])
            pos += count + 1
        return data, targets

    def _get_classes(self):
        with open(os.path.join(self.root, self.names)) as f:
            return {line.strip().split()[0]: i for i, line in enumerate(f.readlines())}

    def __getitem__(self, index):
        return self._apply(self._loader(self.data[index]), self.targets[index])

    def extra_repr(self):
        return super().extra_repr() + f"\nClasses (identities): {len(self.class_to_idx)}"


class LFWPairs(_LFW):
    """Items are (image1, image2, 1 if the same person else 0); ``transform`` applies to both images."""

    def __init__(self, root, split="10fold", image_set="funneled", transform=None, target_transform=None,
                 download=False, loader=default_loader):
        super().__init__(root, split, image_set, "pairs", transform, target_transform, download, loader=loader)
        self.pair_names, self.data, self.targets = self._get_pairs()

    def _get_pairs(self):
        lines = self._read_lines()
        if self.split == "10fold":
            folds, pairs = (int(v) for v in lines[0].split("\t"))
        else:
            folds, pairs = 1, int(lines[0])
        names, data, targets = [], [], []
        pos = 1
        for _ in range(folds):
            for offset, same in ((0, 1), (pairs, 0)):
                for line in lines[pos + offset:pos + offset + pairs]:
                    fields = line.strip().split("\t")
                    other, other_number = (fields[0], fields[2]) if same else (fields[2], fields[3])
                    names.append((fields[0], other))
                    data.append((self._get_path(fields[0], fields[1]), self._get_path(other, other_number)))
                    targets.append(same)
            pos += 2 * pairs
        return names, data, targets

    def __getitem__(self, index):
        image1, image2 = (self._loader(path) for path in self.data[index])
        target = self.targets[index]
        if self.transform is not None:
            image1, image2 = self.transform(image1), self.transform(image2)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image1, image2, target
