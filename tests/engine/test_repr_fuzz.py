"""What a user sees when printing, character for character against PyTorch: ``repr`` of seeded random tensors of
every dtype and shape kind under random ``set_printoptions``, the suffixes (device, size, dtype, grad_fn,
requires_grad), Parameters, ``format`` of 0-dim tensors, ``tolist``/``item`` types, the reprs of dtypes, devices,
sizes, finfo and iinfo, and ``repr`` of nn modules and containers (the zoo's models print through these; the
exploratory sweep compared 38 of them with torchvision's, too slow to build here).

The engine names its dtypes ``engine.float16`` where torch prints ``torch.float16``: texts are compared with that
name swapped, and as that name is one character longer, with a suffix that one of them moved to its own line put
back on the line before (the wrapping itself is checked exactly on texts without a dtype suffix). grad_fn names
follow the engine's op classes (``MulBackward``, torch's ``MulBackward0``; see engine/profiler/_names.py), so a
tensor with a grad_fn is compared up to that name."""
import collections
import pickle
import re

import numpy as np
import pytest
import torch

import engine

pytestmark = pytest.mark.slow  # about 5 s in all: some 200 small comparisons

_SUFFIX_WRAP = re.compile(r",\n +(?=(dtype|requires_grad|grad_fn|device|size)=)")
_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "complex64", "complex128"]


def _same_text(ours, theirs):
    """Asserts that our text is torch's, up to the dtype's module name (and the line breaks that name moves)."""
    ours = ours.replace("engine.", "torch.")
    if "dtype=" in theirs or "dtype=" in ours:
        ours, theirs = _SUFFIX_WRAP.sub(", ", ours), _SUFFIX_WRAP.sub(", ", theirs)
    assert ours == theirs


@pytest.fixture
def print_options():
    """Sets the same print options on both sides; puts the defaults back afterwards."""
    def set_both(**options):
        engine.set_printoptions(**options)
        torch.set_printoptions(**options)
    yield set_both
    set_both(profile="default", sci_mode=None)


def _values(rng, dtype, shape, kind):
    """Seeded values of one kind: plain, one magnitude of 1e-8..1e8, integral, mixed magnitudes, specials
    (inf, nan, -0.0), all zero, large integral."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype[0] in "ui":
        info = np.iinfo(dtype)
        scale = [1, 10, 1000, int(info.max)][kind % 4]
        return np.clip(rng.integers(-scale, scale, shape, endpoint=True), info.min, info.max)
    plain = rng.standard_normal(shape)
    v = [plain, plain * 10.0 ** rng.integers(-8, 9), np.round(plain * 100), plain * 10.0 ** rng.integers(-6, 7, shape),
         np.where(rng.random(shape) < 0.3, rng.choice([np.inf, -np.inf, np.nan, -0.0, 1e-5, 1e10], shape), plain),
         np.zeros(shape), np.round(plain * 1e9)][kind]
    if dtype.startswith("complex"):
        v = v + 1j * rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)
    return v


def _pair(values, dtype, requires_grad=False):
    """The same values as our tensor and torch's, of ``dtype``."""
    theirs = torch.tensor(np.asarray(values, np.float32 if dtype == "bfloat16" else None)).to(getattr(torch, dtype))
    ours = engine.tensor(theirs.float().numpy() if dtype == "bfloat16" else theirs.numpy(), dtype=getattr(engine, dtype))
    return ours.requires_grad_(requires_grad), theirs.requires_grad_(requires_grad)


_SHAPES = [(), (0,), (2, 0), (7,), (3, 5), (2, 1, 3, 2), (1500,), (37, 41), (4, 9, 11)]


@pytest.mark.parametrize("dtype", _DTYPES)
def test_random_tensors_print_as_torch(dtype):
    rng = np.random.default_rng(_DTYPES.index(dtype))
    for shape in _SHAPES:
        for kind in rng.choice(7, 2, replace=False):
            ours, theirs = _pair(_values(rng, dtype, shape, kind), dtype)
            _same_text(repr(ours), repr(theirs))


def _random_options(rng):
    options = dict(precision=int(rng.integers(0, 11)), threshold=int(rng.choice([0, 5, 50, 1000])),
                   edgeitems=int(rng.integers(0, 5)), linewidth=int(rng.integers(5, 200)),
                   sci_mode=[None, True, False][rng.integers(0, 3)])
    options = {k: v for k, v in options.items() if rng.random() < 0.5}
    if rng.random() < 0.3:
        options["profile"] = ["default", "short", "full"][rng.integers(0, 3)]
    return options


@pytest.mark.parametrize("seed", range(4))
def test_random_tensors_under_random_print_options(seed, print_options):
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        dtype = _DTYPES[rng.integers(0, len(_DTYPES))]
        shape = _SHAPES[rng.integers(0, len(_SHAPES))]
        ours, theirs = _pair(_values(rng, dtype, shape, rng.integers(0, 7)), dtype)
        print_options(**_random_options(rng))
        _same_text(repr(ours), repr(theirs))


@pytest.mark.parametrize("options", [dict(precision=2), dict(precision=2, linewidth=100), dict(sci_mode=True),
                                     dict(profile="short", precision=6), dict(profile="full"),
                                     dict(edgeitems=1, threshold=2), dict(threshold=0), dict(linewidth=20)])
def test_print_options_and_their_reset(options, print_options):
    values = [[1.123456789, 2e-7, 3e9], [1.5, -2.25], [1, 2, 3, 4, 5], list(range(40))]
    print_options(**options)
    for v in values:
        _same_text(repr(engine.tensor(v)), repr(torch.tensor(v)))
    print_options(precision=3)  # every call resets sci_mode to automatic; the other options stay
    for v in values:
        _same_text(repr(engine.tensor(v)), repr(torch.tensor(v)))


def test_suffixes_wrap_at_the_line_width():
    # no dtype suffix: the wrapping of requires_grad onto its own line is compared exactly
    for n in (4, 6, 7, 8, 12):
        x = np.linspace(-3, 3, n, dtype=np.float32) * 7
        assert repr(engine.tensor(x, requires_grad=True)) == repr(torch.tensor(x, requires_grad=True))
    assert repr(engine.zeros(0, requires_grad=True)) == repr(torch.zeros(0, requires_grad=True))
    assert repr(engine.zeros(2, 0, requires_grad=True)) == repr(torch.zeros(2, 0, requires_grad=True))


_GRAD_OPS = {
    "mul": lambda m, t: t * 2, "sum": lambda m, t: t.sum(), "matmul": lambda m, t: t @ t.T,
    "softmax": lambda m, t: t.softmax(1), "index": lambda m, t: t[t > 0], "cat": lambda m, t: m.cat([t, t]),
    "half": lambda m, t: t.half(), "double_sum": lambda m, t: t.double().sum(),
}


@pytest.mark.parametrize("op", list(_GRAD_OPS))
def test_grad_fn_suffix(op):
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    ours = _GRAD_OPS[op](engine, engine.tensor(x, requires_grad=True))
    theirs = _GRAD_OPS[op](torch, torch.tensor(x, requires_grad=True))
    name = ours.grad_fn.name()
    assert re.fullmatch(r"\w+Backward", name)
    _same_text(repr(ours).replace(name, "NODE"), re.sub(r"(?<=grad_fn=<)\w+(?=>)", "NODE", repr(theirs)))


def test_parameter_and_buffer_reprs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
    for make in (lambda m: m.nn.Parameter(m.tensor(x)), lambda m: m.nn.Parameter(m.tensor(x), requires_grad=False),
                 lambda m: m.nn.Parameter(m.tensor(x, dtype=m.float64)), lambda m: m.nn.Parameter(),
                 lambda m: m.nn.Parameter(m.tensor(2.5)), lambda m: m.nn.Buffer(m.tensor(x))):
        _same_text(repr(make(engine)), repr(make(torch)))


@pytest.mark.parametrize("spec", [".3f", "", ".2e", "10.4f", "g", "+.1f", ">12"])
def test_format_of_a_zero_dim_tensor(spec):
    for value, dtype in [(3.14159, "float32"), (7, "int64"), (True, "bool"), (2.5, "float64"), (1.5, "float16"),
                         (1.5, "bfloat16"), (1 + 2j, "complex64")]:
        ours, theirs = _pair(value, dtype)
        assert format(ours, spec) == format(theirs, spec)
    assert f"{engine.tensor(2.5, requires_grad=True):{spec}}" == f"{torch.tensor(2.5, requires_grad=True):{spec}}"
    if spec:  # a tensor of more dimensions takes no format spec
        with pytest.raises(TypeError):
            format(engine.tensor([1.0, 2.0]), spec)
    else:
        _same_text(format(engine.tensor([1.0, 2.0]), spec), format(torch.tensor([1.0, 2.0]), spec))


@pytest.mark.parametrize("dtype", _DTYPES + ["uint16", "uint32", "uint64"])
def test_tolist_item_and_dtype_reprs(dtype):
    ours, theirs = getattr(engine, dtype), getattr(torch, dtype)
    for value in (1, [1, 0], [[1, 0]]):
        a, b = engine.tensor(value, dtype=ours).tolist(), torch.tensor(value, dtype=theirs).tolist()
        assert repr(a) == repr(b) and type(a) is type(b)
    a, b = engine.tensor(1, dtype=ours).item(), torch.tensor(1, dtype=theirs).item()
    assert repr(a) == repr(b) and type(a) is type(b)
    assert repr(ours) == repr(theirs).replace("torch.", "engine.") and str(ours) == repr(ours)
    _same_text(repr(engine.zeros(0, 3, dtype=ours)), repr(torch.zeros(0, 3, dtype=theirs)))
    info = engine.finfo if dtype.startswith(("float", "bfloat")) else engine.iinfo if dtype[0] in "ui" else None
    if info is not None:
        assert repr(info(ours)) == repr(getattr(torch, info.__name__)(theirs))


def test_float_values_round_trip_through_tolist():
    for dtype in ("float16", "bfloat16", "float32", "complex64"):
        values = [0.1, 1 / 3] if dtype != "complex64" else [0.1 + 0.2j]
        ours, theirs = _pair(values, dtype)
        assert repr(ours.tolist()) == repr(theirs.tolist())


def test_device_and_size_reprs():
    for name in ("cpu", "cuda", "cuda:0", "cuda:1"):
        assert repr(engine.device(name)) == repr(torch.device(name))
        assert str(engine.device(name)) == str(torch.device(name))
    assert repr(engine.device("cuda", 0)) == repr(torch.device("cuda", 0))
    for shape in [(), (3,), (2, 3), (0,)]:
        assert repr(engine.zeros(shape).shape) == repr(torch.zeros(shape).shape).replace("torch.", "engine.")
        assert str(engine.Size(shape)) == str(torch.Size(shape)).replace("torch.", "engine.")
    assert repr(engine.Size((1, 2, 3))[1:]) == "engine.Size([2, 3])"


def test_cuda_tensors_print_their_device(cuda):
    expected = ["tensor([1.5000, 2.0000], device='cuda:0')", "tensor([], device='cuda:0', size=(0, 3))",
                "tensor(3., device='cuda:0', requires_grad=True)",
                "tensor([1.5000], device='cuda:0', dtype=engine.float64)",
                "tensor([], device='cuda:0', dtype=engine.int32)",
                "Parameter containing:\ntensor([1., 1.], device='cuda:0', requires_grad=True)"]
    tensors = [engine.tensor([1.5, 2.0], device="cuda"), engine.zeros(0, 3, device="cuda"),
               engine.tensor(3.0, device="cuda", requires_grad=True),
               engine.tensor([1.5], device="cuda:0", dtype=engine.float64),
               engine.zeros(0, device="cuda", dtype=engine.int32), engine.nn.Parameter(engine.ones(2, device="cuda"))]
    assert [repr(t) for t in tensors] == expected
    assert f"{engine.tensor(2.5, device='cuda'):.3f}" == "2.500"


# (class name, args, kwargs) of nn modules, several argument sets each
_MODULES = [
    ("Conv1d", (2, 4, 3), dict(padding="same", dilation=2)),
    ("Conv2d", (2, 4, (3, 5)), dict(stride=(1, 2), padding=(1, 0), dilation=(2, 1), groups=2, bias=False,
                                    padding_mode="circular")),
    ("Conv2d", (4, 8, 3), dict(padding=1, padding_mode="reflect")),
    ("Conv3d", (2, 4, 3), dict(stride=2, padding=1, padding_mode="replicate")),
    ("ConvTranspose1d", (2, 4, 3), dict(dilation=2)),
    ("ConvTranspose2d", (2, 4, 3), dict(stride=2, padding=1, output_padding=1, groups=2, bias=False)),
    ("ConvTranspose3d", (2, 4, (1, 2, 3)), {}),
    ("BatchNorm1d", (4,), dict(momentum=None, affine=False, track_running_stats=False)),
    ("BatchNorm2d", (4,), dict(eps=1e-3, bias=False)), ("BatchNorm3d", (4,), {}),
    ("GroupNorm", (2, 4), dict(eps=1e-3, affine=False)),
    ("LayerNorm", ([3, 4],), dict(elementwise_affine=False, bias=False)), ("LayerNorm", (8,), dict(eps=1e-12)),
    ("RMSNorm", ([2, 4],), dict(eps=1e-3, elementwise_affine=False)), ("RMSNorm", (4,), {}),
    ("InstanceNorm1d", (3,), {}), ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True)),
    ("LocalResponseNorm", (3,), dict(alpha=1e-3, beta=0.5, k=2)),
    ("Linear", (2, 3), dict(bias=False)), ("Bilinear", (2, 3, 4), {}), ("Identity", (54,), dict(unused="x")),
    ("Dropout", (0.25, True), {}), ("Dropout1d", (), {}), ("Dropout2d", (1,), {}), ("Dropout3d", (0.1,), {}),
    ("AlphaDropout", (0.2,), {}), ("FeatureAlphaDropout", (), {}),
    ("ReLU", (True,), {}), ("ReLU6", (), {}), ("LeakyReLU", (0.2, True), {}), ("ELU", (), dict(alpha=0.5)),
    ("CELU", (0.5, True), {}), ("SELU", (True,), {}), ("GELU", ("tanh",), {}), ("SiLU", (), {}), ("Mish", (True,), {}),
    ("Hardtanh", (-2, 2.5), {}), ("Hardswish", (), {}), ("Hardsigmoid", (True,), {}), ("Threshold", (0.1, 20), {}),
    ("Softplus", (), dict(beta=2, threshold=10)), ("PReLU", (3, 0.1), {}), ("RReLU", (0.1, 0.3, True), {}),
    ("GLU", (1,), {}), ("Softmax", (), {}), ("Softmax", (1,), {}), ("LogSoftmax", (), dict(dim=-1)),
    ("Softmin", (0,), {}), ("Softmax2d", (), {}), ("Hardshrink", (0.25,), {}), ("Softshrink", (), {}),
    ("Tanh", (), {}), ("Sigmoid", (), {}), ("LogSigmoid", (), {}), ("Softsign", (), {}), ("Tanhshrink", (), {}),
    ("MaxPool1d", (3,), dict(stride=1, return_indices=True)),
    ("MaxPool2d", ((2, 3),), dict(stride=(1, 2), padding=1, dilation=2, return_indices=True, ceil_mode=True)),
    ("MaxPool3d", (2,), {}), ("AvgPool1d", (3,), dict(ceil_mode=True, count_include_pad=False)),
    ("AvgPool2d", (3,), dict(divisor_override=2)), ("AvgPool3d", ((1, 2, 3),), {}), ("LPPool2d", (2, 3), dict(ceil_mode=True)),
    ("AdaptiveAvgPool2d", ((None, 3),), {}), ("AdaptiveMaxPool1d", (4,), dict(return_indices=True)),
    ("AdaptiveMaxPool3d", ((1, 2, 3),), {}), ("FractionalMaxPool2d", (3,), dict(output_ratio=0.5)),
    ("FractionalMaxPool3d", (2,), dict(output_size=(4, 4, 4), return_indices=True)),
    ("MaxUnpool2d", (2,), dict(stride=(2, 1), padding=1)),
    ("Upsample", (), dict(scale_factor=2, mode="bilinear", align_corners=False)), ("Upsample", (), dict(size=(4, 5))),
    ("UpsamplingBilinear2d", (), dict(scale_factor=2)), ("UpsamplingNearest2d", (), dict(size=4)),
    ("Embedding", (10, 3), dict(padding_idx=-1, max_norm=1.0, sparse=True)), ("Embedding", (10, 3), {}),
    ("EmbeddingBag", (5, 2), dict(padding_idx=-1, max_norm=2.0, norm_type=1.0, mode="max")),
    ("RNN", (4, 6), dict(nonlinearity="relu", num_layers=2, dropout=0.1)),
    ("LSTM", (4, 6, 2), dict(batch_first=True, bidirectional=True, proj_size=3, dropout=0.2, bias=False)),
    ("GRU", (4, 6, 2, False, True, 0.1, True), {}), ("GRU", (4, 6), {}),
    ("RNNCell", (4, 6), dict(nonlinearity="relu", bias=False)), ("LSTMCell", (4, 6), {}), ("GRUCell", (4, 6), {}),
    ("TransformerEncoderLayer", (8, 2, 16), dict(norm_first=True, activation="gelu")),
    ("TransformerDecoderLayer", (8, 2, 16), dict(batch_first=True, bias=False)),
    ("Transformer", (8, 2, 1, 1, 16), {}),
    ("MultiheadAttention", (8, 2), {}), ("MultiheadAttention", (8, 2), dict(kdim=3, vdim=5, bias=False, add_bias_kv=True)),
    ("Flatten", (0, 2), {}), ("Unflatten", (-1, [2, -1]), {}), ("Unflatten", (1, (2, 3)), {}),
    ("Fold", ((4, 5), (2, 2)), dict(dilation=(1, 2), padding=1, stride=2)), ("Unfold", (3,), dict(stride=(1, 2))),
    ("PixelShuffle", (3,), {}), ("PixelUnshuffle", (2,), {}), ("ChannelShuffle", (2,), {}),
    ("ZeroPad2d", ((1, 2, 3, 4),), {}), ("ConstantPad1d", (2, 3.5), {}), ("ConstantPad3d", ((1, 2, 3, 4, 5, 6), -1), {}),
    ("ReflectionPad3d", (1,), {}), ("CircularPad2d", (1,), {}), ("ReplicationPad1d", ((1, 2),), {}),
    ("CosineSimilarity", (0, 1e-6), {}), ("PairwiseDistance", (1.0, 1e-5, True), {}),
    ("CrossEntropyLoss", (), dict(label_smoothing=0.1, ignore_index=3)), ("NLLLoss", (), dict(reduction="sum")),
    ("MSELoss", (), dict(size_average=False)), ("L1Loss", (), {}), ("HuberLoss", (), dict(delta=0.5)),
    ("SmoothL1Loss", (), dict(beta=0.5)), ("BCEWithLogitsLoss", (), {}), ("KLDivLoss", (), dict(log_target=True)),
    ("CTCLoss", (), dict(blank=1, zero_infinity=True)), ("TripletMarginLoss", (), dict(margin=2.0, swap=True)),
    ("MultiMarginLoss", (), dict(p=2)), ("PoissonNLLLoss", (), dict(log_input=False, full=True)),
    ("GaussianNLLLoss", (), dict(full=True)), ("MarginRankingLoss", (), dict(margin=0.5)),
    ("AdaptiveLogSoftmaxWithLoss", (8, 20, [5, 10]), dict(head_bias=True)),
    ("LazyLinear", (4,), {}), ("LazyConv2d", (4, 3), {}), ("LazyBatchNorm2d", (), {}),
]


@pytest.mark.parametrize("name, args, kwargs", _MODULES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(_MODULES)])
def test_module_reprs(name, args, kwargs):
    _same_text(repr(getattr(engine.nn, name)(*args, **kwargs)), repr(getattr(torch.nn, name)(*args, **kwargs)))


def test_module_repr_follows_changed_attributes():
    for name, attr, value in [("Conv2d", "padding", (2, 2)), ("Dropout", "p", 0.75), ("ReLU", "inplace", True),
                              ("BatchNorm2d", "eps", 0.1), ("LSTM", "batch_first", True), ("Linear", "in_features", 5)]:
        args = {"Conv2d": (2, 4, 3), "BatchNorm2d": (4,), "LSTM": (2, 3), "Linear": (2, 3)}.get(name, ())
        ours, theirs = getattr(engine.nn, name)(*args), getattr(torch.nn, name)(*args)
        setattr(ours, attr, value)
        setattr(theirs, attr, value)
        _same_text(repr(ours), repr(theirs))


def _with_extra_repr(m):
    """A module of a class with its own two-line ``extra_repr``, a child and an empty child slot."""
    module = type("Foo", (m.nn.Module,), {"extra_repr": lambda self: "a=1\nb=2"})()
    module.add_module("act", m.nn.ReLU())
    module.register_module("empty", None)
    return module


def _materialized(m, module, shape):
    module(m.zeros(*shape))
    return module


_CONTAINERS = {
    "sequential": lambda m: m.nn.Sequential(m.nn.Linear(2, 3), m.nn.ReLU(),
                                            m.nn.Sequential(m.nn.Conv2d(1, 2, 3), m.nn.BatchNorm2d(2))),
    "empty": lambda m: m.nn.Sequential(),
    "ordered": lambda m: m.nn.Sequential(collections.OrderedDict([("fc", m.nn.Linear(2, 3)), ("act", m.nn.Tanh())])),
    "repeats": lambda m: m.nn.ModuleList([m.nn.Linear(2, 2)] * 2 + [m.nn.ReLU()] * 3 + [m.nn.Linear(2, 3),
                                                                                      m.nn.Linear(2, 2)]),
    "nested lists": lambda m: m.nn.ModuleList([m.nn.ModuleList([m.nn.ReLU(), m.nn.ReLU()]),
                                               m.nn.Sequential(m.nn.ReLU())]),
    "dict": lambda m: m.nn.ModuleDict({"a": m.nn.Linear(1, 2), "b": m.nn.ModuleList([m.nn.ReLU()]),
                                       "c": m.nn.ModuleDict({"x": m.nn.Identity()}), "d": m.nn.ModuleDict()}),
    "parameter list": lambda m: m.nn.ParameterList([m.nn.Parameter(m.zeros(2, 3)), m.zeros(4, dtype=m.float64),
                                                    m.nn.Parameter(m.zeros(2), requires_grad=False), 3, "s"]),
    "parameter dict": lambda m: m.nn.Sequential(m.nn.ParameterDict({"w": m.nn.Parameter(m.zeros(2, 3)),
                                                                    "b": m.nn.Parameter(m.zeros(3, dtype=m.float16)),
                                                                    "n": 3}), m.nn.ParameterList()),
    "encoder": lambda m: m.nn.TransformerEncoder(m.nn.TransformerEncoderLayer(8, 2, 16), 2, norm=m.nn.LayerNorm(8),
                                                 enable_nested_tensor=False),
    "decoder": lambda m: m.nn.TransformerDecoder(m.nn.TransformerDecoderLayer(8, 2, 16, norm_first=True), 3),
    "extra and children": lambda m: _with_extra_repr(m),
    "lazy materialized": lambda m: m.nn.Sequential(_materialized(m, m.nn.LazyLinear(4), (2, 3)),
                                                   _materialized(m, m.nn.LazyConv2d(4, 3), (1, 3, 5, 5)),
                                                   _materialized(m, m.nn.LazyBatchNorm1d(), (2, 3))),
    "pretrained": lambda m: m.nn.Sequential(m.nn.Embedding.from_pretrained(m.zeros(3, 2), padding_idx=1, max_norm=1.0),
                                            m.nn.EmbeddingBag.from_pretrained(m.zeros(3, 2), mode="sum")),
}


@pytest.mark.parametrize("name", list(_CONTAINERS))
def test_container_reprs(name):
    _same_text(repr(_CONTAINERS[name](engine)), repr(_CONTAINERS[name](torch)))



def test_return_types_print_and_pickle_as_torch():
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    cases = [lambda t: t.max(1), lambda t: t.sort(0), lambda t: t.topk(2), lambda t: t[:3, :3].slogdet(),
             lambda t: t.median(-1, keepdim=True)]
    for case in cases:
        ours, theirs = case(engine.tensor(x)), case(torch.tensor(x))
        assert repr(ours) == repr(theirs).replace("torch.", "engine.")
        assert type(ours).__module__ == "engine.return_types" and type(ours).__name__ == type(theirs).__name__
        again = pickle.loads(pickle.dumps(ours))
        assert type(again) is type(ours) and all(a.equal(b) for a, b in zip(again, ours))
