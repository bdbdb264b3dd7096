"""An encoder evaluated in eval mode under no_grad with a padding mask, a bidirectional LSTM over packed
sequences with initial states, and Module utilities (containers, buffers, requires_grad_, double(),
parameters_to_vector, zero_grad)."""
import numpy as np
import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync

rng = np.random.default_rng(21)
# encoder-only classifier, evaluated in eval mode under no_grad (torch's fast path)
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
enc = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(8))
sync(enc)
src = torch.tensor(rng.standard_normal((3, 6, 8)), dtype=torch.float32)
pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2, [False] * 2 + [True] * 4])
out_train = enc(src, src_key_padding_mask=pad)
record("enc_train", out_train[~pad])
enc.eval()
with torch.no_grad():
    out_eval = enc(src, src_key_padding_mask=pad)
record("enc_eval", out_eval)  # torch runs this on nested tensors: padded positions give norm(0)
with torch.inference_mode():
    causal = nn.Transformer.generate_square_subsequent_mask(6)
    record("enc_causal", enc(src, mask=causal, is_causal=True))

# LSTM over packed sequences with given initial states, bidirectional 2 layers
torch.manual_seed(1)
lstm = nn.LSTM(4, 5, num_layers=2, bidirectional=True)
sync(lstm)
seqs = [torch.tensor(rng.standard_normal((L, 4)), dtype=torch.float32) for L in (5, 3, 2)]
packed = pack_sequence(seqs)
h0 = torch.tensor(rng.standard_normal((4, 3, 5)), dtype=torch.float32, requires_grad=True)
c0 = torch.zeros(4, 3, 5)
out, (h, c) = lstm(packed, (h0, c0))
padded, lens = pad_packed_sequence(out, total_length=6)
(padded.sum() + h.pow(2).sum() + c.mean()).backward()
record("lstm_out", padded)
record("lstm_h0grad", h0.grad)
record("lstm_wgrad", lstm.weight_hh_l1_reverse.grad)

# module utilities
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 1), "b": nn.Linear(4, 2)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(4)), nn.Parameter(torch.zeros(4))])
        self.register_buffer("running", torch.zeros(4))
        self.register_buffer("scratch", torch.ones(2), persistent=False)
    def forward(self, x):
        for i, l in enumerate(self.layers):
            x = F.relu(l(x)) * self.scales[i] + self.scales[1]
        self.running.mul_(0.9).add_(x.detach().mean(0), alpha=0.1)
        return torch.cat([self.heads["a"](x), self.heads["b"](x)], dim=-1)

torch.manual_seed(2)
blk = Block()
sync(blk)
record("sd_keys", repr(list(blk.state_dict().keys())))
record("named_modules", repr([n for n, _ in blk.named_modules()]))
record("n_params", sum(p.numel() for p in blk.parameters() if p.requires_grad))
blk.heads.requires_grad_(False)
record("n_trainable", sum(p.numel() for p in blk.parameters() if p.requires_grad))
vec = parameters_to_vector(blk.parameters())
vector_to_parameters(vec * 0.5, blk.parameters())
xb = torch.tensor(rng.standard_normal((5, 4)), dtype=torch.float32)
blk64 = blk.double()
out = blk64(xb.double())
record("dtype", repr(out.dtype))
out.sum().backward()
record("grads", [p.grad is None for p in blk.parameters()])
record("running", blk.running)
blk.zero_grad()
record("after_zero", [p.grad is None for p in blk.parameters()])
record("training", [blk.training, blk.eval().training, blk.layers[0].training])
FINAL = {"blk": blk}
