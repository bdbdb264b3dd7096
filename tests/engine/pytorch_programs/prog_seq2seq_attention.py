"""A seq2seq GRU encoder / additive-attention decoder with nn.Embedding, teacher forcing chosen by Python's
random, greedy decoding with topk."""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync

SOS, EOS = 0, 1

class Encoder(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.embedding = nn.Embedding(n_in, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
    def forward(self, x):
        return self.gru(self.embedding(x))

class AttnDecoder(nn.Module):
    def __init__(self, hidden, n_out):
        super().__init__()
        self.embedding = nn.Embedding(n_out, hidden)
        self.Wa = nn.Linear(hidden, hidden)
        self.Ua = nn.Linear(hidden, hidden)
        self.Va = nn.Linear(hidden, 1, bias=False)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_out)
    def step(self, inp, hidden, enc_out):
        emb = self.embedding(inp)
        query = hidden.permute(1, 0, 2)
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(enc_out))).squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, enc_out)
        out, hidden = self.gru(torch.cat((emb, context), dim=2), hidden)
        return self.out(out), hidden
    def forward(self, enc_out, enc_hidden, target=None, max_len=5):
        b = enc_out.size(0)
        inp = torch.empty(b, 1, dtype=torch.long).fill_(SOS)
        hidden = enc_hidden
        outputs = []
        for t in range(max_len):
            out, hidden = self.step(inp, hidden, enc_out)
            outputs.append(out)
            if target is not None:
                inp = target[:, t].unsqueeze(1)
            else:
                _, topi = out.topk(1)
                inp = topi.squeeze(-1).detach()
        return F.log_softmax(torch.cat(outputs, dim=1), dim=-1), hidden

random.seed(0)
rng = np.random.default_rng(2)
src = torch.tensor(rng.integers(2, 9, (6, 4)))
tgt = torch.flip(src, [1])
tgt = torch.cat([tgt, torch.full((6, 1), EOS)], dim=1)
torch.manual_seed(0)
enc, dec = Encoder(9, 8), AttnDecoder(8, 9)
sync(enc, dec)
eopt = torch.optim.Adam(enc.parameters(), lr=1e-2)
dopt = torch.optim.Adam(dec.parameters(), lr=1e-2)
criterion = nn.NLLLoss()
for epoch in range(5):
    teacher = random.random() < 0.5
    eopt.zero_grad(); dopt.zero_grad()
    enc_out, enc_hidden = enc(src)
    dec_out, _ = dec(enc_out, enc_hidden, tgt if teacher else None)
    loss = criterion(dec_out.view(-1, dec_out.size(-1)), tgt.view(-1))
    loss.backward()
    eopt.step(); dopt.step()
    record("loss", [loss.item(), float(teacher)])
with torch.no_grad():
    enc_out, enc_hidden = enc(src[:2])
    dec_out, _ = dec(enc_out, enc_hidden)
    record("decoded", dec_out.argmax(-1).tolist())
FINAL = {"enc": enc, "dec": dec}
