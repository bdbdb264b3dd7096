"""engine.library (torch.library) against torch running the same user code: custom ops wrapping numpy, with
registered fake functions, gradients, device kernels, mutation, several outputs; opcheck; schema inference;
Library blocks; engine.library.ops; and torch's errors."""
import itertools
from typing import Optional, Sequence

import numpy as np
import pytest
import torch

import engine
import engine.library

pytestmark = pytest.mark.slow  # torch's opcheck alone takes a second

_COUNTER = itertools.count()


def _ns(prefix):
    """A namespace no earlier test used (torch's registrations live for the whole process)."""
    return f"{prefix}{next(_COUNTER)}"


def _lib(T):
    return engine.library if T is engine else torch.library


def _ops(T):
    return engine.library.ops if T is engine else torch.ops


def _make_mysin(T, ns):
    """The user code of torch.library's tutorial: numpy's sin as an op, with a fake function and a gradient."""
    lib = _lib(T)

    @lib.custom_op(f"{ns}::mysin", mutates_args=())
    def mysin(x: T.Tensor) -> T.Tensor:
        return T.from_numpy(np.sin(x.numpy()))

    @mysin.register_fake
    def _(x):
        return T.empty_like(x)

    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()

    mysin.register_autograd(backward, setup_context=setup_context)
    return mysin


def _pair(seed, shape):
    a = np.random.default_rng(seed).standard_normal(shape)
    return (engine.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True))


def test_custom_op_numpy_sin_forward_backward_and_ops_namespace():
    results = []
    for T, x in zip((engine, torch), _pair(0, (3, 5))):
        ns = _ns("lsin")
        mysin = _make_mysin(T, ns)
        y = mysin(x)
        z = _ops(T).__getattr__(ns).mysin.default(x)
        (y * 2 + z).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__.startswith("GeneratedBackward")
                        if T is torch else y.grad_fn.name().startswith("GeneratedBackward")))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)
    assert results[0][2] and results[1][2]


def test_custom_op_is_one_graph_node_and_packet_names():
    ns = _ns("lnode")
    mysin = _make_mysin(engine, ns)
    x = engine.randn(4, requires_grad=True)
    y = mysin(x)
    assert y.grad_fn.next_edges[0][0] is x._accumulator
    packet = engine.library.ops.__getattr__(ns).mysin
    assert str(packet) == f"{ns}.mysin" and packet.overloads() == ["default"]
    assert repr(packet.default) == f"<OpOverload(op='{ns}.mysin', overload='default')>"
    assert packet.default.name() == f"{ns}::mysin"
    assert str(packet.default._schema) == f"{ns}::mysin(Tensor x) -> Tensor"
    assert repr(mysin) == f"<CustomOpDef({ns}::mysin)>"


def test_no_grad_call_records_nothing():
    mysin = _make_mysin(engine, _ns("lnograd"))
    x = engine.randn(3, requires_grad=True)
    with engine.no_grad():
        y = mysin(x)
    assert y.grad_fn is None and not y.requires_grad


def _make_two(T, ns):
    """Two outputs and an int argument; the backward gets both output gradients."""
    @_lib(T).custom_op(f"{ns}::two", mutates_args=())
    def two(x: T.Tensor, k: int, w: Optional[T.Tensor] = None) -> tuple[T.Tensor, T.Tensor]:
        scale = 1.0 if w is None else w
        return x * k * scale, x.sin()

    two.register_fake(lambda x, k, w=None: (T.empty_like(x), T.empty_like(x)))

    def setup_context(ctx, inputs, output):
        x, k, w = inputs
        ctx.save_for_backward(x, w)
        ctx.k = k

    def backward(ctx, ga, gb):
        x, w = ctx.saved_tensors
        gx = ga * ctx.k * (1.0 if w is None else w) + gb * x.cos()
        gw = None if w is None else (ga * ctx.k * x).sum(0)
        return gx, None, gw

    two.register_autograd(backward, setup_context=setup_context)
    return two


def test_multi_output_op_values_and_gradients_against_torch():
    xs, ws = _pair(1, (4, 3)), _pair(2, (3,))
    got = []
    for T, x, w in zip((engine, torch), xs, ws):
        two = _make_two(T, _ns("ltwo"))
        a, b = two(x, 3, w)
        (a.pow(2).sum() + b.sum()).backward()
        c, _ = two(x.detach(), k=2)
        got.append([a.detach().numpy(), b.detach().numpy(), x.grad.numpy(), w.grad.numpy(), c.numpy()])
    for ours, ref in zip(*got):
        np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_only_one_output_used_gets_zero_gradient_for_the_other():
    xs = _pair(3, (5,))
    for T, x in zip((engine, torch), xs):
        two = _make_two(T, _ns("lone"))
        a, _ = two(x, 2)
        a.sum().backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), xs[1].grad.numpy())


def _make_addinto(T, ns):
    @_lib(T).custom_op(f"{ns}::addinto", mutates_args={"out"})
    def addinto(x: T.Tensor, out: T.Tensor) -> None:
        out.add_(x)

    addinto.register_fake(lambda x, out: None)
    return addinto


def test_mutating_op_writes_its_declared_argument_and_passes_opcheck():
    for T in (engine, torch):
        ns = _ns("lmut")
        addinto = _make_addinto(T, ns)
        out = T.zeros(3)
        assert addinto(T.ones(3), out) is None
        assert out.tolist() == [1.0, 1.0, 1.0]
        checks = ("test_schema", "test_autograd_registration", "test_faketensor")  # torch compiles for the 4th
        assert set(_lib(T).opcheck(addinto, (T.ones(3), T.zeros(3)), test_utils=checks).values()) == {"SUCCESS"}
        schema = str(getattr(_ops(T), ns).addinto.default._schema)
        assert schema == f"{ns}::addinto(Tensor x, Tensor(a1!) out) -> ()"


def test_opcheck_passes_on_a_good_op_and_names_each_test():
    checks = {"test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS", "test_faketensor": "SUCCESS"}
    for T in (engine, torch):
        mysin = _make_mysin(T, _ns("lchk"))
        x = T.randn(3, requires_grad=True)
        assert _lib(T).opcheck(mysin, (x,), test_utils=tuple(checks)) == checks
    mysin = _make_mysin(engine, _ns("lchk"))  # the default checks, torch's fourth included (torch's compiles: slow)
    x = engine.randn(3, requires_grad=True)
    assert engine.library.opcheck(mysin, (x,)) == {**checks, "test_aot_dispatch_dynamic": "SUCCESS"}
    assert engine.library.opcheck(mysin, (x,), test_utils="test_schema") == {"test_schema": "SUCCESS"}


def _bad_ops(T, ns):
    lib = _lib(T)

    @lib.custom_op(f"{ns}::mutund", mutates_args=())
    def mutund(x: T.Tensor) -> T.Tensor:
        x.add_(1)
        return x.clone()

    @lib.custom_op(f"{ns}::nofake", mutates_args=())
    def nofake(x: T.Tensor) -> T.Tensor:
        return x.sin()

    @lib.custom_op(f"{ns}::badfake", mutates_args=())
    def badfake(x: T.Tensor) -> T.Tensor:
        return x.sum(0)

    badfake.register_fake(lambda x: T.empty_like(x))

    @lib.custom_op(f"{ns}::wrongdt", mutates_args=())
    def wrongdt(x: T.Tensor) -> T.Tensor:
        return x.double()

    wrongdt.register_fake(lambda x: T.empty_like(x))
    return mutund, nofake, badfake, wrongdt


@pytest.mark.parametrize("which, message", [
    (0, "opcheck(op, ...): test_schema failed with Argument x is not defined as mutable but was mutated"),
    (1, "test_faketensor failed with There was no fake impl registered for"),
    (2, "found mismatched tensor metadata: Shapes"),
    (3, "found mismatched tensor metadata: Dtypes"),
])
def test_opcheck_failures_as_torchs(which, message):
    for T in (engine, torch):
        op = _bad_ops(T, _ns("lbad"))[which]
        with pytest.raises(Exception, match=None) as info:
            _lib(T).opcheck(op, (T.ones(3, 2),))
        assert type(info.value).__name__ == "OpCheckError"
        assert message in str(info.value)


def test_opcheck_failing_autograd_registration_and_raise_exception_false():
    for T in (engine, torch):
        ns = _ns("lreg")
        lib = _lib(T).Library(ns, "DEF")
        lib.define("cc(Tensor x) -> Tensor")
        lib.impl("cc", lambda x: x + 1, "CPU")
        lib.impl("cc", lambda x: T.empty_like(x), "Meta")
        op = getattr(_ops(T), ns).cc.default
        result = _lib(T).opcheck(op, (T.ones(2, requires_grad=True),), raise_exception=False,
                                 test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))
        assert result["test_schema"] == "SUCCESS" and result["test_faketensor"] == "SUCCESS"
        assert isinstance(result["test_autograd_registration"], AssertionError)
        assert "does not have an autograd kernel defined at an autograd key" in str(
            result["test_autograd_registration"])


def test_opcheck_random_op_compares_under_the_same_random_state():
    """torch's opcheck passes this op too (checked once by hand: its compiled run takes seconds)."""
    @engine.library.custom_op(f"{_ns('lrand')}::noisy", mutates_args=())
    def noisy(x: engine.Tensor) -> engine.Tensor:
        return x + engine.rand_like(x)

    noisy.register_fake(lambda x: engine.empty_like(x))
    noisy.register_autograd(lambda ctx, g: g)
    assert set(engine.library.opcheck(noisy, (engine.ones(3, requires_grad=True),)).values()) == {"SUCCESS"}


def test_opcheck_dynamic_size_with_get_ctx():
    for T in (engine, torch):
        @_lib(T).custom_op(f"{_ns('ldyn')}::positive", mutates_args=())
        def positive(x: T.Tensor) -> T.Tensor:
            return x[x > 0].clone()

        @positive.register_fake
        def _(x):
            return x.new_empty(_lib(T).get_ctx().new_dynamic_size())

        assert set(_lib(T).opcheck(positive, (T.randn(7),)).values()) == {"SUCCESS"}
        assert _lib(T).get_ctx() is None


def test_opcheck_bad_test_utils():
    mysin = _make_mysin(engine, _ns("lutil"))
    with pytest.raises(ValueError, match=r"expected test_utils to be subset of"):
        engine.library.opcheck(mysin, (engine.ones(2),), test_utils=("bad",))


def _annotated():
    def f1(x: engine.Tensor, n: int, a: float, b: bool, s: str, o: Optional[engine.Tensor], ls: list[engine.Tensor],
           si: Sequence[int], d: float = 1.0, k: Optional[int] = None) -> engine.Tensor: ...

    def f2(x: engine.Tensor, y: list[Optional[engine.Tensor]], z: Sequence[float], w: list[bool],
           u: Optional[Sequence[int]]) -> tuple[engine.Tensor, int, float]: ...

    def f3(x: engine.Tensor, *, y: int = 3, z: engine.dtype = engine.float32, dev: engine.device = None,
           num: Optional[float] = None, sy: engine.library.schema.Number = 2, ss: str = "a", b: bool = True,
           fl: float = -1e-3) -> list[engine.Tensor]: ...

    def f4(x: Optional[engine.Tensor], y: list[engine.Tensor], n: int) -> None: ...

    def f5(x: engine.Tensor, y: int | None = None) -> tuple[engine.Tensor]: ...
    return f1, f2, f3, f4, f5


@pytest.mark.parametrize("index, mutates, expected", [
    (0, (), "(Tensor x, SymInt n, float a, bool b, str s, Tensor? o, Tensor[] ls, SymInt[] si, float d=1.0, "
            "SymInt? k=None) -> Tensor"),
    (1, (), "(Tensor x, Tensor?[] y, float[] z, bool[] w, SymInt[]? u) -> (Tensor, SymInt, float)"),
    (2, (), '(Tensor x, *, SymInt y=3, ScalarType z=float32, Device dev=None, float? num=None, Scalar sy=2, '
            'str ss="a", bool b=True, float fl=-0.001) -> Tensor[]'),
    (3, "unknown", "(Tensor(a0!)? x, Tensor(a1!)[] y, SymInt n) -> ()"),
    (3, ["y"], "(Tensor? x, Tensor(a1!)[] y, SymInt n) -> ()"),
    (4, (), "(Tensor x, SymInt? y=None) -> ((Tensor))"),
])
def test_infer_schema_as_torchs(index, mutates, expected):
    assert engine.library.infer_schema(_annotated()[index], mutates_args=mutates) == expected


def test_infer_schema_with_op_name():
    text = engine.library.infer_schema(_annotated()[4], mutates_args=(), op_name="foo")
    assert text == "foo(Tensor x, SymInt? y=None) -> ((Tensor))"


def _bad_annotations():
    def no_ann(x, y: int) -> engine.Tensor: ...

    def no_ret(x: engine.Tensor): ...

    def bad_param(x: engine.Tensor, y: dict) -> engine.Tensor: ...

    def tuple_param(x: engine.Tensor, y: tuple[int, int]) -> engine.Tensor: ...

    def bad_ret(x: engine.Tensor) -> dict: ...

    def varargs(x: engine.Tensor, *args) -> engine.Tensor: ...

    def bad_default(x: engine.Tensor, y: list[int] = [1]) -> engine.Tensor: ...

    def two(x: engine.Tensor, n: int) -> None: ...
    return no_ann, no_ret, bad_param, tuple_param, bad_ret, varargs, bad_default, two


@pytest.mark.parametrize("index, mutates, message", [
    (0, (), r"infer_schema\(func\): Parameter x must have a type annotation\. Got func with signature"),
    (1, (), r"No return type annotation was provided\. Please add one\."),
    (2, (), r"Parameter y has unsupported type <class 'dict'>\. The valid types are: dict_keys"),
    (3, (), r"We do not support Tuple inputs in schema\. As a workaround, please try to use List instead\."),
    (4, (), r"Return has unsupported type <class 'dict'>\. The valid types are:"),
    (5, (), r"We do not support positional-only args, varargs, or varkwargs\."),
    (6, (), r"Parameter y has an unsupported default value type <class 'list'>\."),
    (7, {"z"}, r"\{'z'\} in mutates_args were not found in the custom op's signature\."),
    (7, {"n"}, r"Parameter n is in mutable_args but only Tensors or collections of Tensors can be mutated"),
    (7, "x", r"mutates_args must either be a sequence of the names of the arguments that are mutated or the "
             r"string 'unknown'\."),
])
def test_infer_schema_errors(index, mutates, message):
    with pytest.raises(ValueError, match=message):
        engine.library.infer_schema(_bad_annotations()[index], mutates_args=mutates)


def test_custom_op_name_without_namespace():
    with pytest.raises(ValueError, match=r'Expected `qualname` to be of the form "namespace::name", but got mysin'):
        engine.library.custom_op("mysin", mutates_args=())


def test_returning_an_input_or_a_view_of_it_is_refused_as_torch():
    for T in (engine, torch):
        ns = _ns("lalias")

        @_lib(T).custom_op(f"{ns}::same", mutates_args=())
        def same(x: T.Tensor) -> T.Tensor:
            return x

        @_lib(T).custom_op(f"{ns}::view", mutates_args=())
        def view(x: T.Tensor) -> T.Tensor:
            return x.view(-1)

        for op in (same, view):
            with pytest.raises(RuntimeError, match=r"The output of this custom operator \(1\) must not also be an "
                                                   r"input to this custom operator"):
                op(T.ones(2, 3))


def test_argument_errors_name_the_declaration():
    for T in (engine, torch):
        ns = _ns("largs")
        mysin, two = _make_mysin(T, ns), _make_two(T, ns)
        with pytest.raises(RuntimeError, match=rf"{ns}::mysin\(\) expected at most 1 argument\(s\) but received 2 "
                                               rf"argument\(s\)\. Declaration: {ns}::mysin\(Tensor x\) -> Tensor"):
            mysin(T.ones(3), 5)
        with pytest.raises(RuntimeError, match=rf"{ns}::mysin\(\) is missing value for argument 'x'\."):
            mysin()
        with pytest.raises(RuntimeError, match=rf"{ns}::two\(\) Expected a value of type 'int' for argument 'k' "
                                               r"but instead found type 'float'\."):
            two(T.ones(3), 2.5)
        with pytest.raises(RuntimeError, match=r"Expected a value of type 'Tensor' for argument 'x' but instead "
                                               r"found type 'ndarray'\."):
            mysin(np.ones(3))


def test_backward_without_formula_and_wrong_gradient_count():
    for T in (engine, torch):
        ns = _ns("lnoback")

        @_lib(T).custom_op(f"{ns}::noback", mutates_args=())
        def noback(x: T.Tensor) -> T.Tensor:
            return x.sin()

        x = T.ones(3, requires_grad=True)
        y = noback(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match=rf"Trying to backward through {ns}\.noback\.default but no autograd "
                                               r"formula was registered\. Please use register_autograd to add one\."):
            y.sum().backward()
        noback.register_autograd(lambda ctx, g: (g, g))
        with pytest.raises(RuntimeError, match=rf"The backward formula for {ns}\.noback\.default returned an "
                                               r"incorrect number of gradients \(expected 1, got 2\)"):
            noback(x).sum().backward()


def test_device_kernels_and_missing_backend():
    for T in (engine, torch):
        ns = _ns("ldev")

        @_lib(T).custom_op(f"{ns}::cudaonly", mutates_args=(), device_types="cuda")
        def cudaonly(x: T.Tensor) -> T.Tensor:
            return x.sin()

        with pytest.raises(NotImplementedError, match=rf"Could not run '{ns}::cudaonly' with arguments from the "
                                                      r"'CPU' backend\."):
            cudaonly(T.ones(2))
        cudaonly.register_kernel("cpu", lambda x: x * 2)
        assert cudaonly(T.ones(2)).tolist() == [2.0, 2.0]
        _lib(T).register_kernel(f"{ns}::cudaonly", "cpu", lambda x: x * 3)
        assert getattr(_ops(T), ns).cudaonly(T.ones(2)).tolist() == [3.0, 3.0]


def test_cuda_kernel_runs_for_cuda_inputs(cuda):
    ns = _ns("lgpu")

    @engine.library.custom_op(f"{ns}::which", mutates_args=())
    def which(x: engine.Tensor) -> engine.Tensor:
        return x + 1

    which.register_kernel("cuda", lambda x: x + 2)
    x = engine.ones(2, requires_grad=True)
    assert which(x).tolist() == [2.0, 2.0]
    xc = engine.ones(2, device="cuda", requires_grad=True)
    y = which(xc)
    assert y.device.type == "cuda" and y.tolist() == [3.0, 3.0]
    which.register_autograd(lambda ctx, g: g * 5)
    which(xc).sum().backward()
    assert xc.grad.device.type == "cuda" and xc.grad.tolist() == [5.0, 5.0]


def test_library_blocks_define_impl_and_their_errors():
    for T in (engine, torch):
        ns = _ns("lblock")
        lib = _lib(T).Library(ns, "DEF")
        with pytest.raises(RuntimeError, match=rf"Only a single TORCH_LIBRARY can be used to register the namespace "
                                               rf"{ns}"):
            _lib(T).Library(ns, "DEF")
        with pytest.raises(ValueError, match="Unsupported kind: BAD"):
            _lib(T).Library(ns, "BAD")
        assert lib.define("scaled(Tensor x, int n=2, *, float y=0.5) -> (Tensor, Tensor)") == "scaled"
        with pytest.raises(RuntimeError, match=r"Tried to register an operator \(.*\) with the same name and "
                                               r"overload name multiple times\."):
            lib.define("scaled(Tensor x) -> Tensor")
        lib.impl("scaled", lambda x, n=2, *, y=0.5: (x * n, x * y), "CompositeImplicitAutograd")
        op = getattr(_ops(T), ns).scaled
        x = T.ones(3, requires_grad=True)
        a, b = op(x, 3, y=0.25)
        (a + b).sum().backward()
        assert x.grad.tolist() == [3.25] * 3
        impl_lib = _lib(T).Library(ns, "IMPL")
        with pytest.raises(RuntimeError, match=r'def\("other"\): Cannot define an operator inside of a '
                                               r'TORCH_LIBRARY_IMPL block\.'):
            impl_lib.define("other(Tensor x) -> Tensor")
        frag = _lib(T).Library(ns, "FRAGMENT")
        frag.define("plain(Tensor x) -> Tensor")
        with pytest.raises(NotImplementedError, match=rf"Could not run '{ns}::plain' with arguments from the 'CPU' "
                                                      r"backend"):
            getattr(_ops(T), ns).plain(T.ones(2))
        impl_lib.impl("plain", lambda x: x * 4, "CPU")
        assert getattr(_ops(T), ns).plain(T.ones(2)).tolist() == [4.0, 4.0]


def test_module_level_define_impl_register_autograd():
    for T in (engine, torch):
        ns = _ns("lmod")
        lib = _lib(T)
        lib.define(f"{ns}::q", "(Tensor x) -> Tensor")
        lib.impl(f"{ns}::q", "cpu", lambda x: x * 2)
        lib.register_fake(f"{ns}::q", lambda x: T.empty_like(x))
        lib.register_autograd(f"{ns}::q", lambda ctx, g: g * 2)
        x = T.ones(2, requires_grad=True)
        getattr(_ops(T), ns).q(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        with pytest.raises(ValueError, match=r'Expected `qualname` to be of the form "namespace::name", but got q'):
            lib.define("q", "(Tensor x) -> Tensor")


def test_autograd_function_registered_at_the_autograd_key():
    ns = _ns("lauto")
    lib = engine.library.Library(ns, "DEF")
    lib.define("cube(Tensor x) -> Tensor")
    lib.impl("cube", lambda x: engine.from_numpy(x.detach().numpy() ** 3), "CPU")
    op = getattr(engine.library.ops, ns).cube

    class Cube(engine.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return op(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x * x * g

    lib.impl("cube", Cube.apply, "Autograd")
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    y = op(x)
    y.sum().backward()
    assert y.tolist() == [1.0, 8.0] and x.grad.tolist() == [3.0, 12.0]
    assert set(engine.library.opcheck(op.default, (x,), test_utils=("test_schema", "test_autograd_registration"))
               .values()) == {"SUCCESS"}


def test_list_of_tensors_input_gets_a_list_of_gradients():
    xs = [_pair(4, (3,)), _pair(5, (3,))]
    for k, T in enumerate((engine, torch)):
        @_lib(T).custom_op(f"{_ns('llist')}::weighted", mutates_args=())
        def weighted(ts: list[T.Tensor], w: Sequence[float]) -> T.Tensor:
            return sum(t * wi for t, wi in zip(ts, w))

        weighted.register_autograd(lambda ctx, g: ([g * 2.0, g * -1.0], None))
        weighted([xs[0][k], xs[1][k]], [2.0, -1.0]).sum().backward()
    for a, b in xs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())


def test_unsupported_pieces_raise_one_line():
    mysin = _make_mysin(engine, _ns("lunsup"))
    with pytest.raises(NotImplementedError, match="register_torch_dispatch: the engine has no TorchDispatchMode"):
        mysin.register_torch_dispatch(object, lambda *a: None)
    with pytest.raises(NotImplementedError, match="triton_op: the engine has no Triton compiler"):
        engine.library.triton_op("a::b", mutates_args=())
    with pytest.raises(AttributeError, match=r"'_OpNamespace' 'nolibhere' object has no attribute 'nothere'"):
        engine.library.ops.nolibhere.nothere


def test_set_kernel_enabled_falls_back_to_the_default_kernel():
    ns = _ns("lenable")

    @engine.library.custom_op(f"{ns}::f", mutates_args=())
    def f(x: engine.Tensor) -> engine.Tensor:
        return x + 1

    f.register_kernel("cpu", lambda x: x + 10)
    assert f(engine.zeros(1)).item() == 10
    with f.set_kernel_enabled("cpu", False):
        assert f(engine.zeros(1)).item() == 1
    assert f(engine.zeros(1)).item() == 10


@pytest.mark.skipif(not hasattr(engine.ops, "__getattr__"), reason="engine.ops has no namespace lookup yet (the "
                    "lead adds a module __getattr__ to engine/ops/__init__.py)")
def test_engine_ops_resolves_registered_namespaces_only():
    ns = _ns("lengineops")
    mysin = _make_mysin(engine, ns)
    assert getattr(engine.ops, ns).mysin.default._op is mysin
    assert not hasattr(engine.ops, "nonamespacehere")
    from engine.ops import elementwise
    assert elementwise.__name__ == "engine.ops.elementwise"  # submodules still import


def test_register_autocast_casts_floating_inputs_as_torch():
    dtypes = []
    for T in (engine, torch):
        ns = _ns("lcast")

        @_lib(T).custom_op(f"{ns}::twice", mutates_args=())
        def twice(x: T.Tensor, idx: T.Tensor) -> T.Tensor:
            return x * 2 + idx.to(x.dtype)

        _lib(T).register_autocast(f"{ns}::twice", "cpu", T.float16)
        x, idx = T.ones(3), T.arange(3)
        with T.autocast("cpu", dtype=T.bfloat16):
            inside = twice(x, idx)
        dtypes.append((str(inside.dtype).split(".")[-1], str(twice(x, idx).dtype).split(".")[-1]))
    assert dtypes[0] == dtypes[1] == ("float16", "float32")


def test_get_kernel_fallthrough_impl_abstract_and_vmap():
    ns = _ns("lkern")
    lib = engine.library.Library(ns, "DEF")
    lib.define("f(Tensor x) -> Tensor")
    lib.impl("f", lambda x: x + 1, "CPU")
    op = getattr(engine.library.ops, ns).f
    original = engine.library.get_kernel(op.default, "CPU")
    lib.impl("f", lambda x: original(x) * 10, "CPU")
    assert op(engine.zeros(1)).item() == 10
    lib.impl("f", engine.library.fallthrough_kernel, "CPU")
    with pytest.raises(NotImplementedError, match="Could not run"):
        op(engine.zeros(1))
    lib.impl("f", lambda x: x.sin(), "CPU")
    engine.library.impl_abstract(f"{ns}::f", lambda x: engine.empty_like(x))
    engine.library.register_vmap(f"{ns}::f", lambda info, in_dims, x: (x.sin(), 0))
    from engine.func import vmap
    x = engine.randn(4, 3)
    np.testing.assert_allclose(vmap(op)(x).numpy(), x.sin().numpy())
    assert engine.library.opcheck(op.default, (x,), test_utils="test_faketensor") == {"test_faketensor": "SUCCESS"}
    with pytest.raises(NotImplementedError, match="wrap_triton: the engine has no Triton compiler"):
        engine.library.wrap_triton(None)
