"""Transform classes with torchvision's names, arguments, defaults and reprs.

Random transforms draw as torchvision's do, the same ops in the same order on the host (CPU) generator
(``engine.rand``, ``engine.randint``, ``engine.randperm``, ``engine.empty(...).uniform_()`` / ``normal_()``, all
torch-identical), so after ``engine.manual_seed(s)`` they pick torchvision's parameters after ``torch.manual_seed(s)``,
also for CUDA images. RandomOrder and RandomChoice use Python's ``random`` module, as torchvision's do.
"""
import math
import numbers
import random
import warnings
from collections.abc import Sequence

import numpy as np

import engine
from engine import nn

from . import functional as F
from .functional import InterpolationMode, _interpolation_modes_from_int


def _setup_size(size, error_msg):
    """int or 1/2-sequence -> (h, w)."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size


def _check_sequence_input(x, name, req_sizes):
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join([str(s) for s in req_sizes])
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence of length {msg}.")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {msg}.")


def _setup_angle(x, name, req_sizes=(2,)):
    """A number d -> [-d, d]; a sequence -> its floats."""
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        x = [-x, x]
    else:
        _check_sequence_input(x, name, req_sizes)
    return [float(d) for d in x]


def _check_interpolation(interpolation):
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    return interpolation


def _check_fill(fill):
    if fill is None:
        return 0
    if not isinstance(fill, (Sequence, numbers.Number)):
        raise TypeError("Fill should be either a sequence or a number.")
    return fill


def _tensor_fill(img, fill):
    """torchvision's fill for tensors: one float per channel."""
    if F._is_tensor(img):
        if isinstance(fill, (int, float)):
            return [float(fill)] * F.get_image_num_channels(img)
        return [float(f) for f in fill]
    return fill


def _torch_rand():
    """torch.rand(1).item(): a float32 uniform in [0, 1) from the default generator."""
    return engine.rand(1).item()


def _torch_coin(p):
    """torch.rand(1) < p: the comparison of a float32 tensor with a Python number is done in float32."""
    return engine.rand(1).item() < float(np.float32(p))


def _torch_randint(low, high):
    """torch.randint(low, high, (1,)).item()."""
    return int(engine.randint(low, high, size=(1,)).item())


def _torch_uniform(low, high):
    """torch.empty(1).uniform_(low, high).item()."""
    return engine.empty(1).uniform_(low, high).item()


def _torch_log_ratio(ratio):
    """torch.log(torch.tensor(ratio)): float32 logs of the float32 ratios (as Python floats)."""
    return [float(np.float32(math.log(float(np.float32(r))))) for r in ratio]


def _torch_exp32(x):
    """torch.exp(float32 tensor).item(): exp rounded to float32 (torch's vectorised expf may differ by an ulp)."""
    return float(np.float32(math.exp(x)))


def _scaled_log_uniform_crop(area, scale, log_ratio):
    """(target area, aspect ratio) drawn as torchvision's RandomResizedCrop / RandomErasing draw them."""
    target_area = area * _torch_uniform(scale[0], scale[1])
    aspect_ratio = _torch_exp32(_torch_uniform(log_ratio[0], log_ratio[1]))
    return target_area, aspect_ratio


class Compose:
    """Apply transforms in order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """PIL image or ndarray (HWC) -> float tensor (CHW) in [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class PILToTensor:
    """PIL image -> tensor (CHW) with the image's dtype."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class ToPILImage:
    """Tensor (CHW) or ndarray (HWC) -> PIL image."""

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self):
        return f"{self.__class__.__name__}({'' if self.mode is None else f'mode={self.mode}'})"


class ConvertImageDtype(nn.Module):
    """Convert a tensor image to dtype, rescaling its values."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class Normalize(nn.Module):
    """(tensor - mean) / std per channel."""

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Resize(nn.Module):
    """Resize to (h, w), or the shorter edge to an int size."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = _check_interpolation(interpolation)

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return (f"{self.__class__.__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(nn.Module):
    """Crop the center (padding with zeros when the crop is larger)."""

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class Pad(nn.Module):
    """Pad every side (constant, edge, reflect or symmetric)."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in [1, 2, 4]:
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self):
        return f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class Lambda:
    """Apply a user function."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class RandomTransforms:
    """Base of the transforms that pick or order a list of transforms at random."""

    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class RandomApply(nn.Module):
    """Apply all the transforms with probability p."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms, self.p = transforms, p

    def forward(self, img):
        if float(np.float32(self.p)) < _torch_rand():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}(\n    p={self.p}{body}\n)"


class RandomOrder(RandomTransforms):
    """Apply the transforms in a random order."""

    def __call__(self, img):
        order = list(range(len(self.transforms)))
        random.shuffle(order)  # Python's random, as torchvision's RandomOrder
        for i in order:
            img = self.transforms[i](img)
        return img


class RandomChoice(RandomTransforms):
    """Apply one transform picked at random (weights p)."""

    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        t = random.choices(self.transforms, weights=self.p)[0]  # Python's random, as torchvision's RandomChoice
        return t(*args)

    def __repr__(self):
        return f"{super().__repr__()}(p={self.p})"


class RandomCrop(nn.Module):
    """Crop at a random location (optionally padding first)."""

    @staticmethod
    def get_params(img, output_size):
        """(i, j, h, w) of a random crop of output_size."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = _torch_randint(0, h - th + 1)
        j = _torch_randint(0, w - tw + 1)
        return i, j, th, tw

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = tuple(_setup_size(size, "Please provide only two dimensions (h, w) for size."))
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip(nn.Module):
    """Flip left-right with probability p."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return F.hflip(img) if _torch_coin(self.p) else img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomVerticalFlip(RandomHorizontalFlip):
    """Flip top-bottom with probability p."""

    def forward(self, img):
        return F.vflip(img) if _torch_coin(self.p) else img


def _check_scale_ratio(scale, ratio):
    """(min, max) sequences of area fractions and aspect ratios (RandomResizedCrop, RandomErasing); a reversed range
    only warns, as torchvision's."""
    if not isinstance(scale, Sequence):
        raise TypeError("Scale should be a sequence")
    if not isinstance(ratio, Sequence):
        raise TypeError("Ratio should be a sequence")
    if scale[0] > scale[1] or ratio[0] > ratio[1]:
        warnings.warn("Scale and ratio should be of kind (min, max)")


class RandomResizedCrop(nn.Module):
    """Crop a random area and aspect ratio, then resize to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        _check_scale_ratio(scale, ratio)
        self.interpolation = _check_interpolation(interpolation)
        self.antialias, self.scale, self.ratio = antialias, scale, ratio

    @staticmethod
    def get_params(img, scale, ratio):
        """(i, j, h, w) of a random crop: 10 tries at area in scale and log-uniform ratio, else a center crop."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = _torch_log_ratio(ratio)
        for _ in range(10):
            target_area, aspect_ratio = _scaled_log_uniform_crop(area, scale, log_ratio)
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = _torch_randint(0, height - h + 1)
                j = _torch_randint(0, width - w + 1)
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self):
        return (f"{self.__class__.__name__}(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias})")


class FiveCrop(nn.Module):
    """The four corner crops and the center crop."""

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def forward(self, img):
        return F.five_crop(img, self.size)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class TenCrop(nn.Module):
    """five_crop of the image and of its flip."""

    def __init__(self, size, vertical_flip=False):
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, vertical_flip={self.vertical_flip})"


class ColorJitter(nn.Module):
    """Randomly change brightness, contrast, saturation and hue (in random order)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        """A number v -> (center - v, center + v); a pair as is; None when it changes nothing."""
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        if value[0] == value[1] == center:
            return None
        return tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(order, b, c, s, h): engine.randperm(4) and a factor per op (None where disabled), drawn in that order."""
        fn_idx = engine.randperm(4)
        factors = [None if r is None else _torch_uniform(r[0], r[1]) for r in (brightness, contrast, saturation, hue)]
        return (fn_idx, *factors)

    def forward(self, img):
        fn_idx, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for fn_id in fn_idx.tolist():
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class RandomRotation(nn.Module):
    """Rotate by an angle drawn uniformly from degrees."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__()
        self.interpolation = _check_interpolation(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center, self.expand = center, expand
        self.fill = _check_fill(fill)

    @staticmethod
    def get_params(degrees):
        """An angle uniform in [degrees[0], degrees[1]]."""
        return _torch_uniform(float(degrees[0]), float(degrees[1]))

    def forward(self, img):
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, _tensor_fill(img, self.fill))

    def __repr__(self):
        s = f"{self.__class__.__name__}(degrees={self.degrees}, interpolation={self.interpolation.value}, " \
            f"expand={self.expand}"
        if self.center is not None:
            s += f", center={self.center}"
        if self.fill is not None:
            s += f", fill={self.fill}"
        return s + ")"


class RandomAffine(nn.Module):
    """Random rotation, translation, scale and shear."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__()
        self.interpolation = _check_interpolation(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            for t in translate:
                if not 0.0 <= t <= 1.0:
                    raise ValueError("translation values should be between 0 and 1")
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            for s in scale:
                if s <= 0:
                    raise ValueError("scale values should be positive")
        self.translate, self.scale = translate, scale
        self.shear = _setup_angle(shear, name="shear", req_sizes=(2, 4)) if shear is not None else None
        self.fill = _check_fill(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """(angle, (tx, ty), scale, (shear_x, shear_y)) drawn from the ranges; img_size is (w, h)."""
        angle = _torch_uniform(float(degrees[0]), float(degrees[1]))
        if translate is not None:
            max_dx, max_dy = float(translate[0] * img_size[0]), float(translate[1] * img_size[1])
            tx = int(round(_torch_uniform(-max_dx, max_dx)))
            ty = int(round(_torch_uniform(-max_dy, max_dy)))
            translations = (tx, ty)
        else:
            translations = (0, 0)
        scale = _torch_uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _torch_uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _torch_uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        _, height, width = F.get_dimensions(img)
        angle, translate, scale, shear = self.get_params(self.degrees, self.translate, self.scale, self.shear,
                                                         [width, height])
        return F.affine(img, angle, translate, scale, shear, self.interpolation, _tensor_fill(img, self.fill),
                        self.center)

    def __repr__(self):
        s = f"{self.__class__.__name__}(degrees={self.degrees}"
        s += f", translate={self.translate}" if self.translate is not None else ""
        s += f", scale={self.scale}" if self.scale is not None else ""
        s += f", shear={self.shear}" if self.shear is not None else ""
        s += f", interpolation={self.interpolation.value}" if self.interpolation != InterpolationMode.NEAREST else ""
        s += f", fill={self.fill}" if self.fill != 0 else ""
        s += f", center={self.center}" if self.center is not None else ""
        return s + ")"


class Grayscale(nn.Module):
    """Convert to grayscale with 1 or 3 channels."""

    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)

    def __repr__(self):
        return f"{self.__class__.__name__}(num_output_channels={self.num_output_channels})"


class RandomGrayscale(nn.Module):
    """Grayscale (same channel count) with probability p."""

    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        num_output_channels = F.get_image_num_channels(img)
        if _torch_coin(self.p):
            return F.rgb_to_grayscale(img, num_output_channels)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class GaussianBlur(nn.Module):
    """Gaussian blur with sigma drawn uniformly from the (min, max) range."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        """A sigma uniform in [sigma_min, sigma_max]."""
        return _torch_uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])

    def __repr__(self):
        return f"{self.__class__.__name__}(kernel_size={self.kernel_size}, sigma={self.sigma})"


def _check_erasing_ranges(scale, ratio):
    """RandomErasing's (min, max) area fraction and aspect ratio ranges, checked (v1 and v2)."""
    _check_scale_ratio(scale, ratio)
    if scale[0] < 0 or scale[1] > 1:
        raise ValueError("Scale should be between 0 and 1")


class RandomErasing(nn.Module):
    """Erase a random rectangle of a tensor image with probability p (value, per-channel values or 'random')."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        _check_erasing_ranges(scale, ratio)
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        """(i, j, h, w, v) of the area to erase; v is normal noise when value is None."""
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_ratio = _torch_log_ratio(ratio)
        for _ in range(10):
            erase_area, aspect_ratio = _scaled_log_uniform_crop(area, scale, log_ratio)
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                # drawn on the host generator, as torchvision's CPU torch.empty(...).normal_(), then moved
                v = engine.empty([img_c, h, w], dtype=engine.float32).normal_().to(img.device)
            else:
                v = engine.tensor(value, device=img.device)[:, None, None]
            i = _torch_randint(0, img_h - h + 1)
            j = _torch_randint(0, img_w - w + 1)
            return i, j, h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if _torch_coin(self.p):
            if isinstance(self.value, (int, float)):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            else:
                value = list(self.value)
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError("If value is a sequence, it should have either a single value or "
                                 f"{img.shape[-3]} (number of input channels)")
            x, y, h, w, v = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
            return F.erase(img, x, y, h, w, v, self.inplace)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(p={self.p}, scale={self.scale}, ratio={self.ratio}, "
                f"value={self.value}, inplace={self.inplace})")


# ---------------------------------------------------------------------------------------------------------------
# perspective, whitening, the probability ops of AutoAugment's family and the elastic transform


class RandomPerspective(nn.Module):
    """Perspective warp with probability p: each corner moves inwards by up to distortion_scale of half the size."""

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.p = p
        self.interpolation = _check_interpolation(interpolation)
        self.distortion_scale = distortion_scale
        self.fill = _check_fill(fill)

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        if _torch_coin(self.p):
            startpoints, endpoints = self.get_params(width, height, self.distortion_scale)
            return F.perspective(img, startpoints, endpoints, self.interpolation, fill)
        return img

    @staticmethod
    def get_params(width, height, distortion_scale):
        """([corners], [moved corners]): top-left, top-right, bottom-right, bottom-left, each as [x, y]."""
        dx, dy = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))
        topleft = [_torch_randint(0, dx + 1), _torch_randint(0, dy + 1)]
        topright = [_torch_randint(width - dx - 1, width), _torch_randint(0, dy + 1)]
        botright = [_torch_randint(width - dx - 1, width), _torch_randint(height - dy - 1, height)]
        botleft = [_torch_randint(0, dx + 1), _torch_randint(height - dy - 1, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class LinearTransformation(nn.Module):
    """(flattened tensor image - mean_vector) @ transformation_matrix (D x D, D = C * H * W), e.g. ZCA whitening."""

    def __init__(self, transformation_matrix, mean_vector):
        super().__init__()
        if transformation_matrix.size(0) != transformation_matrix.size(1):
            raise ValueError("transformation_matrix should be square. Got "
                             f"{tuple(transformation_matrix.size())} rectangular matrix.")
        if mean_vector.size(0) != transformation_matrix.size(0):
            raise ValueError(f"mean_vector should have the same length {mean_vector.size(0)} as any one of the "
                             f"dimensions of the transformation_matrix [{tuple(transformation_matrix.size())}]")
        if transformation_matrix.device != mean_vector.device:
            raise ValueError("Input tensors should be on the same device. "
                             f"Got {transformation_matrix.device} and {mean_vector.device}")
        if transformation_matrix.dtype != mean_vector.dtype:
            raise ValueError("Input tensors should have the same dtype. "
                             f"Got {transformation_matrix.dtype} and {mean_vector.dtype}")
        self.transformation_matrix, self.mean_vector = transformation_matrix, mean_vector

    def forward(self, tensor):
        shape = tensor.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError("Input tensor and transformation matrix have incompatible shape."
                             f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != {self.transformation_matrix.shape[0]}")
        if tensor.device.type != self.mean_vector.device.type:
            raise ValueError("Input tensor should be on the same device as transformation matrix and mean vector. "
                             f"Got {tensor.device} vs {self.mean_vector.device}")
        flat = tensor.view(-1, n) - self.mean_vector
        return engine.mm(flat, self.transformation_matrix.to(flat.dtype)).view(shape)

    def __repr__(self):
        return (f"{self.__class__.__name__}(transformation_matrix={self.transformation_matrix.tolist()}, "
                f"mean_vector={self.mean_vector.tolist()})")


class _RandomApplyFunction(nn.Module):
    """Apply a functional op with probability p (one torch.rand(1) draw per call)."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def _transform(self, img):
        raise NotImplementedError

    def forward(self, img):
        if _torch_coin(self.p):
            return self._transform(img)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomInvert(_RandomApplyFunction):
    """Invert the colours with probability p."""

    def _transform(self, img):
        return F.invert(img)


class RandomPosterize(_RandomApplyFunction):
    """Keep the top `bits` bits of each channel with probability p."""

    def __init__(self, bits, p=0.5):
        super().__init__(p)
        self.bits = bits

    def _transform(self, img):
        return F.posterize(img, self.bits)

    def __repr__(self):
        return f"{self.__class__.__name__}(bits={self.bits},p={self.p})"


class RandomSolarize(_RandomApplyFunction):
    """Invert the pixels at or above threshold with probability p."""

    def __init__(self, threshold, p=0.5):
        super().__init__(p)
        self.threshold = threshold

    def _transform(self, img):
        return F.solarize(img, self.threshold)

    def __repr__(self):
        return f"{self.__class__.__name__}(threshold={self.threshold},p={self.p})"


class RandomAdjustSharpness(_RandomApplyFunction):
    """Adjust the sharpness by sharpness_factor with probability p."""

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _transform(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)

    def __repr__(self):
        return f"{self.__class__.__name__}(sharpness_factor={self.sharpness_factor},p={self.p})"


class RandomAutocontrast(_RandomApplyFunction):
    """Autocontrast with probability p."""

    def _transform(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomApplyFunction):
    """Histogram-equalise with probability p."""

    def _transform(self, img):
        return F.equalize(img)


def _elastic_pair(value, name):
    """ElasticTransform's alpha / sigma: a float or a sequence of 1 or 2 floats -> [x, y]."""
    if not isinstance(value, (float, Sequence)):
        raise TypeError(f"{name} should be float or a sequence of floats. Got {type(value)}")
    if isinstance(value, Sequence) and len(value) != 2:
        raise ValueError(f"If {name} is a sequence its length should be 2. Got {len(value)}")
    if isinstance(value, Sequence):
        for element in value:
            if not isinstance(element, float):
                raise TypeError(f"{name} should be a sequence of floats. Got {type(element)}")
    if isinstance(value, float):
        value = [float(value), float(value)]
    return value


class ElasticTransform(nn.Module):
    """Displace every pixel by smooth random offsets: uniform noise blurred with sigma, scaled by alpha."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.alpha = _elastic_pair(alpha, "alpha")
        self.sigma = _elastic_pair(sigma, "sigma")
        self.interpolation = _check_interpolation(interpolation)
        if isinstance(fill, (int, float)):
            fill = [float(fill)]
        elif isinstance(fill, (list, tuple)):
            fill = [float(f) for f in fill]
        else:
            raise TypeError(f"fill should be int or float or a list or tuple of them. Got {type(fill)}")
        self.fill = fill

    @staticmethod
    def get_params(alpha, sigma, size):
        """The displacement (1, H, W, 2) for size [H, W]: per axis, rand * 2 - 1 blurred (sigma > 0) and scaled by
        alpha over that axis' length (grid units)."""
        def axis(k):
            d = engine.rand([1, 1] + list(size)) * 2 - 1
            if sigma[k] > 0.0:
                ksize = int(8 * sigma[k] + 1)
                ksize += 1 - ksize % 2
                d = F.gaussian_blur(d, [ksize, ksize], sigma)
            return d * alpha[k] / size[1 - k]

        dx = axis(0)
        dy = axis(1)
        return engine.concat([dx, dy], 1).permute([0, 2, 3, 1])

    def forward(self, tensor):
        _, height, width = F.get_dimensions(tensor)
        displacement = self.get_params(self.alpha, self.sigma, [height, width])
        return F.elastic_transform(tensor, displacement, self.interpolation, self.fill)

    def __repr__(self):
        return (f"{self.__class__.__name__}(alpha={self.alpha}, sigma={self.sigma}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


__all__ = [
    "Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Normalize", "Resize", "CenterCrop",
    "Pad", "Lambda", "RandomApply", "RandomChoice", "RandomOrder", "RandomCrop", "RandomHorizontalFlip",
    "RandomVerticalFlip", "RandomResizedCrop", "FiveCrop", "TenCrop", "LinearTransformation", "ColorJitter",
    "RandomRotation", "RandomAffine", "Grayscale", "RandomGrayscale", "RandomPerspective", "RandomErasing",
    "GaussianBlur", "InterpolationMode", "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness",
    "RandomAutocontrast", "RandomEqualize", "ElasticTransform",
]
