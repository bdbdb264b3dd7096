"""Cases a differential fuzz of the sequence layers against torch found: attention and the Transformer encoder
layer on torch's inference fast paths (fully masked query rows are NaN there, and the encoder layer's fused kernel
reads every mask as booleans), scaled_dot_product_attention without keys and with other mask dtypes, and torch's
errors for bad attention and recurrent inputs."""
import warnings

import numpy as np
import pytest
import torch

import engine
from op_check import assert_close

pytestmark = pytest.mark.slow


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _pair(name, *args, **kwargs):
    """torch's module and ours with the same parameters, both in eval mode."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note that enable_nested_tensor is off for some layers
        theirs = getattr(torch.nn, name)(*args, **kwargs).eval()
    ours = getattr(engine.nn, name)(*args, **kwargs).eval()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _both(ours, theirs, call, arrays, grad=False):
    """``call(lib, module, *tensors)`` on both sides (under no_grad unless ``grad``); outputs as numpy."""
    results = []
    for lib, module in ((engine, ours), (torch, theirs)):
        tensors = [lib.from_numpy(a.copy()) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation note on mismatched mask types
            if grad:
                out = call(lib, module, *tensors)
            else:
                with lib.no_grad():
                    out = call(lib, module, *tensors)
        results.append(out.detach().numpy())
    return results


def _dead_padding(batch, length, seed=1):
    """A boolean key padding mask (True = padded) whose first sequence is padded throughout."""
    mask = np.random.default_rng(seed).random((batch, length)) < 0.3
    mask[0] = True
    return mask


def _dead_attn_mask(length, seed=2):
    """A boolean attention mask (True = masked) whose second query row sees no key."""
    mask = np.random.default_rng(seed).random((length, length)) < 0.3
    mask[1] = True
    return mask


def _self_attention(names):
    def call(lib, module, x, *masks):
        return module(x, x, x, need_weights=False, **dict(zip(names, masks)))[0]
    return call


# (MultiheadAttention args and kwargs, mask names, whether torch takes its fused path (NaN rows), with grad)
MHA_CASES = {
    "fast, padding": ((6, 2), {"batch_first": True}, ["key_padding_mask"], True, False),
    "fast, attn mask": ((6, 2), {"batch_first": True}, ["attn_mask"], True, False),
    "fast, both masks": ((8, 4), {"batch_first": True}, ["key_padding_mask", "attn_mask"], True, False),
    "odd heads: reference path": ((6, 3), {"batch_first": True}, ["key_padding_mask"], False, False),
    "sequence first: reference path": ((6, 2), {}, ["key_padding_mask"], False, False),
    "no bias: reference path": ((6, 2), {"batch_first": True, "bias": False}, ["attn_mask"], False, False),
    "grad enabled: reference path": ((6, 2), {"batch_first": True}, ["key_padding_mask"], False, True),
}


@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multihead_attention_fully_masked_rows(case):
    """torch's fused inference path gives NaN for a query row that sees no key; its reference path zeros."""
    args, kwargs, names, nan_rows, grad = MHA_CASES[case]
    ours, theirs = _pair("MultiheadAttention", *args, **kwargs)
    batch, length = 3, 4
    x = _rand(*((batch, length) if kwargs.get("batch_first") else (length, batch)), args[0])
    masks = {"key_padding_mask": _dead_padding(batch, length), "attn_mask": _dead_attn_mask(length)}
    out, ref = _both(ours, theirs, _self_attention(names), [x] + [masks[n] for n in names], grad=grad)
    assert np.isnan(ref).any() == nan_rows
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert_close(np.nan_to_num(out), np.nan_to_num(ref), rtol=1e-5)


# (TransformerEncoderLayer kwargs, src_mask kind, whether a sequence is padded throughout)
LAYER_CASES = {
    "fast, float mask read as booleans": ({}, "float", False),
    "fast, float mask and padding": ({}, "float", True),
    "fast, bool mask and dead padding": ({}, "bool", True),
    "fast, causal mask": ({"activation": "gelu"}, "causal", False),
    "callable activation: reference path": ({"activation": torch.nn.functional.silu}, "bool", True),
}


@pytest.mark.parametrize("case", list(LAYER_CASES))
def test_encoder_layer_fast_path_masks(case):
    kwargs, mask_kind, dead = LAYER_CASES[case]
    ours_kwargs = dict(kwargs)
    if "activation" in kwargs and callable(kwargs["activation"]):
        ours_kwargs["activation"] = engine.nn.functional.silu
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 12, 0.0, batch_first=True, **kwargs).eval()
    ours = engine.nn.TransformerEncoderLayer(8, 2, 12, 0.0, batch_first=True, **ours_kwargs).eval()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    length = 4
    mask = {"float": np.where(_dead_attn_mask(length, seed=5), 0.5, 0.0).astype(np.float32),
            "bool": _dead_attn_mask(length, seed=5) & ~np.eye(length, dtype=bool),
            "causal": np.triu(np.full((length, length), -np.inf, np.float32), 1)}[mask_kind]
    padding = _dead_padding(3, length) if dead else np.zeros((3, length), bool)

    def call(lib, module, x, mask, padding):
        return module(x, src_mask=mask, src_key_padding_mask=padding)
    out, ref = _both(ours, theirs, call, [_rand(3, length, 8), mask, padding])
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert_close(np.nan_to_num(out), np.nan_to_num(ref), rtol=1e-5)


def test_encoder_all_padded_nested_batch_raises():
    """torch's encoder runs a padded batch as a nested tensor in eval mode: with every position padded it fails."""
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(6, 2, 8, batch_first=True), 2).eval()
    ours = engine.nn.TransformerEncoder(engine.nn.TransformerEncoderLayer(6, 2, 8, batch_first=True), 2).eval()
    message = "to_padded_tensor: at least one constituent tensor should have non-zero numel"
    for lib, module in ((torch, theirs), (engine, ours)):
        with lib.no_grad(), warnings.catch_warnings(), pytest.raises(RuntimeError, match=f"^{message}$"):
            warnings.simplefilter("ignore")  # torch's note that its nested tensors are a prototype
            module(lib.zeros(2, 3, 6), src_key_padding_mask=lib.ones(2, 3, dtype=lib.bool))


def _sdpa(lib, *tensors, **kwargs):
    return lib.nn.functional.scaled_dot_product_attention(*tensors, **kwargs)


@pytest.mark.parametrize("mask", [None, "bool"])
def test_sdpa_without_keys_gives_zeros(mask):
    arrays = [_rand(2, 3, 4), _rand(2, 0, 4, seed=1), _rand(2, 0, 5, seed=2)]
    if mask:
        arrays.append(np.zeros((3, 0), bool))
    outs = []
    for lib in (engine, torch):
        tensors = [lib.from_numpy(a) for a in arrays]
        tensors[0].requires_grad_()
        out = _sdpa(lib, *tensors)
        out.sum().backward()
        outs.append((out.detach().numpy(), tensors[0].grad.numpy()))
    for ours, ref in zip(*outs):
        assert ours.shape == ref.shape and np.array_equal(ours, ref)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_sdpa_float32_mask_keeps_the_query_dtype(dtype):
    arrays = [_rand(2, 3, 4, dtype=dtype), _rand(2, 5, 4, seed=1, dtype=dtype), _rand(2, 5, 3, seed=2, dtype=dtype),
              _rand(3, 5, seed=3)]
    out, ref = (_sdpa(lib, *[lib.from_numpy(a) for a in arrays]) for lib in (engine, torch))
    assert out.dtype.name == str(ref.dtype).split(".")[1]
    assert_close(out.numpy(), ref.numpy(), rtol=1e-2 if dtype == np.float16 else 1e-10)


SDPA_ERRORS = {
    "int mask": ([(2, 3, 4), (2, 5, 4), (2, 5, 4)], np.int64,
                 "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: "
                 "long int and  query.dtype: float instead."),
    "double mask": ([(2, 3, 4), (2, 5, 4), (2, 5, 4)], np.float64,
                    "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: "
                    "double and  query.dtype: float instead."),
    "1-D": ([(4,), (4,), (4,)], None,
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1 key.dim: 1 and "
            "value.dim: 1 instead."),
}


@pytest.mark.parametrize("case", list(SDPA_ERRORS))
def test_sdpa_errors(case):
    shapes, mask_dtype, message = SDPA_ERRORS[case]
    arrays = [_rand(*s, seed=i) for i, s in enumerate(shapes)]
    if mask_dtype is not None:
        arrays.append(np.zeros((3, 5), mask_dtype))
    for lib in (engine, torch):
        with pytest.raises(RuntimeError, match=f"^{message.replace('(', '.').replace(')', '.')}$"):
            _sdpa(lib, *[lib.from_numpy(a) for a in arrays])


def test_sdpa_dtype_mismatch_names_the_dtypes_as_torch():
    message = ("Expected query, key, and value to have the same dtype, but got query.dtype: float key.dtype: double "
               "and value.dtype: float instead.")
    for lib in (engine, torch):
        with pytest.raises(RuntimeError, match=f"^{message}$"):
            _sdpa(lib, lib.zeros(2, 3, 4), lib.zeros(2, 5, 4, dtype=lib.float64), lib.zeros(2, 5, 4))


# (module kwargs, query, key, value shapes, masks {name: shape and dtype}, torch's message up to the first shape)
MHA_ERRORS = {
    "4-D query": ({}, [(3, 2, 2, 4)] * 3, {}, "query should be unbatched 2D or batched 3D tensor but received "
                                               "4-D query tensor"),
    "unbatched query, batched key": ({}, [(3, 4), (5, 2, 4), (5, 2, 4)], {},
                                     "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                     "3-D and 3-D tensors respectively"),
    "1-D padding for batched": ({}, [(3, 2, 4), (5, 2, 4), (5, 2, 4)], {"key_padding_mask": (5,)},
                                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                "found 1-D tensor instead"),
    "2-D padding for unbatched": ({}, [(3, 4), (5, 4), (5, 4)], {"key_padding_mask": (1, 5)},
                                  "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                  "found 2-D tensor instead"),
    "4-D attn mask": ({}, [(3, 2, 4), (5, 2, 4), (5, 2, 4)], {"attn_mask": (2, 2, 3, 5)},
                      "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found 4-D "
                      "tensor instead"),
    "unbatched 3-D attn mask": ({}, [(3, 4), (5, 4), (5, 4)], {"attn_mask": (3, 3, 5)},
                                "Expected `attn_mask` shape to be (2, 3, 5) but got "),
    "key and value lengths": ({}, [(3, 2, 4), (5, 2, 4), (6, 2, 4)], {}, "key shape "),
    "wrong key width": ({"kdim": 3, "vdim": 5}, [(3, 2, 4), (5, 2, 4), (5, 2, 5)], {},
                        "expecting key weights shape of (4, 4), but got "),
}


@pytest.mark.parametrize("case", list(MHA_ERRORS))
def test_multihead_attention_errors(case):
    kwargs, shapes, masks, message = MHA_ERRORS[case]
    ours, theirs = _pair("MultiheadAttention", 4, 2, **kwargs)
    for lib, module in ((engine, ours), (torch, theirs)):
        inputs = [lib.zeros(*s) for s in shapes]
        mask_args = {name: lib.zeros(*shape, dtype=lib.bool) for name, shape in masks.items()}
        with pytest.raises(AssertionError) as info:
            module(*inputs, **mask_args)
        assert str(info.value).startswith(message)


# (layer, input shape, initial state shapes, exception type, message)
RNN_ERRORS = {
    "dtype": ("GRU", (5, 2, 3), None, ValueError, "RNN input dtype (float64) does not match weight dtype (float32)."),
    "empty sequence": ("RNN", (0, 2, 3), None, RuntimeError, "Expected sequence length to be larger than 0 in RNN"),
    "2-D hx, batched": ("RNN", (5, 2, 3), [(2, 4)], RuntimeError,
                        "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    "3-D hx, unbatched": ("GRU", (5, 3), [(1, 1, 4)], RuntimeError,
                          "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    "LSTM 2-D state, batched": ("LSTM", (5, 2, 3), [(2, 4), (1, 2, 4)], RuntimeError,
                                "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 3-D) tensors"),
    "LSTM 3-D state, unbatched": ("LSTM", (5, 3), [(1, 4), (1, 1, 4)], RuntimeError,
                                  "For unbatched 2-D input, hx and cx should also be 2-D but got (2-D, 3-D) "
                                  "tensors"),
}


@pytest.mark.parametrize("case", list(RNN_ERRORS))
def test_rnn_errors(case):
    name, shape, states, error, message = RNN_ERRORS[case]
    ours, theirs = _pair(name, 3, 4)
    for lib, module in ((engine, ours), (torch, theirs)):
        x = lib.zeros(*shape, dtype=lib.float64 if case == "dtype" else lib.float32)
        hx = None if states is None else [lib.zeros(*s) for s in states]
        hx = hx if hx is None or name == "LSTM" else hx[0]
        with pytest.raises(error) as info:
            module(x, hx)
        assert str(info.value).replace("torch.", "").replace("engine.", "").startswith(message)


@pytest.mark.parametrize("kwargs", [{}, {"num_layers": 2, "bidirectional": True, "proj_size": 2}, {"bias": False}])
def test_rnn_flatten_parameters_and_all_weights(kwargs):
    """``flatten_parameters()`` (called by much torch code) runs, ``all_weights`` lists torch's shapes in its order,
    and the layer still computes torch's output afterwards."""
    ours, theirs = _pair("LSTM", 3, 4, **kwargs)
    ours.flatten_parameters()
    theirs.flatten_parameters()
    shapes = [[[tuple(p.shape) for p in cell] for cell in m.all_weights] for m in (ours, theirs)]
    assert shapes[0] == shapes[1]
    assert all(a is b for a, b in zip(ours._flat_weights, ours.parameters()))
    out, ref = _both(ours, theirs, lambda lib, m, x: m(x)[0], [_rand(5, 2, 3)])
    assert_close(out, ref, rtol=1e-5)


def test_fast_path_nan_rows_and_empty_keys_cuda(cuda):
    """On the CUDA backend too: NaN rows on the fused path, zeros without keys."""
    ours, theirs = _pair("MultiheadAttention", 6, 2, batch_first=True)
    ours.cuda()
    x, padding = _rand(3, 4, 6), _dead_padding(3, 4)
    with engine.no_grad():
        out = ours(*[engine.from_numpy(x).cuda()] * 3, key_padding_mask=engine.from_numpy(padding).cuda(),
                   need_weights=False)[0]
    with torch.no_grad():
        ref = theirs(*[torch.from_numpy(x)] * 3, key_padding_mask=torch.from_numpy(padding), need_weights=False)[0]
    assert out.device.type == "cuda"
    out = out.cpu().numpy()
    assert np.array_equal(np.isnan(out), np.isnan(ref.numpy()))
    assert_close(np.nan_to_num(out), np.nan_to_num(ref.numpy()), rtol=1e-5)
    empty = _sdpa(engine, *[engine.zeros(2, s, 4).cuda() for s in (3, 0, 0)])
    assert empty.device.type == "cuda" and tuple(empty.shape) == (2, 3, 4) and not empty.cpu().numpy().any()
