#!/usr/bin/env python3
"""Cross-check weft's Hugging Face LLaMA-family weights against transformers' layout.

Needs the PyPI packages `safetensors` and `numpy` (not torch or transformers: the names, shapes
and the forward pass of transformers' LlamaForCausalLM, with Qwen 2's q/k/v biases, Qwen 3's q/k
norms, Mistral's sliding window and LLaMA 3.1's rope scaling, are spelled out below).

  hf_llama_crosscheck.py all <hf_llama_sample binary> <scratch dir>
      (a) run `sample save <dir>`: <dir>/hf/model.safetensors holds exactly the tensors
          transformers names for the sizes in <dir>/hf/config.json, with their shapes, and weft's
          logits equal a numpy forward pass over that file;
      (b) write random weights for the same config as two shards and a
          model.safetensors.index.json, run `sample load <dir>`, and check weft's logits against
          the numpy forward pass over them;
      (c) the loader's refusals: the file without lm_head.weight (a tied checkpoint) into the
          untied model names tie_word_embeddings<>; the untied file into the tied model says the
          head differs from the embedding; a file with a tensor the model lacks is refused; a
          config.json that disagrees with the model's type (rms_norm_eps, rope_theta, heads,
          sliding window, rope_scaling type, activation, model_type) is refused with the tag to give.
      The sample's rms_norm_eps is 1e-3: a negative control checks that the forward pass with
      LLaMA's 1e-5 misses weft's logits by far (so the epsilon is really carried).

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
require(["numpy", "safetensors.numpy"], "python3 -m pip install safetensors numpy")
import numpy as np  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402


class Mismatch(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


# ---- transformers' LLaMA family, written out ----

def state_shapes(cfg):
    """name -> shape of LlamaForCausalLM's state dict (modeling_llama.py; Qwen2's q/k/v biases
    with attention_bias, Qwen3's q_norm/k_norm), nn.Linear weights (out, in)."""
    C, V, L, F = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    H, KVH, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    s = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not cfg["tie_word_embeddings"]:
        s["lm_head.weight"] = (V, C)
    for i in range(L):
        p = f"model.layers.{i}."
        s[p + "input_layernorm.weight"] = (C,)
        s[p + "post_attention_layernorm.weight"] = (C,)
        for proj, rows in (("q_proj", H * D), ("k_proj", KVH * D), ("v_proj", KVH * D)):
            s[p + f"self_attn.{proj}.weight"] = (rows, C)
            if cfg["attention_bias"]:
                s[p + f"self_attn.{proj}.bias"] = (rows,)
        s[p + "self_attn.o_proj.weight"] = (C, H * D)
        if cfg["model_type"] == "qwen3":
            s[p + "self_attn.q_norm.weight"] = (D,)
            s[p + "self_attn.k_norm.weight"] = (D,)
        s[p + "mlp.gate_proj.weight"] = (F, C)
        s[p + "mlp.up_proj.weight"] = (F, C)
        s[p + "mlp.down_proj.weight"] = (C, F)
    return s


def rms_norm(x, w, eps):
    x = x.astype(np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def inv_frequencies(cfg):
    """RoPE's inverse frequencies (transformers' _compute_default_rope_parameters and, for
    rope_type llama3, _compute_llama3_parameters)."""
    D, base = cfg["head_dim"], cfg["rope_theta"]
    inv = 1.0 / base ** (np.arange(0, D, 2, dtype=np.float64) / D)
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type") == "llama3":
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        inv = np.where(medium, smoothed, scaled)
    return inv


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def forward(w, cfg, tokens):
    """LlamaForCausalLM's logits (batch, seq, vocab) in float64."""
    C, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    H, KVH, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, window = cfg["rms_norm_eps"], cfg.get("sliding_window") or 0
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

        def proj(name, inp):
            y = inp @ f(p + name + ".weight").T
            return y + f(p + name + ".bias") if (p + name + ".bias") in w else y

        xn = rms_norm(x, f(p + "input_layernorm.weight"), eps)
        q = proj("self_attn.q_proj", xn).reshape(B, S, H, D)
        k = proj("self_attn.k_proj", xn).reshape(B, S, KVH, D)
        v = proj("self_attn.v_proj", xn).reshape(B, S, KVH, D)
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
        gate, up = proj("mlp.gate_proj", xn), proj("mlp.up_proj", xn)
        x = x + (gate / (1 + np.exp(-gate)) * up) @ f(p + "mlp.down_proj.weight").T
    x = rms_norm(x, f("model.norm.weight"), eps)
    head = f("model.embed_tokens.weight") if cfg["tie_word_embeddings"] else f("lm_head.weight")
    return x @ head.T


def sample_tokens(cfg, batch, seq):
    return ((7 * np.arange(batch * seq) + 3) % cfg["vocab_size"]).reshape(batch, seq)


def relative_error(path, ref):
    """max |weft - ref| / max |ref| for the f32 logits weft wrote to `path`."""
    got = np.fromfile(path, dtype="<f4").astype(np.float64)
    expect(got.size == ref.size, f"{path}: {got.size} logits, expected {ref.size}")
    return np.max(np.abs(got - ref.reshape(-1))) / max(1e-30, np.max(np.abs(ref)))


def compare_logits(path, ref, what, tolerance=2e-5):
    """The cross-checks' comparison (hf_neox_crosscheck and hf_moe_crosscheck import it too)."""
    err = relative_error(path, ref)
    expect(err < tolerance, f"{what}: weft's logits differ from the numpy forward pass by {err:.3g} (relative)")
    print(f"ok: {what}: logits within {err:.2g} of the numpy forward pass")
    return err


def run(cmd, must_fail=False, contains=None):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if must_fail:
        expect(r.returncode == 1, f"{' '.join(cmd)}: exit {r.returncode}, expected 1 (stderr: {r.stderr.strip()})")
        expect(contains in r.stderr, f"{' '.join(cmd)}: stderr lacks '{contains}': {r.stderr.strip()}")
        expect(len(r.stderr.strip().splitlines()) == 1, f"{' '.join(cmd)}: more than one line: {r.stderr}")
        print(f"ok: refused in one line: {r.stderr.strip()[:140]}")
    else:
        expect(r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")


def main(argv):
    if len(argv) != 4 or argv[1] != "all":
        print(__doc__)
        return 2
    sample, scratch = argv[2], argv[3]
    batch, seq = 2, 12
    # (a) weft's file: the names, shapes and the forward pass
    a = os.path.join(scratch, "a")
    os.makedirs(a, exist_ok=True)
    run([sample, "save", a])
    with open(os.path.join(a, "hf", "config.json")) as fh:
        cfg = json.load(fh)
    saved = load_file(os.path.join(a, "hf", "model.safetensors"))
    shapes = state_shapes(cfg)
    expect(set(saved) == set(shapes), f"tensors differ: extra {sorted(set(saved) - set(shapes))}, "
                                      f"missing {sorted(set(shapes) - set(saved))}")
    for n, s in shapes.items():
        expect(saved[n].shape == s, f"{n}: shape {saved[n].shape}, transformers has {s}")
        expect(saved[n].dtype == np.float32, f"{n}: dtype {saved[n].dtype}")
    print(f"ok: {len(shapes)} tensors with transformers' names and shapes ({cfg['model_type']})")
    tokens = sample_tokens(cfg, batch, seq)
    compare_logits(os.path.join(a, "saved.logits.bin"), forward(saved, cfg, tokens), "saved checkpoint")
    # negative control: the same forward pass with LLaMA's default epsilon must miss by far
    expect(cfg["rms_norm_eps"] != 1e-5, f"the sample's rms_norm_eps is {cfg['rms_norm_eps']}, not its own")
    got = np.fromfile(os.path.join(a, "saved.logits.bin"), dtype="<f4").astype(np.float64)
    ref = forward(saved, dict(cfg, rms_norm_eps=1e-5), tokens).reshape(-1)
    err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
    expect(err > 1e-4, f"the forward pass with rms_norm_eps 1e-5 is within {err:.3g} of weft's: the epsilon does not bite")
    print(f"ok: negative control: with rms_norm_eps 1e-5 the logits differ by {err:.2g}")

    # (b) random weights in two shards and an index: weft's loader against the forward pass
    b = os.path.join(scratch, "b")
    os.makedirs(b, exist_ok=True)
    rng = np.random.default_rng(11)
    rand = {}
    for n, s in shapes.items():
        if n.endswith("norm.weight") or "layernorm" in n:
            rand[n] = (1.0 + 0.2 * rng.standard_normal(s)).astype(np.float32)
        elif n.endswith(".bias"):
            rand[n] = (0.2 * rng.standard_normal(s)).astype(np.float32)
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
    run([sample, "load", b, os.path.join(b, "loaded")])
    compare_logits(os.path.join(b, "loaded.logits.bin"), forward(rand, cfg, tokens), "sharded random checkpoint")

    # (c) refusals, each one line
    c = os.path.join(scratch, "c")
    os.makedirs(c, exist_ok=True)
    no_head = {n: t for n, t in rand.items() if n != "lm_head.weight"}
    save_file(no_head, os.path.join(c, "tied.safetensors"), metadata={"format": "pt"})
    run([sample, "load", os.path.join(c, "tied.safetensors"), os.path.join(c, "x")], must_fail=True,
        contains="tie_word_embeddings<>")
    run([sample, "load-tied", b], must_fail=True, contains="differs from its embedding")
    extra = dict(rand, **{"model.layers.0.mlp.gate_proj.bias": np.zeros(shapes["model.layers.0.mlp.gate_proj.weight"][0],
                                                                           dtype=np.float32)})
    save_file(extra, os.path.join(c, "extra.safetensors"), metadata={"format": "pt"})
    run([sample, "load", os.path.join(c, "extra.safetensors"), os.path.join(c, "y")], must_fail=True,
        contains="has no parameter for")
    # config.json fields the shapes cannot show, each refused with the tag that fixes it
    bad_configs = [
        ("eps", {"rms_norm_eps": 1e-5}, "norm_eps<1e-05>"),
        ("theta", {"rope_theta": 10000.0}, "rope_theta<10000>"),
        ("heads", {"num_attention_heads": 2, "head_dim": 16}, "heads<2>"),
        ("window", {"use_sliding_window": False}, "without sliding_window<>"),
        ("wider_window", {"sliding_window": 7}, "sliding_window<7>"),
        ("yarn", {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "as LLaMA 3.1 only"),
        ("act", {"hidden_act": "gelu"}, "SwiGLU"),
        ("type", {"model_type": "gemma"}, "qwen3 layouts"),
    ]
    for what, change, message in bad_configs:
        d = os.path.join(c, "config_" + what)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as fh:
            json.dump(dict(cfg, **change), fh)
        run([sample, "load", d, os.path.join(d, "z")], must_fail=True, contains=message)
    print(f"ok: {len(bad_configs)} config.json mismatches refused")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        sys.exit(1)
