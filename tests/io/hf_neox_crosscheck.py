#!/usr/bin/env python3
"""Cross-check weft's Hugging Face GPT-NeoX weights (Pythia) against transformers' layout.

Needs the PyPI packages `safetensors` and `numpy` (not torch or transformers: the names, shapes
and the forward pass of transformers' GPTNeoXForCausalLM with use_parallel_residual = true are
spelled out below, from modeling_gpt_neox.py).

  hf_neox_crosscheck.py all <hf_neox_sample binary> <scratch dir>
      (a) run `sample save <dir>`: <dir>/hf/model.safetensors holds exactly the tensors
          transformers names for the sizes in <dir>/hf/config.json, with their shapes, and weft's
          logits equal a numpy forward pass over that file, which reads query_key_value's rows
          grouped by head, view(heads, 3, head_size), as transformers does;
      (b) write random weights in that layout as two shards and a model.safetensors.index.json,
          with the buffers older checkpoints carry (attention.bias, attention.masked_bias,
          attention.rotary_emb.inv_freq), run `sample load <dir>`, and check weft's logits
          against the numpy forward pass over them;
      (c) negative controls: the forward pass with q|k|v packed whole (not grouped by head), with
          the tanh GELU, with the whole head rotating, or with layer_norm_eps 1e-5 misses weft's
          logits by far (so each of them is really checked);
      (d) the loader's refusals, each one line: a missing tensor, a tensor the model lacks, and a
          config.json that disagrees with the model's type (model_type, heads, rotary_pct,
          rotary_emb_base, layer_norm_eps, use_parallel_residual, hidden_act, tie_word_embeddings,
          attention_bias, rope_scaling), each naming the tag or the reason.

Exit status 0 when everything matches; 1 on the first mismatch (printed); 2 on usage errors;
77 (skip) when `safetensors` or `numpy` is missing; 1 instead under WEFT_REQUIRE_REFERENCES=1 (CI:
tests/common/reference_skip.py).
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the shared pieces (numpy and safetensors are imported there; without them it exits 77, a skip, or 1 in CI)
from hf_llama_crosscheck import (Mismatch, compare_logits, expect, np, relative_error,  # noqa: E402
                                 rotate_half, run, sample_tokens)
from safetensors.numpy import load_file, save_file  # noqa: E402


# ---- transformers' GPT-NeoX, written out ----

def state_shapes(cfg):
    """name -> shape of GPTNeoXForCausalLM's weights (modeling_gpt_neox.py), nn.Linear (out, in)."""
    C, V, L, F = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    s = {"gpt_neox.embed_in.weight": (V, C), "gpt_neox.final_layer_norm.weight": (C,),
         "gpt_neox.final_layer_norm.bias": (C,), "embed_out.weight": (V, C)}
    for i in range(L):
        p = f"gpt_neox.layers.{i}."
        for norm in ("input_layernorm", "post_attention_layernorm"):
            s[p + norm + ".weight"] = (C,)
            s[p + norm + ".bias"] = (C,)
        for name, (rows, cols) in (("attention.query_key_value", (3 * C, C)), ("attention.dense", (C, C)),
                                   ("mlp.dense_h_to_4h", (F, C)), ("mlp.dense_4h_to_h", (C, F))):
            s[p + name + ".weight"] = (rows, cols)
            s[p + name + ".bias"] = (rows,)
    return s


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


_erf = np.vectorize(math.erf)


def gelu_erf(x):
    """hidden_act "gelu": torch's exact GELU, 0.5 x (1 + erf(x / sqrt 2))."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    """"gelu_new" (GPT-2's): the negative control."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))



def forward(w, cfg, tokens, qkv_grouped=True, gelu=gelu_erf, full_rotary=False):
    """GPTNeoXForCausalLM's logits (batch, seq, vocab) in float64, use_parallel_residual = true:
    x + attention(input_layernorm(x)) + mlp(post_attention_layernorm(x))."""
    C, L, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    D = C // H
    R = D if full_rotary else int(D * cfg["rotary_pct"])  # rotary_ndims
    eps, base = cfg["layer_norm_eps"], cfg["rotary_emb_base"]
    f = lambda n: w[n].astype(np.float64)
    B, S = tokens.shape
    x = f("gpt_neox.embed_in.weight")[tokens]
    inv = 1.0 / base ** (np.arange(0, R, 2, dtype=np.float64) / R)  # GPTNeoXRotaryEmbedding(dim=rotary_ndims)
    angles = np.arange(S, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.cos(np.concatenate([angles, angles], axis=-1))[None, None]  # (1, 1, S, R)
    sin = np.sin(np.concatenate([angles, angles], axis=-1))[None, None]
    mask = np.tril(np.ones((S, S), dtype=bool))
    for i in range(L):
        p = f"gpt_neox.layers.{i}."
        lin = lambda name, inp: inp @ f(p + name + ".weight").T + f(p + name + ".bias")
        h1 = layer_norm(x, f(p + "input_layernorm.weight"), f(p + "input_layernorm.bias"), eps)
        qkv = lin("attention.query_key_value", h1)  # (B, S, 3C)
        if qkv_grouped:  # transformers: view(B, S, H, 3 * D), then split the last axis in three
            qkv = qkv.reshape(B, S, H, 3, D).transpose(0, 2, 3, 1, 4)  # (B, H, 3, S, D)
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        else:  # negative control: all q rows, then all k, then all v
            qkv = qkv.reshape(B, S, 3, H, D).transpose(0, 2, 3, 1, 4)  # (B, 3, H, S, D)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        # rotary on the first R of each head, rotate-half within them; the rest passes through
        q = np.concatenate([q[..., :R] * cos + rotate_half(q[..., :R]) * sin, q[..., R:]], axis=-1)
        k = np.concatenate([k[..., :R] * cos + rotate_half(k[..., :R]) * sin, k[..., R:]], axis=-1)
        scores = np.einsum("bhsd,bhtd->bhst", q, k) / math.sqrt(D)
        scores = np.where(mask[None, None], scores, -np.inf)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        attn = np.einsum("bhst,bhtd->bhsd", probs, v).transpose(0, 2, 1, 3).reshape(B, S, C)
        attn = lin("attention.dense", attn)
        h2 = layer_norm(x, f(p + "post_attention_layernorm.weight"), f(p + "post_attention_layernorm.bias"), eps)
        mlp = lin("mlp.dense_4h_to_h", gelu(lin("mlp.dense_h_to_4h", h2)))
        x = x + attn + mlp
    x = layer_norm(x, f("gpt_neox.final_layer_norm.weight"), f("gpt_neox.final_layer_norm.bias"), eps)
    return x @ f("embed_out.weight").T


# weft's f32 logits land within ~2e-7 of the f64 forward pass; the tolerance is ten times that, so
# that the tanh GELU's smaller change to the logits (~1e-4) is still well outside it.
PASS = 2e-6


def compare_logits_neox(path, ref, what):
    return compare_logits(path, ref, what, tolerance=PASS)


def main(argv):
    if len(argv) != 4 or argv[1] != "all":
        print(__doc__)
        return 2
    sample, scratch = argv[2], argv[3]
    batch, seq = 2, 12
    # (a) weft's file: the names, shapes, config and the forward pass
    a = os.path.join(scratch, "a")
    os.makedirs(a, exist_ok=True)
    run([sample, "save", a])
    with open(os.path.join(a, "hf", "config.json")) as fh:
        cfg = json.load(fh)
    expect(cfg["architectures"] == ["GPTNeoXForCausalLM"] and cfg["model_type"] == "gpt_neox",
           f"config.json: architectures {cfg.get('architectures')}, model_type {cfg.get('model_type')}")
    expect(cfg["use_parallel_residual"] is True and cfg["hidden_act"] == "gelu" and cfg["tie_word_embeddings"] is False,
           "config.json: use_parallel_residual, hidden_act or tie_word_embeddings is not GPT-NeoX's")
    saved = load_file(os.path.join(a, "hf", "model.safetensors"))
    shapes = state_shapes(cfg)
    expect(set(saved) == set(shapes), f"tensors differ: extra {sorted(set(saved) - set(shapes))}, "
                                      f"missing {sorted(set(shapes) - set(saved))}")
    for n, s in shapes.items():
        expect(saved[n].shape == s, f"{n}: shape {saved[n].shape}, transformers has {s}")
        expect(saved[n].dtype == np.float32, f"{n}: dtype {saved[n].dtype}")
    print(f"ok: {len(shapes)} tensors with transformers' names and shapes (gpt_neox, "
          f"{cfg['num_attention_heads']} heads of {cfg['hidden_size'] // cfg['num_attention_heads']}, "
          f"rotary_pct {cfg['rotary_pct']})")
    tokens = sample_tokens(cfg, batch, seq)
    saved_logits = os.path.join(a, "saved.logits.bin")
    compare_logits_neox(saved_logits, forward(saved, cfg, tokens), "saved checkpoint")

    # (b) random weights in two shards and an index, with the old buffers: the loader
    b = os.path.join(scratch, "b")
    os.makedirs(b, exist_ok=True)
    rng = np.random.default_rng(11)
    rand = {}
    for n, s in shapes.items():
        if "layernorm" in n or "layer_norm" in n:
            rand[n] = ((1.0 if n.endswith("weight") else 0.0) + 0.2 * rng.standard_normal(s)).astype(np.float32)
        elif n.endswith(".bias"):
            rand[n] = (0.2 * rng.standard_normal(s)).astype(np.float32)
        else:
            rand[n] = (0.6 * rng.standard_normal(s) / math.sqrt(s[-1])).astype(np.float32)
    rand["gpt_neox.embed_in.weight"] *= 4  # embeddings are not scaled by fan-in
    S0, D = cfg["max_position_embeddings"], cfg["hidden_size"] // cfg["num_attention_heads"]
    R = int(D * cfg["rotary_pct"])
    buffers = {}
    for i in range(cfg["num_hidden_layers"]):
        p = f"gpt_neox.layers.{i}.attention."
        buffers[p + "bias"] = np.tril(np.ones((S0, S0), dtype=np.uint8))[None, None].astype(np.bool_)
        buffers[p + "masked_bias"] = np.array(-1e9, dtype=np.float32)
        buffers[p + "rotary_emb.inv_freq"] = (1.0 / cfg["rotary_emb_base"] ** (np.arange(0, R, 2) / R)).astype(np.float32)
    names = sorted(rand)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half] + sorted(buffers),
              "model-00002-of-00002.safetensors": names[half:]}
    both = dict(rand, **buffers)
    weight_map = {}
    for file, part in shards.items():
        save_file({n: both[n] for n in part}, os.path.join(b, file), metadata={"format": "pt"})
        weight_map.update({n: file for n in part})
    with open(os.path.join(b, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {}, "weight_map": weight_map}, fh)
    with open(os.path.join(b, "config.json"), "w") as fh:  # checked against the model's type by the loader
        json.dump(cfg, fh)
    run([sample, "load", b, os.path.join(b, "loaded")])
    loaded_logits = os.path.join(b, "loaded.logits.bin")
    ref = forward(rand, cfg, tokens)
    compare_logits_neox(loaded_logits, ref, "sharded random checkpoint (old buffers ignored)")

    # (c) negative controls: each variant of the forward pass misses weft's logits by far (the
    # structural ones on both checkpoints; the GELU's form, whose change is small, on the random
    # one, by more than ten times the tolerance)
    controls = [
        ("q|k|v packed whole instead of grouped by head", dict(qkv_grouped=False), cfg, 1e-3, True),
        ("the whole head rotating", dict(full_rotary=True), cfg, 1e-3, True),
        ("layer_norm_eps 1e-5", {}, dict(cfg, layer_norm_eps=1e-5), 1e-3, True),
        ("the tanh GELU (gelu_new)", dict(gelu=gelu_tanh), cfg, 10 * PASS, False),
    ]
    expect(cfg["layer_norm_eps"] != 1e-5 and cfg["rotary_pct"] < 1, "the sample's epsilon or rotary_pct is the default")
    for what, kw, c, miss, on_saved in controls:
        cases = ((saved_logits, saved), (loaded_logits, rand)) if on_saved else ((loaded_logits, rand),)
        for path, weights in cases:
            err = relative_error(path, forward(weights, c, tokens, **kw))
            expect(err > miss, f"negative control: with {what} the logits are within {err:.3g} of weft's (must miss by {miss:g})")
        print(f"ok: negative control: with {what} the logits differ by {err:.2g} (more than {miss:g})")

    # (d) refusals, each one line
    d = os.path.join(scratch, "d")
    os.makedirs(d, exist_ok=True)
    missing = {n: t for n, t in rand.items() if n != "embed_out.weight"}
    save_file(missing, os.path.join(d, "missing.safetensors"), metadata={"format": "pt"})
    run([sample, "load", os.path.join(d, "missing.safetensors"), os.path.join(d, "x")], must_fail=True,
        contains="has no tensor 'embed_out.weight'")
    extra = dict(rand, **{"gpt_neox.layers.0.attention.dense.extra": np.zeros(3, dtype=np.float32)})
    save_file(extra, os.path.join(d, "extra.safetensors"), metadata={"format": "pt"})
    run([sample, "load", os.path.join(d, "extra.safetensors"), os.path.join(d, "y")], must_fail=True,
        contains="has no parameter for")
    bad_configs = [
        ("type", {"model_type": "llama"}, "weft reads gpt_neox checkpoints"),
        ("heads", {"num_attention_heads": 4}, "heads<4>"),
        ("pct", {"rotary_pct": 0.25}, "rotary_pct<0.25>"),
        ("base", {"rotary_emb_base": 10000}, "rope_theta<10000>"),
        ("theta", {"rope_theta": 10000.0}, "rope_theta is 10000 but rotary_emb_base is"),  # two spellings disagreeing
        ("eps", {"layer_norm_eps": 1e-5}, "norm_eps<1e-05>"),
        ("sequential", {"use_parallel_residual": False}, "use_parallel_residual is false"),
        ("act", {"hidden_act": "gelu_new"}, "exact (erf) GELU"),
        ("tied", {"tie_word_embeddings": True}, "untied"),
        ("bias", {"attention_bias": False}, "have biases"),
        ("scaling", {"rope_scaling": {"type": "linear", "factor": 2.0}}, "rope_scaling"),
    ]
    for what, change, message in bad_configs:
        dd = os.path.join(d, "config_" + what)
        os.makedirs(dd, exist_ok=True)
        save_file(rand, os.path.join(dd, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(dd, "config.json"), "w") as fh:
            json.dump(dict(cfg, **change), fh)
        run([sample, "load", dd, os.path.join(dd, "z")], must_fail=True, contains=message)
    print(f"ok: {len(bad_configs)} config.json mismatches refused")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        sys.exit(1)
