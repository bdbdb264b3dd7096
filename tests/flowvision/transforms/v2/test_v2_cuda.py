"""v2 transforms on CUDA samples: an image with its boxes, masks, key points and labels on the CUDA backend gives
what it gives on the CPU (types, metadata, values; uint8 exactly, floats within 1e-6), every tensor staying on the
device; on a GPU (marked ``cuda``) and, without one, on the CPU emulation of CuPy. The random draws are the host
generator's on both (GaussianNoise, drawn on the device, is left out)."""
import functools

import numpy as np
import pytest

import engine
import flowvision.transforms.v2 as v2
from flowvision import tv_tensors
from v2_helpers import boxes_array, image_array

pytestmark = [pytest.mark.slow,  # runs on the emulated GPU: outside the quick subset (-m "not slow")
              pytest.mark.filterwarnings("ignore:RandomErasing\\(\\) is currently passing through")]

SIZE = (29, 37)

TRANSFORMS = {
    "flips": lambda: v2.Compose([v2.RandomHorizontalFlip(1.0), v2.RandomVerticalFlip(1.0)]),
    "Resize": lambda: v2.Resize([17, 23]),
    "RandomResizedCrop": lambda: v2.RandomResizedCrop([19, 21], antialias=False),
    "RandomCrop-pad": lambda: v2.RandomCrop(31, padding=3, pad_if_needed=True),
    "CenterCrop": lambda: v2.CenterCrop([20, 41]),
    "Pad": lambda: v2.Pad([1, 2, 3, 4], fill=5, padding_mode="constant"),
    "RandomZoomOut": lambda: v2.RandomZoomOut(fill={tv_tensors.Image: 9, "others": 0}, p=1.0),
    "RandomIoUCrop": lambda: v2.Compose([v2.RandomIoUCrop(), v2.SanitizeBoundingBoxes()]),
    "RandomRotation": lambda: v2.RandomRotation(30, expand=True),
    "RandomAffine": lambda: v2.RandomAffine(20, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=10),
    "RandomPerspective": lambda: v2.RandomPerspective(p=1.0),
    "ElasticTransform": lambda: v2.ElasticTransform(alpha=20.0),
    "ColorJitter": lambda: v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
    "RandomPhotometricDistort": lambda: v2.RandomPhotometricDistort(p=1.0),
    "RandomGrayscale": lambda: v2.RandomGrayscale(p=1.0),
    "RandomChannelPermutation": lambda: v2.RandomChannelPermutation(),
    # the solarize threshold is in the image's value range: torchvision (and our CPU path) refuse 100 for floats
    "colour ops": lambda dtype: v2.Compose([v2.RandomInvert(1.0), v2.RandomPosterize(3, 1.0),
                                            v2.RandomSolarize(100 if dtype == np.uint8 else 100 / 255, 1.0),
                                            v2.RandomAutocontrast(1.0), v2.RandomEqualize(1.0),
                                            v2.RandomAdjustSharpness(2.0, 1.0)]),
    "GaussianBlur": lambda: v2.GaussianBlur(5),
    "RandomErasing": lambda: v2.RandomErasing(p=1.0, value=3),
    "ToDtype-Normalize": lambda: v2.Compose([v2.ToDtype({tv_tensors.Image: engine.float32, "others": None}, scale=True),
                                            v2.Normalize([0.5, 0.4, 0.3], [0.2, 0.3, 0.4])]),
    "ConvertBoundingBoxFormat-Clamp": lambda: v2.Compose([v2.ConvertBoundingBoxFormat("CXCYWH"),
                                                          v2.ClampBoundingBoxes(), v2.ClampKeyPoints()]),
}
DTYPE_DEPENDENT = {"colour ops"}  # built for the sample's dtype
# On the CPU, uint8 images are resized (bilinear/bicubic) with torch's integer kernel; on a GPU with the float path
# (as torchvision does on CUDA): the two round differently, so their uint8 images may differ by 1.
UINT8_RESIZE = {"Resize", "RandomResizedCrop"}
# An image-only sample for the policies, which refuse boxes and masks as torchvision's do.
POLICIES = {
    "TrivialAugmentWide": lambda: v2.TrivialAugmentWide(),
    "RandAugment": lambda: v2.RandAugment(),
    "AutoAugment": lambda: v2.AutoAugment(),
    "AugMix": lambda: v2.AugMix(),
}


def _sample(dtype, device):
    image = image_array(0, (3, *SIZE), dtype)
    boxes = tv_tensors.BoundingBoxes(engine.from_numpy(boxes_array(0, SIZE)), format="XYXY", canvas_size=SIZE,
                                     device=device)
    masks = tv_tensors.Mask(engine.from_numpy(np.random.default_rng(0).random((5, *SIZE)) > 0.5), device=device)
    points = tv_tensors.KeyPoints(engine.from_numpy(boxes_array(1, SIZE).reshape(-1, 2)), canvas_size=SIZE,
                                  device=device)
    return (tv_tensors.Image(engine.from_numpy(image), device=device),
            {"boxes": boxes, "masks": masks, "points": points, "labels": engine.arange(5, device=device)})


def _leaves(sample):
    if isinstance(sample, dict):
        return [leaf for value in sample.values() for leaf in _leaves(value)]
    if isinstance(sample, (list, tuple)):
        return [leaf for value in sample for leaf in _leaves(value)]
    return [sample]


def _assert_same(got, expected, where, uint8_atol=0):
    got, expected = _leaves(got), _leaves(expected)
    assert len(got) == len(expected), where
    for g, e in zip(got, expected):
        assert type(g) is type(e), (where, type(g), type(e))
        assert g.device.type == "cuda" and e.device.type == "cpu", where
        for name in ("format", "canvas_size", "clamping_mode"):
            assert getattr(g, name, None) == getattr(e, name, None), (where, name)
        assert g.dtype == e.dtype and tuple(g.shape) == tuple(e.shape), (where, g.dtype, e.dtype, g.shape, e.shape)
        if e.dtype.is_floating_point:
            np.testing.assert_allclose(g.cpu().numpy(), e.numpy(), rtol=1e-6, atol=1e-5, err_msg=where)
        elif uint8_atol and isinstance(e, tv_tensors.Image) and e.dtype == engine.uint8:
            difference = np.abs(g.cpu().numpy().astype(np.int16) - e.numpy().astype(np.int16))
            assert difference.max() <= uint8_atol, (where, difference.max())
        else:
            np.testing.assert_array_equal(g.cpu().numpy(), e.numpy(), err_msg=where)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("name", sorted(TRANSFORMS) + sorted(POLICIES))
def test_cuda_sample_matches_cpu(cuda, name, dtype):
    build = TRANSFORMS.get(name) or POLICIES[name]
    if name in DTYPE_DEPENDENT:
        build = functools.partial(build, dtype)
    for seed in range(2):
        samples = [_sample(dtype, device) for device in ("cpu", "cuda")]
        if name in POLICIES:
            samples = [(image, {"labels": target["labels"]}) for image, target in samples]
        outputs = []
        for sample in samples:
            engine.manual_seed(seed)
            outputs.append(build()(sample))
        _assert_same(outputs[1], outputs[0], f"{name}, seed {seed}", uint8_atol=1 if name in UINT8_RESIZE else 0)


ROTATED_TRANSFORMS = {
    "flips": lambda: v2.Compose([v2.RandomHorizontalFlip(1.0), v2.RandomVerticalFlip(1.0)]),
    "Resize": lambda: v2.Resize([17, 23]),
    "RandomResizedCrop-Pad": lambda: v2.Compose([v2.RandomResizedCrop([19, 21]), v2.Pad([1, 2, 3, 4])]),
    "RandomRotation": lambda: v2.RandomRotation(30, expand=True),
    "RandomAffine": lambda: v2.RandomAffine(20, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=10),
    "RandomPerspective": lambda: v2.RandomPerspective(p=1.0),
    "ElasticTransform": lambda: v2.ElasticTransform(alpha=20.0),
    "Clamp-Sanitize": lambda: v2.Compose([v2.SetClampingMode("hard"), v2.ClampBoundingBoxes(),
                                          v2.SanitizeBoundingBoxes()]),
}


def _rotated_boxes(format, device):
    """Seeded XYWHR boxes around the canvas (one of zero size, one at 90 degrees) in ``format`` on ``device``."""
    rng = np.random.default_rng(3)
    height, width = SIZE
    xywhr = np.stack([rng.uniform(-5, width + 5, 5), rng.uniform(-5, height + 5, 5), rng.uniform(0, width / 2, 5),
                      rng.uniform(0, height / 2, 5), rng.uniform(-180, 180, 5)], axis=1).astype(np.float32)
    xywhr[0, 2:4], xywhr[1, 4] = 0, 90
    boxes = tv_tensors.BoundingBoxes(engine.from_numpy(xywhr), format="XYWHR", canvas_size=SIZE, device=device)
    return v2.functional.convert_bounding_box_format(boxes, new_format=format)


@pytest.mark.parametrize("format", ["CXCYWHR", "XYXYXYXY"])
@pytest.mark.parametrize("name", sorted(ROTATED_TRANSFORMS))
def test_cuda_rotated_boxes_match_cpu(cuda, name, format):
    """Rotated boxes on the device move as on the CPU, within the tolerance the CPU keeps to torchvision (the
    GPU's float32 sin, cos, atan2 and sqrt may round differently from numpy's); NaN in the same places."""
    outputs = []
    for device in ("cpu", "cuda"):
        sample = {"image": tv_tensors.Image(engine.from_numpy(image_array(0, (3, *SIZE))), device=device),
                  "boxes": _rotated_boxes(format, device), "labels": engine.arange(5, device=device)}
        engine.manual_seed(0)
        outputs.append(ROTATED_TRANSFORMS[name]()(sample))
    cpu, gpu = outputs
    boxes = gpu["boxes"]
    assert type(boxes) is tv_tensors.BoundingBoxes and boxes.device.type == "cuda"
    assert (boxes.format, boxes.canvas_size, boxes.clamping_mode) == (cpu["boxes"].format, cpu["boxes"].canvas_size,
                                                                     cpu["boxes"].clamping_mode)
    got, expected = boxes.cpu().numpy().copy(), cpu["boxes"].numpy()
    if format == "CXCYWHR":  # 180 and -180 degrees are one angle: which one a last-bit difference gives is no error
        got[:, 4] -= np.round((got[:, 4] - expected[:, 4]) / 360) * 360
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3, err_msg=name)
    np.testing.assert_array_equal(gpu["labels"].cpu().numpy(), cpu["labels"].numpy(), err_msg=name)
