"""Encoders for the TensorBoard protocol-buffer messages the writer emits (tensorboard/compat/proto).

Each function takes Python values and returns the serialized message, fields in field-number order with
proto3's default-value omission, so the bytes equal what the official ``SerializeToString`` gives.
Field numbers are those of event.proto, summary.proto, tensor.proto, tensor_shape.proto and the
plugins' plugin_data.proto / api.proto / layout.proto.
"""
from . import proto

# tensorflow DataType values used here (types.proto)
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING, DT_INT64, DT_BOOL = 1, 2, 3, 4, 5, 6, 7, 9, 10
SESSION_LOG_START = 1


def event(wall_time=0.0, step=0, file_version=None, summary=None, session_log=None, source_writer=None):
    """An ``Event``: one of file_version / summary / session_log, plus wall time and step."""
    out = proto.double(1, wall_time) + proto.uint(2, step)
    if file_version is not None:
        out += proto.blob(3, file_version, always=True)
    if summary is not None:
        out += proto.message(5, summary)
    if session_log is not None:
        out += proto.message(7, proto.uint(1, session_log))
    if source_writer is not None:
        out += proto.message(10, proto.blob(1, source_writer))
    return out


def summary(*values):
    """A ``Summary`` of encoded ``Summary.Value`` messages."""
    return proto.repeated_blob(1, values)


def value(tag, simple_value=None, image=None, histo=None, audio=None, tensor=None, metadata=None):
    """A ``Summary.Value``: a tag and one of simple_value / image / histo / audio / tensor (a oneof,
    so always written), plus optional metadata."""
    out = proto.blob(1, tag)
    if simple_value is not None:
        out += proto.float32(2, simple_value, always=True)
    if image is not None:
        out += proto.message(4, image)
    if histo is not None:
        out += proto.message(5, histo)
    if audio is not None:
        out += proto.message(6, audio)
    if tensor is not None:
        out += proto.message(8, tensor)
    if metadata is not None:
        out += proto.message(9, metadata)
    return out


def image(height, width, colorspace, encoded):
    """A ``Summary.Image`` holding encoded (PNG) bytes."""
    return (proto.uint(1, height) + proto.uint(2, width) + proto.uint(3, colorspace)
            + proto.blob(4, encoded))


def audio(sample_rate, length_frames, encoded, num_channels=1, content_type="audio/wav"):
    """A ``Summary.Audio`` holding an encoded (WAV) clip."""
    return (proto.float32(1, sample_rate) + proto.uint(2, num_channels) + proto.uint(3, length_frames)
            + proto.blob(4, encoded) + proto.blob(5, content_type))


def histogram(vmin, vmax, num, vsum, sum_squares, bucket_limit, bucket):
    """A ``HistogramProto``: summary statistics and right bucket edges with their counts."""
    return (proto.double(1, vmin) + proto.double(2, vmax) + proto.double(3, num)
            + proto.double(4, vsum) + proto.double(5, sum_squares)
            + proto.packed_doubles(6, bucket_limit) + proto.packed_doubles(7, bucket))


def tensor_shape(dims):
    """A ``TensorShapeProto`` with the given sizes (an empty list is a scalar shape)."""
    return b"".join(proto.message(2, proto.uint(1, d)) for d in dims)


def tensor(dtype, shape=None, float_val=(), double_val=(), int_val=(), string_val=(), int64_val=(),
           bool_val=(), uint32_val=()):
    """A ``TensorProto``; ``shape`` None leaves tensor_shape unset, [] sets it to a scalar."""
    out = proto.uint(1, dtype)
    if shape is not None:
        out += proto.message(2, tensor_shape(shape))
    return (out + proto.packed_floats(5, float_val) + proto.packed_doubles(6, double_val)
            + proto.packed_varints(7, int_val) + proto.repeated_blob(8, string_val)
            + proto.packed_varints(10, int64_val) + proto.packed_varints(11, bool_val)
            + proto.packed_varints(16, uint32_val))


def metadata(plugin_name, content=b""):
    """A ``SummaryMetadata`` naming the plugin that reads the value and its plugin-specific content."""
    return proto.message(1, proto.blob(1, plugin_name) + proto.blob(2, content))
