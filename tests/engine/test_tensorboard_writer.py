"""engine.utils.tensorboard.SummaryWriter against torch.utils.tensorboard.SummaryWriter and tensorboard's
own readers: the event records must be byte-for-byte the same (wall time fixed or zeroed), the CRCs
valid, and EventAccumulator must read back scalars, images, histograms, text and hparams."""
import glob
import os
import struct
import time

import numpy as np
import pytest

import engine
from engine.utils.tensorboard import SummaryWriter
from engine.utils.tensorboard.crc32c import crc32c, masked_crc32c

tb = pytest.importorskip("tensorboard")
torch = pytest.importorskip("torch")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.compat.proto import event_pb2  # noqa: E402
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_masked_crc32c  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

pytestmark = pytest.mark.slow  # torch's writer and tensorboard's reader on every case: about 2.4 s in all

WALL = 1700000000.25


def records(path):
    """The payloads of an event file, checking both CRCs of every record."""
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == tb_masked_crc32c(header)
        payload = data[pos + 12:pos + 12 + length]
        assert struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])[0] == tb_masked_crc32c(payload)
        out.append(payload)
        pos += 16 + length
    return out


def zero_wall_time(payload):
    """An Event's bytes with its wall_time (field 1, always first when set) zeroed."""
    return payload[:1] + bytes(8) + payload[9:] if payload[:1] == b"\x09" else payload


def canonical(payload):
    """An Event's bytes with hparams plugin content re-serialized deterministically (map keys sorted):
    protobuf's default map order is its hash order, ours is sorted."""
    from tensorboard.plugins.hparams import plugin_data_pb2
    event = event_pb2.Event.FromString(payload)
    for value in event.summary.value:
        if value.metadata.plugin_data.plugin_name == "hparams":
            content = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
            value.metadata.plugin_data.content = content.SerializeToString(deterministic=True)
    out = event.SerializeToString(deterministic=True)
    return b"\x09" + bytes(8) + out if payload[:1] == b"\x09" else out  # the zeroed wall_time


def event_files(log_dir):
    """{sub-directory relative to log_dir: [event payloads after the file-version event]}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "**", "events.out.tfevents.*"), recursive=True)):
        payloads = records(path)
        first = event_pb2.Event.FromString(payloads[0])
        assert first.file_version == "brain.Event:2" and first.wall_time > 0
        rel = os.path.relpath(os.path.dirname(path), log_dir)
        rel = "<run>" if rel.replace(".", "").isdigit() else rel  # add_hparams' time-named run
        out[rel] = [zero_wall_time(p) for p in payloads[1:]]
    return out


def both(tmp_path, calls, **kwargs):
    """Run ``calls(writer, tensor)`` on torch's writer (torch tensors) and ours (engine tensors)."""
    results = []
    for name, cls, tensor in (("torch", TorchWriter, torch.tensor), ("ours", SummaryWriter, engine.tensor)):
        log_dir = str(tmp_path / name)
        with cls(log_dir, **kwargs) as w:
            calls(w, tensor)
        results.append(log_dir)
    return results


def assert_same_events(tmp_path, calls, map_order=False, **kwargs):
    theirs, ours = both(tmp_path, calls, **kwargs)
    expected, got = event_files(theirs), event_files(ours)
    assert sorted(got) == sorted(expected)
    for key in expected:
        assert len(got[key]) == len(expected[key]), key
        for i, (a, b) in enumerate(zip(got[key], expected[key])):
            b = canonical(b) if map_order else b
            assert a == b, (key, i, event_pb2.Event.FromString(a), event_pb2.Event.FromString(b))
    return theirs, ours


# ---------------------------------------------------------------- CRC-32C


def test_crc32c_known_vectors():
    # RFC 3720 B.4 test vectors and the usual check value
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(b"") == 0
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283
    rng = np.random.default_rng(0)
    for n in (1, 7, 300):
        blob = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert masked_crc32c(blob) == tb_masked_crc32c(blob)


# ---------------------------------------------------------------- byte-for-byte against torch


def test_scalars_match_torch(tmp_path):
    def calls(w, tensor):
        w.add_scalar("loss", 0.5, 0, walltime=WALL)
        w.add_scalar("loss", tensor(1.25), 3, walltime=WALL)
        w.add_scalar("acc/top1", 7, -2, walltime=WALL)
        w.add_scalar("zero", 0.0, 2**40, walltime=WALL)
        w.add_scalar("new", tensor([[3.5]]), 1, walltime=WALL, new_style=True)
        w.add_scalar("new64", 1 / 3, 1, walltime=WALL, new_style=True, double_precision=True)
        w.add_scalar("no_step", np.float32(2.5), walltime=WALL)
        w.add_scalars("run/14h", {"xsinx": 1.5, "xcosx": tensor(-2.0)}, 4, walltime=WALL)
        w.add_scalars("run/14h", {"xsinx": 2.5}, 5, walltime=WALL)
    assert_same_events(tmp_path, calls)


def test_histograms_match_torch(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    y = rng.integers(-3, 9, 41)

    def calls(w, tensor):
        w.add_histogram("default", tensor(x), 1, walltime=WALL)
        w.add_histogram("ints", tensor(y), 2, walltime=WALL)
        w.add_histogram("auto", x, 3, bins="auto", walltime=WALL)
        w.add_histogram("fixed", tensor(x), 4, bins=13, max_bins=4, walltime=WALL)
        w.add_histogram("subsampled", x, 5, max_bins=50, walltime=WALL)
        w.add_histogram("constant", np.full(4, 2.0), 6, walltime=WALL)
        w.add_histogram("zeros", np.zeros(3), 6, walltime=WALL)
        w.add_histogram_raw("raw", -1.0, 3.0, 6, 4.0, 12.0, [0.0, 1.0, 3.0], [1, 2, 3], 7, walltime=WALL)
    assert_same_events(tmp_path, calls)


def test_images_match_torch(tmp_path):
    rng = np.random.default_rng(2)
    chw = rng.random((3, 5, 7)).astype(np.float32)
    hwc = rng.integers(0, 256, (6, 4, 3), dtype=np.uint8)
    rgba = rng.random((4, 3, 4))
    batch = rng.random((11, 1, 3, 2)).astype(np.float32) * 1.4 - 0.2  # out of [0, 1]: clipped

    def calls(w, tensor):
        w.add_image("chw", tensor(chw), 0, walltime=WALL)
        w.add_image("hwc", hwc, 1, walltime=WALL, dataformats="HWC")
        w.add_image("hw", tensor(chw[0]), 2, walltime=WALL, dataformats="HW")
        w.add_image("grey", chw[:1], 2, walltime=WALL)
        w.add_image("rgba", rgba, 2, walltime=WALL, dataformats="HWC")
        w.add_images("batch", tensor(batch), 3, walltime=WALL)
        w.add_images("nhwc", batch.transpose(0, 2, 3, 1), 4, walltime=WALL, dataformats="NHWC")
    assert_same_events(tmp_path, calls)


def test_figure_matches_torch(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def figure(k):
        fig = plt.figure(figsize=(1.2, 0.8), dpi=40)
        fig.gca().plot([0, 1, 2], [k, 2 * k, k])
        return fig

    def calls(w, tensor):
        w.add_figure("one", figure(1), 0, walltime=WALL)
        w.add_figure("list", [figure(2), figure(3)], 1, walltime=WALL)
    assert_same_events(tmp_path, calls)


def test_text_custom_scalars_and_pr_curves_match_torch(tmp_path):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 23)
    predictions = rng.random(23)
    weights = rng.random(23)
    layout = {"Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
              "USA": {"dow": ["Margin", ["dow/aaa", "dow/bbb", "dow/ccc"]],
                      "nasdaq": ["Multiline", ["nasdaq/aaa"]]}}

    def calls(w, tensor):
        w.add_text("note", "**bold** text, ünïcode ✓", 0, walltime=WALL)
        w.add_text("empty", "", 1, walltime=WALL)
        w.add_pr_curve("pr", tensor(labels), tensor(predictions), 1, walltime=WALL)
        w.add_pr_curve("pr_weighted", labels, predictions, 2, num_thresholds=9, weights=weights, walltime=WALL)
        w.add_pr_curve("pr_capped", labels, predictions, 2, num_thresholds=300, walltime=WALL)
        w.add_pr_curve_raw("pr_raw", tensor([5.0, 3.0]), [2.0, 0.0], [0.0, 2.0], [0.0, 2.0], [0.7, 1.0],
                           [1.0, 0.6], 3, num_thresholds=2, walltime=WALL)
        w.add_custom_scalars(layout)
        w.add_custom_scalars_multilinechart(["a", "b"], category="c", title="t")
        w.add_custom_scalars_marginchart(["v", "lo", "hi"])
    assert_same_events(tmp_path, calls)


def test_audio_and_tensors_match_torch(tmp_path):
    rng = np.random.default_rng(6)
    clip = rng.uniform(-1.2, 1.2, (1, 37))
    values = rng.standard_normal((2, 3)) * 100

    def calls(w, tensor):
        w.add_audio("clip", tensor(clip), 0, sample_rate=8000, walltime=WALL)
        for dtype in ("float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"):
            w.add_tensor("t_" + dtype, tensor(values.astype(dtype)), 1, walltime=WALL)
    assert_same_events(tmp_path, calls)


def test_hparams_and_purge_step_match_torch(tmp_path):
    def calls(w, tensor):
        w.add_hparams({"lr": 0.1, "bsize": 16, "opt": "sgd", "nesterov": True, "skip": None},
                      {"hparam/accuracy": 0.75, "hparam/loss": tensor(0.5)}, run_name="run1", global_step=3,
                      hparam_domain_discrete={"nesterov": [True, False], "bsize": [16, 32]})
        w.add_hparams({"lr": 0.01, "opt": "adam"}, {"m": 1.0},
                      hparam_domain_discrete={"opt": ["adam", "sgd"], "lr": [0.01, 0.1]}, run_name="run2")
        w.add_hparams({"w": tensor([2.5])}, {}, run_name="a/b")  # torch fails on a 0-d tensor
        w.add_hparams({"x": 1}, {"y": 2})  # run named by the current time
    assert_same_events(tmp_path, calls, map_order=True, purge_step=7)


def test_embedding_files_match_torch(tmp_path):
    rng = np.random.default_rng(4)
    mat = rng.standard_normal((5, 3)).astype(np.float32)
    thumbs = rng.random((5, 3, 4, 4)).astype(np.float32)

    def calls(w, tensor):
        w.add_embedding(tensor(mat), metadata=list("abcde"), label_img=tensor(thumbs), global_step=3)
        w.add_embedding(mat.astype(np.float64), metadata=[[i, f"n{i}"] for i in range(5)],
                        metadata_header=["id", "name"], tag="with/slash%")
        w.add_embedding(tensor(mat[:2]), tag="grey", label_img=tensor(thumbs[:2, :1]), global_step=12345)
    theirs, ours = both(tmp_path, calls)
    expected = sorted(os.path.relpath(p, theirs) for p in glob.glob(f"{theirs}/**/*", recursive=True)
                      if os.path.isfile(p) and "tfevents" not in p)
    got = sorted(os.path.relpath(p, ours) for p in glob.glob(f"{ours}/**/*", recursive=True)
                 if os.path.isfile(p) and "tfevents" not in p)
    assert got == expected and "projector_config.pbtxt" in got
    for rel in expected:
        assert open(os.path.join(ours, rel), "rb").read() == open(os.path.join(theirs, rel), "rb").read(), rel


# ---------------------------------------------------------------- read back with tensorboard


def test_tensorboard_reads_our_events(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.util import tensor_util
    rng = np.random.default_rng(5)
    values = rng.standard_normal(1000)
    img = rng.integers(0, 256, (3, 6, 5), dtype=np.uint8)
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_histogram("weights", engine.tensor(values), 0)
        w.add_image("img", engine.tensor(img), 0)
        w.add_text("notes", "hello", 0)
        w.add_hparams({"lr": 0.1}, {"metric": 0.5}, run_name="hp")
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0, "histograms": 0, "tensors": 0}).Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(0, 1.0), (1, 0.5), (2, np.float32(1 / 3))]
    histo = acc.Histograms("weights")[0].histogram_value
    assert histo.num == 1000 and histo.min == values.min() and histo.max == values.max()
    assert sum(histo.bucket) == 1000 and np.isclose(histo.sum, values.sum())
    encoded = acc.Images("img")[0]
    from PIL import Image
    import io
    decoded = np.asarray(Image.open(io.BytesIO(encoded.encoded_image_string)))
    np.testing.assert_array_equal(decoded, img.transpose(1, 2, 0))
    assert (encoded.width, encoded.height) == (5, 6)
    text = acc.Tensors("notes/text_summary")[0].tensor_proto
    assert tensor_util.make_ndarray(text).tolist() == [b"hello"]
    run = EventAccumulator(str(tmp_path / "hp")).Reload()
    content = run.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    assert start.session_start_info.hparams["lr"].number_value == 0.1
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [m.name.tag for m in exp.metric_infos] == ["metric"]
    assert run.Scalars("metric")[0].value == 0.5


# ---------------------------------------------------------------- writer behaviour


def test_default_log_dir_and_file_name(tmp_path, monkeypatch):
    import socket
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1", filename_suffix=".v2")
    try:
        head, name = os.path.split(w.get_logdir())
        assert head == "runs" and name.endswith("_" + socket.gethostname() + "_lr0.1")
        time.strptime(name[:14], "%b%d_%H-%M-%S")
        (path,) = glob.glob(os.path.join(w.get_logdir(), "*"))
        parts = os.path.basename(path).split(".")
        assert parts[:3] == ["events", "out", "tfevents"] and len(parts[3]) == 10 and parts[-1] == "v2"
        assert parts[-3] == str(os.getpid())
    finally:
        w.close()


def test_async_flush_close_and_reopen(tmp_path):
    w = SummaryWriter(str(tmp_path), flush_secs=0.05, max_queue=2)
    (path,) = glob.glob(f"{tmp_path}/*")
    for step in range(5):  # more than max_queue: the caller waits for the thread
        w.add_scalar("a", step, step)
    deadline = time.time() + 5
    while len(records(path)) < 6 and time.time() < deadline:  # the thread flushes by itself
        time.sleep(0.02)
    assert len(records(path)) == 6
    w.close()
    w.close()
    w.add_scalar("a", 9.0, 9)  # a closed writer reopens with a new file
    w.flush()
    assert len(glob.glob(f"{tmp_path}/*")) == 2
    w.close()


def test_file_writer_takes_protobuf_summaries(tmp_path):
    from tensorboard.compat.proto import summary_pb2
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="x", simple_value=2.0)])
    with SummaryWriter(str(tmp_path)) as w:
        w.file_writer.add_summary(summary, 4)
    event = EventAccumulator(str(tmp_path)).Reload().Scalars("x")[0]
    assert (event.step, event.value) == (4, 2.0)


def test_flush_makes_events_readable(tmp_path):
    w = SummaryWriter(str(tmp_path), flush_secs=3600)
    w.add_text("t", "x")
    w.flush()
    (path,) = glob.glob(f"{tmp_path}/*")
    assert len(records(path)) == 2
    w.close()


def test_bfloat16_and_grad_tensors(tmp_path):
    x = engine.tensor([0.5, 1.5, -2.0], requires_grad=True)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("s", (x * 2).sum().to(engine.bfloat16), 0)
        w.add_histogram("h", x.to(engine.bfloat16), 0)
    acc = EventAccumulator(str(tmp_path)).Reload()
    assert acc.Scalars("s")[0].value == 0.0
    assert acc.Histograms("h")[0].histogram_value.sum == 0.0


def test_cuda_tensors(tmp_path, cuda):
    x = engine.tensor(np.arange(6.0), device="cuda")
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("s", x.sum(), 0)
        w.add_histogram("h", x, 0)
    acc = EventAccumulator(str(tmp_path)).Reload()
    assert acc.Scalars("s")[0].value == 15.0
    assert acc.Histograms("h")[0].histogram_value.num == 6


# ---------------------------------------------------------------- errors


ERRORS = [
    (lambda w: w.add_scalar("s", engine.ones(2)), ValueError, "Tensor should contain one element"),
    (lambda w: w.add_histogram("h", np.zeros(0)), ValueError, "The input has no element."),
    (lambda w: w.add_histogram_raw("h", 0, 1, 1, 1, 1, [1.0], [1, 2]), ValueError,
     r"len\(bucket_limits\) != len\(bucket_counts\)"),
    (lambda w: w.add_image("i", np.zeros((3, 3, 3)), dataformats="CHH"), ValueError,
     "You can not use the same dimension shorthand twice"),
    (lambda w: w.add_image("i", np.zeros((3, 3))), ValueError, "size of input tensor and input format are different"),
    (lambda w: w.add_images("i", np.zeros((2, 2, 3, 3))), ValueError, "images should be a 4D array with 1 or 3"),
    (lambda w: w.add_hparams([], {}), TypeError, "hparam_dict and metric_dict should be dictionary."),
    (lambda w: w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["a"]}), TypeError,
     r"hparam_domain_discrete\[lr\] should be a list of same type"),
    (lambda w: w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete=[1]), TypeError,
     "hparam_domain_discrete should be a dictionary"),
    (lambda w: w.add_hparams({"lr": [0.1]}, {}), ValueError, "value should be one of int, float, str, bool"),
    (lambda w: w.add_audio("a", np.zeros((2, 3))), ValueError, "input tensor should be 1 dimensional."),
    (lambda w: w.add_tensor("c", np.zeros(2, np.complex64)), ValueError, "c has unsupported tensor dtype complex64"),
    (lambda w: w.add_custom_scalars_marginchart(["a", "b"]), ValueError, "Expected 3 tags, got 2."),
    (lambda w: w.add_custom_scalars({"c": {"m": ["Margin", ["a"]]}}), ValueError, "a Margin chart needs 3 tags"),
    (lambda w: w.add_embedding(np.zeros((3, 2)), metadata=["a"]), ValueError, "#labels should equal with #data"),
    (lambda w: w.add_embedding(np.zeros((3, 2)), label_img=np.zeros((2, 3, 2, 2))), ValueError,
     "#images should equal with #data points"),
    (lambda w: w.add_embedding(np.zeros((2, 2)), metadata=[[1, 2], [3, 4]], metadata_header=["a"]), ValueError,
     "len of header must be equal to the number of columns"),
    (lambda w: w.add_embedding(np.zeros(3)), ValueError, "mat should be 2D"),
    (lambda w: w.add_histogram("h", [1.0, 2.0]), NotImplementedError, "but numpy array or engine tensor are expected"),
    (lambda w: w.add_graph(engine.nn.Linear(2, 2), engine.ones(1, 2)), NotImplementedError,
     "add_graph is not supported"),
]


@pytest.mark.parametrize("call, error, message", ERRORS, ids=[e[2][:30] for e in ERRORS])
def test_errors(tmp_path, call, error, message):
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(error, match=message):
            call(w)


def test_closed_event_file_refuses_events(tmp_path):
    w = SummaryWriter(str(tmp_path))
    file_writer = w.file_writer
    w.close()
    with pytest.raises(OSError, match="Writer is closed"):
        file_writer.add_summary(b"")
