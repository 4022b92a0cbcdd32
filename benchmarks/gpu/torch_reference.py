#!/usr/bin/env python3
"""The same GPT training step in PyTorch, for a tokens/s ratio in the same run (benchmarks/gpu/run.sh).

A GPT-2 block stack with weft's shapes (vocab, context, width, heads, depth, micro-batch,
sequence), AdamW, global-norm clipping, f32 without TF32 by default (weft's f32 plans accumulate
in f32 on CUDA cores) or --bf16 autocast. Prints one line: `torch tokens/s X` (median of the
timed steps after warm-up), which run.sh divides weft's rate by.
    python3 benchmarks/gpu/torch_reference.py --vocab 50257 --context 1024 --width 768 --heads 12 \
        --depth 12 --batch 4 --seq 1024 --steps 30
"""
import argparse
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("torch not installed: no reference (skipped)")
    sys.exit(77)


class Block(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.attn, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.fc_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.h = h

    def forward(self, x):
        b, s, c = x.shape
        q, k, v = self.attn(self.ln1(x)).split(c, dim=2)
        q, k, v = (t.view(b, s, self.h, c // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, c)
        x = x + self.proj(y)
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(a.vocab, a.width), nn.Embedding(a.context, a.width)
        self.blocks = nn.ModuleList(Block(a.width, a.heads) for _ in range(a.depth))
        self.ln_f = nn.LayerNorm(a.width)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    p = argparse.ArgumentParser()
    for k, v in dict(vocab=50257, context=1024, width=768, heads=12, depth=12, batch=4, seq=1024, steps=30).items():
        p.add_argument(f"--{k}", type=int, default=v)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (its fastest honest configuration)")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: no reference (skipped)")
        sys.exit(77)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    model = GPT(a).to(dev)
    fwd = torch.compile(model) if a.compile else model
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq), device=dev)
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq), device=dev)
    times = []
    for i in range(a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.bf16):
            loss = fwd(idx, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= min(5, a.steps // 2):
            times.append(time.perf_counter() - t0)
    rate = a.batch * a.seq / statistics.median(times)
    print(f"torch tokens/s {rate:.0f} (loss {loss.item():.4f}, {'bf16 autocast' if a.bf16 else 'f32, no TF32'}{', compiled' if a.compile else ''})")


if __name__ == "__main__":
    main()
