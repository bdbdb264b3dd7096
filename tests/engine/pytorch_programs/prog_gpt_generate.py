"""A nanoGPT-style model: causal self-attention written out and through scaled_dot_product_attention, weight
tying, AdamW parameter groups by dimension, random batches from torch.randint, sampling with temperature,
top-k and torch.multinomial under a seed."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=8, n_head=2, block=6):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))
    def forward(self, x, use_sdpa):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if use_sdpa:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)

class GPT(nn.Module):
    def __init__(self, vocab=7, n_embd=8, block=6):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.ln = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, 2, block)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"), nn.Linear(4 * n_embd, n_embd))
        self.head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.head.weight  # weight tying
        self.block = block
    def forward(self, idx, targets=None, use_sdpa=True):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(self.ln(x), use_sdpa)
        x = x + self.mlp(self.ln(x))
        logits = self.head(x)
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss
    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block else idx[:, -self.block:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx

torch.manual_seed(0)
model = GPT()
sync(model)
record("n_params", sum(p.numel() for p in model.parameters()))
decay = {pn for pn, p in model.named_parameters() if p.dim() >= 2}
groups = [{"params": [p for pn, p in model.named_parameters() if pn in decay], "weight_decay": 0.1},
          {"params": [p for pn, p in model.named_parameters() if pn not in decay], "weight_decay": 0.0}]
opt = torch.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.95), fused=None)
rng = np.random.default_rng(0)
data = torch.from_numpy(rng.integers(0, 7, 200))
torch.manual_seed(1)
for it in range(5):
    ix = torch.randint(len(data) - 6, (4,))
    x = torch.stack([data[i:i + 6] for i in ix])
    y = torch.stack([data[i + 1:i + 7] for i in ix])
    y[0, -1] = -1
    logits, loss = model(x, y, use_sdpa=it % 2 == 0)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    record("loss", loss.item())
model.eval()
torch.manual_seed(2)
out = model.generate(torch.zeros((2, 1), dtype=torch.long), 8, temperature=0.8, top_k=4)
record("generated", out.tolist())
FINAL = {"gpt": model}
