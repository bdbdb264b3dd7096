"""The v2 machinery against torchvision's: sample flattening, which parts a transform touches, the containers'
draws, the metadata, type-conversion and misc transforms, and the kernel table."""
import collections
import warnings

import numpy as np
import PIL.Image
import pytest
import torch
import torchvision.transforms.v2 as tv2
from torch.utils._pytree import tree_flatten as torch_tree_flatten
from torchvision import tv_tensors as tv

import engine
import flowvision.transforms.v2 as v2
from flowvision import tv_tensors as ours
from flowvision.transforms.v2 import functional as F
from flowvision.transforms.v2._pytree import tree_flatten, tree_unflatten
from v2_helpers import assert_same, boxes_array, image_array, run_both, to_torch

SIZE = (29, 37)
Point = collections.namedtuple("Point", "x y")


def detection_sample(seed=0, fmt="XYXY", dtype=np.uint8):
    boxes = boxes_array(seed, SIZE)
    boxes[1] = (3, 4, 3.5, 20)  # too thin for SanitizeBoundingBoxes
    boxes[2] = (-2, 1, 9, 9)  # off the canvas
    xyxy = ours.BoundingBoxes(engine.from_numpy(boxes), format="XYXY", canvas_size=SIZE)
    masks = np.random.default_rng(seed).random((5, *SIZE)) > 0.5
    return (ours.Image(engine.from_numpy(image_array(seed, (3, *SIZE), dtype))),
            {"boxes": F.convert_bounding_box_format(xyxy, new_format=fmt),
             "masks": ours.Mask(engine.from_numpy(masks)),
             "labels": engine.arange(5), "image_id": 7})


def test_tree_flatten_matches_torch_pytree_and_rebuilds():
    sample = {"a": [1, (2, 3)], "b": Point(4, {"c": 5}), "d": collections.OrderedDict(e=6)}
    leaves, spec = tree_flatten(sample)
    assert leaves == torch_tree_flatten(sample)[0] == [1, 2, 3, 4, 5, 6]
    rebuilt = tree_unflatten([leaf * 10 for leaf in leaves], spec)
    assert rebuilt == {"a": [10, (20, 30)], "b": Point(40, {"c": 50}), "d": collections.OrderedDict(e=60)}
    assert type(rebuilt["b"]) is Point and type(rebuilt["d"]) is collections.OrderedDict


class _Marker:
    """A transform that marks each part it transforms (ours or torchvision's)."""

    @staticmethod
    def build(base):
        class Marker(base):
            def transform(self, inpt, params):
                return ("transformed", type(inpt).__name__)
        return Marker()


@pytest.mark.parametrize("build", [
    lambda m, T: (T(np.zeros((3, 2, 2), np.float32)), T(np.ones((3, 2, 2), np.float32))),
    lambda m, T: (m.Image(T(np.zeros((3, 2, 2), np.float32))), T(np.ones((3, 2, 2), np.float32))),
    lambda m, T: (PIL.Image.new("RGB", (2, 2)), T(np.ones((3, 2, 2), np.float32)), "text", 3),
    lambda m, T: {"x": T(np.zeros((1, 2, 2), np.float32)), "m": m.Mask(T(np.zeros((2, 2), np.uint8)))},
    lambda m, T: [m.Video(T(np.zeros((2, 1, 2, 2), np.float32))), T(np.zeros(2, np.float32))],
])
def test_which_parts_a_transform_touches_is_torchvisions_heuristic(build):
    theirs = _Marker.build(tv2.Transform)(build(tv, torch.from_numpy))
    mine = _Marker.build(v2.Transform)(build(ours, engine.from_numpy))
    leaves_theirs = torch_tree_flatten(theirs)[0]
    leaves_mine = tree_flatten(mine)[0]
    touched = lambda leaves: [leaf for leaf in leaves if isinstance(leaf, str) and leaf == "transformed"]
    assert len(touched(leaves_mine)) == len(touched(leaves_theirs)) > 0
    names = lambda leaves: [leaf if isinstance(leaf, str) else type(leaf).__name__ for leaf in leaves]
    assert names(leaves_mine) == names(leaves_theirs)


@pytest.mark.parametrize("seed", range(6))
def test_containers_draw_as_torchvision(seed):
    def chain(m):
        add = m.Lambda(lambda x: x + 1)
        double = m.Lambda(lambda x: x * 2)
        cube = m.Lambda(lambda x: x ** 3)
        return m.Compose([m.RandomChoice([add, double, cube], p=[0.2, 0.3, 0.5]), m.RandomOrder([add, double, cube]),
                          m.RandomApply([double], p=0.4), m.RandomApply([add, cube], p=0.7)])
    image = ours.Image(engine.from_numpy(image_array(seed, (1, 3, 4), np.float32)))
    expected, actual = run_both(chain(tv2), chain(v2), (image, {"labels": engine.arange(2)}), seed)
    assert_same(expected, actual, rtol=1e-6)


def test_containers_check_arguments():
    for bad in (lambda m: m.Compose([]), lambda m: m.RandomApply([m.Identity()], p=2),
                lambda m: m.RandomChoice([m.Identity()], p=[0.5, 0.5]), lambda m: m.RandomOrder(None)):
        with pytest.raises((TypeError, ValueError)) as theirs:
            bad(tv2)
        with pytest.raises(theirs.type, match=str(theirs.value)[:20].replace("[", r"\[").replace("(", r"\(")):
            bad(v2)


FORMATS = ["XYXY", "XYWH", "CXCYWH"]


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("old", FORMATS)
@pytest.mark.parametrize("new", FORMATS)
def test_convert_bounding_box_format(old, new, dtype):
    boxes = ours.BoundingBoxes(engine.from_numpy((boxes_array(3, SIZE) * 1.7).astype(dtype)), format=old,
                               canvas_size=SIZE)
    expected, actual = run_both(tv2.ConvertBoundingBoxFormat(new), v2.ConvertBoundingBoxFormat(new), boxes)
    assert_same(expected, actual)
    pure = F.convert_bounding_box_format(boxes.as_subclass(engine.Tensor), old_format=old, new_format=new)
    assert type(pure) is engine.Tensor and np.array_equal(pure.numpy(), actual.numpy())


@pytest.mark.parametrize("mode", ["auto", "soft", "hard", None])
def test_clamping_transforms(mode):
    boxes = ours.BoundingBoxes(engine.tensor([[-3.0, 2.0, 50.0, 40.0], [1.0, 1.0, 5.0, 5.0]]), format="XYWH",
                               canvas_size=SIZE, clamping_mode="hard")
    points = ours.KeyPoints(engine.tensor([[-1.0, 3.0], [40.5, 28.5], [2.0, 2.0]]), canvas_size=SIZE)
    sample = {"boxes": boxes, "points": points}
    for theirs, mine in ((tv2.ClampBoundingBoxes(mode), v2.ClampBoundingBoxes(mode)),
                         (tv2.ClampKeyPoints(), v2.ClampKeyPoints())):
        assert_same(*run_both(theirs, mine, sample))
    if mode in ("soft", "hard", None):
        assert_same(*run_both(tv2.SetClampingMode(mode), v2.SetClampingMode(mode), sample))


def test_meta_functionals_on_pure_tensors_and_their_errors():
    boxes = engine.tensor([[-3.0, 2.0, 50.0, 40.0]])
    clamped = F.clamp_bounding_boxes(boxes, format="XYXY", canvas_size=SIZE, clamping_mode="soft")
    assert clamped.tolist() == [[0.0, 2.0, 37.0, 29.0]]
    with pytest.raises(ValueError, match="have to be passed"):
        F.clamp_bounding_boxes(boxes)
    with pytest.raises(ValueError, match="`old_format` has to be passed"):
        F.convert_bounding_box_format(boxes, new_format="XYWH")
    with pytest.raises(TypeError, match="missing 1 required argument: 'new_format'"):
        F.convert_bounding_box_format(boxes, old_format="XYWH")
    with pytest.raises(ValueError, match="must not be passed"):
        F.convert_bounding_box_format(ours.BoundingBoxes(boxes, format="XYXY", canvas_size=SIZE), "XYXY", "XYWH")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("fmt", FORMATS)
def test_sanitize_bounding_boxes_drops_boxes_with_their_labels_and_masks(seed, fmt):
    sample = detection_sample(seed, fmt)
    expected, actual = run_both(tv2.SanitizeBoundingBoxes(), v2.SanitizeBoundingBoxes(), sample)
    assert_same(expected, actual)
    assert len(actual[1]["labels"]) == 3 and actual[1]["labels"].tolist() == [0, 3, 4]
    bigger = run_both(tv2.SanitizeBoundingBoxes(min_size=6, min_area=60),
                      v2.SanitizeBoundingBoxes(min_size=6, min_area=60), sample)
    assert_same(*bigger)


def test_sanitize_labels_getters_and_errors():
    image, target = detection_sample(1)
    semantic = ours.Mask(engine.zeros(*SIZE, dtype=engine.uint8))  # [H, W]: kept whole
    pair = {"img": image, "boxes": target["boxes"], "class_labels": target["labels"], "seg": semantic}
    assert_same(*run_both(tv2.SanitizeBoundingBoxes(), v2.SanitizeBoundingBoxes(), pair))
    custom = (lambda s: (s["labels"], s["other"]))
    sample = {"boxes": target["boxes"], "labels": target["labels"], "other": engine.arange(5) * 2}
    assert_same(*run_both(tv2.SanitizeBoundingBoxes(labels_getter=custom),
                          v2.SanitizeBoundingBoxes(labels_getter=custom), sample))
    with pytest.raises(ValueError, match="Could not infer where the labels are"):
        v2.SanitizeBoundingBoxes()({"boxes": target["boxes"]})
    with pytest.raises(ValueError, match="must match the number of labels"):
        v2.SanitizeBoundingBoxes()({"boxes": target["boxes"], "labels": engine.arange(4)})
    with pytest.raises(ValueError, match="min_size must be >= 1"):
        v2.SanitizeBoundingBoxes(min_size=0.5)
    assert_same(*run_both(tv2.SanitizeBoundingBoxes(labels_getter=None),
                          v2.SanitizeBoundingBoxes(labels_getter=None), target["boxes"]))


def test_sanitize_keypoints():
    points = ours.KeyPoints(engine.tensor([[[1.0, 2.0], [3.0, 4.0]], [[-1.0, 2.0], [3.0, 4.0]],
                                           [[36.5, 28.0], [0.0, 0.0]], [[37.0, 1.0], [1.0, 1.0]]]), canvas_size=SIZE)
    sample = {"points": points, "labels": engine.arange(4)}
    assert_same(*run_both(tv2.SanitizeKeyPoints(labels_getter="default"),
                          v2.SanitizeKeyPoints(labels_getter="default"), sample))
    assert_same(*run_both(tv2.SanitizeKeyPoints(), v2.SanitizeKeyPoints(), sample))
    kept, valid = F.sanitize_keypoints(points.as_subclass(engine.Tensor)[:, 0], canvas_size=SIZE)
    assert valid.tolist() == [True, False, True, False] and kept.shape == (2, 2)


@pytest.mark.parametrize("seed", range(4))
def test_gaussian_blur_and_noise_draw_as_torchvision(seed):
    for dtype in (np.uint8, np.float32):
        image = ours.Image(engine.from_numpy(image_array(seed, (2, 3, 11, 13), dtype)))
        sample = (image, {"labels": engine.arange(2)})
        assert_same(*run_both(tv2.GaussianBlur(5, sigma=(0.2, 3.0)), v2.GaussianBlur(5, sigma=(0.2, 3.0)), sample,
                              seed), atol=1e-6 if dtype == np.float32 else 0)
        assert_same(*run_both(tv2.GaussianNoise(0.1, 0.2), v2.GaussianNoise(0.1, 0.2), sample, seed),
                    atol=1e-6 if dtype == np.float32 else 0)
    video = ours.Video(engine.from_numpy(image_array(seed, (2, 3, 2, 9, 8), np.float32)))
    assert_same(*run_both(tv2.GaussianBlur((3, 5)), v2.GaussianBlur((3, 5)), video, seed), atol=1e-6)
    picture = PIL.Image.fromarray(image_array(seed, (12, 10, 3)))
    assert_same(*run_both(tv2.GaussianBlur(3), v2.GaussianBlur(3), picture, seed))


def test_gaussian_noise_refuses_pil_and_other_dtypes():
    with pytest.raises(ValueError, match="not implemented for PIL"):
        v2.GaussianNoise()(PIL.Image.new("RGB", (3, 3)))
    with pytest.raises(ValueError, match="uint8 or float dtype"):
        v2.GaussianNoise()(engine.zeros(1, 3, 3, dtype=engine.int32))


def test_normalize_and_to_dtype():
    image, target = detection_sample(2)
    pipeline = lambda m, dtype: m.Compose([
        m.ToDtype({m_image(m): dtype, m_mask(m): m_int64(m), "others": None}, scale=True),
        m.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])])
    expected, actual = run_both(pipeline(tv2, torch.float32), pipeline(v2, engine.float32), (image, target))
    assert_same(expected, actual, atol=1e-6)
    assert actual[1]["masks"].dtype == engine.int64 and actual[1]["boxes"].dtype == engine.float32
    for dtype_pair in ((torch.float64, engine.float64), (torch.uint8, engine.uint8), (torch.int32, engine.int32)):
        assert_same(*run_both(tv2.ToDtype(dtype_pair[0], scale=True), v2.ToDtype(dtype_pair[1], scale=True),
                              (image, target)))
        assert_same(*run_both(tv2.ConvertImageDtype(dtype_pair[0]), v2.ConvertImageDtype(dtype_pair[1]), image))
    with pytest.raises(ValueError, match="No dtype was specified for type"):
        v2.ToDtype({ours.Image: engine.float32})((image, target))
    with pytest.raises(TypeError, match="does not support PIL images"):
        v2.Normalize([0.5], [0.5])(PIL.Image.new("L", (2, 2)))
    with pytest.raises(TypeError, match="should be a float tensor"):
        v2.Normalize([0.5], [0.5])(image)


def m_image(m):
    return tv.Image if m is tv2 else ours.Image


def m_mask(m):
    return tv.Mask if m is tv2 else ours.Mask


def m_int64(m):
    return torch.int64 if m is tv2 else engine.int64


def test_linear_transformation_and_temporal_subsample():
    rng = np.random.default_rng(0)
    matrix = rng.random((12, 12)).astype(np.float32)
    mean = rng.random(12).astype(np.float32)
    image = ours.Image(engine.from_numpy(image_array(1, (2, 3, 2, 2), np.float32)))
    theirs = tv2.LinearTransformation(torch.from_numpy(matrix), torch.from_numpy(mean))
    mine = v2.LinearTransformation(engine.from_numpy(matrix), engine.from_numpy(mean))
    assert_same(*run_both(theirs, mine, image), rtol=1e-6, atol=1e-6)  # a sum of 12 products: float32 rounding
    with pytest.raises(ValueError, match="should be square"):
        v2.LinearTransformation(engine.zeros(2, 3), engine.zeros(2))
    video = ours.Video(engine.from_numpy(image_array(2, (2, 7, 1, 2, 3))))
    for count in (1, 3, 7, 9):
        assert_same(*run_both(tv2.UniformTemporalSubsample(count), v2.UniformTemporalSubsample(count), video))


def test_type_conversions():
    array = image_array(4, (5, 6, 3))
    picture = PIL.Image.fromarray(array)
    for inpt in (array, picture, engine.from_numpy(array.transpose(2, 0, 1).copy())):
        assert_same(*run_both(tv2.ToImage(), v2.ToImage(), inpt))
    assert_same(*run_both(tv2.PILToTensor(), v2.PILToTensor(), (picture, "label")))
    image, target = detection_sample(3)
    assert_same(*run_both(tv2.ToPureTensor(), v2.ToPureTensor(), (image, target)))
    for mode in (None, "RGB"):
        expected, actual = run_both(tv2.ToPILImage(mode), v2.ToPILImage(mode), image)
        assert_same(expected, actual)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(*run_both(tv2.ToTensor(), v2.ToTensor(), picture))
    with pytest.warns(UserWarning, match="`ToTensor\\(\\)` is deprecated"):
        v2.ToTensor()


def test_identity_and_lambda_by_type():
    image, target = detection_sample(0)
    sample = (image, target)
    assert_same(*run_both(tv2.Identity(), v2.Identity(), sample))
    theirs = tv2.Lambda(lambda x: x.flip(-1), tv.BoundingBoxes)
    mine = v2.Lambda(lambda x: x.flip(-1), ours.BoundingBoxes)
    assert_same(*run_both(theirs, mine, sample))
    assert "types=['BoundingBoxes']" in repr(mine)


def test_queries():
    image, target = detection_sample(0)
    flat = [image, target["boxes"], target["masks"], "text"]  # what make_params gets: labels are left out
    assert v2.query_size(flat) == SIZE and v2.query_chw(flat) == (3, *SIZE)
    assert v2.get_bounding_boxes(flat) is target["boxes"]
    assert v2.has_any(flat, ours.Mask) and not v2.has_all(flat, ours.Mask, ours.KeyPoints)
    with pytest.raises(ValueError, match="Found multiple HxW dimensions"):
        v2.query_size([image, ours.Mask(engine.zeros(3, 3))])
    with pytest.raises(TypeError, match="No image or video was found"):
        v2.query_chw([target["boxes"]])


class Rotated(ours.TVTensor):
    """A custom TVTensor for the kernel registration test."""


def test_register_kernel_for_a_custom_tv_tensor():
    @F.register_kernel(F.gaussian_noise, Rotated)
    def _noise_on_rotated(inpt, mean=0.0, sigma=0.1, clip=True):
        return inpt + 100

    custom = engine.zeros(2).as_subclass(Rotated)
    assert F.gaussian_noise(custom).tolist() == [100.0, 100.0]
    assert v2.GaussianNoise()(custom).tolist() == [100.0, 100.0]
    with pytest.raises(ValueError, match="builtin tv_tensor classes"):
        F.register_kernel(F.gaussian_noise, ours.Image)
    with pytest.raises(ValueError, match="only be registered on functionals"):
        F.register_kernel(len, Rotated)
    with pytest.raises(TypeError, match="supports inputs of type"):
        F.normalize(ours.Mask(engine.zeros(2, 2)), [0.5], [0.5])


def test_to_torch_helper_round_trips():
    image, target = detection_sample(0)
    converted = to_torch((image, target))
    assert type(converted[0]) is tv.Image and converted[1]["boxes"].format.value == "XYXY"


def _public(module):
    return {name for name in dir(module) if not name.startswith("_")}


def test_every_name_of_torchvisions_v2_and_tv_tensors_is_here():
    import torchvision.transforms.v2.functional as torchvision_functional
    from torchvision import tv_tensors as torchvision_tv_tensors
    assert _public(tv2) - _public(v2) == set()
    assert _public(torchvision_functional) - _public(F) == set()
    # "torch" is a module torchvision imports
    assert _public(torchvision_tv_tensors) - _public(ours) == {"torch"}


def _detection_pipeline(m, image_type, float32, sanitize=True):
    return m.Compose([m.RandomPhotometricDistort(p=1), m.RandomZoomOut(fill={image_type: (123, 117, 104)}),
                      m.RandomIoUCrop(), m.RandomHorizontalFlip(), *([m.SanitizeBoundingBoxes()] if sanitize else []),
                      m.ToDtype(float32, scale=True)])


@pytest.mark.parametrize("seed", range(4))
def test_detection_training_pipeline_equals_torchvisions(seed):
    """The README's pipeline (torchvision's detection reference recipe, SSD-style) on a sample with masks."""
    expected, actual = run_both(_detection_pipeline(tv2, tv.Image, torch.float32),
                                _detection_pipeline(v2, ours.Image, engine.float32), detection_sample(seed), seed)
    assert_same(expected, actual)


def test_detection_pipeline_under_tv_tensor_return_type():
    """The transforms give the same sample when tensor operations return TVTensors (without
    SanitizeBoundingBoxes, which torchvision's fails so: its validity mask becomes boxes that cannot index a mask)."""
    with tv.set_return_type("TVTensor"), ours.set_return_type("TVTensor"):
        expected, actual = run_both(_detection_pipeline(tv2, tv.Image, torch.float32, sanitize=False),
                                    _detection_pipeline(v2, ours.Image, engine.float32, sanitize=False),
                                    detection_sample(1), 1)
    assert_same(expected, actual)
