"""flowvision.tv_tensors behave as torchvision's: what operations return, metadata, construction, pickling."""
import copy
import pickle

import numpy as np
import pytest
import torch
from torchvision import tv_tensors as tv

import engine
from flowvision import tv_tensors as ours


def _pair(kind, array, **metadata):
    return getattr(tv, kind)(torch.from_numpy(array.copy()), **metadata), getattr(ours, kind)(
        engine.from_numpy(array.copy()), **metadata)


SAMPLES = [
    ("Image", np.arange(60, dtype=np.float32).reshape(3, 4, 5), {}),
    ("Video", np.zeros((2, 3, 4, 5), np.uint8), {}),
    ("Mask", np.eye(4, dtype=bool), {}),
    ("BoundingBoxes", np.array([[1, 2, 3, 4], [0, 0, 2, 2]], np.int64), {"format": "XYWH", "canvas_size": (5, 6)}),
    ("KeyPoints", np.array([[1.5, 2.0], [0.0, 3.0]], np.float32), {"canvas_size": (5, 6)}),
]

OPERATIONS = {
    "clone": lambda t: t.clone(),
    "detach": lambda t: t.detach(),
    "to same dtype": lambda t: t.to(t.dtype),
    "to float64": lambda t: t.to(torch.float64 if isinstance(t, torch.Tensor) else engine.float64),
    "requires_grad_": lambda t: t.requires_grad_(False),
    "cpu": lambda t: t.cpu(),
    "contiguous": lambda t: t.contiguous(),
    "flatten": lambda t: t.flatten(),
    "index": lambda t: t[0],
    "add": lambda t: t + 1,
    "reflected mul": lambda t: 2 * t,
    "sum": lambda t: t.sum(),
    "in-place zero_": lambda t: t.clone().zero_(),
}


def _assert_same_result(expected, actual):
    """Same type names, values and metadata (format, canvas size, clamping), in tuples and lists too."""
    if isinstance(expected, (tuple, list)):
        assert type(actual).__name__ == type(expected).__name__ and len(actual) == len(expected)
        for e, a in zip(expected, actual):
            _assert_same_result(e, a)
        return
    assert type(actual).__name__ == type(expected).__name__
    assert np.array_equal(actual.detach().numpy(), expected.detach().numpy())
    for name in ("format", "canvas_size", "clamping_mode"):
        if hasattr(expected, name):
            assert getattr(actual, name) == getattr(expected, name) or \
                getattr(actual, name).value == getattr(expected, name).value


@pytest.mark.parametrize("kind,array,metadata", SAMPLES, ids=[s[0] for s in SAMPLES])
@pytest.mark.parametrize("operation", OPERATIONS)
def test_operations_return_pure_tensors_except_torchvisions_few(kind, array, metadata, operation):
    theirs, mine = _pair(kind, array, **metadata)
    _assert_same_result(OPERATIONS[operation](theirs), OPERATIONS[operation](mine))


# under set_return_type("TVTensor"), besides OPERATIONS
MORE_OPERATIONS = {
    "flip": lambda t: t.flip(-1),
    "negate": lambda t: -t,
    "compare": lambda t: t == 2,
    "split": lambda t: t.split(1),
    "max over dim 0": lambda t: t.max(0),
    "iterate": lambda t: list(t),
    "in-place add_": lambda t: t.add_(1),
}


@pytest.mark.parametrize("kind,array,metadata", SAMPLES, ids=[s[0] for s in SAMPLES])
@pytest.mark.parametrize("operation", {**OPERATIONS, **MORE_OPERATIONS})
def test_operations_under_tv_tensor_return_type(kind, array, metadata, operation):
    """Methods and operators return the TVTensor's type and metadata, tuples and named tuples of them too."""
    theirs, mine = _pair(kind, array.astype(np.float32), **metadata)
    run = {**OPERATIONS, **MORE_OPERATIONS}[operation]
    with tv.set_return_type("TVTensor"), ours.set_return_type("TVTensor"):
        expected, actual = run(theirs), run(mine)
    _assert_same_result(expected, actual)
    assert type(mine + 1) is engine.Tensor  # the default is back


def test_set_return_type_globally_and_bad_names():
    image = ours.Image(engine.zeros(1, 2, 2))
    ours.set_return_type("tvtensor")
    try:
        assert type(image * 2) is ours.Image
    finally:
        ours.set_return_type("Tensor")
    assert type(image * 2) is engine.Tensor
    with pytest.raises(ValueError, match="return_type must be 'TVTensor' or 'Tensor', got image"):
        ours.set_return_type("image")


def test_in_place_operator_rebinds_to_a_pure_tensor_as_in_torchvision():
    theirs, mine = _pair("Image", np.zeros((1, 2, 2), np.float32))
    theirs += 1
    mine += 1
    assert type(theirs) is torch.Tensor and type(mine) is engine.Tensor


@pytest.mark.parametrize("kind,array,metadata", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_repr_equals_torchvisions(kind, array, metadata):
    theirs, mine = _pair(kind, array, **metadata)
    expected = repr(theirs).replace("torch.", "engine.")
    if kind in ("Image", "Video"):  # torchvision prints "Image([...], )": its empty metadata list leaves a comma
        expected = expected.replace(", )", ")")
    assert repr(mine) == expected


@pytest.mark.parametrize("kind,array,metadata", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_pickle_and_deepcopy_keep_type_and_metadata(kind, array, metadata):
    _, mine = _pair(kind, array, **metadata)
    for copied in (pickle.loads(pickle.dumps(mine)), copy.deepcopy(mine)):
        assert type(copied) is type(mine) and repr(copied) == repr(mine)
        assert copied._data is not mine._data


def test_construction_as_torchvision():
    image = ours.Image(engine.zeros(4, 5))
    assert image.shape == (1, 4, 5)  # a channel dimension is added
    boxes = ours.BoundingBoxes([1, 2, 3, 4], format=ours.BoundingBoxFormat.CXCYWH, canvas_size=[7, 8])
    assert boxes.shape == (1, 4) and boxes.canvas_size == (7, 8) and boxes.dtype == engine.int64
    assert boxes.clamping_mode == "soft"
    points = ours.KeyPoints([1.0, 2.0], canvas_size=(3, 3))
    assert points.shape == (1, 2)
    leaf = engine.zeros(2, 2, requires_grad=True)
    assert ours.Mask(leaf).requires_grad and not ours.Mask(leaf, requires_grad=False).requires_grad
    assert ours.Image(engine.zeros(1, 2, 2), dtype=engine.float64).dtype == engine.float64


def test_construction_from_pil():
    from PIL import Image as PILImage
    picture = PILImage.fromarray(np.arange(24, dtype=np.uint8).reshape(2, 4, 3))
    for name in ("Image", "Mask"):
        expected, actual = getattr(tv, name)(picture), getattr(ours, name)(picture)
        assert type(actual).__name__ == name and np.array_equal(actual.numpy(), expected.numpy())


@pytest.mark.parametrize("build,error", [
    (lambda m: m.Image(m_zeros(m, 3)), ValueError),
    (lambda m: m.Video(m_zeros(m, 3, 4, 5)), ValueError),
    (lambda m: m.BoundingBoxes(m_zeros(m, 1, 2, 4), format="XYXY", canvas_size=(2, 2)), ValueError),
    (lambda m: m.BoundingBoxes(m_zeros(m, 1, 4), format="XYXY", canvas_size=(2, 2), clamping_mode="x"), ValueError),
    (lambda m: m.KeyPoints(m_zeros(m, 2, 3), canvas_size=(2, 2)), ValueError),
])
def test_bad_construction_raises_as_torchvision(build, error):
    with pytest.raises(error):
        build(tv)
    with pytest.raises(error, match=r"\w+"):  # a message, even where torchvision's Video raises a bare ValueError
        build(ours)


def m_zeros(module, *shape):
    return torch.zeros(*shape) if module is tv else engine.zeros(*shape)


def test_rotated_box_formats_build_and_integer_ones_are_refused():
    """Rotated formats build (test_rotated_boxes.py tests them in depth); integer rotated boxes raise as in
    torchvision."""
    boxes = ours.BoundingBoxes(engine.zeros(1, 5), format="XYWHR", canvas_size=(2, 2))
    assert boxes.format is ours.BoundingBoxFormat.XYWHR and ours.is_rotated_bounding_format(boxes.format)
    assert ours.is_rotated_bounding_format("CXCYWHR") and not ours.is_rotated_bounding_format("XYXY")
    for module, lib in ((tv, torch), (ours, engine)):
        with pytest.raises(ValueError, match="floating point"):
            module.BoundingBoxes(lib.zeros(1, 8, dtype=lib.int64), format="XYXYXYXY", canvas_size=(2, 2))


def test_wrap_takes_metadata_from_like_or_overrides():
    boxes = ours.BoundingBoxes(engine.ones(2, 4), format="XYXY", canvas_size=(3, 4), clamping_mode="hard")
    wrapped = ours.wrap(engine.zeros(2, 4), like=boxes, canvas_size=(9, 9))
    assert type(wrapped) is ours.BoundingBoxes
    assert (wrapped.format, wrapped.canvas_size, wrapped.clamping_mode) == (boxes.format, (9, 9), "hard")
    image = ours.wrap(engine.zeros(1, 2, 2), like=ours.Image(engine.ones(1, 2, 2)))
    assert type(image) is ours.Image


def test_as_subclass_shares_data_and_autograd():
    x = engine.ones(2, 3, requires_grad=True)
    image = (x * 3).as_subclass(ours.Image)
    (image.as_subclass(engine.Tensor) * 2).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.full((2, 3), 6.0))
    with pytest.raises(TypeError, match="subclass of Tensor"):
        x.as_subclass(int)


class _BoxesDataset(engine.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        image = ours.Image(engine.full((3, 4, 5), float(index)))
        boxes = ours.BoundingBoxes(engine.tensor([[0, 0, index + 1, 2]]), format="XYXY", canvas_size=(4, 5))
        return image, {"boxes": boxes, "labels": engine.tensor([index])}


def test_dataloader_workers_send_tv_tensors_with_their_metadata():
    loader = engine.utils.data.DataLoader(_BoxesDataset(), batch_size=2, num_workers=2,
                                          collate_fn=lambda batch: tuple(zip(*batch)))
    batches = list(loader)
    images, targets = batches[1]
    assert [type(image) for image in images] == [ours.Image, ours.Image]
    assert [t["boxes"].canvas_size for t in targets] == [(4, 5), (4, 5)]
    assert targets[1]["boxes"].tolist() == [[0, 0, 4, 2]] and float(images[1][0, 0, 0]) == 3.0
    stacked = next(iter(engine.utils.data.DataLoader(_BoxesDataset(), batch_size=2)))[0]
    assert type(stacked) is engine.Tensor and stacked.shape == (2, 3, 4, 5)  # default_collate stacks: a pure tensor
