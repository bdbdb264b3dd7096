"""iNaturalist 2017-2021: one folder per species under ``root/<version>``. 2021's folder names carry the taxonomy
("<id:05d>_<kingdom>_<phylum>_<class>_<order>_<family>_<genus>_<species>"); earlier versions nest the species under
a super-category folder (2018/2019 name them by number)."""
import os

from PIL import Image

from .utils import VisionDataset, download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["INaturalist"]

CATEGORIES_2021 = ["kingdom", "phylum", "class", "order", "family", "genus"]
DATASET_URLS = {
    "2017": "https://ml-inat-competition-datasets.s3.amazonaws.com/2017/train_val_images.tar.gz",
    "2018": "https://ml-inat-competition-datasets.s3.amazonaws.com/2018/train_val2018.tar.gz",
    "2019": "https://ml-inat-competition-datasets.s3.amazonaws.com/2019/train_val2019.tar.gz",
    "2021_train": "https://ml-inat-competition-datasets.s3.amazonaws.com/2021/train.tar.gz",
    "2021_train_mini": "https://ml-inat-competition-datasets.s3.amazonaws.com/2021/train_mini.tar.gz",
    "2021_valid": "https://ml-inat-competition-datasets.s3.amazonaws.com/2021/val.tar.gz",
}
DATASET_MD5 = {
    "2017": "7c784ea5e424efaec655bd392f87301f",
    "2018": "b1c6952ce38f31868cc50ea72d066cc3",
    "2019": "c60a6e2962c9b8ccbd458d12c8582644",
    "2021_train": "e0526d53c7f7b2e3167b2b43bb2690ed",
    "2021_train_mini": "db6ed8330e634445efc8fec83ae81442",
    "2021_valid": "f6f6e0e242e3d4c9569ba56400938afc",
}


class INaturalist(VisionDataset):
    """Items are (image, target): per ``target_type`` entry ("full": the species index, else the index of the
    species' category of that level: a 2021 rank, or "super" before 2021), one value, or a tuple of several.

    Images are opened with PIL (not converted) unless ``loader`` is given; files come in directory-listing order.
    """

    def __init__(self, root, version="2021_train", target_type="full", transform=None, target_transform=None,
                 download=False, loader=None):
        self.version = verify_str_arg(version, "version", DATASET_URLS.keys())
        super().__init__(os.path.join(root, version), transform=transform, target_transform=target_transform)
        os.makedirs(root, exist_ok=True)
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        self.all_categories = []
        self.categories_index = {}
        self.categories_map = []
        target_types = target_type if isinstance(target_type, list) else [target_type]
        if self.version.startswith("2021"):
            self.target_type = [verify_str_arg(t, "target_type", ("full", *CATEGORIES_2021)) for t in target_types]
            self._init_2021()
        else:
            self.target_type = [verify_str_arg(t, "target_type", ("full", "super")) for t in target_types]
            self._init_pre2021()
        self.index = [(category, name) for category, folder in enumerate(self.all_categories)
                      for name in os.listdir(os.path.join(self.root, folder))]
        self.loader = loader

    def _init_2021(self):
        """Number each rank's names in order of first appearance over the sorted species folders."""
        self.all_categories = sorted(os.listdir(self.root))
        self.categories_index = {rank: {} for rank in CATEGORIES_2021}
        for index, folder in enumerate(self.all_categories):
            pieces = folder.split("_")
            if len(pieces) != 8:
                raise RuntimeError(f"Unexpected category name {folder}, wrong number of pieces")
            if pieces[0] != f"{index:05d}":
                raise RuntimeError(f"Unexpected category id {pieces[0]}, expecting {index:05d}")
            ranks = {}
            for rank, name in zip(CATEGORIES_2021, pieces[1:7]):
                ranks[rank] = self.categories_index[rank].setdefault(name, len(self.categories_index[rank]))
            self.categories_map.append(ranks)

    def _init_pre2021(self):
        """Species numbered in folder order (2017) or by their numeric folder names (2018, 2019)."""
        self.categories_index = {"super": {}}
        next_index = 0
        for super_index, super_name in enumerate(sorted(os.listdir(self.root))):
            self.categories_index["super"][super_name] = super_index
            for species in sorted(os.listdir(os.path.join(self.root, super_name))):
                if self.version == "2017":
                    index, next_index = next_index, next_index + 1
                else:
                    try:
                        index = int(species)
                    except ValueError:
                        raise RuntimeError(f"Unexpected non-numeric dir name: {species}") from None
                if index >= len(self.categories_map):
                    grow = index - len(self.categories_map) + 1
                    self.categories_map.extend([{}] * grow)
                    self.all_categories.extend([""] * grow)
                if self.categories_map[index]:
                    raise RuntimeError(f"Duplicate category {species}")
                self.categories_map[index] = {"super": super_index}
                self.all_categories[index] = os.path.join(super_name, species)
        for index, ranks in enumerate(self.categories_map):
            if not ranks:
                raise RuntimeError(f"Missing category {index}")

    def __getitem__(self, index):
        category, name = self.index[index]
        path = os.path.join(self.root, self.all_categories[category], name)
        image = self.loader(path) if self.loader is not None else Image.open(path)
        target = [category if t == "full" else self.categories_map[category][t] for t in self.target_type]
        return self._apply(image, tuple(target) if len(target) > 1 else target[0])

    def __len__(self):
        return len(self.index)

    def category_name(self, category_type, category_id):
        """The name of category ``category_id`` of a level ("full" gives the species folder)."""
        if category_type == "full":
            return self.all_categories[category_id]
        if category_type not in self.categories_index:
            raise ValueError(f"Invalid category type '{category_type}'")
        for name, index in self.categories_index[category_type].items():
            if index == category_id:
                return name
        raise ValueError(f"Invalid category id {category_id} for {category_type}")

    def _check_exists(self):
        return os.path.exists(self.root) and len(os.listdir(self.root)) > 0

    def download(self):
        """Fetch and unpack the version's archive, then rename its top folder to ``<version>``."""
        if self._check_exists():
            return
        base_root = os.path.dirname(self.root)
        url = DATASET_URLS[self.version]
        download_and_extract_archive(url, base_root, filename=f"{self.version}.tgz", md5=DATASET_MD5[self.version])
        extracted = os.path.join(base_root, os.path.basename(url).removesuffix(".tar.gz"))
        if not os.path.exists(extracted):
            raise RuntimeError(f"Unable to find downloaded files at {extracted}")
        os.rename(extracted, self.root)
