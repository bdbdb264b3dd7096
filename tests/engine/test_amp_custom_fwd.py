"""engine.amp.custom_fwd / custom_bwd (torch.amp's): the autocast state a custom Function's forward and backward
run under, the inputs' casts, gradients and dtypes against torch, and the deprecated engine.cuda.amp spellings."""
import numpy as np
import pytest
import torch

import engine
import engine.amp
import engine.cuda.amp

_RNG = np.random.default_rng(3)
X = _RNG.standard_normal((3, 5)).astype(np.float32)  # odd sizes, a batch of 3
W = _RNG.standard_normal((5, 7)).astype(np.float32)
G = _RNG.standard_normal((3, 7)).astype(np.float32)


def _make_function(module, cast_inputs, seen):
    """A custom matmul whose forward and backward record the autocast state and dtypes they run with."""
    amp = module.amp

    class MatMul(module.autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, x, w):
            seen["fwd"] = (module.is_autocast_enabled("cpu"), x.dtype, w.dtype)
            ctx.save_for_backward(x, w)
            return x.mm(w)

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            seen["bwd"] = (module.is_autocast_enabled("cpu"), module.get_autocast_dtype("cpu"), grad.dtype)
            return grad.mm(w.t()), x.t().mm(grad)
    return MatMul


def _run(module, cast_inputs, autocast_on):
    seen = {}
    fn = _make_function(module, cast_inputs, seen)
    x, w = (module.tensor(a, requires_grad=True) for a in (X, W))
    with module.autocast("cpu", dtype=module.bfloat16, enabled=autocast_on):
        out = fn.apply(x, w)
    out.backward(module.tensor(G).to(out.dtype))
    results = [out, x.grad, w.grad]
    as_text = {k: tuple(str(v).replace("torch.", "engine.") for v in value) for k, value in seen.items()}
    return [(str(r.dtype).replace("torch.", "engine."), r.detach().float().numpy()) for r in results], as_text


@pytest.mark.parametrize("cast_inputs", [None, "float32", "bfloat16"])
@pytest.mark.parametrize("autocast_on", [True, False])
def test_states_values_and_gradients_match_torch(cast_inputs, autocast_on):
    ours, our_seen = _run(engine, None if cast_inputs is None else getattr(engine, cast_inputs), autocast_on)
    theirs, their_seen = _run(torch, None if cast_inputs is None else getattr(torch, cast_inputs), autocast_on)
    assert our_seen == their_seen
    for (our_dtype, our_value), (their_dtype, their_value) in zip(ours, theirs):
        assert our_dtype == their_dtype
        np.testing.assert_allclose(our_value, their_value, rtol=1e-2, atol=1e-2)


def test_cast_reaches_into_containers_and_spares_float64_and_integers():
    seen = {}

    class Fn(engine.autograd.Function):
        @staticmethod
        @engine.amp.custom_fwd(device_type="cpu", cast_inputs=engine.bfloat16)
        def forward(ctx, pair, mapping, scale=None):
            seen.update(pair=[t.dtype for t in pair], mapping={k: v.dtype for k, v in mapping.items()},
                        scale=scale.dtype, kind=type(pair))
            return pair[0] * 2

        @staticmethod
        @engine.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            return grad

    x = engine.tensor(X, requires_grad=True)
    with engine.autocast("cpu"):
        Fn.apply((x, engine.ones(2, dtype=engine.float64)), {"i": engine.arange(3)}, scale=engine.ones(1))
    assert seen == {"pair": [engine.bfloat16, engine.float64], "mapping": {"i": engine.int64},
                    "scale": engine.bfloat16, "kind": tuple}


def test_decorator_forms_and_errors():
    def forward(ctx, x):
        return x

    assert engine.amp.custom_fwd(forward, device_type="cpu").__name__ == "forward"
    assert engine.amp.custom_bwd(device_type="cpu")(forward).__wrapped__ is forward
    for decorator in (engine.amp.custom_fwd, engine.amp.custom_bwd):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: `<class 'int'>`"):
            decorator(forward, device_type=0)
        with pytest.raises(TypeError):
            decorator(forward)  # device_type is required, as in torch


def test_deprecated_cuda_spellings():
    def forward(ctx, x):
        return x

    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.custom_fwd\(args...\)` is deprecated. Please use "
                                           r"`torch.amp.custom_fwd\(args..., device_type='cuda'\)` instead."):
        fwd = engine.cuda.amp.custom_fwd(cast_inputs=engine.float32)(forward)
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.custom_bwd\(args...\)` is deprecated"):
        bwd = engine.cuda.amp.custom_bwd(forward)

    class Ctx:
        pass

    ctx = Ctx()
    x = engine.ones(2)
    assert fwd(ctx, x) is x and ctx._fwd_used_autocast is False and ctx._dtype == engine.float16
    assert bwd(ctx, x) is x
