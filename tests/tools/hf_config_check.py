#!/usr/bin/env python3
"""Configs as transformers 5 writes them: tests/tools/hf_configs_transformers5/<name>.json (written by
transformers 5 itself, generate.py beside them) and legacy/<name>.json (the same settings in the
older spelling: rope_theta / rope_scaling at the top level, rotary_emb_base / rotary_pct,
rope_local_base_freq, num_experts).

  (a) hf_model_type writes the same weft type for both spellings of each file, the one below:
      the rotary base, LLaMA 3.1's scaling, GPT-NeoX's rotated fraction, Gemma 3's per-layer-type
      bases and linear scaling, Qwen3-MoE's num_local_experts;
  (b) the config.json check of load_hf_weights (hf_config_check, one case per weft type) accepts
      each file into that type, and refuses it in one line naming the field into a type that
      misreads it (the default base, no scaling, the default fraction, another expert count);
  (c) a field weft cannot find or read (an unknown rope field, a non-object rope_parameters, a
      non-number, the two spellings disagreeing, a llama3 scaling without a factor, a flat
      rope_parameters for Gemma 3, scaling on its sliding layers, a missing expert count, Gemma's
      use_bidirectional_attention) is
      refused in one line naming it, by hf_model_type and by the load check alike.

  hf_config_check.py <hf_model_type binary> <hf_config_check binary> <scratch dir>

Exit status 0 when everything holds; 1 on the first failure (printed); 2 on usage.
"""

import copy
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "hf_configs_transformers5")

SMALL = "vocab<64>, context<1024>, width<32>, heads<4>, kv_heads<2>, depth<2>"
GEMMA = "vocab<64>, context<1024>, width<32>, heads<4>, kv_heads<2>, depth<4>, ffn<48>, head_dim<16>, sliding_window<16>, layer_pattern<2>"
# the weft type of each file (both spellings)
EXPECTED = {
    "llama": f"llama<llama_config<{SMALL}, ffn<48>, rope_theta<500000>, norm_eps<1e-06>>>",
    "llama31": f"llama<llama_config<{SMALL}, ffn<48>, rope_theta<500000>, rope_scaling<llama3_rope_scaling<8, 1, 4, 512>>, "
               "tie_word_embeddings<>, norm_eps<1e-06>>>",
    "mistral": f"llama<llama_config<{SMALL}, ffn<48>, rope_theta<1000000>, sliding_window<64>, norm_eps<1e-06>>>",
    "qwen2": f"llama<llama_config<{SMALL}, ffn<48>, rope_theta<1000000>, qkv_bias<>, tie_word_embeddings<>, norm_eps<1e-06>>>",
    "qwen2_window": f"llama<llama_config<{SMALL}, ffn<48>, rope_theta<20000>, sliding_window<128>, qkv_bias<>, norm_eps<1e-06>>>",
    "qwen3": f"llama<llama_config<{SMALL}, ffn<48>, head_dim<16>, rope_theta<1000000>, query_key_norm<>, norm_eps<1e-06>>>",
    "qwen3_moe": f"moe_llama<llama_config<{SMALL}, head_dim<16>, rope_theta<1000000>, query_key_norm<>, norm_eps<1e-06>>, "
                 "moe_mlp<32, 4, 2, 24, swiglu_experts, aux_loss_weight<2>, pooled_aux_loss>>",
    "mixtral": f"moe_llama<llama_config<{SMALL}, rope_theta<1000000>>, moe_mlp<32, 4, 2, 48, swiglu_experts, aux_loss_weight<2>, pooled_aux_loss>>",
    "gpt2": "gpt<gpt_config<vocab<64>, context<128>, width<32>, heads<4>, depth<2>>>",
    "gpt_neox": "gpt_neox<neox_config<vocab<64>, context<256>, width<32>, heads<4>, depth<2>, rope_theta<20000>, rotary_pct<0.5>>>",
    "gemma3_text": f"gemma3<gemma3_config<{GEMMA}, rope_scaling<linear_rope_scaling<8>>>>",
    "gemma3_text_bases": f"gemma3<gemma3_config<{GEMMA}, rope_theta<500000>, rope_local_base_freq<20000>>>",
}

# hf_config_check cases that misread a file: (case, text its one-line refusal of that file holds in
# the transformers 5 spelling, in the older one)
MISREAD = {
    "llama": [("llama:theta", "rope_parameters.rope_theta is 500000", "rope_theta is 500000")],
    "llama31": [("llama31:unscaled", "rope_parameters.rope_type is llama3", "rope_scaling.rope_type is llama3"),
                ("llama31:theta", "rope_parameters.rope_theta is 500000", "rope_theta is 500000"),
                ("llama31:factor", "rope_parameters.original_max_position_embeddings is 512",
                 "rope_scaling.original_max_position_embeddings is 512")],
    "mistral": [("mistral:theta", "rope_parameters.rope_theta is 1000000", "rope_theta is 1000000")],
    "qwen2": [("qwen2:theta", "rope_parameters.rope_theta is 1000000", "rope_theta is 1000000")],
    "qwen2_window": [("qwen2_window:theta", "rope_parameters.rope_theta is 20000", "rope_theta is 20000"),
                     ("qwen2_window:window", "sliding window is 128", "sliding window is 128")],
    "qwen3": [("qwen3:theta", "rope_parameters.rope_theta is 1000000", "rope_theta is 1000000")],
    "qwen3_moe": [("qwen3_moe:theta", "rope_parameters.rope_theta is 1000000", "rope_theta is 1000000"),
                  ("qwen3_moe:experts", "num_local_experts is 4", "num_experts is 4")],
    "mixtral": [("mixtral:theta", "rope_parameters.rope_theta is 1000000", "rope_theta is 1000000"),
                ("mixtral:experts", "num_local_experts is 4", "num_local_experts is 4")],
    "gpt_neox": [("gpt_neox:fraction", "rope_parameters.partial_rotary_factor is 0.5", "rotary_pct is 0.5"),
                 ("gpt_neox:theta", "rope_parameters.rope_theta is 20000", "rotary_emb_base is 20000")],
    "gemma3_text": [("gemma3_text:unscaled", "rope_parameters.full_attention.rope_type is linear with factor 8",
                     "rope_scaling.rope_type is linear with factor 8"),
                    ("gemma3_text:factor", "rope_parameters.full_attention.rope_type is linear with factor 8",
                     "rope_scaling.rope_type is linear with factor 8")],
    "gemma3_text_bases": [("gemma3_text_bases:theta", "rope_parameters.full_attention.rope_theta is 500000",
                           "rope_theta is 500000"),
                          ("gemma3_text_bases:local", "rope_parameters.sliding_attention.rope_theta is 20000",
                           "rope_local_base_freq is 20000")],
}


def set_path(cfg, path, value):
    node = cfg
    for k in path[:-1]:
        node = node[k]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


DELETE = object()

# (what, file, changes [(path, value)], text both one-line refusals hold, whether the load check
# refuses it too: False where the field is one the loader checks only when given)
UNREADABLE = [
    ("an unknown rope field", "llama", [(("rope_parameters", "mscale"), 1.0)], "\"rope_parameters.mscale\"", True),
    ("a rope_parameters that is not an object", "llama", [(("rope_parameters",), 500000.0)], "\"rope_parameters\" is 500000",
     True),
    ("a rope_theta that is not a number", "llama", [(("rope_parameters", "rope_theta"), "500k")],
     "\"rope_parameters.rope_theta\" is \"500k\"", True),
    ("both spellings of the base, disagreeing", "llama", [(("rope_theta",), 10000.0)],
     "rope_theta is 10000 but rope_parameters.rope_theta is 500000", True),
    ("both spellings of the scaling, disagreeing", "llama31", [(("rope_scaling",), {"rope_type": "linear", "factor": 8.0})],
     "rope_scaling.rope_type is \"linear\" but rope_parameters.rope_type is \"llama3\"", True),
    ("a rope type weft cannot compute", "llama", [(("rope_parameters", "rope_type"), "yarn")],
     "rope_parameters.rope_type is \"yarn\"", True),
    ("LLaMA 3.1's scaling without low_freq_factor", "llama31", [(("rope_parameters", "low_freq_factor"), DELETE)],
     "\"llama3\" without low_freq_factor", True),
    ("a partial rotary factor on a llama", "llama", [(("rope_parameters", "partial_rotary_factor"), 0.5)],
     "rope_parameters.partial_rotary_factor is 0.5", True),
    ("per-layer-type rope entries on a llama", "llama",
     [(("rope_parameters",), {"full_attention": {"rope_type": "default", "rope_theta": 500000.0}})],
     "\"rope_parameters.full_attention\"", True),
    ("a flat rope_parameters on Gemma 3", "gemma3_text", [(("rope_parameters",), {"rope_type": "default", "rope_theta": 1e6})],
     "\"rope_parameters\" has no \"full_attention\" entry", True),
    ("scaling on Gemma 3's sliding layers", "gemma3_text",
     [(("rope_parameters", "sliding_attention"), {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0})],
     "rope_parameters.sliding_attention.rope_type is \"linear\"", True),
    ("a third layer type's rope entry on Gemma 3", "gemma3_text",
     [(("rope_parameters", "chunked_attention"), {"rope_type": "default", "rope_theta": 10000.0})],
     "\"rope_parameters.chunked_attention\"", True),
    ("a linear scaling without its factor", "gemma3_text", [(("rope_parameters", "full_attention", "factor"), DELETE)],
     "rope_parameters.full_attention.rope_type is", True),
    ("rope scaling on GPT-NeoX", "gpt_neox", [(("rope_parameters", "rope_type"), "linear"), (("rope_parameters", "factor"), 2.0)],
     "rope_parameters.rope_type is \"linear\"", True),
    ("both expert counts, disagreeing", "qwen3_moe", [(("num_experts",), 8)], "num_experts is 8 but num_local_experts is 4",
     True),
    ("no expert count", "qwen3_moe", [(("num_local_experts",), DELETE)], "\"num_local_experts\" (or the older \"num_experts\") is missing",
     False),
    ("EmbeddingGemma's bidirectional attention", "gemma3_text", [(("use_bidirectional_attention",), True)],
     "use_bidirectional_attention is true", True),
    ("a window on some layers only (layer_types)", "qwen2_window", [(("layer_types",), ["full_attention", "sliding_attention"])],
     "layer_types", True),
]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def one_line(text):
    return len(text.strip().splitlines()) == 1


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    tool, check, scratch = argv[1:]
    os.makedirs(scratch, exist_ok=True)
    found = sorted(f[:-5] for f in os.listdir(CONFIGS) if f.endswith(".json"))
    if found != sorted(EXPECTED):
        fail(f"hf_configs_transformers5 holds {found}, the script expects {sorted(EXPECTED)}")
    cases = set(run([check, "--list"]).stdout.split())
    for name in found:
        for spelling, path in (("transformers 5", os.path.join(CONFIGS, name + ".json")),
                               ("older", os.path.join(CONFIGS, "legacy", name + ".json"))):
            with open(path) as fh:
                cfg = json.load(fh)
            if spelling == "transformers 5" and name != "gpt2" and "rope_parameters" not in cfg:
                fail(f"{path} has no rope_parameters: not what transformers 5 writes")
            # (a) the type
            r = run([tool, path])
            if r.returncode != 0 or r.stdout.strip() != EXPECTED[name]:
                fail(f"hf_model_type {name} ({spelling}): exit {r.returncode}, {r.stdout.strip()!r} {r.stderr.strip()!r}; "
                     f"expected {EXPECTED[name]!r}")
            # (b) the load check: the type accepted, the misread ones refused naming the field
            if name == "gpt2":
                continue
            if name not in cases:
                fail(f"hf_config_check has no case {name}")
            r = run([check, name, path])
            if r.returncode != 0:
                fail(f"load check of {name} ({spelling}) into its own type: exit {r.returncode}: {r.stdout.strip()}")
            for case, new_text, old_text in MISREAD[name]:
                text = new_text if spelling == "transformers 5" else old_text
                r = run([check, case, path])
                if r.returncode != 1 or text not in r.stdout or not one_line(r.stdout):
                    fail(f"load check of {name} ({spelling}) into {case}: expected one line with {text!r} and exit 1, "
                         f"got exit {r.returncode}: {r.stdout.strip()!r}")
                print(f"ok: {name} ({spelling}) refused into {case}: {r.stdout.strip()}")
        print(f"ok: {name}: {EXPECTED[name]}, accepted by the load check in both spellings")

    # (c) a field weft cannot find or read
    for what, name, changes, text, load_refuses in UNREADABLE:
        with open(os.path.join(CONFIGS, name + ".json")) as fh:
            cfg = json.load(fh)
        cfg = copy.deepcopy(cfg)
        for path, value in changes:
            set_path(cfg, path, value)
        bad = os.path.join(scratch, "config.json")
        with open(bad, "w") as fh:
            json.dump(cfg, fh)
        r = run([tool, bad])
        if r.returncode != 1 or text not in r.stderr or not one_line(r.stderr) or r.stdout:
            fail(f"hf_model_type, {what}: expected one line with {text!r} and exit 1, got exit {r.returncode}: "
                 f"{r.stderr.strip()!r} {r.stdout.strip()!r}")
        print(f"ok: {what}: hf_model_type: {r.stderr.strip()}")
        r = run([check, name, bad])
        if load_refuses and (r.returncode != 1 or text not in r.stdout or not one_line(r.stdout)):
            fail(f"load check, {what}: expected one line with {text!r} and exit 1, got exit {r.returncode}: "
                 f"{r.stdout.strip()!r}")
        if load_refuses:
            print(f"ok: {what}: load check: {r.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
