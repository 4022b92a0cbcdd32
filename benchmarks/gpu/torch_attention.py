#!/usr/bin/env python3
"""PyTorch's causal attention at bench_kernels' shape, for a ratio in the same run (run.sh).

F.scaled_dot_product_attention(is_causal=True) in bf16 at B=4, S=1024, 12 heads of 64 (GPT-2
small's attention, bench_kernels.cu's rows): forward alone and backward alone (from a forward
kept for it), median of timed repetitions with CUDA events. FLOPs are counted as
bench_kernels counts them (forward 4·B·H·S²·D/2, the causal half; backward 2.5× that), so the
rows compare directly. Prints table rows and `torch_attention fwd_us X bwd_us Y`.
"""
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch not installed: no reference (skipped)")
    sys.exit(77)

if not torch.cuda.is_available():
    print("no CUDA device: no reference (skipped)")
    sys.exit(77)

B, S, H, D = 4, 1024, 12, 64
fwd_flops = 4.0 * B * H * S * S * D / 2
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
g = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)


def median_us(fn, reps=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


with torch.no_grad():
    fwd_us = median_us(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
bwd_us = median_us(lambda: torch.autograd.grad(out, (q, k, v), g, retain_graph=True))
for name, us, flops in (("torch SDPA causal fwd (S 1024)", fwd_us, fwd_flops),
                        ("torch SDPA causal bwd (S 1024)", bwd_us, 2.5 * fwd_flops)):
    print(f"| {name:<40} | bf16 | {us:9.1f} us | {flops / (us * 1e-6) * 1e-12:6.1f} TFLOP/s | torch {torch.__version__} |")
print(f"torch_attention fwd_us {fwd_us:.1f} bwd_us {bwd_us:.1f}")
