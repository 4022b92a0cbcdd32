#!/usr/bin/env python3
"""Cross-check weft's Hugging Face Mixtral and Qwen3-MoE weights against transformers' layout.

Needs the PyPI packages `safetensors` and `numpy` (not torch or transformers: the names, shapes
and the forward pass of transformers' MixtralForCausalLM and Qwen3MoeForCausalLM, in the
per-expert layout of the published checkpoints, are spelled out below; the attention and norm
helpers are hf_llama_crosscheck.py's).

  hf_moe_crosscheck.py all <hf_moe_sample binary> <scratch dir>
      for each naming (mixtral: block_sparse_moe.experts.{j}.w1/w3/w2; qwen3_moe:
      mlp.experts.{j}.gate_proj/up_proj/down_proj, with q/k norms):
      (a) run `sample save <kind> <dir>`: <dir>/hf/model.safetensors holds exactly the tensors
          transformers names for the sizes in <dir>/hf/config.json, with their shapes, the config
          says what transformers needs (experts, top-k, router_aux_loss_coef = weft's weight / k,
          norm_topk_prob), and weft's logits equal a numpy forward pass over that file;
      (b) write random weights for the same config as two shards and a
          model.safetensors.index.json, run `sample load <kind> <dir>`, and check weft's logits
          against the numpy forward pass over them; negative controls: the forward pass with w1/w3
          (gate/up) swapped, with the top-k gates not renormalised, and with the experts in reverse
          order must each miss weft's logits by far;
      (c) the loader's refusals, one line each, exit 1: config.json with another expert count,
          top-k or expert width, the other family's model_type, qwen2_moe, and for Qwen3-MoE
          norm_topk_prob false or absent, mlp_only_layers non-empty, decoder_sparse_step 2; a file
          without one expert's tensor; a file whose experts are another width.

Exit status 0 when everything matches; 1 on the first mismatch (printed); 2 on usage errors;
77 (skip) when `safetensors` or `numpy` is missing; 1 instead under WEFT_REQUIRE_REFERENCES=1 (CI:
tests/common/reference_skip.py).
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_llama_crosscheck import (Mismatch, compare_logits, expect, inv_frequencies, np, relative_error,  # noqa: E402
                                 rms_norm, rotate_half, run, sample_tokens)
from safetensors.numpy import load_file, save_file  # noqa: E402


# ---- transformers' Mixtral and Qwen3-MoE, written out ----

def moe_sizes(cfg):
    """(experts E, top-k K, expert width F, prefix of the MLP, names of gate, up, down)."""
    if cfg["model_type"] == "qwen3_moe":
        return (cfg["num_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"], "mlp.",
                ("gate_proj", "up_proj", "down_proj"))
    return (cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["intermediate_size"], "block_sparse_moe.",
            ("w1", "w3", "w2"))


def state_shapes(cfg):
    """name -> shape of MixtralForCausalLM's / Qwen3MoeForCausalLM's state dict (modeling_mixtral.py,
    modeling_qwen3_moe.py: one module per expert), nn.Linear weights (out, in)."""
    C, V, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    H, KVH, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    E, _, F, mlp, (g, u, d) = moe_sizes(cfg)
    s = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not cfg["tie_word_embeddings"]:
        s["lm_head.weight"] = (V, C)
    for i in range(L):
        p = f"model.layers.{i}."
        s[p + "input_layernorm.weight"] = (C,)
        s[p + "post_attention_layernorm.weight"] = (C,)
        s[p + "self_attn.q_proj.weight"] = (H * D, C)
        s[p + "self_attn.k_proj.weight"] = (KVH * D, C)
        s[p + "self_attn.v_proj.weight"] = (KVH * D, C)
        s[p + "self_attn.o_proj.weight"] = (C, H * D)
        if cfg["model_type"] == "qwen3_moe":
            s[p + "self_attn.q_norm.weight"] = (D,)
            s[p + "self_attn.k_norm.weight"] = (D,)
        s[p + mlp + "gate.weight"] = (E, C)
        for j in range(E):
            s[p + mlp + f"experts.{j}.{g}.weight"] = (F, C)
            s[p + mlp + f"experts.{j}.{u}.weight"] = (F, C)
            s[p + mlp + f"experts.{j}.{d}.weight"] = (C, F)
    return s


def moe_block(x, w, cfg, p, swap_gate_up=False, renormalise=True, reverse_experts=False):
    """MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock on rows x (N, C): softmax over all E experts,
    the top k (ties to the lower index), gates renormalised to sum 1 (Mixtral; Qwen3-MoE with
    norm_topk_prob), each chosen expert's SwiGLU output weighted and summed."""
    E, K, _, mlp, (g, u, d) = moe_sizes(cfg)
    f = lambda n: w[p + mlp + n].astype(np.float64)
    logits = x @ f("gate.weight").T  # (N, E)
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    chosen = np.argsort(-probs, axis=-1, kind="stable")[:, :K]  # (N, K), ties: lower index first
    gates = np.take_along_axis(probs, chosen, axis=-1)
    if renormalise:
        gates = gates / gates.sum(axis=-1, keepdims=True)
    out = np.zeros_like(x)
    for j in range(E):
        e = E - 1 - j if reverse_experts else j
        wg, wu = f(f"experts.{e}.{g}.weight"), f(f"experts.{e}.{u}.weight")
        if swap_gate_up:
            wg, wu = wu, wg
        a, b = x @ wg.T, x @ wu.T
        y = (a / (1 + np.exp(-a)) * b) @ f(f"experts.{e}.{d}.weight").T  # (N, C)
        weight = np.where(chosen == j, gates, 0.0).sum(axis=-1, keepdims=True)  # (N, 1)
        out += weight * y
    return out


def forward(w, cfg, tokens, **moe_options):
    """The causal LM's logits (batch, seq, vocab) in float64."""
    C, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    H, KVH, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    window = cfg.get("sliding_window") or 0
    if cfg["model_type"] == "qwen3_moe" and not cfg.get("use_sliding_window", False):
        window = 0
    f = lambda n: w[n].astype(np.float64)
    B, S = tokens.shape
    x = f("model.embed_tokens.weight")[tokens]
    angles = np.arange(S, dtype=np.float64)[:, None] * inv_frequencies(cfg)[None, :]
    cos = np.cos(np.concatenate([angles, angles], axis=-1))  # (S, D)
    sin = np.sin(np.concatenate([angles, angles], axis=-1))
    pos = np.arange(S)
    mask = pos[None, :] <= pos[:, None]  # (query, key)
    if window:
        mask &= (pos[:, None] - pos[None, :]) < window
    for i in range(L):
        p = f"model.layers.{i}."
        xn = rms_norm(x, f(p + "input_layernorm.weight"), eps)
        q = (xn @ f(p + "self_attn.q_proj.weight").T).reshape(B, S, H, D)
        k = (xn @ f(p + "self_attn.k_proj.weight").T).reshape(B, S, KVH, D)
        v = (xn @ f(p + "self_attn.v_proj.weight").T).reshape(B, S, KVH, D)
        if p + "self_attn.q_norm.weight" in w:
            q = rms_norm(q, f(p + "self_attn.q_norm.weight"), eps)
            k = rms_norm(k, f(p + "self_attn.k_norm.weight"), eps)
        q = q * cos[None, :, None, :] + rotate_half(q) * sin[None, :, None, :]
        k = k * cos[None, :, None, :] + rotate_half(k) * sin[None, :, None, :]
        out = np.zeros((B, S, H, D))
        for h in range(H):
            kv = h // (H // KVH)  # repeat_kv
            scores = np.einsum("bsd,btd->bst", q[:, :, h], k[:, :, kv]) / math.sqrt(D)
            scores = np.where(mask[None], scores, -np.inf)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            out[:, :, h] = np.einsum("bst,btd->bsd", probs, v[:, :, kv])
        x = x + out.reshape(B, S, H * D) @ f(p + "self_attn.o_proj.weight").T
        xn = rms_norm(x, f(p + "post_attention_layernorm.weight"), eps)
        x = x + moe_block(xn.reshape(B * S, C), w, cfg, p, **moe_options).reshape(B, S, C)
    x = rms_norm(x, f("model.norm.weight"), eps)
    head = f("model.embed_tokens.weight") if cfg["tie_word_embeddings"] else f("lm_head.weight")
    return x @ head.T


def check_kind(sample, scratch, kind):
    batch, seq = 2, 12
    root = os.path.join(scratch, kind)
    # (a) weft's file: the names, shapes, config and the forward pass
    a = os.path.join(root, "a")
    os.makedirs(a, exist_ok=True)
    run([sample, "save", kind, a])
    with open(os.path.join(a, "hf", "config.json")) as fh:
        cfg = json.load(fh)
    expect(cfg["model_type"] == kind, f"config.json's model_type is {cfg['model_type']}, expected {kind}")
    arch = {"mixtral": "MixtralForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM"}[kind]
    expect(cfg["architectures"] == [arch], f"architectures {cfg['architectures']}, expected [{arch}]")
    E, K, F, _, _ = moe_sizes(cfg)
    expect((E, K) == (4, 2), f"experts {E}, top-k {K}: the sample has 4 and 2")
    # router_aux_loss_coef: weft's aux weight / k (0.04 / 2 for the mixtral sample, 0.01 / 2 for qwen3_moe)
    coef = {"mixtral": 0.02, "qwen3_moe": 0.005}[kind]
    expect(abs(cfg["router_aux_loss_coef"] - coef) < 1e-12, f"router_aux_loss_coef {cfg['router_aux_loss_coef']}, "
                                                             f"expected {coef} (weft's weight / k)")
    if kind == "qwen3_moe":
        expect(cfg["norm_topk_prob"] is True and cfg["decoder_sparse_step"] == 1 and cfg["mlp_only_layers"] == [],
               "qwen3_moe config: norm_topk_prob true, decoder_sparse_step 1, mlp_only_layers [] expected")
    else:
        expect(cfg["sliding_window"] == 5, f"mixtral sample's sliding_window is {cfg['sliding_window']}, expected 5")
    saved = load_file(os.path.join(a, "hf", "model.safetensors"))
    shapes = state_shapes(cfg)
    expect(set(saved) == set(shapes), f"tensors differ: extra {sorted(set(saved) - set(shapes))}, "
                                      f"missing {sorted(set(shapes) - set(saved))}")
    for n, s in shapes.items():
        expect(saved[n].shape == s, f"{n}: shape {saved[n].shape}, transformers has {s}")
        expect(saved[n].dtype == np.float32, f"{n}: dtype {saved[n].dtype}")
    print(f"ok: {kind}: {len(shapes)} tensors with transformers' names and shapes; config.json as transformers reads it")
    tokens = sample_tokens(cfg, batch, seq)
    compare_logits(os.path.join(a, "saved.logits.bin"), forward(saved, cfg, tokens), f"{kind}: saved checkpoint")

    # (b) random weights in two shards and an index: weft's loader against the forward pass
    b = os.path.join(root, "b")
    os.makedirs(b, exist_ok=True)
    rng = np.random.default_rng(23)
    rand = {}
    for n, s in shapes.items():
        if n.endswith("norm.weight") or "layernorm" in n:
            rand[n] = (1.0 + 0.2 * rng.standard_normal(s)).astype(np.float32)
        elif n.endswith("gate.weight") and "experts" not in n:  # routers: spread probabilities
            rand[n] = (2.0 * rng.standard_normal(s) / math.sqrt(s[-1])).astype(np.float32)
        else:
            rand[n] = (0.4 * rng.standard_normal(s) / math.sqrt(s[-1] if len(s) > 1 else 1)).astype(np.float32)
    rand["model.embed_tokens.weight"] *= 4  # embeddings are not scaled by fan-in
    names = sorted(rand)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    weight_map = {}
    for file, part in shards.items():
        save_file({n: rand[n] for n in part}, os.path.join(b, file), metadata={"format": "pt"})
        weight_map.update({n: file for n in part})
    with open(os.path.join(b, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {}, "weight_map": weight_map}, fh)
    with open(os.path.join(b, "config.json"), "w") as fh:  # checked against the model's type by the loader
        json.dump(cfg, fh)
    loaded = os.path.join(b, "loaded")
    run([sample, "load", kind, b, loaded])
    compare_logits(loaded + ".logits.bin", forward(rand, cfg, tokens), f"{kind}: sharded random checkpoint")
    # negative controls: each mistake a loader or forward pass could make must miss by far
    for what, options in (("w1/w3 (gate/up) swapped", {"swap_gate_up": True}),
                          ("gates not renormalised", {"renormalise": False}),
                          ("experts in reverse order", {"reverse_experts": True})):
        err = relative_error(loaded + ".logits.bin", forward(rand, cfg, tokens, **options))
        expect(err > 1e-2, f"{kind}: the forward pass with {what} is within {err:.3g} of weft's: the check cannot see it")
        print(f"ok: {kind}: negative control: with {what} the logits differ by {err:.2g}")

    # (c) refusals, each one line
    c = os.path.join(root, "c")
    os.makedirs(c, exist_ok=True)
    experts_key = "num_experts" if kind == "qwen3_moe" else "num_local_experts"
    ffn_key = "moe_intermediate_size" if kind == "qwen3_moe" else "intermediate_size"
    other = "mixtral" if kind == "qwen3_moe" else "qwen3_moe"
    bad_configs = [
        ("experts", {experts_key: 8}, f"moe_mlp<24, 8, 2, {F}, swiglu_experts>"),
        ("topk", {"num_experts_per_tok": 1}, f"moe_mlp<24, 4, 1, {F}, swiglu_experts>"),
        ("ffn", {ffn_key: 32}, "moe_mlp<24, 4, 2, 32, swiglu_experts>"),
        ("other_family", {"model_type": other}, "query_key_norm<>"),
        ("qwen2_moe", {"model_type": "qwen2_moe"}, "shared expert"),
        ("eps", {"rms_norm_eps": 1e-6}, "norm_eps<1e-06>"),
    ]
    if kind == "qwen3_moe":
        bad_configs += [
            ("norm_topk_prob", {"norm_topk_prob": False}, "norm_topk_prob is false: its top-k gates are not renormalised"),
            ("norm_topk_prob_absent", {"norm_topk_prob": None}, "absent (default false)"),
            ("mlp_only_layers", {"mlp_only_layers": [1]}, "mlp_only_layers is [1]"),
            ("decoder_sparse_step", {"decoder_sparse_step": 2}, "decoder_sparse_step is 2"),
        ]
    for what, change, message in bad_configs:
        d = os.path.join(c, "config_" + what)
        os.makedirs(d, exist_ok=True)
        bad = {k: v for k, v in dict(cfg, **change).items() if v is not None}
        with open(os.path.join(d, "config.json"), "w") as fh:
            json.dump(bad, fh)
        run([sample, "load", kind, d, os.path.join(d, "z")], must_fail=True, contains=message)
    print(f"ok: {kind}: {len(bad_configs)} config.json mismatches refused")
    last = [n for n in names if ".experts.3." in n][0]
    missing = {n: t for n, t in rand.items() if n != last}
    save_file(missing, os.path.join(c, "missing.safetensors"), metadata={"format": "pt"})
    run([sample, "load", kind, os.path.join(c, "missing.safetensors"), os.path.join(c, "x")], must_fail=True,
        contains=f"has no tensor '{last}'")
    wider = dict(rand)
    for n in names:
        if ".experts." in n:
            wider[n] = np.zeros((F + 2, wider[n].shape[1]) if wider[n].shape[0] == F else (wider[n].shape[0], F + 2),
                                dtype=np.float32)
    save_file(wider, os.path.join(c, "wider.safetensors"), metadata={"format": "pt"})
    run([sample, "load", kind, os.path.join(c, "wider.safetensors"), os.path.join(c, "y")], must_fail=True,
        contains="this model needs")


def main(argv):
    if len(argv) != 4 or argv[1] != "all":
        print(__doc__)
        return 2
    sample, scratch = argv[2], argv[3]
    for kind in ("mixtral", "qwen3_moe"):
        check_kind(sample, scratch, kind)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        sys.exit(1)
