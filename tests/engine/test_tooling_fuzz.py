"""Differential cases from the fifth fuzzing round of the tooling APIs against torch 2.14: engine.testing
(assert_close on complex, sparse and quantized inputs; make_tensor's complex values), engine.library (schema
inference's error order, argument conversion, overload resolution), engine.compiler's markers and engine.jit.

Each case builds its inputs with the module it is given (torch or engine) and the outcomes are compared: the
result, or the exception's type and message (with "torch" read as "engine")."""
import re
import typing
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.compiler
import engine.library
import engine.testing

pytestmark = pytest.mark.slow  # torch's first assert_close and custom_op import their machinery (~2 s)

_RNG = np.random.default_rng(28)
A = _RNG.standard_normal((3, 5)).astype(np.float32)
B = A.copy()
B[1, 2] += 0.5
Z = (_RNG.standard_normal((2, 5)) + 1j * _RNG.standard_normal((2, 5))).astype(np.complex64)


def _text(value):
    """``value``'s text with torch's names read as the engine's and the per-call namespaces numbered away."""
    text = re.sub(r"\btorch\b", "engine", str(value)).replace("engine.tensor.Tensor", "engine.Tensor")
    return re.sub(r"(conv|ovl)\d+", r"\1", text)


def _normalized(value):
    if hasattr(value, "dtype") and hasattr(value, "detach"):
        array = value.detach()
        array = (array.float() if str(array.dtype).endswith("bfloat16") else array).numpy()
        return str(value.dtype).replace("torch.", "engine."), tuple(value.shape), array
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_normalized(v) for v in value]
    return _text(value)


def _outcome(case, module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "returned", _normalized(case(module))
        except Exception as error:  # the type and the message are what is compared
            return type(error).__name__, _text(error)


def _assert_same(ours, theirs):
    """Equal outcomes, arrays to float32's 1e-5 (the engine's kernels round differently from torch's)."""
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray) and ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    elif isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b)
    else:
        assert ours == theirs


def _check(case):
    _assert_same(_outcome(case, engine), _outcome(case, torch))


ASSERT_CLOSE = {
    # complex dtypes have torch's default tolerances (they had none: every ulp failed as "not equal")
    "complex64 within tolerance": lambda m: m.testing.assert_close(m.tensor(Z), m.tensor(Z * (1 + 1e-7))),
    "complex128 within tolerance": lambda m: m.testing.assert_close(m.tensor(Z).to(m.complex128),
                                                                    m.tensor(Z).to(m.complex128) * (1 + 1e-8)),
    "complex mismatch message": lambda m: m.testing.assert_close(m.tensor(Z), m.tensor(Z) * 1.5 + 3),
    "complex nan message": lambda m: m.testing.assert_close(m.tensor(Z), m.tensor(np.where(Z.real > 0, np.nan, Z))),
    "complex 0-d": lambda m: m.testing.assert_close(m.tensor(1 + 1j), m.tensor(1 + 2j)),
    "complex equal_nan": lambda m: m.testing.assert_close(m.tensor([complex("nan+1j")]), m.tensor([complex("nan")]),
                                                          equal_nan=True),
    "complex number with one tolerance": lambda m: m.testing.assert_close(1 + 1j, 1 + 1.1j, rtol=0.1),
    # sparse tensors are compared by structure and specified values, under torch's names
    "sparse COO values": lambda m: m.testing.assert_close(m.tensor(A).to_sparse(), m.tensor(B).to_sparse()),
    "sparse COO nnz": lambda m: m.testing.assert_close(m.tensor(A).to_sparse(),
                                                       m.tensor(np.where(A > 0, A, 0)).to_sparse()),
    "sparse CSR values": lambda m: m.testing.assert_close(m.tensor(A).to_sparse_csr(), m.tensor(B).to_sparse_csr()),
    "sparse CSR indices": lambda m: m.testing.assert_close(m.tensor(np.where(A > 0, A, 0)).to_sparse_csr(),
                                                           m.tensor(np.where(A < 0, A, 0)).to_sparse_csr()),
    "sparse vs dense unchecked layout": lambda m: m.testing.assert_close(m.tensor(A).to_sparse(), m.tensor(B),
                                                                         check_layout=False),
    # quantized tensors were no tensor-likes at all
    "quantized values": lambda m: m.testing.assert_close(m.quantize_per_tensor(m.tensor(A), 0.1, 0, m.quint8),
                                                         m.quantize_per_tensor(m.tensor(B), 0.1, 0, m.quint8)),
    "quantized vs float": lambda m: m.testing.assert_close(m.quantize_per_tensor(m.tensor(A), 0.1, 0, m.quint8),
                                                           m.tensor(A)),
}


@pytest.mark.parametrize("name", ASSERT_CLOSE)
def test_assert_close_matches_torch(name):
    _check(ASSERT_CLOSE[name])


@pytest.mark.parametrize("rtol,atol", [(-1.0, 0.0), (0.0, -0.001)])
def test_assert_close_refuses_negative_tolerances(rtol, atol):  # they passed any values
    with pytest.raises(RuntimeError):
        torch.testing.assert_close(torch.tensor(A), torch.tensor(B), rtol=rtol, atol=atol)
    name, value = ("rtol", "-1") if rtol else ("atol", "-0.001")
    with pytest.raises(RuntimeError, match=f"^{name} must be greater than or equal to zero, but got {value}$"):
        engine.testing.assert_close(engine.tensor(A), engine.tensor(B), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("kwargs", [{}, {"low": -2, "high": 3.5, "noncontiguous": True}, {"exclude_zero": True},
                                    {"requires_grad": True, "memory_format": "channels_last"}])
def test_make_tensor_complex_draws_torchs_values(dtype, kwargs):
    def case(m):
        m.manual_seed(3)
        options = {k: getattr(m, v) if k == "memory_format" else v for k, v in kwargs.items()}
        t = m.testing.make_tensor(2, 3, 4, 5, dtype=getattr(m, dtype), device="cpu", **options)
        return m.view_as_real(t.detach()), t.stride(), t.requires_grad
    _check(case)


def test_make_tensor_complex_nan_bound_error():
    _check(lambda m: m.testing.make_tensor(3, dtype=m.complex64, device="cpu", high=float("nan")))


@pytest.mark.parametrize("dtype", [None, float, "float32"])
def test_make_tensor_takes_only_dtypes(dtype):  # None silently made float64 tensors
    _check(lambda m: m.testing.make_tensor(2, dtype=dtype, device="cpu"))


def _op(m, name, signature_source, body="return x.clone()", mutates_args=()):
    """A custom op ``<namespace>::f`` (a fresh namespace per call) from the parameter list's source."""
    scope = {"m": m, "engine": engine, "typing": typing, "seen": []}
    exec(f"def f({signature_source}) -> m.Tensor:\n    seen.append(a)\n    {body}\n", scope)
    op = m.library.custom_op(f"{name}{next(_COUNT)}::f", mutates_args=mutates_args)(scope["f"])
    return op, scope["seen"]


_COUNT = iter(range(10 ** 6))


@pytest.mark.parametrize("annotation,value", [
    ("int", "True"), ("int", "np.int64(3)"), ("int", "m.tensor(4)"), ("float", "True"), ("float", "np.float32(2.5)"),
    ("float", "m.tensor(1.5)"), ("bool", "3"), ("bool", "np.float32(0.0)"), ("typing.Sequence[int]", "(1, True)"),
    ("typing.Sequence[int]", "range(3)"), ("typing.Sequence[int]", "m.tensor([4, 5])"),
    ("typing.Sequence[float]", "m.Size([2, 3])"), ("typing.Optional[int]", "np.int64(7)"),
    ("int", "2.5"), ("bool", "'yes'"),
])
def test_custom_op_converts_arguments_as_torch(annotation, value):
    def case(m):
        op, seen = _op(m, "conv", f"x: m.Tensor, a: {annotation}")
        try:
            op(m.ones(1), eval(value, {"m": m, "np": np}))
        except RuntimeError as error:  # torch's lines after the first hold its C++ cast's details
            return _text(error).split("\n")[0].split(" Position:")[0]
        return repr(seen[0]), type(seen[0]).__name__
    _check(case)


@pytest.mark.parametrize("call", ["op(m.ones(2))", "op(m.ones(2), 2.0)", "op(m.ones(2), 'a')", "one(m.ones(2))"])
def test_overload_packet_resolves_the_overload(call):
    def case(m):
        lib = m.library.Library(f"ovl{next(_COUNT)}", "FRAGMENT")
        lib.define("foo.scalar(Tensor x, float s) -> Tensor")
        lib.define("foo(Tensor x) -> Tensor")
        lib.define("bar.only(Tensor x) -> Tensor")
        lib.impl("foo", lambda x: x + 1, "CompositeExplicitAutograd")
        lib.impl("foo.scalar", lambda x, s: x + s, "CompositeExplicitAutograd")
        lib.impl("bar.only", lambda x: x * 5, "CompositeExplicitAutograd")
        namespace = getattr(m.ops, lib.ns)
        return eval(call, {"m": m, "op": namespace.foo, "one": namespace.bar})
    outcome = _outcome(case, engine)
    expected = _outcome(case, torch)
    if expected[0] == "RuntimeError":  # torch's lines, joined here into one: the first, then each schema's error
        assert outcome[0] == "RuntimeError"
        assert outcome[1].startswith(expected[1].split("\n")[0])
        assert "(Tensor x, float s) -> Tensor" in outcome[1] and "(Tensor x) -> Tensor" in outcome[1]
    else:
        _assert_same(outcome, expected)


def _autograd_case(kind):
    def case(m):
        x = m.tensor(A[:2, :3], requires_grad=True)
        if kind == "keyword-only inputs":
            op, _ = _op(m, "conv", "x: m.Tensor, *, a: float = 2.0", body="return x * a")

            def setup(ctx, inputs, keyword_only_inputs, output):
                ctx.k = (len(inputs), keyword_only_inputs["a"])
            op.register_autograd(lambda ctx, g: g * ctx.k[0] * ctx.k[1], setup_context=setup)
            (op(x, a=3.0).sum() + op(x).sum()).backward()
        elif kind == "list output":
            scope = {"m": m, "typing": typing}
            exec("def f(x: m.Tensor) -> typing.List[m.Tensor]:\n    return [x * 2, x * 3]\n", scope)
            op = m.library.custom_op(f"conv{next(_COUNT)}::f", mutates_args=())(scope["f"])
            op.register_autograd(lambda ctx, grads: grads[0] * 2 + grads[1] * 3)
            first, second = op(x)
            (first.sum() + second.pow(2).sum()).backward()
        elif kind == "gradient summed to its input":
            op, _ = _op(m, "conv", "x: m.Tensor, a: m.Tensor", body="return x * a")
            op.register_autograd(lambda ctx, g: (g, g))
            a = m.ones(1, 3, requires_grad=True)
            op(x, a).sum().backward()
            return x.grad, a.grad
        elif kind == "gradient of a wrong shape":
            op, _ = _op(m, "conv", "x: m.Tensor, a: int", body="return x * a")
            op.register_autograd(lambda ctx, g: (g.sum(0), None))
            op(x, 2).sum().backward()
        else:  # an op that mutates an argument has no formula
            op, _ = _op(m, "conv", "x: m.Tensor, a: m.Tensor", body="a.add_(1); return x * 2", mutates_args=("a",))
            op.register_autograd(lambda ctx, g: (g, None))
        return x.grad
    return case


@pytest.mark.parametrize("kind", ["keyword-only inputs", "list output", "gradient summed to its input",
                                  "gradient of a wrong shape", "mutating op"])
def test_custom_op_autograd_matches_torch(kind):
    _check(_autograd_case(kind))


@pytest.mark.parametrize("source,mutates", [
    ("x: list[float] = [1.0, 2.0], y: m.Tensor = None", ("x",)),  # the mutation is checked before the default
    ("x: typing.Tuple[int, int]", ()),
    ("x: tuple[float, ...]", ()),
    ("x: typing.Tuple[int, str]", ()),
    ("x: typing.Tuple[int, float]", ()),
])
def test_infer_schema_errors_match_torch(source, mutates):
    def case(m):
        scope = {"m": m, "typing": typing}
        exec(f"def f({source}) -> None:\n    pass\n", scope)
        message = None
        try:
            m.library.infer_schema(scope["f"], mutates_args=mutates)
        except ValueError as error:
            message = str(error).split("The valid types are")[0]  # torch's table lists types the engine lacks
        return message
    _check(case)


def test_compiler_markers():
    def case(m):
        f = m.compiler.allow_in_graph(lambda x: x + 1)
        g = m.compiler.assume_constant_result(lambda: 3)
        compiled = m.compile(lambda x: f(x) * g(), backend="eager")
        return (compiled(m.ones(2)), m.compiler.allow_in_graph([len]), m.compiler.is_dynamo_compiling(),
                m.compiler.is_exporting())
    _check(case)
    _check(lambda m: m.compiler.allow_in_graph(3))


def _vision_net(m):
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 5))
    net = m.nn.Sequential(m.nn.Conv2d(3, 4, 3, padding=1), m.nn.BatchNorm2d(4), m.nn.ReLU(),
                          m.nn.AdaptiveAvgPool2d(1), m.nn.Flatten(), m.nn.Linear(4, 5))
    net.load_state_dict({k: m.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    return net.eval()


X = _RNG.standard_normal((2, 3, 7, 9)).astype(np.float32)

JIT = {
    "script module": lambda m: m.jit.script(_vision_net(m))(m.tensor(X)),
    "trace module": lambda m: m.jit.trace(_vision_net(m), m.tensor(X))(m.tensor(X) * 2),
    "trace tuple and kwargs": lambda m: (m.jit.trace(_vision_net(m), (m.tensor(X),))(m.tensor(X)),
                                         m.jit.trace(m.nn.Flatten(), example_kwarg_inputs={"input": m.ones(2, 3, 4)})(
                                             m.ones(1, 2, 5))),
    "trace kwargs not a dict": lambda m: m.jit.trace(_vision_net(m), example_kwarg_inputs=[1]),
    "trace bad input": lambda m: m.jit.trace(_vision_net(m), m.ones(2, 5)),
    "trace function": lambda m: m.jit.trace(lambda x, y: x * y, (m.ones(2), m.ones(2)))(m.ones(3), m.ones(3) * 3),
    "freeze train mode": lambda m: m.jit.freeze(m.jit.script(_vision_net(m).train())),
    "freeze": lambda m: m.jit.freeze(m.jit.script(_vision_net(m)))(m.tensor(X)),
    "optimize_for_inference": lambda m: m.jit.optimize_for_inference(m.jit.script(_vision_net(m).train()))(
        m.tensor(X)),
    "decorators": lambda m: (m.jit.ignore(lambda: 1)(), m.jit.ignore(drop=True)(lambda: 2)(),
                             m.jit.unused(lambda: 3)(), m.jit.export(lambda: 4)(), m.jit.annotate(int, 5),
                             m.jit.Final[int], m.jit.is_scripting()),
    "script a builtin class": lambda m: m.jit.script(int),
    "script a number": lambda m: m.jit.script(3),
}


@pytest.mark.parametrize("name", JIT)
def test_jit_matches_torch(name):
    _check(JIT[name])


def test_jit_deprecation_warnings():
    def case(m):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.jit.freeze(m.jit.script(_vision_net(m)))
            m.jit.ignore(drop=True)
        return sorted(re.sub(r"\btorch\b", "engine", str(w.message)) for w in caught if w.category is FutureWarning)
    _check(case)


def _stance_run(m):
    """What a compiled function gives under each stance (torch's shapes would trace anew as ours do)."""
    out = []
    compiled = m.compile(lambda x: x * 2, backend="eager" if m is torch else "inductor")
    with m.no_grad():
        out.append(compiled(m.ones(2)))
        with m.compiler.set_stance("fail_on_recompile"):
            out.append(compiled(m.ones(2)))  # a signature traced before replays
            try:
                compiled(m.ones(3))
            except RuntimeError as error:
                out.append(str(error).split(". ")[0])
        with m.compiler.set_stance("eager_on_recompile"):
            out.append(compiled(m.ones(4)))
        with m.compiler.set_stance("force_eager"):
            out.append(compiled(m.ones(5)))
        out.append(m.compiler.set_stance("force_eager")(lambda: compiled(m.ones(6)))())
    try:
        m.compiler.set_stance("force_eager", force_backend="eager")
    except RuntimeError as error:
        out.append(str(error))
    return out


def test_set_stance_matches_torch():
    try:
        _check(_stance_run)
    finally:
        engine.compiler.set_stance("default")
        torch.compiler.set_stance("default")


def test_set_stance_skips_traces():
    compiled = engine.compile(engine.nn.Linear(3, 2).eval())

    def traces():
        return sum(graph.num_compiled for graph in compiled._compiled.graphs.values())

    with engine.no_grad():
        compiled(engine.ones(1, 3))
        with engine.compiler.set_stance("eager_on_recompile"):
            compiled(engine.ones(4, 3))  # a new signature: eager, not traced
        assert traces() == 1
        with engine.compiler.set_stance("eager_then_compile"):
            fresh = engine.compile(engine.nn.Linear(3, 2).eval())
            fresh(engine.ones(1, 3))  # a first call: eager
            assert not fresh._compiled.graphs
            fresh(engine.ones(1, 3))
            assert sum(graph.num_compiled for graph in fresh._compiled.graphs.values()) == 1
    with pytest.raises(ValueError, match="invalid stance 'sideways'"):
        engine.compiler.set_stance("sideways")


def test_complex_and_custom_op_arguments_on_the_cuda_emulation(cuda):
    z = engine.tensor(Z, device="cuda")
    engine.testing.assert_close(z, z * (1 + 1e-7))  # complex64's tolerances
    engine.testing.assert_close(z, engine.tensor(Z), check_device=False)
    made = engine.testing.make_tensor(2, 3, dtype=engine.complex128, device="cuda", exclude_zero=True)
    assert made.device.type == "cuda" and made.dtype == engine.complex128
    op, seen = _op(engine, "conv", "x: engine.Tensor, a: float", body="return x * a")
    assert op(engine.ones(2, device="cuda"), engine.tensor(2.5, device="cuda")).cpu().tolist() == [2.5, 2.5]
    assert seen == [2.5]
