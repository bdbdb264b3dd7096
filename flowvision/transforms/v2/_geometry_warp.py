"""The random warps of v2: RandomRotation, RandomAffine, RandomPerspective and ElasticTransform.

Each draws its parameters once per sample, with torch's random stream in torchvision's order, and warps every
part of the sample alike (images, videos, masks, boxes, key points; other parts pass through).
"""
import engine

from .. import transforms as _v1
from ..functional import _get_perspective_coeffs
from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import (_check_sequence_input, _get_fill, _setup_angle, _setup_fill_arg, _setup_number_or_seq,
                     query_size)
from .functional._misc import gaussian_blur

__all__ = ["RandomRotation", "RandomAffine", "RandomPerspective", "ElasticTransform"]


def _check_center(center):
    if center is not None:
        _check_sequence_input(center, "center", req_sizes=(2,))


class RandomRotation(Transform):
    """Rotate by an angle drawn uniformly from ``degrees`` (a number d means [-d, d]).

    Args:
        degrees: the range of angles, counter-clockwise in degrees.
        interpolation: for images and videos (masks always use nearest).
        expand: grow the canvas to hold the whole rotated image (boxes and key points move onto it).
        center: (x, y) of the rotation centre in pixels; default the middle.
        fill: the value of uncovered pixels, or a dict from input type to it.
    """

    _v1_transform_cls = _v1.RandomRotation

    def __init__(self, degrees, interpolation="nearest", expand=False, center=None, fill=0):
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        self.interpolation = interpolation
        self.expand = expand
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        _check_center(center)
        self.center = center

    def make_params(self, flat_inputs):
        return dict(angle=_v1._torch_uniform(self.degrees[0], self.degrees[1]))

    def transform(self, inpt, params):
        return self._call_kernel(F.rotate, inpt, **params, interpolation=self.interpolation, expand=self.expand,
                                 center=self.center, fill=_get_fill(self._fill, type(inpt)))


class RandomAffine(Transform):
    """Rotate, translate, scale and shear by amounts drawn at random, keeping ``center`` fixed.

    Args:
        degrees: range of rotation angles (clockwise degrees; a number d means [-d, d]).
        translate: (a, b): the shift is drawn from [-a * width, a * width] x [-b * height, b * height], rounded.
        scale: (low, high) range of the scale factor.
        shear: a number s (x shear in [-s, s]), two numbers (x shear range) or four (x and y shear ranges).
        interpolation, fill, center: as for ``RandomRotation``.
    """

    _v1_transform_cls = _v1.RandomAffine

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation="nearest", fill=0,
                 center=None):
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            if any(s <= 0 for s in scale):
                raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = None if shear is None else _setup_angle(shear, name="shear", req_sizes=(2, 4))
        self.interpolation = interpolation
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        _check_center(center)
        self.center = center

    def _draw_translate(self, height, width):
        if self.translate is None:
            return (0, 0)
        max_dx, max_dy = float(self.translate[0] * width), float(self.translate[1] * height)
        tx = int(round(_v1._torch_uniform(-max_dx, max_dx)))
        ty = int(round(_v1._torch_uniform(-max_dy, max_dy)))
        return (tx, ty)

    def _draw_shear(self):
        shear_x = shear_y = 0.0
        if self.shear is not None:
            shear_x = _v1._torch_uniform(self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                shear_y = _v1._torch_uniform(self.shear[2], self.shear[3])
        return (shear_x, shear_y)

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        angle = _v1._torch_uniform(self.degrees[0], self.degrees[1])
        translate = self._draw_translate(height, width)
        scale = 1.0 if self.scale is None else _v1._torch_uniform(self.scale[0], self.scale[1])
        return dict(angle=angle, translate=translate, scale=scale, shear=self._draw_shear())

    def transform(self, inpt, params):
        return self._call_kernel(F.affine, inpt, **params, interpolation=self.interpolation,
                                 fill=_get_fill(self._fill, type(inpt)), center=self.center)


class RandomPerspective(_RandomApplyTransform):
    """With probability ``p``, move each corner of the image inwards by a random amount (up to
    ``distortion_scale`` of half the size) and warp the sample so the corners land there."""

    _v1_transform_cls = _v1.RandomPerspective

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation="bilinear", fill=0):
        super().__init__(p=p)
        if not 0 <= distortion_scale <= 1:
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        self.distortion_scale = distortion_scale
        self.interpolation = interpolation
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        bound_height = int(self.distortion_scale * (height // 2)) + 1
        bound_width = int(self.distortion_scale * (width // 2)) + 1
        near_x, far_x = (0, bound_width), (width - bound_width, width)
        near_y, far_y = (0, bound_height), (height - bound_height, height)
        endpoints = [[_v1._torch_randint(*xs), _v1._torch_randint(*ys)]
                     for xs, ys in ((near_x, near_y), (far_x, near_y), (far_x, far_y), (near_x, far_y))]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return dict(coefficients=_get_perspective_coeffs(startpoints, endpoints))

    def transform(self, inpt, params):
        return self._call_kernel(F.perspective, inpt, startpoints=None, endpoints=None,
                                 fill=_get_fill(self._fill, type(inpt)), interpolation=self.interpolation, **params)


class ElasticTransform(Transform):
    """Displace every pixel by smooth random offsets: uniform noise in [-1, 1] per axis, blurred with ``sigma``
    and scaled by ``alpha`` over the axis' length. Boxes and key points move by an approximate inverse of the
    field (good for small displacements)."""

    _v1_transform_cls = _v1.ElasticTransform

    def __init__(self, alpha=50.0, sigma=5.0, interpolation="bilinear", fill=0):
        super().__init__()
        self.alpha = _setup_number_or_seq(alpha, "alpha")
        self.sigma = _setup_number_or_seq(sigma, "sigma")
        self.interpolation = interpolation
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def _axis_field(self, axis, height, width):
        """One axis' displacement [1, 1, H, W] in grid units (x: axis 0, y: axis 1)."""
        field = engine.rand(1, 1, height, width) * 2 - 1
        if self.sigma[axis] > 0.0:
            size = int(8 * self.sigma[axis] + 1)
            size += 1 - size % 2
            field = self._call_kernel(gaussian_blur, field, [size, size], list(self.sigma))
        return field * self.alpha[axis] / (width, height)[axis]

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        dx = self._axis_field(0, height, width)
        dy = self._axis_field(1, height, width)
        return dict(displacement=engine.concat([dx, dy], 1).permute([0, 2, 3, 1]))

    def transform(self, inpt, params):
        return self._call_kernel(F.elastic, inpt, **params, fill=_get_fill(self._fill, type(inpt)),
                                 interpolation=self.interpolation)
