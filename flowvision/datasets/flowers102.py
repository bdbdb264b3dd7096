"""Oxford 102 Flowers: ``flowers-102/jpg/image_<id>.jpg`` with the labels (``imagelabels.mat``) and the
train/val/test image ids (``setid.mat``) in MATLAB files, read with flowvision's own .mat reader."""
from pathlib import Path

from .folder import default_loader
from .matlab import read_mat
from .utils import check_integrity, download_and_extract_archive, download_url
from .vision import LabelledFilesDataset, verify_str_arg

__all__ = ["Flowers102"]

# the names of the 102 categories, in label order (from the dataset's documentation, as torchvision lists them)
_CLASSES = [
    'pink primrose', 'hard-leaved pocket orchid', 'canterbury bells', 'sweet pea', 'english marigold', 'tiger lily',
    'moon orchid', 'bird of paradise', 'monkshood', 'globe thistle', 'snapdragon', "colt's foot", 'king protea',
    'spear thistle', 'yellow iris', 'globe-flower', 'purple coneflower', 'peruvian lily', 'balloon flower',
    'giant white arum lily', 'fire lily', 'pincushion flower', 'fritillary', 'red ginger', 'grape hyacinth',
    'corn poppy', 'prince of wales feathers', 'stemless gentian', 'artichoke', 'sweet william', 'carnation',
    'garden phlox', 'love in the mist', 'mexican aster', 'alpine sea holly', 'ruby-lipped cattleya', 'cape flower',
    'great masterwort', 'siam tulip', 'lenten rose', 'barbeton daisy', 'daffodil', 'sword lily', 'poinsettia',
    'bolero deep blue', 'wallflower', 'marigold', 'buttercup', 'oxeye daisy', 'common dandelion', 'petunia',
    'wild pansy', 'primula', 'sunflower', 'pelargonium', 'bishop of llandaff', 'gaura', 'geranium', 'orange dahlia',
    'pink-yellow dahlia?', 'cautleya spicata', 'japanese anemone', 'black-eyed susan', 'silverbush',
    'californian poppy', 'osteospermum', 'spring crocus', 'bearded iris', 'windflower', 'tree poppy', 'gazania',
    'azalea', 'water lily', 'rose', 'thorn apple', 'morning glory', 'passion flower', 'lotus', 'toad lily',
    'anthurium', 'frangipani', 'clematis', 'hibiscus', 'columbine', 'desert-rose', 'tree mallow', 'magnolia',
    'cyclamen', 'watercress', 'canna lily', 'hippeastrum', 'bee balm', 'ball moss', 'foxglove', 'bougainvillea',
    'camellia', 'mallow', 'mexican petunia', 'bromelia', 'blanket flower', 'trumpet creeper', 'blackberry lily',
]


class Flowers102(LabelledFilesDataset):
    """Items are (RGB PIL image, class 0-101).

    Args:
        split: ``"train"``, ``"val"`` or ``"test"``.
    """

    _download_url_prefix = "https://www.robots.ox.ac.uk/~vgg/data/flowers/102/"
    _file_dict = {"image": ("102flowers.tgz", "52808999861908f626f3c1f4e79d11fa"),
                  "label": ("imagelabels.mat", "e0620be6f572b9609742df49c70aed4d"),
                  "setid": ("setid.mat", "a5357ecc9cb78c4bef273ce3793fc85c")}
    _splits_map = {"train": "trnid", "val": "valid", "test": "tstid"}
    classes = _CLASSES

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False,
                 loader=default_loader):
        super().__init__(root, transform, target_transform, loader)
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        self._base_folder = Path(self.root) / "flowers-102"
        self._images_folder = self._base_folder / "jpg"
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        image_ids = read_mat(self._base_folder / self._file_dict["setid"][0])[self._splits_map[split]].ravel()
        labels = read_mat(self._base_folder / self._file_dict["label"][0])["labels"].ravel()
        label_of = dict(enumerate((labels - 1).tolist(), 1))  # image ids count from 1
        for image_id in image_ids.tolist():
            self._labels.append(label_of[image_id])
            self._image_files.append(self._images_folder / f"image_{image_id:05d}.jpg")

    def _check_integrity(self):
        return self._images_folder.is_dir() and all(
            check_integrity(str(self._base_folder / name), md5) for name, md5 in
            (self._file_dict["label"], self._file_dict["setid"]))

    def download(self):
        """Fetch the images' tgz and the two .mat files (md5-checked) unless they are there."""
        if self._check_integrity():
            return
        name, md5 = self._file_dict["image"]
        download_and_extract_archive(self._download_url_prefix + name, str(self._base_folder), md5=md5)
        for key in ("label", "setid"):
            name, md5 = self._file_dict[key]
            download_url(self._download_url_prefix + name, str(self._base_folder), md5=md5)

    def extra_repr(self):
        return f"split={self._split}"
