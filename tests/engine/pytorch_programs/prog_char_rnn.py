"""A char-level LSTM language model (2 layers, batch_first, hidden state detached between batches) and a
bidirectional GRU / projected LSTM classifier over padded variable-length sequences
(pad_sequence, pack_padded_sequence with enforce_sorted=False, pad_packed_sequence)."""
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync

text = "the quick brown fox jumps over the lazy dog and then sleeps in the sun. "
vocab = sorted(set(text))
stoi = {c: i for i, c in enumerate(vocab)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)

class CharLM(nn.Module):
    def __init__(self, n_vocab, emb=10, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(n_vocab, emb)
        self.rnn = nn.LSTM(emb, hidden, num_layers=2, batch_first=True, dropout=0.0)
        self.out = nn.Linear(hidden, n_vocab)
    def forward(self, x, state=None):
        h, state = self.rnn(self.embed(x), state)
        return self.out(h), state

torch.manual_seed(0)
model = CharLM(len(vocab))
sync(model)
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
bsz, seq = 3, 7
n = (len(data) - 1) // (bsz * seq) * (bsz * seq)
inputs = data[:n].view(bsz, -1)
targets = data[1:n + 1].view(bsz, -1)
state = None
for epoch in range(2):
    state = None
    for i in range(0, inputs.size(1), seq):
        xb, yb = inputs[:, i:i + seq], targets[:, i:i + seq]
        if state is not None:
            state = tuple(s.detach() for s in state)
        logits, state = model(xb, state)
        loss = F.cross_entropy(logits.reshape(-1, len(vocab)), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        record("loss", loss.item())

# bidirectional GRU classifier over variable-length sequences
class BiGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(len(vocab), 6, padding_idx=0)
        self.rnn = nn.GRU(6, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.lstm = nn.LSTM(10, 4, bidirectional=True, batch_first=False, proj_size=3)
        self.fc = nn.Linear(2 * 5 + 2 * 3, 2)
    def forward(self, x, lengths):
        packed = pack_padded_sequence(self.embed(x), lengths, batch_first=True, enforce_sorted=False)
        out, h = self.rnn(packed)
        padded, lens = pad_packed_sequence(out, batch_first=True)
        o2, (h2, c2) = self.lstm(padded.transpose(0, 1))
        feat = torch.cat([h[-2], h[-1], h2[-2], h2[-1]], dim=1)
        return self.fc(feat), padded, lens

torch.manual_seed(1)
clf = BiGRU()
sync(clf)
seqs = [data[i:i + L] for i, L in zip([0, 5, 11, 20, 33], [6, 3, 8, 2, 5])]
lengths = torch.tensor([len(s) for s in seqs])
batch = pad_sequence(seqs, batch_first=True, padding_value=0)
labels = torch.tensor([0, 1, 1, 0, 1])
opt2 = torch.optim.RMSprop(clf.parameters(), lr=1e-2)
for step in range(4):
    logits, padded, lens = clf(batch, lengths)
    loss = F.cross_entropy(logits, labels)
    opt2.zero_grad()
    loss.backward()
    opt2.step()
    record("bigru", loss.item())
    record("padded", padded.detach().sum(-1))
record("lens", lens.tolist())
FINAL = {"lm": model, "clf": clf}
