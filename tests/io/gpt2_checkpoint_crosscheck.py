#!/usr/bin/env python3
"""Cross-check weft's GPT-2 checkpoints against Hugging Face transformers' GPT-2 layout.

Needs the PyPI packages `safetensors` and `numpy` (not torch or transformers: the names,
shapes and the forward pass of transformers' GPT2Model are spelled out below).

  gpt2_checkpoint_crosscheck.py all <gpt2_checkpoint_sample binary> <scratch dir>
      (a) run `sample save <dir>` and check <dir>/ckpt/model.safetensors: exactly the tensors of
          transformers' GPT2Model for the sizes in config.json (Conv1D weights (in, out)), all
          F32, metadata format "pt", values equal to weft's in-memory parameters (transposed
          for Conv1D) and weft's logits equal to a numpy GPT-2 forward pass over the file;
      (b) write a random GPT2LMHeadModel-style file with numpy ("transformer." prefix, the
          attention-mask buffers older transformers versions saved, the tied lm_head.weight),
          run `sample load <file> <prefix>`, and check every parameter weft loaded (transposed
          back for Conv1D) and its logits against the numpy forward pass.
  gpt2_checkpoint_crosscheck.py check-checkpoint <dir>
      (a) without the in-memory comparison: names, shapes and dtypes of <dir>/model.safetensors
      against <dir>/config.json.

Exit status 0 when everything matches; 1 on the first mismatch (printed); 2 on usage errors;
77 (skip) when `safetensors` or `numpy` is missing; 1 instead under WEFT_REQUIRE_REFERENCES=1 (CI:
tests/common/reference_skip.py).
"""

import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from reference_skip import require  # noqa: E402  (a missing reference: skip, or fail in CI)
require(["numpy", "safetensors", "safetensors.numpy"], "python3 -m pip install safetensors numpy")
import numpy as np  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402
from safetensors import safe_open  # noqa: E402


class Mismatch(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


# ---- transformers' GPT-2, written out ----

CONV1D = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")


def gpt2_state_shapes(cfg):
    """name -> shape of GPT2Model's state dict (modeling_gpt2.py): nn.Embedding (num, dim),
    nn.LayerNorm (dim,), Conv1D(nf, nx) weight (nx, nf) = (in, out), bias (nf,)."""
    C, V, P, L = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"], cfg["n_layer"]
    inner = cfg.get("n_inner") or 4 * C
    s = {"wte.weight": (V, C), "wpe.weight": (P, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for i in range(L):
        h = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            s[h + ln + ".weight"] = (C,)
            s[h + ln + ".bias"] = (C,)
        for mod, nx, nf in (("attn.c_attn", C, 3 * C), ("attn.c_proj", C, C),
                            ("mlp.c_fc", C, inner), ("mlp.c_proj", inner, C)):
            s[h + mod + ".weight"] = (nx, nf)
            s[h + mod + ".bias"] = (nf,)
    return s


def is_conv1d_weight(name):
    return name.endswith(".weight") and any(name.endswith(m + ".weight") for m in CONV1D)


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gpt2_logits(sd, cfg, tokens):
    """GPT2LMHeadModel's forward in float64 (eval mode): tokens (batch, seq) -> (batch, seq, vocab)."""
    sd = {k: v.astype(np.float64) for k, v in sd.items()}
    C, H, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    D = C // H
    B, S = tokens.shape
    x = sd["wte.weight"][tokens] + sd["wpe.weight"][np.arange(S)]  # (batch, seq, C)
    causal = np.tril(np.ones((S, S), dtype=bool))
    for i in range(L):
        p = lambda n: sd[f"h.{i}.{n}"]
        a = layer_norm(x, p("ln_1.weight"), p("ln_1.bias"), eps)
        qkv = a @ p("attn.c_attn.weight") + p("attn.c_attn.bias")  # Conv1D: x @ W(in, out) + b
        q, k, v = np.split(qkv, 3, axis=-1)                          # GPT2Attention: split(n_embd, dim=2)
        heads = lambda t: t.reshape(B, S, H, D).transpose(0, 2, 1, 3)  # (batch, head, seq, D)
        q, k, v = heads(q), heads(k), heads(v)
        w = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D)
        w = np.where(causal, w, -np.inf)
        w = np.exp(w - w.max(-1, keepdims=True))
        w = w / w.sum(-1, keepdims=True)
        y = (w @ v).transpose(0, 2, 1, 3).reshape(B, S, C)
        x = x + y @ p("attn.c_proj.weight") + p("attn.c_proj.bias")
        m = layer_norm(x, p("ln_2.weight"), p("ln_2.bias"), eps)
        m = gelu_new(m @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias"))
        x = x + m @ p("mlp.c_proj.weight") + p("mlp.c_proj.bias")
    x = layer_norm(x, sd["ln_f.weight"], sd["ln_f.bias"], eps)
    return x @ sd["wte.weight"].T  # lm_head tied to wte


def sample_tokens(cfg, batch, seq):
    """The tokens gpt2_checkpoint_sample computes its logits for."""
    i = np.arange(batch * seq)
    return ((7 * i + 3) % cfg["vocab_size"]).reshape(batch, seq)


# ---- weft's dumps ----

def read_dump(prefix):
    """weft's parameters: name -> (array in weft's shape and layout), from <prefix>.params.{bin,index}."""
    block = np.fromfile(prefix + ".params.bin", dtype="<f4")
    params = {}
    with open(prefix + ".params.index") as f:
        for line in f:
            parts = line.split()
            name, offset, shape = parts[0], int(parts[1]), tuple(int(d) for d in parts[2:])
            n = int(np.prod(shape))
            expect(offset + n <= block.size, f"dump index: {name} lies past the parameter block")
            params[name] = block[offset:offset + n].reshape(shape)
    return params


def read_logits(prefix, cfg):
    logits = np.fromfile(prefix + ".logits.bin", dtype="<f4")
    rows = logits.size // cfg["vocab_size"]
    return logits.reshape(rows, cfg["vocab_size"])


def expect_close_logits(what, got, want):
    """weft computes in float32 (own reduction order), the reference here in float64."""
    err = np.abs(got.astype(np.float64) - want).max()
    scale = max(1.0, np.abs(want).max())
    expect(err <= 1e-4 * scale, f"{what}: logits differ from the numpy GPT-2 forward by {err:.3g} (scale {scale:.3g})")


def bitwise_equal(name, got, want):
    expect(got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}")
    if got.tobytes() != want.tobytes():
        g, w = got.reshape(-1), want.reshape(-1)
        i = int(np.nonzero(g.view(np.uint32) != w.view(np.uint32))[0][0])
        raise Mismatch(f"{name}: element {i} (flat) is {g[i]!r}, expected {w[i]!r}")


# ---- (a) weft writes, checked against GPT-2's definition ----

def check_checkpoint(ckpt):
    """Names, shapes, dtypes and metadata of ckpt/model.safetensors; returns (config, tensors)."""
    with open(os.path.join(ckpt, "config.json")) as f:
        cfg = json.load(f)  # must parse
    expect(cfg.get("model_type") == "gpt2", f"config.json: model_type {cfg.get('model_type')!r}")
    for key in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"):
        expect(isinstance(cfg.get(key), int) and cfg[key] > 0, f"config.json: {key} is {cfg.get(key)!r}")
    expect(cfg.get("activation_function") == "gelu_new", "config.json: activation_function is not gelu_new")
    expect(cfg.get("tie_word_embeddings", True), "config.json: tie_word_embeddings is false")
    path = os.path.join(ckpt, "model.safetensors")
    want = gpt2_state_shapes(cfg)
    with safe_open(path, framework="np") as f:
        names = set(f.keys())
        meta = f.metadata() or {}
    missing, extra = sorted(set(want) - names), sorted(names - set(want))
    expect(not missing, f"model.safetensors lacks {missing}")
    expect(not extra, f"model.safetensors has tensors GPT2Model does not: {extra}")
    expect(meta.get("format") == "pt", f"metadata format is {meta.get('format')!r}, transformers needs 'pt'")
    tensors = load_file(path)
    for name, shape in want.items():
        expect(tensors[name].dtype == np.float32, f"{name}: dtype {tensors[name].dtype}, expected float32 (F32)")
        expect(tensors[name].shape == shape, f"{name}: shape {tensors[name].shape}, GPT2Model has {shape}")
    return cfg, tensors


def check_saved(directory):
    cfg, tensors = check_checkpoint(os.path.join(directory, "ckpt"))
    mem = read_dump(os.path.join(directory, "saved"))
    expect(set(mem) == set(tensors), f"weft's parameters {sorted(set(mem) ^ set(tensors))} differ from the file's")
    transposed = 0
    for name, t in tensors.items():
        if is_conv1d_weight(name):  # weft keeps (out, in), like torch.nn.Linear
            bitwise_equal(name + " (file vs weft's weight transposed)", t, np.ascontiguousarray(mem[name].T))
            transposed += 1
        else:
            bitwise_equal(name, t, mem[name])
    expect(transposed == 4 * cfg["n_layer"], f"{transposed} Conv1D weights")
    # The layout means what transformers means by it: weft's logits from the file's forward pass.
    logits = read_logits(os.path.join(directory, "saved"), cfg)
    tokens = sample_tokens(cfg, logits.shape[0] // cfg["n_positions"], cfg["n_positions"])
    want = gpt2_logits(tensors, cfg, tokens).reshape(logits.shape)
    expect_close_logits("weft's save", logits, want)
    print(f"(a) weft's checkpoint: {len(tensors)} GPT-2 tensors, values and forward pass match")
    return cfg


# ---- (b) a GPT2LMHeadModel-style file, weft loads ----

def write_hf_file(cfg, path, seed=1234):
    """Random GPT-2 parameters as GPT2LMHeadModel.state_dict() names them; returns them (no prefix)."""
    rng = np.random.default_rng(seed)
    sd = {}
    for name, shape in gpt2_state_shapes(cfg).items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            a = 1.0 + 0.2 * rng.standard_normal(shape)
        else:
            a = 0.3 * rng.standard_normal(shape)
        sd[name] = np.ascontiguousarray(a.astype(np.float32))
    out = {"transformer." + k: v for k, v in sd.items()}
    P = cfg["n_positions"]
    mask = np.tril(np.ones((P, P), dtype=np.float32)).reshape(1, 1, P, P)  # older transformers saved it
    for i in range(cfg["n_layer"]):
        out[f"transformer.h.{i}.attn.bias"] = mask.copy()
        out[f"transformer.h.{i}.attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
    out["lm_head.weight"] = sd["wte.weight"].copy()  # tied duplicate
    save_file(out, path, metadata={"format": "pt"})
    return sd


def check_loaded(sample, cfg, directory):
    path = os.path.join(directory, "hf_gpt2.safetensors")
    sd = write_hf_file(cfg, path)
    prefix = os.path.join(directory, "loaded")
    r = subprocess.run([sample, "load", path, prefix], capture_output=True, text=True)
    expect(r.returncode == 0, f"weft failed to load {path}: {(r.stderr or r.stdout).strip()}")
    mem = read_dump(prefix)
    expect(set(mem) == set(sd), f"weft's parameters {sorted(set(mem) ^ set(sd))} differ from GPT-2's")
    for name, t in sd.items():
        if is_conv1d_weight(name):
            bitwise_equal(name + " (weft's weight vs the file's transposed)", mem[name], np.ascontiguousarray(t.T))
        else:
            bitwise_equal(name, mem[name], t)
    logits = read_logits(prefix, cfg)
    tokens = sample_tokens(cfg, logits.shape[0] // cfg["n_positions"], cfg["n_positions"])
    expect_close_logits("weft's load", logits, gpt2_logits(sd, cfg, tokens).reshape(logits.shape))
    print(f"(b) GPT2LMHeadModel-style file: weft loaded all {len(sd)} tensors in place; forward pass matches")


def run_all(sample, directory):
    os.makedirs(directory, exist_ok=True)
    r = subprocess.run([sample, "save", directory], capture_output=True, text=True)
    expect(r.returncode == 0, f"{sample} save failed: {(r.stderr or r.stdout).strip()}")
    cfg = check_saved(directory)
    check_loaded(sample, cfg, directory)
    print("gpt2 checkpoint cross-check: OK")


def main(argv):
    try:
        if len(argv) == 4 and argv[1] == "all":
            run_all(argv[2], argv[3])
        elif len(argv) == 3 and argv[1] == "check-checkpoint":
            check_checkpoint(argv[2])
            print("checkpoint names, shapes and dtypes: OK")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except Mismatch as e:
        print(f"MISMATCH: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
