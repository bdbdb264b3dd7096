"""ONNX export of the losses, cumprod and embedding_bag, roll along a dynamic dim, and of sizes a model derives from dynamic heights and
widths by rounded divisions: ONNX Runtime's outputs against our eager ones (found by a differential sweep over
opsets 13-21, dtypes, reductions and dynamic axes)."""
import io
import warnings

import numpy as np
import pytest
from onnx_check import Fn, check_export, eager_outputs, export_bytes, images, one, session
from op_check import assert_close

import engine
import engine.nn.functional as F
import engine.onnx
from engine.onnx import UnsupportedOperatorError

pytestmark = pytest.mark.slow


def _pair(shape, target="normal", dtype=np.float32):
    """``make_inputs`` of (input, target) pairs of ``(batch, *shape)``."""
    def make(batch):
        x = images(1, batch, *shape).astype(dtype)
        rng = np.random.default_rng(2)
        t = {"normal": lambda: rng.standard_normal((batch, *shape)),
             "unit": lambda: rng.uniform(0.05, 0.95, (batch, *shape))}[target]()
        return x, t.astype(dtype)
    return make


def _classes(shape, n_class):
    """(logits (batch, C, *shape), class indices (batch, *shape))."""
    def make(batch):
        return images(1, batch, n_class, *shape), np.random.default_rng(2).integers(0, n_class, (batch, *shape))
    return make


_W = engine.from_numpy(np.random.default_rng(3).uniform(0.2, 2.0, (3, 5)).astype(np.float32))
_PW = engine.from_numpy(np.random.default_rng(4).uniform(0.5, 3.0, 5).astype(np.float32))
_CW = engine.from_numpy(np.random.default_rng(5).uniform(0.2, 2.0, 4).astype(np.float32))

_POINTWISE = {
    "mse": lambda x, t, r: F.mse_loss(x, t, reduction=r),
    "l1": lambda x, t, r: F.l1_loss(x, t, reduction=r),
    "smooth_l1": lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.5),
    "huber": lambda x, t, r: F.huber_loss(x, t, reduction=r, delta=2.0),
    "soft_margin": lambda x, t, r: F.soft_margin_loss(x, t.sign(), reduction=r),
    "kl_log_target": lambda x, t, r: F.kl_div(x, t, reduction=r, log_target=True),
    "bce": lambda x, t, r: F.binary_cross_entropy(t.abs().clamp(0.01, 0.99), x.sigmoid(), weight=_W, reduction=r),
    "bce_logits": lambda x, t, r: F.binary_cross_entropy_with_logits(x * 4, t.sigmoid(), weight=_W, reduction=r,
                                                                     pos_weight=_PW),
    "cosine_embedding": lambda x, t, r: F.cosine_embedding_loss(x[:, 0], t[:, 0], t[:, 1, 0].sign(), margin=0.2,
                                                                reduction=r),
    "triplet": lambda x, t, r: F.triplet_margin_loss(x, t, x.flip(2), p=3, swap=True, reduction=r),
}


@pytest.mark.parametrize("name,reduction,opset", [
    ("mse", "mean", 13), ("l1", "sum", 21), ("smooth_l1", "none", 17), ("huber", "mean", 18),
    ("soft_margin", "sum", 15), ("kl_log_target", "sum", 19), ("bce", "mean", 14), ("bce_logits", "sum", 20),
    ("bce_logits", "none", 17), ("cosine_embedding", "mean", 13), ("triplet", "sum", 16)])
def test_pointwise_losses(name, reduction, opset):
    fn = _POINTWISE[name]
    check_export(Fn(lambda m, x, t: fn(x, t, reduction)), _pair((3, 5)), opset_version=opset)


def test_kl_div_batchmean_divides_by_the_runtime_batch():
    """batchmean divides by input.shape[0], a Python number that follows the batch: read at run time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_export(Fn(lambda m, x, t: F.kl_div(x, t.abs(), reduction="batchmean")), _pair((3, 5)))


@pytest.mark.parametrize("kind,kwargs,shape,opset", [
    ("ce", dict(weight=_CW, ignore_index=1, label_smoothing=0.2), (), 17),
    ("ce", dict(label_smoothing=0.1, reduction="sum"), (3, 2), 13),
    ("ce", dict(weight=_CW, reduction="none"), (5,), 21),
    ("nll", dict(weight=_CW, ignore_index=0), (3,), 18),
    ("nll", dict(reduction="sum"), (), 16),
])
def test_class_index_losses(kind, kwargs, shape, opset):
    if kind == "ce":
        fn = Fn(lambda m, x, t: F.cross_entropy(x, t, **kwargs))
    else:
        fn = Fn(lambda m, x, t: F.nll_loss(x.log_softmax(1), t, **kwargs))
    check_export(fn, _classes(shape, 4), opset_version=opset)


@pytest.mark.parametrize("kwargs", [dict(weight=_CW, label_smoothing=0.3), dict(reduction="none")])
def test_cross_entropy_with_class_probabilities(kwargs):
    check_export(Fn(lambda m, x, t: F.cross_entropy(x, t.softmax(1), **kwargs)), _pair((4, 3)), opset_version=15)


def test_cross_entropy_unbatched_in_a_batch_loop():
    """An unbatched (C,) input with a 0-d target: a fixed-shape export."""
    fn = Fn(lambda m, x, t: F.cross_entropy(x[0], t[0], weight=_CW, label_smoothing=0.1))
    check_export(fn, _classes((), 4), batches=(2,), dynamic=False)


# ---- cumprod -----------------------------------------------------------------------------------
def _with_zeros(dtype, *shape):
    def make(batch):
        x = np.random.default_rng(1).standard_normal((batch, *shape)) * 2
        x[np.random.default_rng(2).random(x.shape) < 0.2] = 0
        return (x.round() if np.dtype(dtype).kind == "i" else x).astype(dtype),
    return make


@pytest.mark.parametrize("dtype,dim,opset", [(np.float32, 2, 13), (np.float32, 0, 21), (np.float64, -1, 17),
                                             (np.int64, 1, 15), (np.int32, 2, 19)])
def test_cumprod_with_zeros_and_signs(dtype, dim, opset):
    """Along a fixed axis and along the dynamic batch axis; int32 accumulates in int64, as the engine."""
    check_export(Fn(lambda m, x: x.cumprod(dim)), _with_zeros(dtype, 3, 4), opset_version=opset)


def test_cumprod_float16_rounds_once_and_of_a_view():
    check_export(Fn(lambda m, x: x.cumprod(1)), _with_zeros(np.float16, 6, 2), rtol=1e-2)
    check_export(Fn(lambda m, x: x.transpose(1, 2)[:, ::2].cumprod(1)), _with_zeros(np.float32, 3, 5))


# ---- embedding_bag -----------------------------------------------------------------------------
_IDX = engine.tensor([1, 0, 1, 1, 0, 1, 0])


@pytest.mark.parametrize("mode,kwargs", [
    ("sum", dict(offsets=engine.tensor([0, 2, 2, 5]))),
    ("mean", dict(offsets=engine.tensor([0, 3, 7]), include_last_offset=True, padding_idx=0)),
    ("max", dict(offsets=engine.tensor([0, 1, 1, 4]), padding_idx=1)),
    ("sum", dict(offsets=engine.tensor([0, 4]), per_sample_weights=True)),
])
def test_embedding_bag_of_a_computed_table(mode, kwargs):
    """The table is the model's input (the indices and offsets constants): empty bags give 0, padding rows are
    left out."""
    psw = kwargs.pop("per_sample_weights", False)

    def fn(m, x):
        weights = x[0, :7] if psw else None
        return F.embedding_bag(_IDX, x, mode=mode, per_sample_weights=weights, **kwargs)
    check_export(Fn(fn), one(8), batches=(2,), dynamic=False)


def test_embedding_bag_of_input_indices_is_never_silently_constant():
    """Indices the model receives: exported through the trace, or refused; never kept as the traced values (a
    one-index bag of the first trace's index gave wrong rows at other batch sizes)."""
    weight = engine.nn.Parameter(engine.from_numpy(images(6, 5, 3)))
    model = Fn(lambda m, i: F.embedding_bag(i, m.weight, mode="mean"))
    model.weight = weight

    def make(batch):
        return np.random.default_rng(1).integers(0, 5, (batch, 1)),
    try:
        check_export(model, make)
    except UnsupportedOperatorError as e:
        assert "embedding_bag's indices are read as raw values" in str(e)


# ---- sizes derived from a dynamic height or width ----------------------------------------------
def _export_hw(fn, h, w, opset=17):
    x = images(0, 1, 2, h, w)
    return export_bytes(Fn(fn), (engine.from_numpy(x),), input_names=["x"],
                        dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}}, opset_version=opset)


@pytest.mark.parametrize("name,fn", [
    ("chunk", lambda m, x: engine.cat(x.chunk(2, 3)[::-1], 3)),
    ("crop_to_even", lambda m, x: F.pixel_unshuffle(x[:, :, :x.shape[2] // 2 * 2, :x.shape[3] // 2 * 2], 2)),
    ("cumprod_h", lambda m, x: (x * 0.9).cumprod(2) + F.mse_loss(x, x.flip(3), reduction="none")),
    ("roll", lambda m, x: x.roll((1, -3, 5), (2, 3, 0))),
])
def test_dynamic_height_and_width(name, fn):
    """Exported at even sizes and run at odd ones (and the other way): chunk's ceil(w / 2) and h // 2 * 2 are
    not mistaken for w / 2 or h - 1; roll's shift is taken mod the run's size."""
    for h, w in ((6, 8), (7, 5)):
        runner = session(_export_hw(fn, h, w))
        for shape in ((2, 2, 9, 7), (3, 2, 4, 10)):
            x = images(1, *shape)
            (got,), (ours,) = runner.run(None, {"x": x}), eager_outputs(Fn(fn), [x])
            assert got.shape == ours.shape
            assert_close(got, ours, 1e-5, f"{name} exported at {(h, w)}, run at {shape}")


def test_opset_too_low_is_one_line():
    """Converters that need a newer opset say which, in one line."""
    with pytest.raises(UnsupportedOperatorError, match=r"^engine\.onnx\.export: .*opset 13.*opset 14 \(Trilu\)$"):
        engine.onnx.export(Fn(lambda m, x: x.tril()), (engine.from_numpy(images(0, 2, 3, 3)),), io.BytesIO(),
                           opset_version=13)
