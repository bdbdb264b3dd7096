"""Attention against PyTorch: F.scaled_dot_product_attention, nn.MultiheadAttention (F.multi_head_attention_forward),
nn.TransformerEncoderLayer and nn.TransformerEncoder: forward values and every gradient, masks, dropout, CUDA."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn as nn
import engine.nn.functional as F
from op_check import assert_close, check_op

DTYPES = [np.float32, np.float64]


def _rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _tol(dtype):
    return 2e-5 if dtype == np.float32 else 1e-10


def _bool_mask(*shape, seed=3, dead_row=True):
    """Random booleans (True = may attend); with ``dead_row`` the second query row sees no key at all."""
    mask = np.random.default_rng(seed).random(shape) > 0.4
    if dead_row:
        mask[..., 1, :] = False
    return mask


def _sdpa_pair(**kwargs):
    return (lambda q, k, v, *m: F.scaled_dot_product_attention(q, k, v, *m, **kwargs),
            lambda q, k, v, *m: TF.scaled_dot_product_attention(q, k, v, *m, **kwargs))


# (query, key, value) shapes, extra inputs (the mask), keyword arguments
SDPA_CASES = {
    "plain": ([(2, 3, 5, 7), (2, 3, 6, 7), (2, 3, 6, 4)], [], {}),
    "unbatched_3d": ([(3, 5, 7), (3, 6, 7), (3, 6, 4)], [], {}),
    "scale": ([(2, 3, 5, 7), (2, 3, 6, 7), (2, 3, 6, 4)], [], {"scale": 0.37}),
    "causal_wide": ([(2, 3, 5, 7), (2, 3, 6, 7), (2, 3, 6, 4)], [], {"is_causal": True}),
    "causal_tall": ([(2, 1, 6, 7), (2, 1, 5, 7), (2, 1, 5, 3)], [], {"is_causal": True}),
    "bool_mask_2d": ([(2, 3, 5, 7), (2, 3, 6, 7), (2, 3, 6, 4)], [_bool_mask(5, 6)], {}),
    "bool_mask_broadcast": ([(2, 3, 5, 7), (2, 3, 6, 7), (2, 3, 6, 4)], [_bool_mask(2, 1, 5, 6)], {}),
    "gqa": ([(2, 4, 5, 7), (2, 2, 6, 7), (2, 2, 6, 4)], [], {"enable_gqa": True}),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(SDPA_CASES))
def test_sdpa(case, dtype):
    shapes, masks, kwargs = SDPA_CASES[case]
    inputs = [_rand(*s, seed=i, dtype=dtype) for i, s in enumerate(shapes)] + masks
    check_op(*_sdpa_pair(**kwargs), inputs, rtol=_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_float_mask_gets_gradients(dtype):
    """A float mask (with -inf entries and a fully masked row) is added to the scores and gets their gradient."""
    mask = _rand(1, 3, 5, 6, seed=4, dtype=dtype)
    mask[0, :, 2, ::2] = -np.inf
    mask[0, 1, 3] = -np.inf
    inputs = [_rand(2, 3, 5, 7, dtype=dtype), _rand(2, 3, 6, 7, seed=1, dtype=dtype),
              _rand(2, 3, 6, 4, seed=2, dtype=dtype), mask]
    out = check_op(*_sdpa_pair(), inputs, rtol=_tol(dtype))[0]
    assert not out.detach().numpy()[:, 1, 3].any()


def test_sdpa_dropout_statistics_and_seed():
    """Dropout on the weights: uniform weights 1/S and an identity value make the output the dropped weights,
    each either 0 or 1 / (S (1 - p)); about p of them are 0; the same seed draws the same mask."""
    p, length = 0.3, 8
    q = engine.zeros(4, 2, 50, 5)
    k = engine.from_numpy(_rand(4, 2, length, 5, dtype=np.float32))
    v = engine.eye(length).expand(4, 2, length, length)
    engine.manual_seed(11)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy()
    kept = 1.0 / (length * (1 - p))
    assert np.all(np.isclose(out, 0) | np.isclose(out, kept))
    assert abs(np.isclose(out, 0).mean() - p) < 0.03
    assert abs(out.sum(-1).mean() - 1.0) < 0.05
    engine.manual_seed(11)
    np.testing.assert_array_equal(F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy(), out)
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v).numpy(), np.full(out.shape, 1 / length),
                               rtol=1e-6)


def test_sdpa_dropout_gradient_uses_the_drawn_mask():
    q, k, v = (engine.from_numpy(_rand(2, 3, 5, 4, seed=s)).requires_grad_() for s in range(3))
    engine.manual_seed(5)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    out.sum().backward()
    with engine.no_grad():
        engine.manual_seed(5)
        scores = engine.softmax(q @ k.transpose(-2, -1) / 2.0, -1)
        dropped = F.dropout(scores, 0.4)
        expected = dropped @ v
    assert_close(out.detach().numpy(), expected.numpy(), 1e-12)
    assert_close(v.grad.numpy(), dropped.transpose(-2, -1).sum(-1, keepdim=True).expand(2, 3, 5, 4).numpy(), 1e-12)


def test_sdpa_errors():
    q = engine.zeros(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=engine.ones(3, 3, dtype=engine.bool), is_causal=True)
    with pytest.raises(RuntimeError, match="must divide the number of heads in query"):
        F.scaled_dot_product_attention(engine.zeros(1, 3, 3, 4), q, q, enable_gqa=True)


# ---- MultiheadAttention ----------------------------------------------------------------------------------
def _pair(torch_cls, our_cls, *args, seed=0, **kwargs):
    """A seeded torch module (float64) and ours with its weights."""
    torch.manual_seed(seed)
    theirs = torch_cls(*args, **kwargs).double()
    ours = our_cls(*args, **kwargs).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _run_both(ours, theirs, arrays, masks, kwargs, rtol=1e-10):
    """Call both modules on the same float64 inputs (and masks); compare outputs, weights and all gradients."""
    t_in = [torch.from_numpy(a).requires_grad_() for a in arrays]
    e_in = [engine.from_numpy(a).requires_grad_() for a in arrays]
    t_masks = {k: torch.from_numpy(m) for k, m in masks.items()}
    e_masks = {k: engine.from_numpy(m) for k, m in masks.items()}
    t_out, e_out = theirs(*t_in, **t_masks, **kwargs), ours(*e_in, **e_masks, **kwargs)
    t_out, e_out = (t_out, e_out) if isinstance(t_out, tuple) else ((t_out,), (e_out,))
    for i, (e, t) in enumerate(zip(e_out, t_out)):
        assert (e is None) == (t is None)
        if t is not None:
            assert_close(e.detach().numpy(), t.detach().numpy(), rtol, f"output {i}")
    g = np.random.default_rng(9).standard_normal(tuple(t_out[0].shape))
    t_out[0].backward(torch.from_numpy(g))
    e_out[0].backward(engine.from_numpy(g))
    for i, (e, t) in enumerate(zip(e_in, t_in)):
        assert_close(e.grad.numpy(), t.grad.numpy(), rtol, f"grad of input {i}")
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        assert_close(ours_params[name].grad.numpy(), p.grad.numpy(), rtol, f"grad of {name}")
    return e_out


MHA_CONFIGS = {
    "default": {},
    "batch_first": {"batch_first": True},
    "kdim_vdim": {"kdim": 5, "vdim": 3},
    "bias_kv_zero_attn": {"add_bias_kv": True, "add_zero_attn": True},
    "no_bias": {"bias": False},
}
MASKS = {
    "none": lambda n, l, s, h: {},
    "padding_bool": lambda n, l, s, h: {"key_padding_mask": _padding(n, s)},
    "attn_bool_2d": lambda n, l, s, h: {"attn_mask": ~_bool_mask(l, s, dead_row=False)},
    "attn_float_3d_and_padding": lambda n, l, s, h: {"attn_mask": _rand(n * h, l, s, seed=6),
                                                     "key_padding_mask": _float_padding(n, s)},
}


def _padding(n, s):
    mask = np.zeros((n, s), bool)
    mask[0, -2:] = True
    return mask


def _float_padding(n, s):
    return np.where(_padding(n, s), -np.inf, 0.0)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("masks", list(MASKS))
@pytest.mark.parametrize("config", list(MHA_CONFIGS))
def test_multihead_attention(config, masks, need_weights):
    kwargs = MHA_CONFIGS[config]
    ours, theirs = _pair(torch.nn.MultiheadAttention, nn.MultiheadAttention, 8, 2, **kwargs)
    n, l, s = 3, 5, 6
    shapes = [(l, n, 8), (s, n, kwargs.get("kdim", 8)), (s, n, kwargs.get("vdim", 8))]
    if kwargs.get("batch_first"):
        shapes = [(b, a, c) for a, b, c in shapes]
    arrays = [_rand(*shape, seed=i) for i, shape in enumerate(shapes)]
    _run_both(ours, theirs, arrays, MASKS[masks](n, l, s, 2), {"need_weights": need_weights})


def test_multihead_attention_self_attention_variants():
    """Self-attention (one tensor: one packed projection), per-head weights, unbatched inputs, causal hint."""
    ours, theirs = _pair(torch.nn.MultiheadAttention, nn.MultiheadAttention, 12, 3, batch_first=True)
    x = _rand(2, 7, 12)
    for kwargs in [{"average_attn_weights": False}, {"need_weights": False}]:
        t_x, e_x = torch.from_numpy(x), engine.from_numpy(x)
        for e, t in zip(ours(e_x, e_x, e_x, **kwargs), theirs(t_x, t_x, t_x, **kwargs)):
            assert (e is None) == (t is None)
            if t is not None:
                assert_close(e.detach().numpy(), t.detach().numpy(), 1e-10)
    causal = np.triu(np.ones((7, 7), bool), 1)
    _run_both(ours, theirs, [x[0], x[0], x[0]], {"attn_mask": causal}, {"need_weights": False, "is_causal": True})
    _run_both(ours, theirs, [x[1], _rand(4, 12, seed=1), _rand(4, 12, seed=2)], {"key_padding_mask": _padding(1, 4)[0]},
              {})


def test_multihead_attention_init_and_errors():
    engine.manual_seed(0)
    mha = nn.MultiheadAttention(64, 4, add_bias_kv=True)
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "in_proj_bias", "bias_k", "bias_v",
                                                      "out_proj.weight", "out_proj.bias"]
    assert type(mha.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    bound = np.sqrt(6 / (64 + 192))
    w = mha.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert not mha.in_proj_bias.detach().numpy().any() and not mha.out_proj.bias.detach().numpy().any()
    separate = nn.MultiheadAttention(6, 2, kdim=4, vdim=5, bias=False)
    assert [(n, tuple(p.shape)) for n, p in separate.named_parameters()] == [
        ("q_proj_weight", (6, 6)), ("k_proj_weight", (6, 4)), ("v_proj_weight", (6, 5)), ("out_proj.weight", (6, 6))]
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="must be greater than 0"):
        nn.MultiheadAttention(0, 2)
    x = engine.zeros(3, 2, 64)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        mha(x, x, x, attn_mask=engine.zeros(3, 4))


def test_multihead_attention_dropout_in_training_only():
    mha = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = engine.from_numpy(_rand(2, 6, 8, dtype=np.float32))
    engine.manual_seed(1)
    train = mha(x, x, x, average_attn_weights=False)[1].detach().numpy()
    assert (train == 0).mean() > 0.2
    mha.eval()
    weights = mha(x, x, x)[1].detach().numpy()
    assert (weights > 0).all()
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-6)


# ---- TransformerEncoderLayer / TransformerEncoder ------------------------------------------------------------
LAYER_CONFIGS = {
    "post_norm_relu": {},
    "pre_norm_gelu_batch_first": {"activation": "gelu", "norm_first": True, "batch_first": True},
    "callable_no_bias": {"activation": torch.tanh, "bias": False, "layer_norm_eps": 1e-3},
    "relu_module": {"activation": "relu_module", "batch_first": True},
}


def _layer_kwargs(config, ours):
    kwargs = dict(LAYER_CONFIGS[config], dropout=0.1)
    if kwargs.get("activation") is torch.tanh:
        kwargs["activation"] = engine.tanh if ours else torch.tanh
    elif kwargs.get("activation") == "relu_module":
        kwargs["activation"] = nn.ReLU() if ours else torch.nn.ReLU()
    return kwargs


def _layer_pair(config, seed=0):
    torch.manual_seed(seed)
    theirs = torch.nn.TransformerEncoderLayer(12, 3, dim_feedforward=20, **_layer_kwargs(config, False)).double()
    ours = nn.TransformerEncoderLayer(12, 3, dim_feedforward=20, **_layer_kwargs(config, True)).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert ours.activation_relu_or_gelu == theirs.activation_relu_or_gelu
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours.eval(), theirs.eval()


@pytest.mark.parametrize("config", list(LAYER_CONFIGS))
def test_transformer_encoder_layer(config):
    ours, theirs = _layer_pair(config)
    shape = (2, 5, 12) if ours.self_attn.batch_first else (5, 2, 12)
    _run_both(ours, theirs, [_rand(*shape)], {}, {})
    masks = {"src_mask": ~_bool_mask(5, 5, dead_row=False), "src_key_padding_mask": _padding(2, 5)}
    _run_both(ours, theirs, [_rand(*shape, seed=1)], masks, {})


@pytest.mark.parametrize("norm", [False, True])
def test_transformer_encoder(norm):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(12, 3, dim_feedforward=16, batch_first=True)
    theirs = torch.nn.TransformerEncoder(layer, 3, norm=torch.nn.LayerNorm(12) if norm else None,
                                         enable_nested_tensor=False).double().eval()
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(12, 3, dim_feedforward=16, batch_first=True), 3,
                                 norm=nn.LayerNorm(12) if norm else None).double().eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    with torch.no_grad():  # the copies differ from each other, as after training
        for p in theirs.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = _rand(2, 6, 12)
    _run_both(ours, theirs, [x], {}, {})
    causal = np.triu(np.full((6, 6), -np.inf), 1)
    _run_both(ours, theirs, [x], {"mask": causal}, {})
    _run_both(ours, theirs, [x], {"mask": causal, "src_key_padding_mask": _float_padding(2, 6)}, {"is_causal": True})


def test_transformer_encoder_clones_and_errors():
    engine.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=12)
    encoder = nn.TransformerEncoder(layer, 2)
    first, second = encoder.layers[0].linear1.weight, encoder.layers[1].linear1.weight
    assert first is not second and np.array_equal(first.detach().numpy(), second.detach().numpy())
    assert encoder.num_layers == 2 and encoder.norm is None
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


@pytest.mark.parametrize("config", ["post_norm", "pre_norm_gelu_batch_first"])
def test_transformer_decoder_layer(config):
    kwargs = {"post_norm": {}, "pre_norm_gelu_batch_first": {"activation": "gelu", "norm_first": True,
                                                            "batch_first": True}}[config]
    torch.manual_seed(0)
    theirs = torch.nn.TransformerDecoderLayer(12, 3, dim_feedforward=20, **kwargs).double().eval()
    ours = nn.TransformerDecoderLayer(12, 3, dim_feedforward=20, **kwargs).double().eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    tgt, memory = ((2, 5, 12), (2, 7, 12)) if kwargs.get("batch_first") else ((5, 2, 12), (7, 2, 12))
    masks = {"tgt_mask": np.triu(np.full((5, 5), -np.inf), 1), "tgt_key_padding_mask": _float_padding(2, 5),
             "memory_key_padding_mask": _padding(2, 7)}
    _run_both(ours, theirs, [_rand(*tgt), _rand(*memory, seed=1)], masks, {})


def test_transformer_matches_torch_from_the_same_seed():
    """nn.Transformer: the same initial parameters as torch's after the same seed (Xavier-uniform matrices),
    then the same outputs and gradients with causal and padding masks, and torch's checks."""
    torch.manual_seed(0)
    theirs = torch.nn.Transformer(12, 4, 2, 2, dim_feedforward=16, batch_first=True).double().eval()
    engine.manual_seed(0)
    ours = nn.Transformer(12, 4, 2, 2, dim_feedforward=16, batch_first=True).double().eval()
    for (name, p), (their_name, q) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert name == their_name and np.array_equal(p.numpy(), q.numpy()), name
    causal = nn.Transformer.generate_square_subsequent_mask(4).numpy()
    np.testing.assert_array_equal(causal, torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    masks = {"tgt_mask": causal, "src_key_padding_mask": _padding(2, 6), "memory_key_padding_mask": _padding(2, 6)}
    _run_both(ours, theirs, [_rand(2, 6, 12), _rand(2, 4, 12, seed=1)], masks, {}, rtol=1e-9)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        ours(engine.zeros(2, 6, 12, dtype=engine.float64), engine.zeros(3, 4, 12, dtype=engine.float64))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        ours(engine.zeros(2, 6, 12, dtype=engine.float64), engine.zeros(2, 4, 8, dtype=engine.float64))


# ---- CUDA backend ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["plain", "causal_wide", "bool_mask_broadcast", "gqa"])
def test_sdpa_cuda(cuda, case):
    shapes, masks, kwargs = SDPA_CASES[case]
    inputs = [_rand(*s, seed=i, dtype=np.float32) for i, s in enumerate(shapes)] + masks
    check_op(*_sdpa_pair(**kwargs), inputs, rtol=2e-5, device="cuda")


def test_sdpa_float_mask_cuda(cuda):
    mask = _rand(1, 3, 5, 6, seed=4, dtype=np.float32)
    mask[0, 1, 3] = -np.inf
    inputs = [_rand(2, 3, 5, 7, dtype=np.float32), _rand(2, 3, 6, 7, seed=1, dtype=np.float32),
              _rand(2, 3, 6, 4, seed=2, dtype=np.float32), mask]
    check_op(*_sdpa_pair(), inputs, rtol=2e-5, device="cuda")


def test_multihead_attention_and_encoder_cuda(cuda):
    """The modules on the GPU match themselves on the CPU, dropout drawn on the device in training."""
    engine.manual_seed(0)
    cpu = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=10, batch_first=True), 2).eval()
    gpu = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=10, batch_first=True), 2).cuda().eval()
    gpu.load_state_dict(cpu.state_dict())
    x, padding = _rand(3, 5, 8, dtype=np.float32), _padding(3, 5)
    ref = cpu(engine.from_numpy(x), src_key_padding_mask=engine.from_numpy(padding))
    out = gpu(engine.from_numpy(x).cuda(), src_key_padding_mask=engine.from_numpy(padding).cuda())
    assert out.device.type == "cuda"
    assert_close(out.detach().cpu().numpy(), ref.detach().numpy(), 1e-5)
    mha = nn.MultiheadAttention(8, 2, dropout=0.5).cuda()
    y = engine.from_numpy(x).cuda()
    output, weights = mha(y, y, y, average_attn_weights=False)
    assert output.device.type == weights.device.type == "cuda"
    assert (weights.detach().cpu().numpy() == 0).mean() > 0.2
