"""AutoAugment, RandAugment, TrivialAugmentWide and AugMix with torchvision's op tables and magnitude bins.

They draw as torchvision's do, the same ops in the same order on the host (CPU) generator (``engine.randint``,
``engine.rand``: torch-identical), so after ``engine.manual_seed(s)`` they pick torchvision's ops and magnitudes
after ``torch.manual_seed(s)``.
"""
import math
from enum import Enum

import numpy as np

import engine
from engine import nn

from . import functional as F
from .functional import InterpolationMode


def _apply_op(img, op_name, magnitude, interpolation, fill):
    """Apply the named augmentation with the given magnitude."""
    if op_name == "ShearX":
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=[math.degrees(math.atan(magnitude)), 0.0],
                        interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "ShearY":
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=[0.0, math.degrees(math.atan(magnitude))],
                        interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "TranslateX":
        return F.affine(img, angle=0.0, translate=[int(magnitude), 0], scale=1.0, interpolation=interpolation,
                        shear=[0.0, 0.0], fill=fill)
    if op_name == "TranslateY":
        return F.affine(img, angle=0.0, translate=[0, int(magnitude)], scale=1.0, interpolation=interpolation,
                        shear=[0.0, 0.0], fill=fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation=interpolation, fill=fill)
    if op_name == "Brightness":
        return F.adjust_brightness(img, 1.0 + magnitude)
    if op_name == "Color":
        return F.adjust_saturation(img, 1.0 + magnitude)
    if op_name == "Contrast":
        return F.adjust_contrast(img, 1.0 + magnitude)
    if op_name == "Sharpness":
        return F.adjust_sharpness(img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    if op_name == "AutoContrast":
        return F.autocontrast(img)
    if op_name == "Equalize":
        return F.equalize(img)
    if op_name == "Invert":
        return F.invert(img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _linspace(lo, hi, n):
    """torch.linspace(lo, hi, n) (float32, torch's own rounding: magnitudes bit-equal to torchvision's) as numpy."""
    return engine.linspace(lo, hi, n).numpy()


def _posterize_bins(num_bins, top):
    """8 - round(arange(n) / ((n - 1) / top)): bits from 8 down to 8 - top."""
    return (8 - np.round(np.arange(num_bins, dtype=np.float32) / np.float32((num_bins - 1) / top))).astype(np.int32)


def _geometric_and_color_space(num_bins, image_size, wide=False):
    """{op: (magnitudes, signed)}: RandAugment's ranges, or TrivialAugmentWide's wider ones."""
    top = 0.99 if wide else 0.9
    shear = 0.99 if wide else 0.3
    tx = 32.0 if wide else 150.0 / 331.0 * image_size[1]
    ty = 32.0 if wide else 150.0 / 331.0 * image_size[0]
    return {
        "ShearX": (_linspace(0.0, shear, num_bins), True),
        "ShearY": (_linspace(0.0, shear, num_bins), True),
        "TranslateX": (_linspace(0.0, tx, num_bins), True),
        "TranslateY": (_linspace(0.0, ty, num_bins), True),
        "Rotate": (_linspace(0.0, 135.0 if wide else 30.0, num_bins), True),
        "Brightness": (_linspace(0.0, top, num_bins), True),
        "Color": (_linspace(0.0, top, num_bins), True),
        "Contrast": (_linspace(0.0, top, num_bins), True),
        "Sharpness": (_linspace(0.0, top, num_bins), True),
        "Posterize": (_posterize_bins(num_bins, 6 if wide else 4), False),
        "Solarize": (_linspace(255.0, 0.0, num_bins), False),
        "AutoContrast": (np.float32(0.0), False),
        "Equalize": (np.float32(0.0), False),
    }


def _tensor_fill(img, fill):
    """torchvision's fill for tensors: one float per channel."""
    if F._is_tensor(img):
        if isinstance(fill, (int, float)):
            return [float(fill)] * F.get_image_num_channels(img)
        if fill is not None:
            return [float(f) for f in fill]
    return fill


def _randint(high):
    """torch.randint(high, (1,)).item() from the default (host) generator."""
    return int(engine.randint(high, (1,)).item())


class AutoAugmentPolicy(Enum):
    """AutoAugment policies learned on ImageNet, CIFAR10 and SVHN."""
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# (op, probability, magnitude bin) pairs from the AutoAugment paper (Cubuk et al., 2019), as torchvision uses them.
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


class AutoAugment(nn.Module):
    """AutoAugment: apply one of the policy's 25 sub-policies (two ops with probabilities and magnitudes)."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.policy, self.interpolation, self.fill = policy, interpolation, fill
        self.policies = self._get_policies(policy)

    def _get_policies(self, policy):
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        return _POLICIES[policy]

    def _augmentation_space(self, num_bins, image_size):
        space = _geometric_and_color_space(num_bins, image_size)
        space["Invert"] = (np.float32(0.0), False)
        return space

    @staticmethod
    def get_params(transform_num):
        """(policy index, two float32 probabilities in [0, 1), two signs in {0, 1}) as torchvision draws them:
        torch.randint(transform_num, (1,)), torch.rand((2,)), torch.randint(2, (2,))."""
        policy_id = int(engine.randint(transform_num, (1,)).item())
        probs = engine.rand((2,))
        signs = engine.randint(2, (2,))
        return policy_id, probs, signs

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        transform_id, probs, signs = self.get_params(len(self.policies))
        probs, signs = probs.numpy(), signs.numpy()
        op_meta = self._augmentation_space(10, (height, width))
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[transform_id]):
            if probs[i] <= np.float32(p):  # torch compares a float32 tensor with a Python float in float32
                magnitudes, signed = op_meta[op_name]
                magnitude = float(magnitudes[magnitude_id]) if magnitude_id is not None else 0.0
                if signed and signs[i] == 0:
                    magnitude *= -1.0
                img = _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(nn.Module):
    """RandAugment: num_ops uniformly chosen ops, all at one magnitude bin."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__()
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins
        self.interpolation, self.fill = interpolation, fill

    def _augmentation_space(self, num_bins, image_size):
        return {"Identity": (np.float32(0.0), False), **_geometric_and_color_space(num_bins, image_size)}

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        op_meta = self._augmentation_space(self.num_magnitude_bins, (height, width))
        for _ in range(self.num_ops):
            op_name = list(op_meta.keys())[_randint(len(op_meta))]
            magnitudes, signed = op_meta[op_name]
            magnitude = float(magnitudes[self.magnitude]) if np.ndim(magnitudes) > 0 else 0.0
            if signed and _randint(2):
                magnitude *= -1.0
            img = _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, interpolation={self.interpolation}, fill={self.fill})")


class TrivialAugmentWide(nn.Module):
    """TrivialAugment: one uniformly chosen op at a uniformly chosen magnitude bin (wide ranges)."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.num_magnitude_bins, self.interpolation, self.fill = num_magnitude_bins, interpolation, fill

    def _augmentation_space(self, num_bins):
        return {"Identity": (np.float32(0.0), False), **_geometric_and_color_space(num_bins, None, wide=True)}

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        op_meta = self._augmentation_space(self.num_magnitude_bins)
        op_name = list(op_meta.keys())[_randint(len(op_meta))]
        magnitudes, signed = op_meta[op_name]
        magnitude = float(magnitudes[_randint(len(magnitudes))]) if np.ndim(magnitudes) > 0 else 0.0
        if signed and _randint(2):
            magnitude *= -1.0
        return _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)

    def __repr__(self):
        return (f"{self.__class__.__name__}(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


_THIRD_F32 = float(np.float32(1.0) / np.float32(3.0))  # sample_gamma's 1.0f / 3.0f
_SQUEEZE_F32 = float(np.float32(0.0331))  # and its 0.0331f


def _sample_gamma(alpha):
    """A Gamma(alpha, 1) sample as torch's CPU sampler draws it: Marsaglia and Tsang's method in double
    precision, its normals and uniforms taken from the default generator (torch.randn / torch.rand in float64)."""
    def uniform():
        return engine.rand(1, dtype=engine.float64).item()

    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= math.pow(1.0 - uniform(), 1.0 / alpha)
        alpha += 1.0
    d = alpha - _THIRD_F32
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = engine.randn(1, dtype=engine.float64).item()
        y = 1.0 + c * x
        while y <= 0:
            x = engine.randn(1, dtype=engine.float64).item()
            y = 1.0 + c * x
        v = y * y * y
        u = 1.0 - uniform()
        xx = x * x
        if u < 1.0 - _SQUEEZE_F32 * xx * xx or math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _sample_dirichlet(alpha):
    """torch._sample_dirichlet on the CPU: a Dirichlet sample per row of alpha (..., K), the gammas drawn in
    row-major order and normalised in double precision, then clamped into (0, 1) in alpha's dtype."""
    a = alpha.detach().cpu().numpy()
    gammas = np.array([max(np.finfo(np.float64).tiny, _sample_gamma(float(v))) for v in a.reshape(-1)],
                      dtype=np.float64).reshape(a.shape)
    out = (gammas / gammas.sum(-1, keepdims=True)).astype(a.dtype)
    out = np.clip(out, np.finfo(a.dtype).tiny, np.nextafter(a.dtype.type(1), a.dtype.type(0)))
    return engine.from_numpy(out).to(alpha.device)


class AugMix(nn.Module):
    """AugMix: the image mixed (Beta weights) with a Dirichlet-weighted mix of mixture_width chains of 1-3
    (or chain_depth) random ops; tensors must be uint8 ([..., 1 or 3, H, W]), PIL images L or RGB."""

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__()
        self._PARAMETER_MAX = 10
        if not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        self.severity, self.mixture_width, self.chain_depth = severity, mixture_width, chain_depth
        self.alpha, self.all_ops, self.interpolation, self.fill = alpha, all_ops, interpolation, fill

    def _augmentation_space(self, num_bins, image_size):
        space = {
            "ShearX": (_linspace(0.0, 0.3, num_bins), True),
            "ShearY": (_linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (_linspace(0.0, image_size[1] / 3.0, num_bins), True),
            "TranslateY": (_linspace(0.0, image_size[0] / 3.0, num_bins), True),
            "Rotate": (_linspace(0.0, 30.0, num_bins), True),
            "Posterize": ((4 - np.round(np.arange(num_bins, dtype=np.float32) / np.float32((num_bins - 1) / 4)))
                          .astype(np.int32), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (np.float32(0.0), False),
            "Equalize": (np.float32(0.0), False),
        }
        if self.all_ops:
            space.update({name: (_linspace(0.0, 0.9, num_bins), True)
                          for name in ("Brightness", "Color", "Contrast", "Sharpness")})
        return space

    def _pil_to_tensor(self, img):
        return F.pil_to_tensor(img)

    def _tensor_to_pil(self, img):
        return F.to_pil_image(img)

    def _sample_dirichlet(self, params):
        # a method of its own, as in torchvision, so that tests can replace it
        return _sample_dirichlet(params)

    def forward(self, orig_img):
        if F._is_tensor(orig_img):
            img, fill = orig_img, _tensor_fill(orig_img, self.fill)
        else:
            img, fill = self._pil_to_tensor(orig_img), self.fill
        _, height, width = F.get_dimensions(img)
        op_meta = self._augmentation_space(self._PARAMETER_MAX, (height, width))
        orig_dims = list(img.shape)
        batch = img.view([1] * max(4 - img.ndim, 0) + orig_dims)
        n = batch.size(0)
        batch_dims = [n] + [1] * (batch.ndim - 1)
        # Beta(alpha, alpha) weights of the original (column 0) and of the mix (column 1), as a 2-way Dirichlet,
        # then the chains' Dirichlet weights scaled by column 1
        m = self._sample_dirichlet(engine.tensor([self.alpha, self.alpha], device=batch.device).expand(n, -1))
        combined_weights = self._sample_dirichlet(
            engine.tensor([self.alpha] * self.mixture_width, device=batch.device).expand(n, -1)) * m[:, 1].view([n, -1])
        mix = m[:, 0].view(batch_dims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 else int(engine.randint(low=1, high=4, size=(1,)).item())
            for _ in range(depth):
                op_name = list(op_meta.keys())[_randint(len(op_meta))]
                magnitudes, signed = op_meta[op_name]
                magnitude = 0.0
                if np.ndim(magnitudes) > 0:
                    magnitude = float(magnitudes[_randint(self.severity)])
                if signed and _randint(2):
                    magnitude *= -1.0
                aug = _apply_op(aug, op_name, magnitude, interpolation=self.interpolation, fill=fill)
            mix.add_(combined_weights[:, i].view(batch_dims) * aug)
        mix = mix.view(orig_dims).to(dtype=img.dtype)
        return mix if F._is_tensor(orig_img) else self._tensor_to_pil(mix)

    def __repr__(self):
        return (f"{self.__class__.__name__}(severity={self.severity}, mixture_width={self.mixture_width}, "
                f"chain_depth={self.chain_depth}, alpha={self.alpha}, all_ops={self.all_ops}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]
