#!/usr/bin/env python3
"""PyTorch CPU's training step on bench_host_step's shapes, for ratios in the same run.

The GPT-2 block stack of benchmarks/gpu/torch_reference.py (same layers, tied head, AdamW,
global-norm clipping), eager, on the CPU with `--threads` intra-op threads, denormals flushed
(torch.set_flush_denormal(True)) and fused AdamW; f32 and bf16 autocast (oneDNN's bf16 kernels:
AMX or AVX512-BF16 where the CPU has them). Prints one line per precision:
    peer torch <f32|bf16> ms <median ms/step> (loss L)
bench_host_step runs it with each of its shapes; exit 77 when torch is not installed.
    python3 benchmarks/peer_torch_host_step.py --vocab 50257 --context 1024 --width 768 \
        --heads 12 --depth 12 --batch 4 --seq 64 --steps 3 --threads 2
"""
import argparse
import os
import statistics
import sys
import time

try:
    import torch
except ImportError:
    print("torch not installed: no peer row (skipped)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu"))
from torch_reference import GPT  # noqa: E402  (the same model as the GPU comparison)


def main():
    p = argparse.ArgumentParser()
    for k, v in dict(vocab=50257, context=1024, width=768, heads=12, depth=12, batch=4, seq=64, steps=3,
                     threads=2).items():
        p.add_argument(f"--{k}", type=int, default=v)
    p.add_argument("--precisions", default="f32,bf16")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    torch.manual_seed(1)
    model = GPT(a)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq))
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq))
    for prec in a.precisions.split(","):
        times = []
        for i in range(a.steps + 1):  # the first step warms up (allocations, oneDNN primitives)
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=prec == "bf16"):
                loss = model(idx, tgt)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            if i > 0:
                times.append(time.perf_counter() - t0)
        print(f"peer torch {prec} ms {statistics.median(times) * 1e3:.1f} (loss {loss.item():.4f})", flush=True)


if __name__ == "__main__":
    main()
