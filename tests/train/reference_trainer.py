#!/usr/bin/env python3
"""An independent reference *trainer* for weft: a numpy GPT-2 and LLaMA with hand-written
backward passes, trained by AdamW, gradient clipping and a learning-rate schedule written from
their published definitions, compared step by step with weft's training in f64.

The models, as published:

  GPT-2 (Radford et al. 2019; the layout of nanoGPT's model.py and llm.c's train_gpt2.c):
    x        = wte[tokens] + wpe[positions]                    learned positions
    for each layer:
      x      = x + c_proj(attn(LN(x; ln_1)))                  pre-LN, biases everywhere
      x      = x + mlp.c_proj(GELU(mlp.c_fc(LN(x; ln_2))))
    logits   = LN(x; ln_f) wte^T                               head tied to the token embedding
    LN(x; g, b) = (x - mean) / sqrt(var + 1e-5) * g + b        biased variance
    GELU(x)  = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  the tanh form ("gelu_new")
    attn     = causal softmax(q k^T / sqrt(d)) v per head; c_attn's rows are [Wq | Wk | Wv]

  LLaMA (Touvron et al. 2023; grouped-query attention, Ainslie et al. 2023; rotary embedding,
  Su et al. 2021, in the rotate-half form of transformers' modeling_llama.py):
    x        = E[tokens]                                       no position table
    for each layer:
      x      = x + Wo attn(rope(Wq a), rope(Wk a), Wv a),  a = RMSNorm(x; ln_1)
      x      = x + W2 (silu(W1 m) * W3 m),                 m = RMSNorm(x; ln_2)   SwiGLU
    logits   = RMSNorm(x; norm) Wout^T                         untied head, no biases anywhere
    RMSNorm(x; g) = x / sqrt(mean(x^2) + 1e-5) * g
    rope     = pairs (i, i + d/2) of a head turned by t * 10000^(-2i/d) at position t
    GQA      = query head i reads kv head i // (H / KVH)
    c_attn's rows are [Wq | Wk | Wv], gate_up's rows are [W1 (gate) | W3 (up)], down is W2

  Loss: the mean cross-entropy over all tokens of a step (nats). Gradient accumulation over
  k micro-batches: the step's gradient is the mean of the micro-batches' gradients (each the
  gradient of its own mean loss), its loss the mean of their losses.

  Every backward pass below is written by hand (chain rule through each op) and checked first
  against central finite differences of the same numpy forward pass, along a random direction
  in every parameter tensor and along random directions in all of them at once, so that a bug
  in the reference cannot hide behind a matching bug in weft.

The optimizer, as published:

  torch.nn.utils.clip_grad_norm_(params, max_norm): norm = sqrt(sum of all squared gradients);
    g *= min(1, max_norm / (norm + 1e-6)). weft (as llm.c's train_gpt2.cu) uses the factor
    max_norm / norm when norm > max_norm, without the 1e-6; the reference does the same
    (CLIP_EPS = 0) for a comparison at 1e-9, and reports how far torch's 1e-6 would move it.
  torch.optim.AdamW (Loshchilov & Hutter 2019, decoupled decay), per parameter, step t >= 1:
    p    *= 1 - lr * wd                          (decayed tensors only)
    m     = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
    p    -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
  The decayed set: nanoGPT's configure_optimizers rule, every tensor with dim >= 2 (matrices,
    the token embedding, the position table, the untied head; the tied head is the token
    embedding), never 1-D ones (norm gains, biases). weft's own flags are checked against it.
  The learning rate of 0-based step s (weft's lr_schedule, include/weft/train/optimizer.hpp,
    which is llm.c's get_learning_rate in llmc/schedulers.h with final_learning_rate_frac =
    min_ratio, train_num_batches = total):
    s < warmup: lr (s + 1) / warmup; s >= total: min_ratio lr;
    else min_ratio lr + (1 - min_ratio) lr * 0.5 (1 + cos(pi (s - warmup) / (total - warmup))).
    nanoGPT's get_lr has the same cosine but warms up as lr (s + 1) / (warmup + 1); the
    reference reports how far that would move the comparison.

  The hyperparameters and each step's learning rate are doubles on both sides (weft's adamw
  and adamw_step take doubles, rounded once to the update's compute type: f64 here). The
  reference reports how far f32-rounded hyperparameters (what weft did before 2026-12-05)
  would move the comparison.

  reference_trainer.py all <reference_trainer_sample binary> <scratch dir>
      runs the sample (a tiny GPT-2 and a tiny grouped-query LLaMA, 8 steps each, f64, weight
      decay 0.1, warm-up + cosine, clipping on some steps, 2 and 3 micro-batches per step),
      checks the reference's backward by finite differences, trains the reference from weft's
      initial parameters on weft's token batches, and compares per-step losses, gradient norms
      (before clipping) and the final parameters: relative difference at most 1e-9 (both f64;
      measured 2026-12-05: 3e-12 for the GPT, whose large rate amplifies rounding most, 7e-15
      for the LLaMA). Per step the relative difference of the loss and of the gradient norm;
      per final tensor max |weft - reference| over max |reference|. Negative controls — the
      reference with one published detail changed (1-D tensors decayed too, embeddings not
      decayed as in minGPT, no bias correction, L2-coupled decay as in torch.optim.Adam, eps
      inside the square root, no clipping, the schedule one step late) — must each miss by more
      than 1000x the tolerance (they miss by 1e-2 to 6). Notes, printed and not judged: how far
      torch's +1e-6 in clipping, f32-rounded hyperparameters and rate, and nanoGPT's warm-up
      would move the comparison.

Exit status 0 when it matches; 1 on a mismatch (the first differing step or tensor printed);
2 on usage; 77 (skip) without numpy, 1 instead under
WEFT_REQUIRE_REFERENCES=1 (CI: tests/common/reference_skip.py).
"""

import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from reference_skip import require  # noqa: E402  (a missing reference: skip, or fail in CI)
require(["numpy"], "apt-get install python3-numpy")
import numpy as np  # noqa: E402

EPS = 1e-5            # LayerNorm and RMSNorm
ROPE_BASE = 10000.0
TOLERANCE = 1e-9      # relative, weft f64 against the reference f64 after 8 steps
FD_STEP = 1e-5        # central differences
FD_TOLERANCE = 1e-6   # relative to the tensor's gradient norm
CONTROL_MARGIN = 1e3  # a control must miss by this multiple of TOLERANCE


class Mismatch(Exception):
    pass


# ---- ops: forward returns (output, cache); backward takes the output's gradient ----

def layer_norm_f(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + EPS)
    xhat = (x - mu) * rstd
    return xhat * g + b, (xhat, rstd)


def layer_norm_b(dy, cache, g):
    xhat, rstd = cache
    dg = (dy * xhat).sum(axis=(0, 1))
    db = dy.sum(axis=(0, 1))
    dxhat = dy * g
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, dg, db


def rms_norm_f(x, g):
    r = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS)
    return x * r * g, (x, r)


def rms_norm_b(dy, cache, g):
    x, r = cache
    dg = (dy * x * r).sum(axis=(0, 1))
    dxn = dy * g
    dx = r * (dxn - x * r * r * (dxn * x).mean(axis=-1, keepdims=True))
    return dx, dg


GELU_C = math.sqrt(2.0 / math.pi)


def gelu_f(x):
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def gelu_b(dy, x):
    t = np.tanh(GELU_C * (x + 0.044715 * x ** 3))
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3 * 0.044715 * x * x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def rope_tables(S, d):
    inv_freq = ROPE_BASE ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,)
    ang = np.arange(S, dtype=np.float64)[:, None] * inv_freq[None, :]   # (seq, d/2)
    return np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]


def rope_f(x, cos, sin):
    """x: (batch, seq, heads, d); pairs (i, i + d/2) turned forward."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def rope_b(dy, cos, sin):
    """A rotation's transpose turns backward."""
    h = dy.shape[-1] // 2
    d1, d2 = dy[..., :h], dy[..., h:]
    return np.concatenate([d1 * cos + d2 * sin, d2 * cos - d1 * sin], axis=-1)


def attention_f(q, k, v):
    """q, k, v: (batch, seq, heads, d), k and v already expanded to the query heads."""
    S, d = q.shape[1], q.shape[3]
    s = np.einsum("bshd,bthd->bhst", q, k) / math.sqrt(d)
    s = np.where(np.triu(np.ones((S, S), dtype=bool), k=1)[None, None], -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)  # (batch, heads, seq, seq)
    return np.einsum("bhst,bthd->bshd", p, v), p


def attention_b(do, q, k, v, p):
    d = q.shape[3]
    dv = np.einsum("bhst,bshd->bthd", p, do)
    dp = np.einsum("bshd,bthd->bhst", do, v)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))  # masked entries have p = 0
    dq = np.einsum("bhst,bthd->bshd", ds, k) / math.sqrt(d)
    dk = np.einsum("bhst,bshd->bthd", ds, q) / math.sqrt(d)
    return dq, dk, dv


def linear_dw(dy, x):
    """dW of y = x W^T: (out, in), summed over batch and seq."""
    return dy.reshape(-1, dy.shape[-1]).T @ x.reshape(-1, x.shape[-1])


def cross_entropy(logits, targets):
    """Mean over tokens; returns (loss, dlogits)."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    t = targets.reshape(-1)
    n = t.size
    loss = -logp[np.arange(n), t].mean()
    dz = np.exp(logp)
    dz[np.arange(n), t] -= 1.0
    return loss, (dz / n).reshape(logits.shape)


# ---- GPT-2 ----

def gpt_loss(P, cfg, tokens, targets, grad=True):
    B, S = tokens.shape
    C, H, L, V = cfg["width"], cfg["heads"], cfg["depth"], cfg["vocab"]
    D = C // H
    x = P["wte.weight"][tokens] + P["wpe.weight"][:S]  # (B, S, C)
    tape = []
    for l in range(L):
        p = f"h.{l}."
        a, ln1 = layer_norm_f(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"])
        qkv = a @ P[p + "attn.c_attn.weight"].T + P[p + "attn.c_attn.bias"]  # (B, S, 3C): [q | k | v]
        q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, S, H, D) for i in range(3))
        o, pr = attention_f(q, k, v)
        o = o.reshape(B, S, C)
        x1 = x + o @ P[p + "attn.c_proj.weight"].T + P[p + "attn.c_proj.bias"]
        m, ln2 = layer_norm_f(x1, P[p + "ln_2.weight"], P[p + "ln_2.bias"])
        h = m @ P[p + "mlp.c_fc.weight"].T + P[p + "mlp.c_fc.bias"]  # (B, S, 4C)
        g = gelu_f(h)
        x2 = x1 + g @ P[p + "mlp.c_proj.weight"].T + P[p + "mlp.c_proj.bias"]
        tape.append((a, ln1, q, k, v, pr, o, m, ln2, h, g))
        x = x2
    xf, lnf = layer_norm_f(x, P["ln_f.weight"], P["ln_f.bias"])
    logits = xf @ P["wte.weight"].T  # tied head
    loss, dlogits = cross_entropy(logits, targets)
    if not grad:
        return loss
    G = {n: np.zeros_like(a) for n, a in P.items()}
    G["wte.weight"] += linear_dw(dlogits, xf)
    dx, G["ln_f.weight"], G["ln_f.bias"] = layer_norm_b(dlogits @ P["wte.weight"], lnf, P["ln_f.weight"])
    for l in reversed(range(L)):
        p = f"h.{l}."
        a, ln1, q, k, v, pr, o, m, ln2, h, g = tape[l]
        # mlp branch; dx flows through the residual unchanged
        G[p + "mlp.c_proj.weight"] = linear_dw(dx, g)
        G[p + "mlp.c_proj.bias"] = dx.sum(axis=(0, 1))
        dh = gelu_b(dx @ P[p + "mlp.c_proj.weight"], h)
        G[p + "mlp.c_fc.weight"] = linear_dw(dh, m)
        G[p + "mlp.c_fc.bias"] = dh.sum(axis=(0, 1))
        dm, G[p + "ln_2.weight"], G[p + "ln_2.bias"] = layer_norm_b(dh @ P[p + "mlp.c_fc.weight"], ln2,
                                                                    P[p + "ln_2.weight"])
        dx = dx + dm
        # attention branch
        G[p + "attn.c_proj.weight"] = linear_dw(dx, o)
        G[p + "attn.c_proj.bias"] = dx.sum(axis=(0, 1))
        do = (dx @ P[p + "attn.c_proj.weight"]).reshape(B, S, H, D)
        dq, dk, dv = attention_b(do, q, k, v, pr)
        dqkv = np.concatenate([t.reshape(B, S, C) for t in (dq, dk, dv)], axis=-1)
        G[p + "attn.c_attn.weight"] = linear_dw(dqkv, a)
        G[p + "attn.c_attn.bias"] = dqkv.sum(axis=(0, 1))
        da, G[p + "ln_1.weight"], G[p + "ln_1.bias"] = layer_norm_b(dqkv @ P[p + "attn.c_attn.weight"], ln1,
                                                                    P[p + "ln_1.weight"])
        dx = dx + da
    G["wpe.weight"][:S] += dx.sum(axis=0)
    np.add.at(G["wte.weight"], tokens, dx)
    return loss, G


def gpt_names(cfg):
    n = ["wte.weight", "wpe.weight"]
    for l in range(cfg["depth"]):
        for s in ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                  "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                  "mlp.c_proj.weight", "mlp.c_proj.bias"):
            n.append(f"h.{l}.{s}")
    return n + ["ln_f.weight", "ln_f.bias"]


# ---- LLaMA ----

def llama_loss(P, cfg, tokens, targets, grad=True):
    B, S = tokens.shape
    C, H, KVH, L, F = cfg["width"], cfg["heads"], cfg["kv_heads"], cfg["depth"], cfg["ffn"]
    D = C // H
    kv_of = np.arange(H) // (H // KVH)  # query head i reads kv head i // (H / KVH)
    cos, sin = rope_tables(S, D)
    x = P["embed.weight"][tokens]
    tape = []
    for l in range(L):
        p = f"layers.{l}."
        W = P[p + "attn.c_attn.weight"]  # rows [Wq (H D) | Wk (KVH D) | Wv (KVH D)]
        a, n1 = rms_norm_f(x, P[p + "ln_1.weight"])
        qkv = a @ W.T
        q = qkv[..., :H * D].reshape(B, S, H, D)
        k = qkv[..., H * D:(H + KVH) * D].reshape(B, S, KVH, D)
        v = qkv[..., (H + KVH) * D:].reshape(B, S, KVH, D)
        qr, kr = rope_f(q, cos, sin), rope_f(k, cos, sin)
        o, pr = attention_f(qr, kr[:, :, kv_of], v[:, :, kv_of])
        o = o.reshape(B, S, C)
        x1 = x + o @ P[p + "attn.c_proj.weight"].T
        m, n2 = rms_norm_f(x1, P[p + "ln_2.weight"])
        gu = m @ P[p + "mlp.gate_up.weight"].T  # [W1 m | W3 m]
        gate, up = gu[..., :F], gu[..., F:]
        s = sigmoid(gate)
        hmid = gate * s * up
        x2 = x1 + hmid @ P[p + "mlp.down.weight"].T
        tape.append((a, n1, qr, kr, v, pr, o, m, n2, gate, up, s, hmid))
        x = x2
    xf, nf = rms_norm_f(x, P["norm.weight"])
    logits = xf @ P["head.weight"].T
    loss, dlogits = cross_entropy(logits, targets)
    if not grad:
        return loss
    G = {n: np.zeros_like(a) for n, a in P.items()}
    G["head.weight"] = linear_dw(dlogits, xf)
    dx, G["norm.weight"] = rms_norm_b(dlogits @ P["head.weight"], nf, P["norm.weight"])
    for l in reversed(range(L)):
        p = f"layers.{l}."
        a, n1, qr, kr, v, pr, o, m, n2, gate, up, s, hmid = tape[l]
        # SwiGLU branch
        G[p + "mlp.down.weight"] = linear_dw(dx, hmid)
        dhmid = dx @ P[p + "mlp.down.weight"]
        dgate = dhmid * up * s * (1.0 + gate * (1.0 - s))  # d silu = s (1 + x (1 - s))
        dup = dhmid * gate * s
        dgu = np.concatenate([dgate, dup], axis=-1)
        G[p + "mlp.gate_up.weight"] = linear_dw(dgu, m)
        dm, G[p + "ln_2.weight"] = rms_norm_b(dgu @ P[p + "mlp.gate_up.weight"], n2, P[p + "ln_2.weight"])
        dx = dx + dm
        # attention branch
        G[p + "attn.c_proj.weight"] = linear_dw(dx, o)
        do = (dx @ P[p + "attn.c_proj.weight"]).reshape(B, S, H, D)
        dqr, dke, dve = attention_b(do, qr, kr[:, :, kv_of], v[:, :, kv_of], pr)
        dkr = np.zeros_like(kr)
        dv = np.zeros_like(v)
        for i in range(H):  # each kv head gathers the gradients of the query heads that read it
            dkr[:, :, kv_of[i]] += dke[:, :, i]
            dv[:, :, kv_of[i]] += dve[:, :, i]
        dq, dk = rope_b(dqr, cos, sin), rope_b(dkr, cos, sin)
        dqkv = np.concatenate([dq.reshape(B, S, -1), dk.reshape(B, S, -1), dv.reshape(B, S, -1)], axis=-1)
        G[p + "attn.c_attn.weight"] = linear_dw(dqkv, a)
        da, G[p + "ln_1.weight"] = rms_norm_b(dqkv @ P[p + "attn.c_attn.weight"], n1, P[p + "ln_1.weight"])
        dx = dx + da
    np.add.at(G["embed.weight"], tokens, dx)
    return loss, G


def llama_names(cfg):
    n = ["embed.weight"]
    for l in range(cfg["depth"]):
        for s in ("ln_1.weight", "attn.c_attn.weight", "attn.c_proj.weight", "ln_2.weight", "mlp.gate_up.weight",
                  "mlp.down.weight"):
            n.append(f"layers.{l}.{s}")
    return n + ["norm.weight", "head.weight"]


MODELS = {"gpt": (gpt_loss, gpt_names), "llama": (llama_loss, llama_names)}


# ---- the optimizer and the schedule ----

PUBLISHED = {
    "decay": "dim>=2",        # nanoGPT's configure_optimizers; controls: "all", "no-embeddings" (minGPT)
    "bias_correction": True,
    "coupled_l2": False,      # torch.optim.Adam's weight_decay: g += wd p (the control)
    "eps_inside_sqrt": False,
    "clip": True,
    "clip_eps": 0.0,          # torch's clip_grad_norm_ has 1e-6 here; weft and llm.c have none
    "lr_f32": False,          # weft's adamw_step takes a double rate (the control rounds it to f32)
    "schedule_shift": 0,
    "nanogpt_warmup": False,  # nanoGPT's warm-up (it + 1) / (warmup_iters + 1); weft has llm.c's
}


def lr_at(cfg, s, nanogpt_warmup=False):
    peak, warmup, total, min_ratio = cfg["lr"], cfg["warmup"], cfg["total"], cfg["min_ratio"]
    if s < warmup:  # llm.c's get_learning_rate; nanoGPT's get_lr divides by warmup + 1
        return peak * (s + 1) / (warmup + 1 if nanogpt_warmup else warmup)
    if total == 0 or total <= warmup:
        return peak
    if s >= total:
        return peak * min_ratio
    progress = (s - warmup) / (total - warmup)
    return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress)))


def decayed(name, shape, rule):
    if rule == "all":
        return True
    if rule == "no-embeddings" and name in ("wte.weight", "wpe.weight", "embed.weight"):
        return False
    return len(shape) >= 2


def train(model, cfg, P0, tokens, targets, conv):
    """The reference's run from P0 over tokens/targets (step, micro, B, S): per-step losses,
    gradient norms before clipping, and the final parameters."""
    loss_fn = MODELS[model][0]
    conv = dict(PUBLISHED, **conv)
    P = {n: a.copy() for n, a in P0.items()}
    M = {n: np.zeros_like(a) for n, a in P.items()}
    Vm = {n: np.zeros_like(a) for n, a in P.items()}
    b1, b2, eps, wd, max_norm = cfg["beta1"], cfg["beta2"], cfg["eps"], cfg["weight_decay"], cfg["grad_clip"]
    losses, norms = [], []
    k = cfg["grad_accum"]
    for s in range(cfg["steps"]):
        G = {n: np.zeros_like(a) for n, a in P.items()}
        loss = 0.0
        for i in range(k):
            li, gi = loss_fn(P, cfg, tokens[s, i], targets[s, i])
            loss += li / k
            for n in G:
                G[n] += gi[n] / k
        norm = math.sqrt(sum(float((g * g).sum()) for g in G.values()))
        losses.append(loss)
        norms.append(norm)
        if conv["clip"]:
            factor = min(1.0, max_norm / (norm + conv["clip_eps"]))
            for n in G:
                G[n] *= factor
        lr = lr_at(cfg, s + conv["schedule_shift"], conv["nanogpt_warmup"])
        if conv["lr_f32"]:
            lr = float(np.float32(lr))
        t = s + 1
        bc1 = 1.0 - b1 ** t if conv["bias_correction"] else 1.0
        bc2 = 1.0 - b2 ** t if conv["bias_correction"] else 1.0
        for n, p in P.items():
            g = G[n]
            decay = decayed(n, p.shape, conv["decay"])
            if decay and conv["coupled_l2"]:
                g = g + wd * p
            elif decay:
                p *= 1.0 - lr * wd
            M[n] = b1 * M[n] + (1.0 - b1) * g
            Vm[n] = b2 * Vm[n] + (1.0 - b2) * g * g
            if conv["eps_inside_sqrt"]:
                denom = np.sqrt(Vm[n] / bc2 + eps)
            else:
                denom = np.sqrt(Vm[n]) / math.sqrt(bc2) + eps
            p -= lr / bc1 * M[n] / denom
    return losses, norms, P


# ---- weft's dump ----

def read_run(d, model):
    cfg = {}
    with open(os.path.join(d, model + ".config")) as f:
        for line in f:
            key, value = line.split()
            cfg[key] = value if key == "family" else (float(value) if "." in value or "e" in value else int(value))
    index = []
    with open(os.path.join(d, model + ".index")) as f:
        for line in f:
            name, off, decay, *shape = line.split()
            index.append((name, int(off), decay == "1", tuple(map(int, shape))))

    def block(path):
        data = np.fromfile(path, dtype="<f8")
        return {name: data[off:off + int(np.prod(shape))].reshape(shape).copy() for name, off, _, shape in index}

    shape = (cfg["steps"], cfg["grad_accum"], cfg["batch"], cfg["seq"])
    tokens = np.fromfile(os.path.join(d, model + ".tokens.bin"), dtype="<i4").reshape(shape)
    targets = np.fromfile(os.path.join(d, model + ".targets.bin"), dtype="<i4").reshape(shape)
    steps = np.loadtxt(os.path.join(d, model + ".steps"), dtype=np.float64).reshape(cfg["steps"], 3)
    return {"cfg": cfg, "index": index, "init": block(os.path.join(d, model + ".init.bin")),
            "final": block(os.path.join(d, model + ".final.bin")), "tokens": tokens, "targets": targets,
            "loss": steps[:, 0], "grad_norm": steps[:, 1], "lr": steps[:, 2]}


# ---- checks ----

def check_gradients(model, run):
    """The hand-written backward against central differences, at weft's final (trained)
    parameters on the first micro-batch: one random direction inside each tensor, and three
    across all of them."""
    loss_fn = MODELS[model][0]
    cfg, P = run["cfg"], run["final"]
    tok, tgt = run["tokens"][0, 0], run["targets"][0, 0]
    _, G = loss_fn(P, cfg, tok, tgt)
    rng = np.random.default_rng(5)
    directions = []
    for n in P:
        u = {m: np.zeros_like(a) for m, a in P.items()}
        u[n] = rng.standard_normal(P[n].shape)
        directions.append((n, u))
    for i in range(3):
        directions.append((f"all tensors #{i}", {m: rng.standard_normal(a.shape) for m, a in P.items()}))
    worst = 0.0
    for what, u in directions:
        scale = math.sqrt(sum(float((x * x).sum()) for x in u.values()))
        u = {m: x / scale for m, x in u.items()}  # unit length
        plus = loss_fn({m: P[m] + FD_STEP * u[m] for m in P}, cfg, tok, tgt, grad=False)
        minus = loss_fn({m: P[m] - FD_STEP * u[m] for m in P}, cfg, tok, tgt, grad=False)
        fd = (plus - minus) / (2 * FD_STEP)
        analytic = sum(float((G[m] * u[m]).sum()) for m in P)
        # Against the gradient's norm over the direction's support: a directional derivative
        # can be near 0 by chance; the norm says what size an error would have to be.
        gnorm = math.sqrt(sum(float((G[m] * G[m]).sum()) for m in P if np.any(u[m])))
        err = abs(fd - analytic) / max(gnorm, 1e-300)
        worst = max(worst, err)
        if not err <= FD_TOLERANCE:
            raise Mismatch(f"{model}: the reference's backward differs from finite differences along {what}: "
                           f"analytic {analytic:.12e}, central difference {fd:.12e} (gradient norm {gnorm:.3e})")
    print(f"{model}: reference backward = central differences along {len(directions)} directions "
          f"(worst {worst:.1e} of the gradient norm, tolerance {FD_TOLERANCE:.0e})")


def compare(model, run, ref):
    """The largest relative difference between weft's run and a reference run, and the first
    step or tensor over the tolerance (else where the largest is)."""
    losses, norms, P = ref
    worst, where, first = 0.0, None, None

    def note(e, what):
        nonlocal worst, where, first
        if e > worst:
            worst, where = e, what
        if e > TOLERANCE and first is None:
            first = what

    for s in range(run["cfg"]["steps"]):
        for what, w, r in (("loss", run["loss"][s], losses[s]), ("gradient norm", run["grad_norm"][s], norms[s])):
            note(abs(w - r) / abs(r), f"step {s} {what}: weft {w:.15g}, reference {r:.15g}")
    for name, _, _, _ in run["index"]:
        w, r = run["final"][name], P[name]
        i = np.unravel_index(int(np.argmax(np.abs(w - r))), r.shape)
        note(float(np.abs(w - r)[i]) / float(np.max(np.abs(r))),
             f"final {name}{[int(j) for j in i]}: weft {w[i]:.15g}, reference {r[i]:.15g}")
    return worst, first or where


def check_model(model, d):
    run = read_run(d, model)
    cfg = run["cfg"]
    names = MODELS[model][1](cfg)
    got = [n for n, _, _, _ in run["index"]]
    if sorted(got) != sorted(names):
        raise Mismatch(f"{model}: parameter names {sorted(set(got) ^ set(names))} differ from the reference's")
    # weft's decay flags against nanoGPT's rule (dim >= 2)
    for name, _, decay, shape in run["index"]:
        if decay != decayed(name, shape, "dim>=2"):
            raise Mismatch(f"{model}: weft {'decays' if decay else 'does not decay'} {name} {list(shape)}; "
                           f"nanoGPT's rule (dim >= 2) says the opposite")
    # weft's reported rates against the schedule (unrounded, as step_metrics reports them)
    for s in range(cfg["steps"]):
        if abs(run["lr"][s] - lr_at(cfg, s)) > 1e-15 * lr_at(cfg, s):
            raise Mismatch(f"{model}: step {s} learning rate {run['lr'][s]:.17g}, schedule {lr_at(cfg, s):.17g}")
    clipped = sum(n > cfg["grad_clip"] for n in run["grad_norm"])
    if not 0 < clipped < cfg["steps"]:
        raise Mismatch(f"{model}: clipping triggered on {clipped} of {cfg['steps']} steps; the check needs both")
    check_gradients(model, run)

    worst, where = compare(model, run, train(model, cfg, run["init"], run["tokens"], run["targets"], {}))
    print(f"{model}: {cfg['steps']} steps x {cfg['grad_accum']} micro-batches, clipped on {clipped}: "
          f"losses {run['loss'][0]:.4f} -> {run['loss'][-1]:.4f}; max relative |weft - reference| = {worst:.2e} "
          f"(tolerance {TOLERANCE:.0e})")
    if not worst <= TOLERANCE:
        raise Mismatch(f"{model}: weft's training differs from the reference; {where}")
    moved = max(float(np.max(np.abs(run["final"][n] - run["init"][n]))) for n in names)
    if not moved > 1e-3:
        raise Mismatch(f"{model}: the parameters hardly moved ({moved:.1e}); the check would be weak")

    # Negative controls: one published detail changed must miss by far.
    controls = [("1-D tensors decayed too", {"decay": "all"}),
                ("no bias correction", {"bias_correction": False}),
                ("L2-coupled decay (torch.optim.Adam)", {"coupled_l2": True}),
                ("eps inside the square root", {"eps_inside_sqrt": True}),
                ("no clipping", {"clip": False}),
                ("schedule one step late", {"schedule_shift": 1})]
    if model == "gpt":
        controls.append(("embeddings not decayed (minGPT)", {"decay": "no-embeddings"}))
    else:
        controls.append(("embedding not decayed (minGPT)", {"decay": "no-embeddings"}))
    for what, conv in controls:
        wrong, _ = compare(model, run, train(model, cfg, run["init"], run["tokens"], run["targets"], conv))
        print(f"  control ({what}): max relative difference {wrong:.2e}")
        if not wrong > CONTROL_MARGIN * TOLERANCE:
            raise Mismatch(f"{model}: the control '{what}' also matches, so the comparison cannot tell")
    # Conventions the comparison pins to weft's choice, with how far the alternative lies.
    as_f32 = {k: float(np.float32(cfg[k])) for k in ("lr", "beta1", "beta2", "eps", "weight_decay")}
    for what, conv, c in (("torch's clip_grad_norm_ (+1e-6)", {"clip_eps": 1e-6}, cfg),
                          ("hyperparameters and rate rounded to f32", {"lr_f32": True}, dict(cfg, **as_f32)),
                          ("nanoGPT's warm-up, (it + 1) / (warmup + 1)", {"nanogpt_warmup": True}, cfg)):
        other = train(model, c, run["init"], run["tokens"], run["targets"], conv)
        worst_other, _ = compare(model, run, other)
        dloss = float(np.max(np.abs(np.array(other[0]) - run["loss"])))
        print(f"  note ({what}): max relative difference {worst_other:.2e}, losses differ by up to {dloss:.1e}")


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "all":
        print(__doc__)
        return 2
    binary, scratch = sys.argv[2], sys.argv[3]
    os.makedirs(scratch, exist_ok=True)
    subprocess.run([binary, scratch], check=True)
    try:
        for model in ("gpt", "llama"):
            check_model(model, scratch)
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        return 1
    print("reference trainer: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
