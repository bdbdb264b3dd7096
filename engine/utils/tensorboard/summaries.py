"""Building serialized ``Summary`` messages from values, as torch.utils.tensorboard.summary does:
scalars, histograms, images, audio, tensors, text, PR curves and custom-scalar layouts (hparams: hparams.py)."""
import numpy as np

from . import images, messages, plugins
from .convert import make_np

def default_bins():
    """TensorFlow's histogram edges torch's writer uses for ``bins='tensorflow'``: +-1e-12 growing by
    a factor 1.1 up to 1e20, mirrored around 0."""
    edges = []
    v = 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


def scalar(tag, value, new_style=False, double_precision=False):
    """One scalar: ``simple_value`` (float32), or with ``new_style`` a 'scalars'-plugin tensor."""
    array = make_np(value).squeeze()
    if array.ndim != 0:
        raise ValueError(f"Tensor should contain one element (0 dimensions). Was given size: "
                         f"{array.size} and {array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return messages.summary(messages.value(tag, simple_value=number))
    if double_precision:
        tensor = messages.tensor(messages.DT_DOUBLE, double_val=[number])
    else:
        tensor = messages.tensor(messages.DT_FLOAT, float_val=[number])
    return messages.summary(messages.value(tag, tensor=tensor, metadata=messages.metadata("scalars")))


def _subsample(counts, limits, max_bins):
    """Merge consecutive bins so at most ``max_bins`` remain (counts padded with zeros to a multiple)."""
    step = len(counts) // max_bins
    remainder = len(counts) % step
    if remainder:
        counts = np.pad(counts, [[0, step - remainder]])
    counts = counts.reshape(-1, step).sum(axis=-1)
    new_limits = np.empty(counts.size + 1, limits.dtype)
    new_limits[:-1] = limits[:-1:step]
    new_limits[-1] = limits[-1]
    return counts, new_limits


def histogram_proto(values, bins, max_bins=None):
    """A ``HistogramProto`` of ``values`` with ``np.histogram`` binning, trimmed to the bins between
    the first and last non-empty one and keeping one empty bin on the left so its left edge shows
    (TensorBoard stores right edges only), as torch's writer lays it out."""
    values = make_np(values).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        counts, limits = _subsample(counts, limits, max_bins)
    nonzero = np.flatnonzero(counts)
    start, end = (int(nonzero[0]), int(nonzero[-1]) + 1) if nonzero.size else (len(counts), 1)
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty: no value falls inside the bins.")
    return messages.histogram(values.min(), values.max(), len(values), values.sum(), values.dot(values),
                              limits.tolist(), counts.tolist())


def histogram(tag, values, bins, max_bins=None):
    """A histogram summary."""
    return messages.summary(messages.value(tag, histo=histogram_proto(values, bins, max_bins)))


def histogram_raw(tag, vmin, vmax, num, vsum, sum_squares, bucket_limits, bucket_counts):
    """A histogram summary from precomputed statistics and buckets."""
    histo = messages.histogram(vmin, vmax, num, vsum, sum_squares, list(bucket_limits), list(bucket_counts))
    return messages.summary(messages.value(tag, histo=histo))


def image(tag, value, dataformats="NCHW"):
    """An image summary: ``value`` laid out as ``dataformats``, PNG-encoded."""
    hwc = images.to_uint8(images.to_hwc(make_np(value), dataformats))
    height, width, channels = hwc.shape
    encoded = messages.image(height, width, channels, images.encode_png(hwc))
    return messages.summary(messages.value(tag, image=encoded))


def audio(tag, value, sample_rate=44100):
    """An audio summary: a 1-D clip in [-1, 1] (clipped beyond) as 16-bit mono WAV."""
    import io
    import wave
    clip = make_np(value).squeeze()
    if abs(clip).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        clip = clip.clip(-1, 1)
    if clip.ndim != 1:
        raise ValueError("input tensor should be 1 dimensional.")
    pcm = (clip * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as buf:
        with wave.open(buf, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(sample_rate)
            wav.writeframes(pcm.tobytes())
        encoded = buf.getvalue()
    return messages.summary(messages.value(tag, audio=messages.audio(sample_rate, pcm.shape[-1], encoded)))


# numpy dtype -> (TensorProto dtype, the messages.tensor keyword holding the values), as torch maps them
_TENSOR_DTYPES = {
    "float32": (messages.DT_FLOAT, "float_val"), "float64": (messages.DT_DOUBLE, "double_val"),
    "int8": (messages.DT_INT8, "int_val"), "uint8": (messages.DT_UINT8, "uint32_val"),
    "int16": (messages.DT_INT16, "int_val"), "int32": (messages.DT_INT32, "int_val"),
    "int64": (messages.DT_INT64, "int64_val"), "bool": (messages.DT_BOOL, "bool_val"),
}


def tensor(tag, value):
    """A whole tensor for the 'tensor' plugin (real float, integer and bool dtypes)."""
    array = make_np(value)
    if array.nbytes >= 1 << 31:
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if array.dtype.name not in _TENSOR_DTYPES:
        raise ValueError(f"{tag} has unsupported tensor dtype {array.dtype}")
    dtype, field = _TENSOR_DTYPES[array.dtype.name]
    encoded = messages.tensor(dtype, shape=list(array.shape), **{field: array.reshape(-1).tolist()})
    return messages.summary(messages.value(tag, tensor=encoded, metadata=messages.metadata("tensor")))


def text(tag, string):
    """A text-plugin summary: a 1-element string tensor under ``<tag>/text_summary``."""
    meta = messages.metadata("text", plugins.text_plugin_data())
    tensor = messages.tensor(messages.DT_STRING, shape=[1], string_val=[string.encode("utf-8")])
    return messages.summary(messages.value(tag + "/text_summary", tensor=tensor, metadata=meta))


def custom_scalars(layout):
    """The custom-scalars plugin's layout summary (tag ``custom_scalars__config__``)."""
    tensor = messages.tensor(messages.DT_STRING, shape=[], string_val=[plugins.layout(layout)])
    meta = messages.metadata("custom_scalars")
    return messages.summary(messages.value("custom_scalars__config__", tensor=tensor, metadata=meta))


def compute_pr_curve(labels, predictions, num_thresholds, weights=None):
    """The 6 x num_thresholds table TP, FP, TN, FN, precision, recall at thresholds i/(n-1)."""
    weights = 1.0 if weights is None else weights
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_hist, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=positive * weights)
    fp_hist, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=(1.0 - positive) * weights)
    tp = np.cumsum(tp_hist[::-1])[::-1]
    fp = np.cumsum(fp_hist[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def pr_curve_from_table(tag, table, num_thresholds):
    """A pr_curves-plugin summary of a 6 x n table (TP, FP, TN, FN, precision, recall)."""
    table = np.asarray(table)
    meta = messages.metadata("pr_curves", plugins.pr_curve_plugin_data(num_thresholds))
    tensor = messages.tensor(messages.DT_FLOAT, shape=list(table.shape), float_val=table.reshape(-1).tolist())
    return messages.summary(messages.value(tag, tensor=tensor, metadata=meta))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """A PR-curve summary; more than 127 thresholds are capped at 127 as in torch."""
    num_thresholds = min(num_thresholds, 127)
    table = compute_pr_curve(make_np(labels), make_np(predictions), num_thresholds, weights)
    return pr_curve_from_table(tag, table, num_thresholds)
