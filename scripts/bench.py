"""Ours and PyTorch side by side in one run, same threads and inputs; prints medians and ratios.

    python scripts/bench.py [--suite ops] [--threads 2] [--repeat 5] [--rounds 3] [--batch 8]

A ratio is ours / PyTorch in time or memory (lower is better; 1.5 means we take 1.5x as long);
img/s ratios are the inverse. Suites: ops (conv2d/linear/batch_norm on ResNet-50 shapes),
resnet (eager and nn.Graph inference), mobilenet (the same for MobileNetV2/V3), train (one training
step), build (model construction), load (weights from the cache), memory (peak memory of resnet50's
inference and of a deeplabv3 training step above the model at rest, separate processes), segmentation (deeplabv3/lraspp at 520x520, eager and
nn.Graph), detection (Faster R-CNN and RetinaNet at 800x1066), families (eager and nn.Graph inference of
efficientnet_b0, convnext_tiny, vit_b_16, swin_t and regnet_y_800mf), timm (the same for deit_small_patch16_224,
resnet50d, seresnext26d_32x4d, mixer_b16_224, convnext_nano, regnety_032, mobilenetv3_large_100 and dla34 against
timm's models on PyTorch), bfloat16 (resnet50 eager inference in
float32, in bfloat16, and under CPU autocast), onnxruntime (reference: ONNX Runtime
on the exported resnet50 vs our nn.Graph, where it is installed), gpu (on CUDA, float32 with TF32 off:
resnet50 inference at batch 1/8/64, eager and in our nn.Graph, the graph also against PyTorch's CUDA Graph
replay and its memory against PyTorch's eager peak, and at batch 64 with bfloat16 autocast against PyTorch's
autocast in channels_last; a resnet50 training step at batch 64 with its peak memory, and at batch 32 and 64
in our training nn.Graph; resnet50's 1x1 convolutions at batch 64, ours with each image multiplied in place
and with the batch folded into the GEMM's columns; deeplabv3_resnet50 at 520x520, eager and in our nn.Graph;
fasterrcnn_resnet50_fpn at 800x1066; PyTorch with cuDNN; a 100 MB NCCL all-reduce on one rank), transforms
(torchvision's transforms.v2 against ours: ImageNet eval and train preprocessing and SSD's detection augmentation
of a 480x640 uint8 image).
Each framework is timed in processes of its own (``--rounds`` of them, alternating with the other's;
the value is the median over its processes of each process's median): in one process the frameworks
share the C heap, and one's churn lands on the other's runs (a resnet50 training step read 0.96-1.44x
PyTorch's time depending on the order of runs in one process, 1.30-1.40x in separate processes).
The machine is noisy: compare ratios from one run, not absolute times across runs.
"""
import argparse
import copy
import io
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


_TIMED = None  # in a worker process: the framework it times ("torch" also stands for the reference)


def median_time(fn, repeat, framework):
    """Median wall time of ``fn()`` over ``repeat`` runs, after one warm-up run; None (and ``fn`` never
    run) in a worker process that times the other framework."""
    if _TIMED not in (None, framework):
        return None
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def forward_backward(lib, fn, arrays):
    """A closure running ``fn`` on fresh leaf tensors of ``lib`` and back-propagating ones."""
    def run():
        tensors = [lib.from_numpy(a).requires_grad_(a.dtype.kind == "f") for a in arrays]
        out = fn(*tensors)
        out.backward(lib.ones_like(out))
    return run


# ResNet-50 layer shapes at 224x224: (name, in_channels, out_channels, kernel, stride, size)
RESNET50_CONVS = [
    ("stem 7x7/2", 3, 64, 7, 2, 224),
    ("l1 1x1 64->64", 64, 64, 1, 1, 56),
    ("l1 3x3 64", 64, 64, 3, 1, 56),
    ("l1 1x1 64->256", 64, 256, 1, 1, 56),
    ("l1 1x1 256->64", 256, 64, 1, 1, 56),
    ("l2 3x3/2 128", 128, 128, 3, 2, 56),
    ("l2 1x1/2 256->512", 256, 512, 1, 2, 56),
    ("l2 3x3 128", 128, 128, 3, 1, 28),
    ("l2 1x1 512->128", 512, 128, 1, 1, 28),
    ("l3 3x3/2 256", 256, 256, 3, 2, 28),
    ("l3 3x3 256", 256, 256, 3, 1, 14),
    ("l3 1x1 1024->256", 1024, 256, 1, 1, 14),
    ("l4 3x3/2 512", 512, 512, 3, 2, 14),
    ("l4 3x3 512", 512, 512, 3, 1, 7),
    ("l4 1x1 2048->512", 2048, 512, 1, 1, 7),
]
# DCGAN's generator (nz=100, ngf=64) at 64x64: (name, in_channels, out_channels, input size, stride, padding), 4x4 kernels
DCGAN_CONV_TRANSPOSES = [
    ("z 100->512 1->4", 100, 512, 1, 1, 0),
    ("512->256 4->8", 512, 256, 4, 2, 1),
    ("256->128 8->16", 256, 128, 8, 2, 1),
    ("128->64 16->32", 128, 64, 16, 2, 1),
    ("64->3 32->64", 64, 3, 32, 2, 1),
]
RESNET50_BN = [("bn 64x112", 64, 112), ("bn 256x56", 256, 56), ("bn 512x28", 512, 28),
               ("bn 1024x14", 1024, 14), ("bn 2048x7", 2048, 7)]


def suite_ops(args, torch, engine):
    """conv2d, linear and batch_norm forward+backward on ResNet-50 shapes; conv_transpose2d forward and
    forward+backward on DCGAN's generator shapes."""
    rng = np.random.default_rng(0)
    rows = []
    for name, cin, cout, k, stride, size in RESNET50_CONVS:
        x = rng.standard_normal((args.batch, cin, size, size), dtype=np.float32)
        w = rng.standard_normal((cout, cin, k, k), dtype=np.float32) * 0.05
        pad = k // 2
        for lib_name, lib in (("torch", torch), ("ours", engine)):
            conv = lib.nn.functional.conv2d
            rows.append((f"conv2d {name}", lib_name, median_time(
                forward_backward(lib, lambda a, b, c=conv: c(a, b, None, stride, pad), [x, w]), args.repeat, lib_name)))
    x = rng.standard_normal((args.batch, 2048), dtype=np.float32)
    w = rng.standard_normal((1000, 2048), dtype=np.float32) * 0.02
    b = np.zeros(1000, np.float32)
    for lib_name, lib in (("torch", torch), ("ours", engine)):
        rows.append(("linear 2048->1000", lib_name, median_time(
            forward_backward(lib, lib.nn.functional.linear, [x, w, b]), args.repeat, lib_name)))
    for name, cin, cout, size, stride, pad in DCGAN_CONV_TRANSPOSES:
        x = rng.standard_normal((args.batch, cin, size, size), dtype=np.float32)
        w = rng.standard_normal((cin, cout, 4, 4), dtype=np.float32) * 0.05
        for lib_name, lib in (("torch", torch), ("ours", engine)):
            def transposed(a, b, lib=lib, stride=stride, pad=pad):
                return lib.nn.functional.conv_transpose2d(a, b, None, stride, pad)

            def forward(lib=lib, transposed=transposed):
                with lib.no_grad():
                    transposed(lib.from_numpy(x), lib.from_numpy(w))
            rows.append((f"conv_transpose2d {name} forward", lib_name, median_time(forward, args.repeat, lib_name)))
            rows.append((f"conv_transpose2d {name} fwd+bwd", lib_name, median_time(
                forward_backward(lib, transposed, [x, w]), args.repeat, lib_name)))
    for name, c, size in RESNET50_BN:
        x = rng.standard_normal((args.batch, c, size, size), dtype=np.float32)
        gamma, beta = np.ones(c, np.float32), np.zeros(c, np.float32)
        for lib_name, lib in (("torch", torch), ("ours", engine)):
            def bn(a, g, bb, lib=lib, c=c):
                mean, var = lib.zeros(c), lib.ones(c)
                return lib.nn.functional.batch_norm(a, mean, var, g, bb, training=True)
            rows.append((f"batch_norm {name}", lib_name, median_time(
                forward_backward(lib, bn, [x, gamma, beta]), args.repeat, lib_name)))
    return rows


def _models(torch, engine, name):
    """The same seeded torchvision model and ours with its weights, both in eval mode."""
    import torchvision
    import flowvision.models
    torch.manual_seed(0)
    ref = getattr(torchvision.models, name)().eval()
    ours = getattr(flowvision.models, name)().eval()
    ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return ref, ours


def _timm_models(torch, engine, name):
    """The same seeded timm model and ours (of flowvision.models.timm_families) with its weights, in eval mode."""
    import timm
    import flowvision.models
    torch.manual_seed(0)
    ref = timm.create_model(name, pretrained=False).eval()
    ours = flowvision.models.create_model(name).eval()
    ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return ref, ours


def _inference(lib, model, x):
    def run():
        with lib.no_grad():
            model(lib.from_numpy(x))
    return run


class _InferenceGraph:
    """Wraps a model in an inference nn.Graph (built lazily so the ops suite needs no flowvision)."""

    def __new__(cls, engine, model):
        class Inference(engine.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model

            def build(self, x):
                return self.model(x)
        return Inference()


class _TrainGraph:
    """Wraps a model and its optimizer in a training nn.Graph (cross-entropy loss, backward, the update)."""

    def __new__(cls, engine, model, optimizer):
        class Train(engine.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.loss_fn = engine.nn.CrossEntropyLoss()
                self.add_optimizer(optimizer)

            def build(self, a, b):
                loss = self.loss_fn(self.model(a), b)
                loss.backward()
                return loss
        return Train()


def _classification_rows(args, torch, engine, names, pair=_models):
    """Eager and nn.Graph inference of each named classifier at batch 1 and 8 against PyTorch eager (the models
    from ``pair``: torchvision's by default)."""
    rows = []
    for name in names:
        ref, ours = pair(torch, engine, name)
        graph = _InferenceGraph(engine, ours)
        for batch in (1, 8):
            x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224), dtype=np.float32)
            torch_time = median_time(_inference(torch, ref, x), args.repeat, "torch")
            rows.append((f"{name} eager b{batch}", "torch", torch_time))
            rows.append((f"{name} eager b{batch}", "ours", median_time(_inference(engine, ours, x), args.repeat,
                                                                       "ours")))
            rows.append((f"{name} graph b{batch}", "torch", torch_time))
            rows.append((f"{name} graph b{batch}", "ours", median_time(lambda: graph(engine.from_numpy(x)),
                                                                       args.repeat, "ours")))
    return rows


def suite_resnet(args, torch, engine):
    """Eager (and nn.Graph) inference of resnet50/101 at batch 1 and 8; img/s ratios."""
    return _classification_rows(args, torch, engine, ("resnet50", "resnet101"))


def suite_mobilenet(args, torch, engine):
    """Eager (and nn.Graph) inference of mobilenet_v2 and mobilenet_v3_large (depthwise layers) at batch 1, 8."""
    return _classification_rows(args, torch, engine, ("mobilenet_v2", "mobilenet_v3_large"))


def suite_families(args, torch, engine):
    """Eager (and nn.Graph) inference at batch 1 and 8 of one model per newer family: efficientnet_b0,
    convnext_tiny, vit_b_16, swin_t, regnet_y_800mf."""
    return _classification_rows(args, torch, engine, ("efficientnet_b0", "convnext_tiny", "vit_b_16", "swin_t",
                                                      "regnet_y_800mf"))


def suite_timm(args, torch, engine):
    """Eager (and nn.Graph) inference at batch 1 and 8 of timm families against timm's own models on PyTorch:
    deit_small_patch16_224, resnet50d, seresnext26d_32x4d, mixer_b16_224, convnext_nano, regnety_032,
    mobilenetv3_large_100, dla34."""
    return _classification_rows(args, torch, engine, ("deit_small_patch16_224", "resnet50d", "seresnext26d_32x4d",
                                                      "mixer_b16_224", "convnext_nano", "regnety_032",
                                                      "mobilenetv3_large_100", "dla34"), pair=_timm_models)


def suite_bfloat16(args, torch, engine):
    """resnet50 eager inference at ``--batch`` in float32, with the model and input in bfloat16, and in float32
    under ``autocast("cpu")`` (bfloat16 convolutions and GEMMs)."""
    ref, ours = _models(torch, engine, "resnet50")
    x = np.random.default_rng(0).standard_normal((args.batch, 3, 224, 224), dtype=np.float32)
    rows = []
    for case, cast in (("float32", None), ("bfloat16", "bfloat16"), ("autocast bfloat16", None)):
        for who, lib, model in (("torch", torch, ref), ("ours", engine, ours)):
            model = model if cast is None else copy.deepcopy(model).to(getattr(lib, cast))
            data = lib.from_numpy(x) if cast is None else lib.from_numpy(x).to(getattr(lib, cast))

            def run(lib=lib, model=model, data=data, autocast=case.startswith("autocast")):
                with lib.no_grad(), lib.autocast("cpu", enabled=autocast):
                    model(data)
            rows.append((f"resnet50 eager b{args.batch} {case}", who, median_time(run, args.repeat, who)))
    return rows


def _seeded_pair(torch, tv_module, fv_module, name, **kwargs):
    """A seeded torchvision model of ``tv_module`` and ours of ``fv_module`` with its weights, in eval mode."""
    torch.manual_seed(0)
    ref = getattr(tv_module, name)(weights=None, weights_backbone=None, **kwargs).eval()
    ours = getattr(fv_module, name)(weights=None, weights_backbone=None, **kwargs).eval()
    ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return ref, ours


def suite_segmentation(args, torch, engine):
    """deeplabv3_resnet50 and lraspp_mobilenet_v3_large at 1x3x520x520: PyTorch eager vs ours eager and nn.Graph."""
    import torchvision.models.segmentation as tv_seg
    import flowvision.models.segmentation as fv_seg
    rows = []
    x = np.random.default_rng(0).standard_normal((1, 3, 520, 520), dtype=np.float32)
    for name in ("deeplabv3_resnet50", "lraspp_mobilenet_v3_large"):
        ref, ours = _seeded_pair(torch, tv_seg, fv_seg, name)
        rows += _eager_and_graph_rows(args, torch, engine, name, ref, ours, x)
    return rows


def _eager_and_graph_rows(args, torch, engine, name, ref, ours, x):
    """Rows of ``ours`` eager and in an inference nn.Graph on ``x``, each against PyTorch eager (timed once)."""
    graph = _InferenceGraph(engine, ours)
    reference_time = median_time(_inference(torch, ref, x), args.repeat, "torch")
    return [(f"{name} eager", "torch", reference_time),
            (f"{name} eager", "ours", median_time(_inference(engine, ours, x), args.repeat, "ours")),
            (f"{name} graph", "torch", reference_time),
            (f"{name} graph", "ours", median_time(lambda: graph(engine.from_numpy(x)), args.repeat, "ours"))]


def suite_video(args, torch, engine):
    """One 16-frame clip through each video family, at its weights' crop (112x112 for the video ResNets, 224x224
    for s3d, swin3d_t and mvit_v2_s): PyTorch eager vs ours eager and nn.Graph."""
    import torchvision.models.video as tv_video
    import flowvision.models.video as fv_video
    rows = []
    for name, size in (("r3d_18", 112), ("mc3_18", 112), ("r2plus1d_18", 112), ("s3d", 224), ("swin3d_t", 224),
                       ("mvit_v2_s", 224)):
        x = np.random.default_rng(0).standard_normal((1, 3, 16, size, size), dtype=np.float32)
        torch.manual_seed(0)
        ref = getattr(tv_video, name)().eval()
        ours = getattr(fv_video, name)().eval()
        ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
        rows += _eager_and_graph_rows(args, torch, engine, name, ref, ours, x)
    return rows


def suite_quantized(args, torch, engine):
    """int8 inference of torchvision's quantized models at 224x224: PyTorch's quantized kernels (fbgemm; qnnpack for
    mobilenet_v2) vs ours, both with torchvision's quantized state_dict (calibrated by torchvision, seed 0)."""
    import torchvision.models.quantization as tv_quantized
    import flowvision.models.quantization as fv_quantized
    rows = []
    for name, batches in (("resnet18", (1, 8)), ("resnet50", (1, 8)), ("mobilenet_v2", (1,)),
                          ("shufflenet_v2_x1_0", (1,)), ("googlenet", (1,))):
        torch.manual_seed(0)
        ref = getattr(tv_quantized, name)(weights=None, quantize=True).eval()
        backend = torch.backends.quantized.engine  # the builder set its weights' engine
        ours = getattr(fv_quantized, name)(quantize=True, backend=backend).eval()
        checkpoint = io.BytesIO()  # quantized tensors move over as a checkpoint file
        torch.save(ref.state_dict(), checkpoint)
        checkpoint.seek(0)
        ours.load_state_dict(engine.load(checkpoint))
        engine.backends.quantized.engine = backend
        for batch in batches:
            x = np.random.default_rng(0).random((batch, 3, 224, 224), dtype=np.float32)
            rows.append((f"quantized {name} b{batch}", "torch", median_time(_inference(torch, ref, x), args.repeat,
                                                                           "torch")))
            rows.append((f"quantized {name} b{batch}", "ours", median_time(_inference(engine, ours, x), args.repeat,
                                                                          "ours")))
    return rows


def _detect(lib, model, image):
    def run():
        with lib.no_grad():
            model([lib.from_numpy(image)])
    return run


def suite_detection(args, torch, engine):
    """fasterrcnn_resnet50_fpn and retinanet_resnet50_fpn on one 800x1066 image, eager, same weights."""
    import torchvision.models.detection as tv_det
    import flowvision.models.detection as fv_det
    rows = []
    image = np.random.default_rng(0).random((3, 800, 1066), dtype=np.float32)
    for name in ("fasterrcnn_resnet50_fpn", "retinanet_resnet50_fpn"):
        ref, ours = _seeded_pair(torch, tv_det, fv_det, name)
        rows.append((f"{name} eager", "torch", median_time(_detect(torch, ref, image), args.repeat, "torch")))
        rows.append((f"{name} eager", "ours", median_time(_detect(engine, ours, image), args.repeat, "ours")))
    return rows


def suite_onnxruntime(args, torch, engine):
    """Reference: ONNX Runtime (where onnxruntime and onnx are installed) on the exported torchvision
    resnet50 vs our nn.Graph, same weights and inputs; the ratio column is ours / ONNX Runtime. Then the
    file engine.onnx.export writes of our resnet50 vs the file torch.onnx.export writes, both run in ONNX
    Runtime (its outputs checked equal to the reference file's first); the ratio is our file / torch's."""
    try:
        import onnxruntime
        import onnx  # noqa: F401  (torch.onnx.export needs it)
    except ImportError as e:
        print(f"\nonnxruntime suite skipped: {e.name} is not installed (pip install onnxruntime onnx)")
        return []
    import io
    import engine.onnx
    ref, ours = _models(torch, engine, "resnet50")
    buffer = io.BytesIO()
    torch.onnx.export(ref, torch.randn(1, 3, 224, 224), buffer, dynamo=False, input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})
    our_buffer = io.BytesIO()
    engine.onnx.export(ours, engine.randn(1, 3, 224, 224), our_buffer, input_names=["x"],
                       dynamic_axes={"x": {0: "batch"}})
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = onnxruntime.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    our_session = onnxruntime.InferenceSession(our_buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    graph = _InferenceGraph(engine, ours)
    rows = []
    for batch in (1, 8):
        x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224), dtype=np.float32)
        rows.append((f"resnet50 b{batch} ONNX Runtime vs our graph", "torch",
                     median_time(lambda: session.run(None, {"x": x}), args.repeat, "torch")))
        rows.append((f"resnet50 b{batch} ONNX Runtime vs our graph", "ours",
                     median_time(lambda: graph(engine.from_numpy(x)), args.repeat, "ours")))
    for batch in (1, 8):
        x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224), dtype=np.float32)
        expected, = session.run(None, {"x": x})
        got, = our_session.run(None, {"x": x})
        assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max(), "our file's output differs"
        rows.append((f"resnet50 b{batch} ORT: our file vs torch's file", "torch",
                     median_time(lambda: session.run(None, {"x": x}), args.repeat, "torch")))
        rows.append((f"resnet50 b{batch} ORT: our file vs torch's file", "ours",
                     median_time(lambda: our_session.run(None, {"x": x}), args.repeat, "ours")))
    return rows


def suite_train(args, torch, engine):
    """One resnet50 training step (batch 8, SGD momentum): PyTorch eager vs ours eager and nn.Graph; and an eager
    resnet18 step on a batch of 64 small images (16x16, as the digits tests train: its last stages on planes of
    one and two pixels, whose 3x3 layers read mostly padding)."""
    ref, ours = _models(torch, engine, "resnet50")
    ref.train()
    ours.train()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3, 224, 224), dtype=np.float32)
    y = rng.integers(0, 1000, 8)

    def eager_step(lib, model):
        return _eager_train_step(lib, model, lib.from_numpy(x), lib.from_numpy(y))

    graph = _TrainGraph(engine, ours, engine.optim.SGD(ours.parameters(), lr=0.01, momentum=0.9))
    torch_time = median_time(eager_step(torch, ref), args.repeat, "torch")
    rows = [("resnet50 train step eager", "torch", torch_time),
            ("resnet50 train step eager", "ours", median_time(eager_step(engine, ours), args.repeat, "ours")),
            ("resnet50 train step graph", "torch", torch_time),
            ("resnet50 train step graph", "ours", median_time(
                lambda: graph(engine.from_numpy(x), engine.from_numpy(y)), args.repeat, "ours"))]
    small_ref, small_ours = _models(torch, engine, "resnet18")
    small_x = rng.standard_normal((64, 3, 16, 16), dtype=np.float32)
    small_y = rng.integers(0, 1000, 64)
    for lib, model, framework in ((torch, small_ref.train(), "torch"), (engine, small_ours.train(), "ours")):
        step = _eager_train_step(lib, model, lib.from_numpy(small_x), lib.from_numpy(small_y))
        rows.append(("resnet18 train step eager, 64x3x16x16", framework, median_time(step, args.repeat, framework)))
    return rows


def _eager_train_step(lib, model, a, b):
    """A closure running one eager training step of ``model`` on inputs ``a`` and labels ``b`` (cross-entropy,
    SGD with momentum), in framework ``lib``."""
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(a), b).backward()
        opt.step()
    return step


def suite_build(args, torch, engine):
    """Constructing resnet152 (random init) in torchvision and in flowvision."""
    import torchvision
    import flowvision.models
    return [("construct resnet152", "torch", median_time(torchvision.models.resnet152, args.repeat, "torch")),
            ("construct resnet152", "ours", median_time(flowvision.models.resnet152, args.repeat, "ours"))]


def suite_load(args, torch, engine):
    """Loading resnet101 weights from the cache into a built model: torch.load + load_state_dict vs ours."""
    import os
    import tempfile

    import torchvision
    import flowvision.models
    ref = torchvision.models.resnet101()
    ours = flowvision.models.resnet101()
    with tempfile.TemporaryDirectory() as tmp:
        pth, cached = os.path.join(tmp, "resnet101.pth"), os.path.join(tmp, "resnet101.safetensors")
        torch.save(ref.state_dict(), pth)
        engine.save({k: v.detach().numpy() for k, v in ref.state_dict().items()}, cached)
        return [("load resnet101 weights", "torch", median_time(
                    lambda: ref.load_state_dict(torch.load(pth, weights_only=True)), args.repeat, "torch")),
                ("load resnet101 weights", "ours", median_time(
                    lambda: ours.load_state_dict(engine.load(cached)), args.repeat, "ours"))]


def _peak_child(queue, framework, name, batch, use_graph, threads):
    """In a fresh process: build the model, note the resident size at rest, run warm-up calls (a graph
    compiles on the first and replays on the second), then report how far one more call takes memory
    above the model at rest. That counts what a framework keeps between calls for its next one
    (our kernels' scratch buffers, the allocators' caches) as well as what a call allocates and frees."""
    import torch
    import engine
    torch.set_num_threads(threads)
    engine.set_num_threads(threads)
    ref, ours = _models(torch, engine, name)
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224), dtype=np.float32)
    lib, model = (torch, ref) if framework == "torch" else (engine, ours)
    run = _inference(lib, model, x)
    if use_graph:
        graph = _InferenceGraph(engine, ours)
        run = lambda: graph(engine.from_numpy(x))  # noqa: E731
    queue.put(_peak_above_rest(run))


def _segmentation_train_peak_child(queue, framework, threads):
    """_peak_child's measure for a deeplabv3_resnet50 training step (SGD with momentum) on 2x3x129x129: the
    ASPP layers' rates of 12, 24 and 36 on its 17x17 map read mostly padding. The model at rest has no
    gradients or momentum yet: the steps add both frameworks' (the same size)."""
    import torch
    import engine
    import torchvision.models.segmentation as tv_seg
    import flowvision.models.segmentation as fv_seg
    torch.set_num_threads(threads)
    engine.set_num_threads(threads)
    ref, ours = _seeded_pair(torch, tv_seg, fv_seg, "deeplabv3_resnet50")
    lib, model = (torch, ref.train()) if framework == "torch" else (engine, ours.train())
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((2, 3, 129, 129), dtype=np.float32))
    target = lib.from_numpy(rng.integers(0, 21, (2, 129, 129)))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x)["out"], target).backward()
        opt.step()
    queue.put(_peak_above_rest(step))


def _peak_above_rest(run):
    """How far the third call of ``run`` takes the resident size above the process before the first (MiB)."""
    import gc
    gc.collect()
    rest = _rss_kib("VmRSS")
    for _ in range(2):
        run()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    run()
    return (_rss_kib("VmHWM") - rest) / 1024


def _rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def suite_memory(args, torch, engine):
    """Peak memory above the model at rest during a warm inference or training step (separate processes; MiB).

    glibc's fixed mmap threshold hands every large freed block back to the OS, so what stays resident
    between calls is what a framework keeps on purpose (scratch buffers, caches), not glibc's choice.
    Until 2026-12-03 the baseline was the process after a warm call, which left out what it kept.
    """
    import multiprocessing as mp
    import os
    os.environ["MALLOC_MMAP_THRESHOLD_"] = str(128 * 1024)
    ctx = mp.get_context("spawn")
    cases = [(case, framework, _peak_child, (framework, "resnet50", 8, use_graph, args.threads))
             for case, framework, use_graph in (("resnet50 b8 eager", "torch", False),
                                                ("resnet50 b8 eager", "ours", False),
                                                ("resnet50 b8 graph", "torch", False),
                                                ("resnet50 b8 graph", "ours", True))]
    cases += [("deeplabv3_resnet50 train step 2x3x129x129", framework, _segmentation_train_peak_child,
               (framework, args.threads)) for framework in ("torch", "ours")]
    rows = []
    for case, framework, child, child_args in cases:
        queue = ctx.Queue()
        proc = ctx.Process(target=child, args=(queue,) + child_args)
        proc.start()
        rows.append((case, framework, queue.get()))
        proc.join()
    return rows


def _gpu_time(sync, fn, repeat):
    """Median wall time of ``fn()`` on the GPU, each run waited for (``sync``), after two warm-up runs."""
    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def suite_gpu(args, torch, engine):
    """On CUDA, both frameworks in this process (their GPU memory pools are separate): float32, TF32 off."""
    import torchvision.models.detection as tv_det
    import torchvision.models.segmentation as tv_seg
    import flowvision.models.detection as fv_det
    import flowvision.models.segmentation as fv_seg
    if not (torch.cuda.is_available() and engine.cuda.is_available()):
        print("\ngpu suite skipped: it needs a CUDA GPU with PyTorch's CUDA build and CuPy")
        return []
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    syncs = {"torch": torch.cuda.synchronize, "ours": engine.cuda.synchronize}
    libs = {"torch": torch, "ours": engine}
    rng = np.random.default_rng(0)
    rows = []

    def timed(case, models, make_inputs, call):
        for who in ("torch", "ours"):
            lib = libs[who]
            inputs = make_inputs(lib)
            with lib.no_grad():
                rows.append((case, who, _gpu_time(syncs[who], lambda: call(models[who], inputs), args.repeat)))

    def gpu_pair(ref, ours):
        return {"torch": ref.cuda(), "ours": ours.cuda()}

    ref, ours = _models(torch, engine, "resnet50")
    models = gpu_pair(ref, ours)
    batches = {batch: rng.standard_normal((batch, 3, 224, 224), dtype=np.float32) for batch in (1, 8, 64)}
    for batch, x in batches.items():
        timed(f"resnet50 eager b{batch}", models, lambda lib: lib.from_numpy(x).cuda(), lambda m, a: m(a))
    rows += _optional_rows("resnet50 graph", lambda: _gpu_graph_rows(args, torch, engine, models, batches, rows))
    rows += _optional_rows("resnet50 graph amp", lambda: _gpu_amp_rows(args, torch, engine, models, batches[64]))
    rows += _optional_rows("resnet50 eager autocast", lambda: _gpu_autocast_rows(args, torch, engine, models,
                                                                                 batches[64]))
    rows += _gpu_train_rows(args, torch, engine, models, syncs)
    rows += _optional_rows("resnet50 train graph", lambda: _gpu_train_graph_rows(args, torch, engine, models))
    del models, ref, ours
    rows += _optional_rows("conv1x1", lambda: _gpu_conv1x1_rows(args, torch, engine, rng))
    image = rng.standard_normal((1, 3, 520, 520), dtype=np.float32)
    models = gpu_pair(*_seeded_pair(torch, tv_seg, fv_seg, "deeplabv3_resnet50"))
    timed("deeplabv3_resnet50 eager 520x520", models, lambda lib: lib.from_numpy(image).cuda(), lambda m, a: m(a))
    rows += _optional_rows("deeplabv3 graph", lambda: _gpu_segmentation_graph_rows(args, engine, models, image, rows))
    photo = rng.random((3, 800, 1066), dtype=np.float32)
    models = gpu_pair(*_seeded_pair(torch, tv_det, fv_det, "fasterrcnn_resnet50_fpn"))
    timed("fasterrcnn_resnet50_fpn eager 800x1066", models, lambda lib: [lib.from_numpy(photo).cuda()],
          lambda m, a: m(a))
    return rows + _optional_rows("nccl all-reduce", lambda: _nccl_rows(torch, engine, args.repeat))


def _optional_rows(what, make_rows):
    """``make_rows()``, or no rows and one line when it fails: the other rows of a GPU run still come out."""
    try:
        return make_rows()
    except Exception as error:
        print(f"\n{what} rows failed: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
        return []


def _gpu_graph_rows(args, torch, engine, models, batches, eager_rows):
    """resnet50 inference in our nn.Graph on CUDA at each batch, against PyTorch eager (from ``eager_rows``) and
    against PyTorch's own forward captured in a CUDA Graph and replayed."""
    eager = {case: value for case, who, value in eager_rows if who == "torch"}
    graph = _InferenceGraph(engine, models["ours"])
    rows = []
    for batch, x in batches.items():
        inputs = engine.from_numpy(x).cuda()
        ours = _gpu_time(engine.cuda.synchronize, lambda: graph(inputs), args.repeat)
        rows += [(f"resnet50 graph b{batch} vs PyTorch eager", "torch", eager[f"resnet50 eager b{batch}"]),
                 (f"resnet50 graph b{batch} vs PyTorch eager", "ours", ours),
                 (f"resnet50 graph b{batch} vs PyTorch CUDA Graph replay", "torch",
                  _torch_cuda_graph_time(torch, models["torch"], x, args.repeat)),
                 (f"resnet50 graph b{batch} vs PyTorch CUDA Graph replay", "ours", ours)]
    batch = max(batches)  # the last plan compiled: the graph's own memory (its pool holds every buffer)
    captured = graph._last_plan.captured
    if captured is not None:
        rows += [(f"resnet50 graph b{batch} memory vs PyTorch eager peak, MiB", "torch",
                  _torch_eager_peak(torch, models["torch"], batches[batch]) / 2 ** 20),
                 (f"resnet50 graph b{batch} memory vs PyTorch eager peak, MiB", "ours",
                  captured.graph.pool_bytes() / 2 ** 20)]
    return rows


def _gpu_amp_rows(args, torch, engine, models, x):
    """resnet50 inference at batch 64 with bfloat16 autocast: our nn.Graph with ``config.enable_amp`` against
    PyTorch's fastest eager form of it, ``torch.autocast`` with the model and input in channels_last."""
    case = f"resnet50 graph amp b{x.shape[0]} vs PyTorch autocast + channels_last"
    theirs = copy.deepcopy(models["torch"]).to(memory_format=torch.channels_last)
    inputs = torch.from_numpy(x).cuda().to(memory_format=torch.channels_last)

    def torch_call():
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            theirs(inputs)
    graph = _InferenceGraph(engine, models["ours"])
    graph.config.enable_amp(True)
    ours = engine.from_numpy(x).cuda()
    return [(case, "torch", _gpu_time(torch.cuda.synchronize, torch_call, args.repeat)),
            (case, "ours", _gpu_time(engine.cuda.synchronize, lambda: graph(ours), args.repeat))]


def _gpu_autocast_rows(args, torch, engine, models, x):
    """resnet50 eager inference at batch 64 under ``autocast("cuda", dtype=bfloat16)``, ours against PyTorch's:
    our convolutions take bfloat16 tensors and multiply them on the tensor cores (``autograd/bfloat16.py``)."""
    case = f"resnet50 eager autocast bfloat16 b{x.shape[0]}"
    theirs, ours = torch.from_numpy(x).cuda(), engine.from_numpy(x).cuda()

    def torch_call():
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            models["torch"](theirs)

    def our_call():
        with engine.no_grad(), engine.autocast("cuda", dtype=engine.bfloat16):
            models["ours"](ours)
    return [(case, "torch", _gpu_time(torch.cuda.synchronize, torch_call, args.repeat)),
            (case, "ours", _gpu_time(engine.cuda.synchronize, our_call, args.repeat))]


def _gpu_conv1x1_rows(args, torch, engine, rng):
    """resnet50's 1x1 convolutions at batch 64, one per stage, ours both ways against cuDNN: each image multiplied
    where it lies, and the batch folded into one GEMM's columns. Where the first wins, by plane size, is what
    ``BATCHED_1X1_PLANE`` (``engine/backends/cuda/conv.py``) should say."""
    import importlib
    conv = importlib.import_module("engine.backends.cuda.conv")  # a tuning constant, not a kernel of the seam
    rows = []
    default = conv.BATCHED_1X1_PLANE
    for channels, out_channels, size in ((256, 64, 56), (512, 128, 28), (1024, 256, 14), (2048, 512, 7)):
        x = rng.standard_normal((64, channels, size, size), dtype=np.float32)
        w = rng.standard_normal((out_channels, channels, 1, 1), dtype=np.float32) / channels ** 0.5
        theirs = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
        ours = engine.from_numpy(x).cuda(), engine.from_numpy(w).cuda()
        with torch.no_grad():
            cudnn = _gpu_time(torch.cuda.synchronize, lambda: torch.nn.functional.conv2d(*theirs), args.repeat)
        for mode, plane in (("in place", 0), ("folded", size * size + 1)):
            conv.BATCHED_1X1_PLANE = plane
            try:
                with engine.no_grad():
                    time_ours = _gpu_time(engine.cuda.synchronize, lambda: engine.nn.functional.conv2d(*ours),
                                          args.repeat)
            finally:
                conv.BATCHED_1X1_PLANE = default
            case = f"conv1x1 {channels}->{out_channels} {size}x{size} b64 {mode}"
            rows += [(case, "torch", cudnn), (case, "ours", time_ours)]
    return rows


def _torch_eager_peak(torch, model, x):
    """PyTorch's peak GPU memory above the model at rest during one inference call on ``x`` (bytes)."""
    inputs = torch.from_numpy(x).cuda()
    torch.cuda.synchronize()
    rest = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        model(inputs)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - rest


def _gpu_segmentation_graph_rows(args, engine, models, image, eager_rows):
    """deeplabv3_resnet50 at 520x520 in our nn.Graph on CUDA (a captured CUDA graph) against PyTorch eager."""
    case = "deeplabv3_resnet50 graph 520x520 vs PyTorch eager"
    eager = next(value for name, who, value in eager_rows
                 if name == "deeplabv3_resnet50 eager 520x520" and who == "torch")
    graph = _InferenceGraph(engine, models["ours"])
    inputs = engine.from_numpy(image).cuda()
    return [(case, "torch", eager), (case, "ours", _gpu_time(engine.cuda.synchronize, lambda: graph(inputs), args.repeat))]


def _torch_cuda_graph_time(torch, model, x, repeat):
    """PyTorch's fastest inference: the forward captured once in a CUDA Graph (after warm-up runs on a side
    stream, as torch.cuda.graphs asks) and replayed on a static input."""
    static_input = torch.from_numpy(x).cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(static_input)
    torch.cuda.current_stream().wait_stream(side)
    captured = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(captured):
        model(static_input)
    return _gpu_time(torch.cuda.synchronize, captured.replay, repeat)


#: the all-reduce the distributed issue asks a bandwidth for: 100 MB of float32
_NCCL_BYTES = 100 * 2 ** 20


def _nccl_rows(torch, engine, repeat):
    """A 100 MB float32 all-reduce (SUM) over NCCL on one rank: torch.distributed's and engine.distributed's,
    with the bandwidth of each printed (bytes / time). One GPU holds one rank, so this times the NCCL code path
    rather than a ring between GPUs. engine.distributed meets its ranks through MPI: without mpi4py the rows are
    skipped with a line (``scripts/device_wheels.py`` fetches the wheels for a machine without network)."""
    try:
        import mpi4py  # noqa: F401  (engine.distributed's rendezvous)
    except ImportError:
        print("\nnccl all-reduce skipped: engine.distributed needs mpi4py and mpich (scripts/device_wheels.py)")
        return []
    import socket
    import torch.distributed as torch_distributed

    case = "NCCL all-reduce 100 MB float32, 1 rank"
    count = _NCCL_BYTES // 4
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    rows = []
    torch_distributed.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        x = torch.ones(count, device="cuda")
        rows.append((case, "torch", _gpu_time(torch.cuda.synchronize, lambda: torch_distributed.all_reduce(x),
                                              repeat)))
    finally:
        torch_distributed.destroy_process_group()
    engine.distributed.init_process_group("nccl")
    try:
        y = engine.ones(count, device="cuda")
        rows.append((case, "ours", _gpu_time(engine.cuda.synchronize, lambda: engine.distributed.all_reduce(y),
                                             repeat)))
    finally:
        engine.distributed.destroy_process_group()
    for _, who, seconds in rows:
        print(f"{case}, {who}: {seconds * 1e3:.3f} ms, {_NCCL_BYTES / seconds / 1e9:.1f} GB/s")
    return rows


def _gpu_train_rows(args, torch, engine, models, syncs):
    """A resnet50 training step at batch 64 (SGD momentum) on each framework, and its peak GPU memory above
    the model at rest."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 3, 224, 224), dtype=np.float32)
    y = rng.integers(0, 1000, 64)
    rows, memory = [], []
    for who, lib, cuda in (("torch", torch, torch.cuda), ("ours", engine, engine.cuda)):
        model = models[who].train()
        step = _eager_train_step(lib, model, lib.from_numpy(x).cuda(), lib.from_numpy(y).cuda())
        step()
        syncs[who]()
        rest = cuda.memory_allocated()
        cuda.reset_peak_memory_stats()
        rows.append(("resnet50 train step b64", who, _gpu_time(syncs[who], step, args.repeat)))
        memory.append(("resnet50 train step b64 peak GPU memory above rest, MiB", who,
                       (cuda.max_memory_allocated() - rest) / 2 ** 20))
        model.eval()
    return rows + memory


def _gpu_train_graph_rows(args, torch, engine, models):
    """A resnet50 training step (SGD momentum) in our training nn.Graph on CUDA (captured into a CUDA graph
    from its second call on) at batch 32 and 64, against PyTorch's eager step."""
    rng = np.random.default_rng(2)
    rows = []
    for batch in (32, 64):
        x = rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)
        y = rng.integers(0, 1000, batch)
        case = f"resnet50 train step graph b{batch} vs PyTorch eager"
        model = models["torch"].train()
        torch_step = _eager_train_step(torch, model, torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda())
        torch_step()
        rows.append((case, "torch", _gpu_time(torch.cuda.synchronize, torch_step, args.repeat)))
        model.eval()
        ours = models["ours"].train()
        graph = _TrainGraph(engine, ours, engine.optim.SGD(ours.parameters(), lr=0.01, momentum=0.9))
        a, b = engine.from_numpy(x).cuda(), engine.from_numpy(y).cuda()
        graph(a, b)  # traces; the timed calls capture once, then replay
        rows.append((case, "ours", _gpu_time(engine.cuda.synchronize, lambda: graph(a, b), args.repeat)))
        ours.eval()
    return rows


def suite_distributed(args, torch, engine):
    """A resnet50 training step (SGD momentum) at 4 samples per process, one BLAS thread each: as
    DistributedDataParallel on 2 processes (engine.distributed over MPI) vs one process alone, each run by
    scripts/ddp_step_timer.py in processes of its own (target: at most 1.2x). The reference column is the
    single process, not PyTorch."""
    scripts = os.path.dirname(os.path.abspath(__file__))
    timer = [os.path.join(scripts, "ddp_step_timer.py"), "--model", "resnet50", "--batch", "4",
             "--repeat", str(args.repeat)]

    def median_step(launcher):
        out = subprocess.run(launcher + timer, stdout=subprocess.PIPE, text=True, check=True,
                             cwd=os.path.dirname(scripts), env={**os.environ, "OMP_NUM_THREADS": "1"}).stdout
        return json.loads(out.splitlines()[-1])["median_s"]

    case = "resnet50 train step, 4 samples and 1 thread per process: DDP on 2 processes / 1 process"
    rows = []
    if _TIMED in (None, "torch"):
        rows.append((case, "torch", median_step([sys.executable])))
    if _TIMED in (None, "ours"):
        rows.append((case, "ours", median_step([sys.executable, "-m", "engine.distributed.run",
                                                "--nproc-per-node", "2"])))
    return rows


def _transform_cases(lib, v2, tv_tensors):
    """The three preprocessing pipelines of the transforms suite, built from ``lib`` (torch or engine) and its v2."""
    normalize = v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    return {
        "ImageNet eval (Resize 256, CenterCrop 224, Normalize)": v2.Compose([
            v2.Resize(256), v2.CenterCrop(224), v2.ToDtype(lib.float32, scale=True), normalize]),
        "ImageNet train (RandomResizedCrop 224, flip, Normalize)": v2.Compose([
            v2.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.ToDtype(lib.float32, scale=True), normalize]),
        "detection train (SSD recipe, 8 boxes and masks)": v2.Compose([
            v2.RandomPhotometricDistort(p=1), v2.RandomZoomOut(fill={tv_tensors.Image: (123, 117, 104)}),
            v2.RandomIoUCrop(), v2.RandomHorizontalFlip(), v2.SanitizeBoundingBoxes(),
            v2.ToDtype(lib.float32, scale=True)]),
    }


def suite_transforms(args, torch, engine):
    """transforms.v2 preprocessing of one 480x640 uint8 image (the detection case with 8 boxes, their masks and
    labels): torchvision's v2 on PyTorch vs ours, from the same seed each call."""
    import torchvision.transforms.v2 as tv_v2
    from torchvision import tv_tensors as tv_tensors_torch
    import flowvision.transforms.v2 as fv_v2
    from flowvision import tv_tensors as tv_tensors_ours
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (3, 480, 640), dtype=np.uint8)
    corners = np.sort(rng.uniform(0, 480, (8, 2, 2)), axis=1).astype(np.float32)
    boxes = np.concatenate([corners[:, 0], corners[:, 1]], axis=1)[:, [0, 2, 1, 3]]
    masks = rng.random((8, 480, 640)) > 0.5
    rows = []
    for lib, v2, tv_tensors, who in ((torch, tv_v2, tv_tensors_torch, "torch"),
                                     (engine, fv_v2, tv_tensors_ours, "ours")):
        sample = (tv_tensors.Image(lib.from_numpy(image)),
                  {"boxes": tv_tensors.BoundingBoxes(lib.from_numpy(boxes), format="XYXY", canvas_size=(480, 640)),
                   "masks": tv_tensors.Mask(lib.from_numpy(masks)), "labels": lib.arange(8)})
        for case, pipeline in _transform_cases(lib, v2, tv_tensors).items():
            inputs = sample if case.startswith("detection") else sample[0]

            def run(pipeline=pipeline, inputs=inputs):
                lib.manual_seed(0)
                pipeline(inputs)
            rows.append((case, who, median_time(run, args.repeat, who)))
    return rows


SUITES = {"ops": suite_ops, "resnet": suite_resnet, "mobilenet": suite_mobilenet, "train": suite_train,
          "build": suite_build, "load": suite_load, "memory": suite_memory, "segmentation": suite_segmentation,
          "detection": suite_detection, "onnxruntime": suite_onnxruntime, "gpu": suite_gpu,
          "families": suite_families, "distributed": suite_distributed, "bfloat16": suite_bfloat16,
          "video": suite_video, "quantized": suite_quantized, "timm": suite_timm, "transforms": suite_transforms}
UNITS = {"memory": "MiB"}
# suites measured in this process: memory runs each framework in a process of its own, and on the GPU the
# frameworks' memory pools are separate
_OWN_PROCESSES = {"memory", "gpu"}
REFERENCES = {"onnxruntime": "ONNX Runtime", "distributed": "one process"}


def format_ratios(title, rows, unit="ms", reference="PyTorch"):
    """Rows of (case, 'torch'|'ours', value) as a markdown section: one line per case with the ratio
    ours/reference (the 'torch' entry holds the reference: PyTorch, or ONNX Runtime for that suite)."""
    if not rows:
        return ""
    cases = {}
    for case, who, value in rows:
        cases.setdefault(case, {})[who] = value
    scale = 1e3 if unit == "ms" else 1
    lines = [f"## {title}", "", f"| case | {reference} {unit} | ours {unit} | ours/{reference} |",
             "| --- | ---: | ---: | ---: |"]
    ratios = []
    for case, t in cases.items():
        ratio = t["ours"] / t["torch"]
        ratios.append(ratio)
        factor = 1 if case.endswith("MiB") else scale  # a memory row among timings carries its unit
        lines.append(f"| {case} | {t['torch'] * factor:.2f} | {t['ours'] * factor:.2f} | {ratio:.2f} |")
    lines += ["", f"worst ratio {max(ratios):.2f}, median ratio {statistics.median(ratios):.2f}"]
    return "\n".join(lines)


def machine_line(torch):
    """The machine and library versions a table was measured with, for the performance page."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = ""
    if torch.cuda.is_available():
        gpu = f", GPU {torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
    return (f"{cpu}, {os.cpu_count()} cores{gpu}; Python {platform.python_version()}, numpy {np.__version__}, "
            f"torch {torch.__version__}")


def update_page(path, sections):
    """Write ``sections`` ({suite: markdown}) into the performance page at ``path``, replacing those suites'
    sections and keeping the others (one current table per suite; history lives in git)."""
    header = ("# Performance\n\nOne current table per `scripts/bench.py` suite, written by "
              "`python scripts/bench.py --suite NAME --markdown docs/performance.md` (each section says when, "
              "where and how it was measured). A ratio is ours / the reference, lower is better; the machines "
              "are shared and noisy, so compare ratios within one table, not times across tables.\n")
    kept = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for chunk in text.split("\n## ")[1:]:
            kept[chunk.split("\n", 1)[0].strip()] = "## " + chunk.strip()
    kept.update(sections)
    with open(path, "w", encoding="utf-8") as f:
        f.write(header + "".join(f"\n{kept[name]}\n" for name in sorted(kept)))


def _update_readme_rows(page):
    """Copy the headline rows into README.md when ``page`` is the repository's performance page."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import headline_rows

    if os.path.abspath(page) == headline_rows.PAGE:
        headline_rows.write()


def _framework_rows(args, name, torch, engine, framework):
    """A suite's rows for one framework, timed in this process ("torch" also stands for the reference)."""
    global _TIMED
    _TIMED = framework
    return [row for row in SUITES[name](args, torch, engine) if row[1] == framework]


def _rows_in_processes(args, name):
    """A suite's rows with each framework timed in processes of its own, ``args.rounds`` of each in
    alternating order, the value being the median over its processes. In one process the frameworks
    share the C heap and interfere (one's freed memory and page faults land on the other's runs)."""
    values, order = {}, []
    for r in range(args.rounds):
        for framework in ("torch", "ours") if r % 2 == 0 else ("ours", "torch"):
            command = [sys.executable, __file__, "--suite", name, "--threads", str(args.threads),
                       "--repeat", str(args.repeat), "--batch", str(args.batch), "--framework", framework]
            out = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True).stdout.splitlines()
            for line in out[:-1]:
                if r == 0:
                    print(line)
            for case, who, value in json.loads(out[-1]):
                if (case, who) not in values:
                    order.append((case, who))
                values.setdefault((case, who), []).append(value)
    return [(case, who, statistics.median(values[case, who])) for case, who in order]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=sorted(SUITES) + ["all"], default="all", nargs="+")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="processes per framework (alternating)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--markdown", metavar="PAGE", help="also write each suite's table into this markdown page "
                                                            "(docs/performance.md), replacing its old section")
    parser.add_argument("--framework", choices=("torch", "ours"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    import torch
    import engine
    torch.set_num_threads(args.threads)
    engine.set_num_threads(args.threads)
    names = sorted(SUITES) if "all" in args.suite else args.suite
    if args.framework:  # a worker process: one framework's rows as JSON on the last line
        rows = [row for name in names for row in _framework_rows(args, name, torch, engine, args.framework)]
        print(json.dumps(rows))
        return
    print(f"threads: {args.threads} (torch {torch.__version__}, numpy {np.__version__}), batch {args.batch}, "
          f"median of {args.repeat} runs in each of {args.rounds} processes per framework")
    sections = {}
    for name in names:
        rows = SUITES[name](args, torch, engine) if name in _OWN_PROCESSES else _rows_in_processes(args, name)
        table = format_ratios(name, rows, UNITS.get(name, "ms"), REFERENCES.get(name, "PyTorch"))
        if table:
            print("\n" + table)
            how = (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine_line(torch)}; "
                   f"`python scripts/bench.py {' '.join(sys.argv[1:])}`")
            sections[name] = table.replace("\n\n", f"\n\n{how}\n\n", 1)
    if args.markdown and sections:
        update_page(args.markdown, sections)
        _update_readme_rows(args.markdown)


if __name__ == "__main__":
    main()
