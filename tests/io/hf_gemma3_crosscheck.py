#!/usr/bin/env python3
"""Cross-check weft's Hugging Face Gemma 3 text weights (Gemma3ForCausalLM) against transformers.

Needs the PyPI packages `safetensors` and `numpy` (not torch or transformers: the names, shapes
and the forward pass of transformers' Gemma3ForCausalLM, model_type gemma3_text, are spelled out
below, from modeling_gemma3.py).

  hf_gemma3_crosscheck.py all <hf_gemma3_sample binary> <scratch dir>
      (a) run `sample save <dir>`: <dir>/hf/model.safetensors holds exactly the tensors
          transformers names for the sizes in <dir>/hf/config.json (no lm_head.weight: tied), with
          their shapes, and weft's logits equal a numpy forward pass over that file;
      (b) write random weights in that layout as two shards and a model.safetensors.index.json
          (with an lm_head.weight equal to the embedding, as some exports keep), run
          `sample load <dir>`, and check weft's logits against the numpy forward pass over them;
      (c) negative controls: the forward pass with RMSNorm x̂·w (without Gemma's + 1), with every
          layer global, or with the local and global rotary bases swapped misses weft's logits by far
          (so each of them is really checked);
      (d) the loader's refusals, each one line: a missing tensor, a tensor the model lacks, an
          lm_head.weight that differs from the embedding, and config.json fields that disagree with
          the model's type, each naming the tag or the reason.

The forward pass: embedding × sqrt(hidden_size); each layer
  x += post_attention_layernorm(attn(input_layernorm(x)))
  x += post_feedforward_layernorm(down(gelu_tanh(gate(h)) · up(h))), h = pre_feedforward_layernorm(x)
with every RMSNorm x̂·(1 + w) (q_norm and k_norm per head, before the rotary embedding), layer i
global when layer_types[i] is "full_attention" ((i + 1) % sliding_window_pattern == 0): causal,
rope_theta, rope_scaling linear (inv_freq / factor); otherwise local: keys j with i - j <
sliding_window, rope_local_base_freq, unscaled; grouped-query attention, scores ×
query_pre_attn_scalar^-1/2; a final norm and the head tied to the embedding.

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


# ---- transformers' Gemma 3 (text), written out ----

def state_shapes(cfg):
    """name -> shape of Gemma3ForCausalLM's weights, nn.Linear (out, in); the head is tied."""
    C, V, L, F = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    H, KVH, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    s = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    for i in range(L):
        p = f"model.layers.{i}."
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            s[p + norm + ".weight"] = (C,)
        s[p + "self_attn.q_proj.weight"] = (H * D, C)
        s[p + "self_attn.k_proj.weight"] = (KVH * D, C)
        s[p + "self_attn.v_proj.weight"] = (KVH * D, C)
        s[p + "self_attn.o_proj.weight"] = (C, H * D)
        s[p + "self_attn.q_norm.weight"] = (D,)
        s[p + "self_attn.k_norm.weight"] = (D,)
        s[p + "mlp.gate_proj.weight"] = (F, C)
        s[p + "mlp.up_proj.weight"] = (F, C)
        s[p + "mlp.down_proj.weight"] = (C, F)
    return s


def gemma_norm(x, w, eps, unit_offset=True):
    """Gemma3RMSNorm: x / sqrt(mean(x²) + eps) · (1 + w); without the + 1 for the negative control."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * ((1.0 + w) if unit_offset else w)


def gelu_tanh(x):
    """gelu_pytorch_tanh."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_is_global(cfg, i):
    types = cfg.get("layer_types")
    if types:
        return types[i] == "full_attention"
    return (i + 1) % cfg["sliding_window_pattern"] == 0


def rotary(cfg, S, is_global, swap_bases=False):
    D = cfg["head_dim"]
    base = cfg["rope_theta"] if is_global else cfg["rope_local_base_freq"]
    if swap_bases:
        base = cfg["rope_local_base_freq"] if is_global else cfg["rope_theta"]
    inv = 1.0 / base ** (np.arange(0, D, 2, dtype=np.float64) / D)
    rs = cfg.get("rope_scaling")
    if is_global and rs and rs.get("rope_type", rs.get("type")) == "linear":
        inv = inv / rs["factor"]
    angles = np.arange(S, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([angles, angles], axis=-1)
    return np.cos(emb)[None, None], np.sin(emb)[None, None]  # (1, 1, S, D)


def forward(w, cfg, tokens, unit_offset=True, all_global=False, swap_bases=False):
    """Gemma3ForCausalLM's logits (batch, seq, vocab) in float64."""
    C, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    H, KVH, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, window = cfg["rms_norm_eps"], cfg["sliding_window"]
    f = lambda n: w[n].astype(np.float64)
    norm = lambda x, n: gemma_norm(x, f(n), eps, unit_offset)
    B, S = tokens.shape
    x = f("model.embed_tokens.weight")[tokens] * math.sqrt(C)
    i_idx, j_idx = np.arange(S)[:, None], np.arange(S)[None, :]
    causal = j_idx <= i_idx
    local = causal & (i_idx - j_idx < window)
    for i in range(L):
        p = f"model.layers.{i}."
        glob = all_global or layer_is_global(cfg, i)
        h = norm(x, p + "input_layernorm.weight")
        q = (h @ f(p + "self_attn.q_proj.weight").T).reshape(B, S, H, D).transpose(0, 2, 1, 3)
        k = (h @ f(p + "self_attn.k_proj.weight").T).reshape(B, S, KVH, D).transpose(0, 2, 1, 3)
        v = (h @ f(p + "self_attn.v_proj.weight").T).reshape(B, S, KVH, D).transpose(0, 2, 1, 3)
        q = norm(q, p + "self_attn.q_norm.weight")
        k = norm(k, p + "self_attn.k_norm.weight")
        cos, sin = rotary(cfg, S, glob, swap_bases)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, H // KVH, axis=1)
        v = np.repeat(v, H // KVH, axis=1)
        scores = np.einsum("bhsd,bhtd->bhst", q, k) * cfg["query_pre_attn_scalar"] ** -0.5
        scores = np.where((causal if glob else local)[None, None], scores, -np.inf)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        attn = np.einsum("bhst,bhtd->bhsd", probs, v).transpose(0, 2, 1, 3).reshape(B, S, H * D)
        attn = attn @ f(p + "self_attn.o_proj.weight").T
        x = x + norm(attn, p + "post_attention_layernorm.weight")
        h = norm(x, p + "pre_feedforward_layernorm.weight")
        mlp = (gelu_tanh(h @ f(p + "mlp.gate_proj.weight").T) * (h @ f(p + "mlp.up_proj.weight").T))
        mlp = mlp @ f(p + "mlp.down_proj.weight").T
        x = x + norm(mlp, p + "post_feedforward_layernorm.weight")
    x = norm(x, "model.norm.weight")
    return x @ f("model.embed_tokens.weight").T


PASS = 2e-5


def main(argv):
    if len(argv) != 4 or argv[1] != "all":
        print(__doc__)
        return 2
    sample, scratch = argv[2], argv[3]
    batch, seq = 2, 8
    # (a) weft's file: the names, shapes, config and the forward pass
    a = os.path.join(scratch, "a")
    os.makedirs(a, exist_ok=True)
    run([sample, "save", a])
    with open(os.path.join(a, "hf", "config.json")) as fh:
        cfg = json.load(fh)
    expect(cfg["architectures"] == ["Gemma3ForCausalLM"] and cfg["model_type"] == "gemma3_text",
           f"config.json: architectures {cfg.get('architectures')}, model_type {cfg.get('model_type')}")
    expect(cfg["hidden_activation"] == "gelu_pytorch_tanh" and cfg["tie_word_embeddings"] is True and
           cfg["final_logit_softcapping"] is None and cfg["attn_logit_softcapping"] is None and
           cfg["query_pre_attn_scalar"] == cfg["head_dim"],
           "config.json: hidden_activation, tie_word_embeddings, soft-capping or query_pre_attn_scalar is not Gemma 3's")
    expect(cfg["layer_types"] == ["full_attention" if (i + 1) % cfg["sliding_window_pattern"] == 0 else "sliding_attention"
                                  for i in range(cfg["num_hidden_layers"])], f"config.json: layer_types {cfg['layer_types']}")
    expect(cfg["rope_scaling"] == {"rope_type": "linear", "factor": 2.0}, f"config.json: rope_scaling {cfg['rope_scaling']}")
    saved = load_file(os.path.join(a, "hf", "model.safetensors"))
    shapes = state_shapes(cfg)
    expect(set(saved) == set(shapes), f"tensors differ: extra {sorted(set(saved) - set(shapes))}, "
                                      f"missing {sorted(set(shapes) - set(saved))}")
    for n, s in shapes.items():
        expect(saved[n].shape == s, f"{n}: shape {saved[n].shape}, transformers has {s}")
        expect(saved[n].dtype == np.float32, f"{n}: dtype {saved[n].dtype}")
    print(f"ok: {len(shapes)} tensors with transformers' names and shapes (gemma3_text, "
          f"{cfg['num_attention_heads']} heads and {cfg['num_key_value_heads']} kv head of {cfg['head_dim']}, "
          f"{cfg['num_hidden_layers']} layers, pattern {cfg['sliding_window_pattern']}, window {cfg['sliding_window']})")
    tokens = sample_tokens(cfg, batch, seq)
    saved_logits = os.path.join(a, "saved.logits.bin")
    compare_logits(saved_logits, forward(saved, cfg, tokens), "saved checkpoint", tolerance=PASS)

    # (b) random weights in two shards and an index, with a tied lm_head copy: the loader
    b = os.path.join(scratch, "b")
    os.makedirs(b, exist_ok=True)
    rng = np.random.default_rng(11)
    rand = {}
    for n, s in shapes.items():
        if n.endswith("norm.weight"):
            rand[n] = (0.3 * rng.standard_normal(s)).astype(np.float32)  # w of x̂·(1 + w)
        elif n == "model.embed_tokens.weight":
            rand[n] = (0.5 * rng.standard_normal(s)).astype(np.float32)
        else:
            rand[n] = (0.8 * rng.standard_normal(s) / math.sqrt(s[-1])).astype(np.float32)
    names = sorted(rand)
    half = len(names) // 2
    stored = dict(rand, **{"lm_head.weight": rand["model.embed_tokens.weight"].copy()})
    shards = {"model-00001-of-00002.safetensors": names[:half],
              "model-00002-of-00002.safetensors": names[half:] + ["lm_head.weight"]}
    weight_map = {}
    for file, part in shards.items():
        save_file({n: stored[n] for n in part}, os.path.join(b, file), metadata={"format": "pt"})
        weight_map.update({n: file for n in part})
    with open(os.path.join(b, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {}, "weight_map": weight_map}, fh)
    with open(os.path.join(b, "config.json"), "w") as fh:  # checked against the model's type by the loader
        json.dump(cfg, fh)
    run([sample, "load", b, os.path.join(b, "loaded")])
    loaded_logits = os.path.join(b, "loaded.logits.bin")
    compare_logits(loaded_logits, forward(rand, cfg, tokens), "sharded random checkpoint (tied lm_head copy)",
                   tolerance=PASS)

    # (c) negative controls, on both checkpoints
    controls = [
        ("RMSNorm x̂·w (no + 1)", dict(unit_offset=False)),
        ("every layer global", dict(all_global=True)),
        ("the local and global rotary bases swapped", dict(swap_bases=True)),
    ]
    for what, kw in controls:
        for path, weights in ((saved_logits, saved), (loaded_logits, rand)):
            err = relative_error(path, forward(weights, cfg, tokens, **kw))
            expect(err > 1e-3, f"negative control: with {what} the logits are within {err:.3g} of weft's (must miss by 1e-3)")
        print(f"ok: negative control: with {what} the logits differ by {err:.2g} (more than 1e-3)")

    # (d) refusals, each one line
    d = os.path.join(scratch, "d")
    os.makedirs(d, exist_ok=True)
    missing = {n: t for n, t in rand.items() if n != "model.layers.1.self_attn.k_norm.weight"}
    save_file(missing, os.path.join(d, "missing.safetensors"), metadata={"format": "pt"})
    run([sample, "load", os.path.join(d, "missing.safetensors"), os.path.join(d, "x")], must_fail=True,
        contains="has no tensor 'model.layers.1.self_attn.k_norm.weight'")
    extra = dict(rand, **{"model.layers.0.self_attn.q_proj.bias": np.zeros(16, dtype=np.float32)})
    save_file(extra, os.path.join(d, "extra.safetensors"), metadata={"format": "pt"})
    run([sample, "load", os.path.join(d, "extra.safetensors"), os.path.join(d, "y")], must_fail=True,
        contains="has no parameter for")
    head = dict(rand, **{"lm_head.weight": rand["model.embed_tokens.weight"] + 1})
    save_file(head, os.path.join(d, "head.safetensors"), metadata={"format": "pt"})
    run([sample, "load", os.path.join(d, "head.safetensors"), os.path.join(d, "w")], must_fail=True,
        contains="differs from its embedding")
    no_types = {"layer_types": None}
    bad_configs = [
        ("type", {"model_type": "gemma3"}, "gemma3_text"),
        ("heads", {"num_attention_heads": 4}, "heads<4>"),
        ("kv_heads", {"num_key_value_heads": 2}, "kv_heads<2>"),
        ("head_dim", {"head_dim": 4}, "head_dim<4>"),
        ("width", {"hidden_size": 32}, "width<32>"),
        ("window", {"sliding_window": 4}, "sliding_window<4>"),
        ("pattern", dict(no_types, sliding_window_pattern=3), "layer_pattern<3>"),
        ("layer_types", {"layer_types": ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"]},
         "layer_pattern<3>"),
        ("aperiodic", {"layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"]},
         "not periodic"),
        ("theta", {"rope_theta": 10000.0}, "rope_theta<10000>"),
        ("local_base", {"rope_local_base_freq": 10000.0}, "rope_local_base_freq<10000>"),
        ("no_scaling", {"rope_scaling": None}, "without rope_scaling<>"),
        ("factor", {"rope_scaling": {"rope_type": "linear", "factor": 8.0}}, "rope_scaling<linear_rope_scaling<8>>"),
        ("yarn", {"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}, "linearly only"),
        ("eps", {"rms_norm_eps": 1e-6}, "norm_eps<1e-06>"),
        ("scalar", {"query_pre_attn_scalar": 16}, "query_pre_attn_scalar is 16"),
        ("act", {"hidden_activation": "gelu"}, "gelu_pytorch_tanh"),
        ("final_cap", {"final_logit_softcapping": 30.0}, "final_logit_softcapping is set"),
        ("attn_cap", {"attn_logit_softcapping": 50.0}, "attn_logit_softcapping is set"),
        ("untied", {"tie_word_embeddings": False}, "tied"),
    ]
    for what, change, message in bad_configs:
        dd = os.path.join(d, "config_" + what)
        os.makedirs(dd, exist_ok=True)
        save_file(rand, os.path.join(dd, "model.safetensors"), metadata={"format": "pt"})
        c = {k: v for k, v in dict(cfg, **change).items() if not (k in change and v is None and k == "layer_types")}
        with open(os.path.join(dd, "config.json"), "w") as fh:
            json.dump(c, fh)
        run([sample, "load", dd, os.path.join(dd, "z")], must_fail=True, contains=message)
    print(f"ok: {len(bad_configs)} config.json mismatches refused")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        sys.exit(1)
