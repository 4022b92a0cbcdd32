#!/usr/bin/env python3
"""An independent reference for weft's LLaMA: a numpy forward pass written from the published
architecture, compared with weft's logits on the same weights.

The architecture, as published (Touvron et al. 2023, "LLaMA: Open and Efficient Foundation
Language Models", section 2.2; grouped-query attention from Ainslie et al. 2023 as in LLaMA 2;
the rotary embedding of Su et al. 2021 in the rotate-half form of Hugging Face's
modeling_llama.py):

    h_0      = E[tokens]                                       token embedding, no positions
    for each layer l:
      a      = RMSNorm(h; g_attn)                              pre-normalisation
      q,k,v  = a Wq^T, a Wk^T, a Wv^T                          no biases
      q,k    = RoPE(q), RoPE(k)                                rotary on queries and keys only
      o      = softmax(q k^T / sqrt(d) + causal mask) v        query head i reads kv head i // (H / KVH)
      h      = h + o Wo^T
      m      = RMSNorm(h; g_mlp)
      h      = h + W2 (silu(W1 m) * W3 m)                      SwiGLU feed-forward
    logits   = RMSNorm(h; g_final) Wout^T                      untied output projection

    RMSNorm(x; g) = x / sqrt(mean(x^2) + eps) * g,  eps = 1e-5
    RoPE: within a head of size d, element i pairs with i + d/2 and the pair (x1, x2) turns by
          angle t * 10000^(-2i/d) at position t: (x1 cos - x2 sin, x2 cos + x1 sin)

This file knows weft only through its parameter names and packing (what a checkpoint converter
would know): c_attn's rows are [Wq | Wk | Wv], gate_up's rows are [W1 (gate) | W3 (up)], down
is W2, weights are (out, in) as torch.nn.Linear.

  llama_reference.py all <llama_reference_sample binary> <scratch dir>
      runs the sample, computes the reference logits in f64 from its parameters and compares:
      max |weft - reference| must be below 1e-9 (both f64). Two negative controls must then
      fail the same comparison by a wide margin: the reference with the interleaved-pair
      rotary convention (Meta's original complex form, which needs permuted weights), and with
      the kv heads grouped the other way (query head i reading kv head i % KVH).

Exit status 0 when it matches; 1 on a mismatch (printed); 2 on usage; 77 (skip) without numpy, 1 instead under
WEFT_REQUIRE_REFERENCES=1 (CI: tests/common/reference_skip.py).
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from reference_skip import require  # noqa: E402  (a missing reference: skip, or fail in CI)
require(["numpy"], "apt-get install python3-numpy")
import numpy as np  # noqa: E402

EPS = 1e-5
ROPE_BASE = 10000.0
TOLERANCE = 1e-9


def rms_norm(x, g):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * g


def rope(x, interleaved=False):
    """x: (batch, seq, heads, d). Rotate-half pairs (i, i + d/2); or, as a negative control,
    interleaved pairs (2i, 2i + 1)."""
    _, S, _, d = x.shape
    inv_freq = ROPE_BASE ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,)
    ang = np.arange(S, dtype=np.float64)[:, None] * inv_freq[None, :]   # (seq, d/2)
    cos, sin = np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x1 * cos - x2 * sin
        out[..., 1::2] = x2 * cos + x1 * sin
        return out
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def silu(x):
    return x / (1.0 + np.exp(-x))


def attention(a, Wq, Wk, Wv, Wo, H, KVH, interleaved=False, kv_group_mod=False):
    B, S, C = a.shape
    d = Wq.shape[0] // H
    q = (a @ Wq.T).reshape(B, S, H, d)
    k = (a @ Wk.T).reshape(B, S, KVH, d)
    v = (a @ Wv.T).reshape(B, S, KVH, d)
    q, k = rope(q, interleaved), rope(k, interleaved)
    group = H // KVH
    kv_of = [(i % KVH) if kv_group_mod else (i // group) for i in range(H)]
    k = k[:, :, kv_of, :]  # (B, S, H, d): each query head with its kv head
    v = v[:, :, kv_of, :]
    scores = np.einsum("bshd,bthd->bhst", q, k) / np.sqrt(d)
    mask = np.triu(np.ones((S, S), dtype=bool), k=1)
    scores = np.where(mask[None, None], -np.inf, scores)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhst,bthd->bshd", p, v).reshape(B, S, H * d)
    return o @ Wo.T


def llama_forward(P, cfg, tokens, **control):
    V, ctx, C, H, KVH, L, F = (cfg[k] for k in ("vocab", "context", "width", "heads", "kv_heads", "depth", "ffn"))
    d = C // H
    h = P["embed.weight"][tokens]  # (B, S, C)
    for l in range(L):
        pre = f"layers.{l}."
        qkv = P[pre + "attn.c_attn.weight"]  # rows [Wq (H d) | Wk (KVH d) | Wv (KVH d)]
        Wq, Wk, Wv = qkv[: H * d], qkv[H * d : (H + KVH) * d], qkv[(H + KVH) * d :]
        a = rms_norm(h, P[pre + "ln_1.weight"])
        h = h + attention(a, Wq, Wk, Wv, P[pre + "attn.c_proj.weight"], H, KVH, **control)
        gu = P[pre + "mlp.gate_up.weight"]  # rows [W1 (gate) | W3 (up)]
        W1, W3 = gu[:F], gu[F:]
        m = rms_norm(h, P[pre + "ln_2.weight"])
        h = h + (silu(m @ W1.T) * (m @ W3.T)) @ P[pre + "mlp.down.weight"].T
    return rms_norm(h, P["norm.weight"]) @ P["head.weight"].T  # (B, S, V)


def read_sample(d):
    names = "vocab context width heads kv_heads depth ffn batch seq".split()
    with open(os.path.join(d, "llama.config")) as f:
        cfg = dict(zip(names, map(int, f.read().split())))
    block = np.fromfile(os.path.join(d, "llama.params.bin"), dtype="<f8")
    P = {}
    with open(os.path.join(d, "llama.params.index")) as f:
        for line in f:
            name, off, *shape = line.split()
            off, shape = int(off), tuple(map(int, shape))
            P[name] = block[off : off + int(np.prod(shape))].reshape(shape)
    logits = np.fromfile(os.path.join(d, "llama.logits.bin"), dtype="<f8")
    B, S, V = cfg["batch"], cfg["seq"], cfg["vocab"]
    logits = logits.reshape(B, S, V)
    tokens = ((7 * np.arange(B * S) + 3) % V).reshape(B, S)
    return cfg, P, tokens, logits


def expected_names(cfg):
    n = {"embed.weight", "norm.weight", "head.weight"}
    for l in range(cfg["depth"]):
        for s in ("ln_1.weight", "attn.c_attn.weight", "attn.c_proj.weight", "ln_2.weight",
                  "mlp.gate_up.weight", "mlp.down.weight"):
            n.add(f"layers.{l}.{s}")
    return n


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "all":
        print(__doc__)
        return 2
    binary, scratch = sys.argv[2], sys.argv[3]
    os.makedirs(scratch, exist_ok=True)
    subprocess.run([binary, scratch], check=True)
    cfg, P, tokens, weft_logits = read_sample(scratch)
    if set(P) != expected_names(cfg):
        print(f"MISMATCH: parameter names {sorted(set(P) ^ expected_names(cfg))} differ from LLaMA's")
        return 1
    gains = np.concatenate([P[k] for k in P if k.endswith("ln_1.weight") or k == "norm.weight"])
    if np.max(np.abs(gains - 1.0)) < 1e-3:
        print("MISMATCH: the norm gains are still 1; the sample did not train, so the check would be weak")
        return 1
    ref = llama_forward(P, cfg, tokens)
    err = float(np.max(np.abs(ref - weft_logits)))
    scale = float(np.max(np.abs(ref)))
    print(f"llama reference: logits (batch {cfg['batch']}, seq {cfg['seq']}, vocab {cfg['vocab']}), "
          f"max |weft - reference| = {err:.3e} (logits up to {scale:.3f}), tolerance {TOLERANCE:.0e}")
    if not err <= TOLERANCE:
        print("MISMATCH: weft's llama logits differ from the reference")
        return 1
    # Negative controls: a reference that is wrong in one published detail must not match.
    for what, control in (("interleaved rotary pairs", {"interleaved": True}),
                          ("kv heads grouped as i % KVH", {"kv_group_mod": True})):
        wrong = float(np.max(np.abs(llama_forward(P, cfg, tokens, **control) - weft_logits)))
        print(f"  control ({what}): max difference {wrong:.3e}")
        if not wrong > 1e3 * TOLERANCE:
            print(f"MISMATCH: the control '{what}' also matches, so the comparison cannot tell")
            return 1
    print("llama reference: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
