"""Shared by the v2 transform tests: the same sample for torchvision and for us, and their comparison.

A sample is built once with numpy and made twice: as torch/torchvision objects and as engine/flowvision ones
(tv_tensors keep their type and metadata). ``run_both`` seeds both generators alike, applies a torchvision
transform and ours, and returns both outputs; ``assert_same`` compares whole samples, types and metadata too.
"""
import numpy as np
import PIL.Image
import torch
from torchvision import tv_tensors as tv

import engine
from flowvision import tv_tensors as ours


def image_array(seed, shape=(3, 29, 37), dtype=np.uint8):
    """A seeded image array (uint8 0-255, or float in [0, 1])."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.uint8:
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.random(shape).astype(dtype)


def boxes_array(seed, canvas_size, count=5):
    """``count`` seeded XYXY float32 boxes inside ``canvas_size`` (height, width), some touching the border."""
    rng = np.random.default_rng(seed)
    height, width = canvas_size
    x = np.sort(rng.uniform(0, width, (count, 2)), axis=1)
    y = np.sort(rng.uniform(0, height, (count, 2)), axis=1)
    x[0] = (0, width)
    return np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=1).astype(np.float32)


KINDS = ("image", "image_float", "batch", "video", "tensor", "pil", "sample")


def seeds_for(kind):
    """Seeds 0-4 for single images, 0-2 for the other kinds (to keep the tests fast)."""
    return range(5) if kind in ("image", "image_float") else range(3)


def make_input(kind, seed=0):
    """An input of the given kind: Image (uint8, float32, batched), Video, pure tensor, PIL, a dict sample with
    boxes, a mask and labels ("sample"), or a dict of an image and its labels ("labelled")."""
    shape = {"batch": (2, 3, 29, 37), "video": (2, 3, 29, 37)}.get(kind, (3, 29, 37))
    data = engine.from_numpy(image_array(seed, shape, np.float32 if kind == "image_float" else np.uint8))
    if kind == "pil":
        return PIL.Image.fromarray(image_array(seed, (29, 37, 3)), "RGB")
    if kind == "tensor":
        return data
    if kind == "video":
        return ours.Video(data)
    if kind == "sample":
        return {"image": ours.Image(data),
                "boxes": ours.BoundingBoxes(engine.from_numpy(boxes_array(seed, (29, 37))), format="XYXY",
                                            canvas_size=(29, 37)),
                "mask": ours.Mask(engine.from_numpy(image_array(seed, (29, 37)) % 3)),
                "labels": engine.tensor([1, 2, 3, 4, 5])}
    if kind == "labelled":
        return {"image": ours.Image(data), "labels": engine.tensor([1, 2])}
    return ours.Image(data)


def to_torch(obj):
    """Our sample (nested lists, tuples and dicts of tensors, tv_tensors, PIL images, other leaves) in torch."""
    if isinstance(obj, ours.BoundingBoxes):
        return tv.BoundingBoxes(torch.from_numpy(obj.numpy().copy()), format=obj.format.value,
                                canvas_size=obj.canvas_size, clamping_mode=obj.clamping_mode)
    if isinstance(obj, ours.KeyPoints):
        return tv.KeyPoints(torch.from_numpy(obj.numpy().copy()), canvas_size=obj.canvas_size)
    for mine, theirs in ((ours.Image, tv.Image), (ours.Video, tv.Video), (ours.Mask, tv.Mask)):
        if isinstance(obj, mine):
            return theirs(torch.from_numpy(obj.numpy().copy()))
    if isinstance(obj, engine.Tensor):
        return torch.from_numpy(obj.numpy().copy())
    if isinstance(obj, dict):
        return {key: to_torch(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_torch(value) for value in obj)
    return obj.copy() if isinstance(obj, PIL.Image.Image) else obj


def run_both(theirs, mine, sample, seed=0):
    """(torchvision's output, ours) for ``sample`` (ours; torch's made from it), both generators seeded alike."""
    torch_sample = to_torch(sample)
    torch.manual_seed(seed)
    expected = theirs(torch_sample)
    torch_next = torch.rand(1).item()
    engine.manual_seed(seed)
    actual = mine(sample)
    assert engine.rand(1).item() == torch_next, "the transforms drew different amounts of random numbers"
    return expected, actual


def _kind(obj):
    for name in ("BoundingBoxes", "KeyPoints", "Image", "Video", "Mask"):
        if type(obj).__name__ == name:
            return name
    if isinstance(obj, (torch.Tensor, engine.Tensor)):
        return "Tensor"
    return type(obj).__name__


def assert_same(expected, actual, atol=0, rtol=0, path="sample"):
    """Equal samples: structure, types (torch's type names equal ours), tv_tensor metadata, dtypes, values."""
    assert _kind(expected) == _kind(actual), f"{path}: {_kind(expected)} != {_kind(actual)}"
    if isinstance(expected, dict):
        assert list(expected) == list(actual), f"{path}: keys {list(expected)} != {list(actual)}"
        for key in expected:
            assert_same(expected[key], actual[key], atol, rtol, f"{path}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert len(expected) == len(actual), f"{path}: {len(expected)} items != {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, atol, rtol, f"{path}[{i}]")
    elif isinstance(expected, torch.Tensor):
        if isinstance(expected, tv.BoundingBoxes):
            assert expected.format.value == actual.format.value, f"{path}: format"
            assert tuple(expected.canvas_size) == tuple(actual.canvas_size), \
                f"{path}: canvas {expected.canvas_size} != {actual.canvas_size}"
            assert expected.clamping_mode == actual.clamping_mode, f"{path}: clamping_mode"
        if isinstance(expected, tv.KeyPoints):
            assert tuple(expected.canvas_size) == tuple(actual.canvas_size), f"{path}: canvas"
        assert str(expected.dtype).split(".")[-1] == str(actual.dtype).split(".")[-1], \
            f"{path}: {expected.dtype} != {actual.dtype}"
        e, a = expected.detach().numpy(), actual.detach().cpu().numpy()
        assert e.shape == a.shape, f"{path}: shape {e.shape} != {a.shape}"
        if atol == 0 and rtol == 0:
            assert np.array_equal(e, a), f"{path}: {np.abs(e.astype(float) - a.astype(float)).max()} max diff"
        else:
            np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), atol=atol, rtol=rtol,
                                       err_msg=path)
    elif isinstance(expected, PIL.Image.Image):
        assert expected.mode == actual.mode and expected.size == actual.size, f"{path}: PIL mode/size"
        e, a = np.asarray(expected).astype(float), np.asarray(actual).astype(float)
        assert np.abs(e - a).max(initial=0) <= atol, f"{path}: PIL max diff {np.abs(e - a).max()}"
    else:
        assert expected == actual, f"{path}: {expected!r} != {actual!r}"
