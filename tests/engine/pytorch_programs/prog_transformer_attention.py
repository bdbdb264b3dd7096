"""A TransformerEncoder language model with a causal mask, a full nn.Transformer (batch_first, norm_first, gelu,
key padding masks), and nn.MultiheadAttention with kdim/vdim, need_weights, average_attn_weights, add_bias_kv
and add_zero_attn."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=32):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)
    def forward(self, x):
        return x + self.pe[: x.size(0)]

class TinyLM(nn.Module):
    def __init__(self, ntoken=11, d_model=8, nhead=2):
        super().__init__()
        self.embed = nn.Embedding(ntoken, d_model)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=12, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.decoder = nn.Linear(d_model, ntoken)
    def forward(self, src, mask):
        h = self.pos(self.embed(src) * math.sqrt(8))
        return self.decoder(self.encoder(h, mask=mask, is_causal=True))

torch.manual_seed(0)
lm = TinyLM()
sync(lm)
# the key bias gets a zero gradient up to rounding: plain SGD keeps it at rounding level, Adam would not
opt = torch.optim.SGD(lm.parameters(), lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)
rng = np.random.default_rng(0)
seq = torch.tensor(rng.integers(0, 11, (9, 4)))
mask = nn.Transformer.generate_square_subsequent_mask(8)
record("mask", mask)
for step in range(4):
    out = lm(seq[:-1], mask)
    loss = F.cross_entropy(out.view(-1, 11), seq[1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    record("lm", loss.item())

# full encoder-decoder, batch_first, norm_first, gelu, padding masks
torch.manual_seed(1)
tf = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=10,
                    dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
sync(tf)
src = torch.tensor(rng.standard_normal((3, 5, 8)), dtype=torch.float32)
tgt = torch.tensor(rng.standard_normal((3, 4, 8)), dtype=torch.float32)
src_pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
tgt_pad = torch.tensor([[False] * 4, [False] * 2 + [True] * 2, [False] * 4])
tgt_mask = tf.generate_square_subsequent_mask(4)
opt2 = torch.optim.SGD(tf.parameters(), lr=0.05)
for step in range(3):
    out = tf(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
             memory_key_padding_mask=src_pad, tgt_is_causal=True)
    loss = (out[~tgt_pad] ** 2).mean()
    opt2.zero_grad()
    loss.backward()
    opt2.step()
    record("tf", loss.item())

# MultiheadAttention with kdim/vdim, weights
torch.manual_seed(2)
mha = nn.MultiheadAttention(embed_dim=6, num_heads=3, kdim=4, vdim=5, batch_first=True, bias=True)
sync(mha)
q = torch.tensor(rng.standard_normal((2, 3, 6)), dtype=torch.float32, requires_grad=True)
k = torch.tensor(rng.standard_normal((2, 4, 4)), dtype=torch.float32)
v = torch.tensor(rng.standard_normal((2, 4, 5)), dtype=torch.float32)
kpm = torch.tensor([[False, False, False, True], [False, False, False, False]])
attn_mask = torch.zeros(3, 4)
attn_mask[0, 1] = float("-inf")
out, w = mha(q, k, v, key_padding_mask=kpm, need_weights=True, attn_mask=attn_mask)
record("mha_out", out)
record("mha_w", w)
out2, w2 = mha(q, k, v, key_padding_mask=kpm, need_weights=True, average_attn_weights=False)
record("mha_w2", w2)
out3, w3 = mha(q, k, v, need_weights=False)
record("mha_none", [w3 is None])
(out.sum() + out2.pow(2).sum() + out3.mean()).backward()
record("mha_qgrad", q.grad)
record("mha_grads", torch.cat([p.grad.flatten() for p in mha.parameters()]))
# self-attention, same embed dim (packed in_proj), add_bias_kv/add_zero_attn
torch.manual_seed(3)
sa = nn.MultiheadAttention(6, 2, add_bias_kv=True, add_zero_attn=True)
sync(sa)
xs = torch.tensor(rng.standard_normal((4, 2, 6)), dtype=torch.float32)
o, ww = sa(xs, xs, xs, attn_mask=nn.Transformer.generate_square_subsequent_mask(4))
record("sa", o)
record("saw", ww)
FINAL = {"lm": lm, "tf": tf}
