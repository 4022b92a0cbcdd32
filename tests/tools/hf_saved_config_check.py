#!/usr/bin/env python3
"""The config.json files save_hf_weights writes, as transformers reads them: each Hugging Face
sample (tests/io/hf_*_sample: LLaMA 3.1 scaling, Qwen 3 with scaling and a window, Mistral, Qwen 2,
GPT-NeoX with half of each head rotating, Mixtral, Qwen3-MoE, Gemma 3 with two bases and linear
scaling; non-default rotary settings throughout) saves its checkpoint; transformers' AutoConfig
loads each config.json, and its rope_parameters (the base, the type and scaling factors, GPT-NeoX's
partial_rotary_factor, Gemma 3's full_attention and sliding_attention entries) and expert count
must be the ones of the weft type hf_model_type reads from the same file. weft writes the older
top-level spelling (rope_theta, rope_scaling, rotary_emb_base, rotary_pct, rope_local_base_freq,
num_experts), which transformers 4 and 5 both read.

  hf_saved_config_check.py <hf_model_type> <hf_llama_sample> <hf_neox_sample> <hf_moe_sample>
                           <hf_gemma3_sample> <scratch dir>

Exit status 0 when everything holds; 1 on the first failure; 77 (skip) without transformers, 1
instead under WEFT_REQUIRE_REFERENCES=1 (CI: tests/common/reference_skip.py).
"""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from reference_skip import require  # noqa: E402  (a missing reference: skip, or fail in CI)

require(["transformers"], "python3 -m pip install transformers")
import transformers  # noqa: E402
from transformers import AutoConfig  # noqa: E402


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def tag(text, pattern, default):
    m = re.search(pattern, text)
    return default if m is None else m.groups()


def expected_rope(weft_type):
    """transformers 5's rope_parameters for the rotary settings of a weft type (hf_model_type's text)."""
    if weft_type.startswith("gemma3<"):
        (theta,) = tag(weft_type, r"rope_theta<(\d+)>", ("1000000",))
        (local,) = tag(weft_type, r"rope_local_base_freq<(\d+)>", ("10000",))
        full = {"rope_type": "default", "rope_theta": float(theta)}
        linear = tag(weft_type, r"linear_rope_scaling<(\d+)>", None)
        if linear is not None:
            full = {"rope_type": "linear", "factor": float(linear[0]), "rope_theta": float(theta)}
        return {"full_attention": full, "sliding_attention": {"rope_type": "default", "rope_theta": float(local)}}
    (theta,) = tag(weft_type, r"rope_theta<(\d+)>", ("10000",))
    r = {"rope_type": "default", "rope_theta": float(theta)}
    if weft_type.startswith("gpt_neox<"):
        (pct,) = tag(weft_type, r"rotary_pct<([0-9.e-]+)>", ("0.25",))
        r["partial_rotary_factor"] = float(pct)
    llama3 = tag(weft_type, r"llama3_rope_scaling<(\d+), (\d+), (\d+), (\d+)>", None)
    if llama3 is not None:
        r.update(rope_type="llama3", factor=float(llama3[0]), low_freq_factor=float(llama3[1]),
                 high_freq_factor=float(llama3[2]), original_max_position_embeddings=int(llama3[3]))
    return r


def comparable(rope):
    """rope_parameters with the keys transformers adds from older spellings ("type") left out."""
    if rope is None:
        return None
    if all(isinstance(v, dict) for v in rope.values()):
        return {k: comparable(v) for k, v in rope.items()}
    return {k: float(v) if isinstance(v, (int, float)) and k != "original_max_position_embeddings" else v
            for k, v in rope.items() if k != "type"}


def main(argv):
    if len(argv) != 7:
        print(__doc__)
        return 2
    tool, llama, neox, moe, gemma3, scratch = argv[1:]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    saves = [(name, [llama, name, "save"]) for name in ("llama", "qwen3", "mistral", "qwen2")]
    saves += [("gpt_neox", [neox, "save"]), ("gemma3", [gemma3, "save"])]
    saves += [(name, [moe, "save", name]) for name in ("mixtral", "qwen3_moe")]
    for name, cmd in saves:
        d = os.path.join(scratch, name)
        r = subprocess.run(cmd + [d], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{' '.join(cmd)} {d}: exit {r.returncode}: {r.stderr.strip()}")
        config = os.path.join(d, "hf", "config.json")
        r = subprocess.run([tool, config], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"hf_model_type {config}: {r.stderr.strip()}")
        weft_type = r.stdout.strip()
        read = AutoConfig.from_pretrained(os.path.dirname(config))
        want, got = expected_rope(weft_type), comparable(read.rope_parameters)
        if got != want:
            fail(f"{name}: transformers {transformers.__version__} reads rope_parameters {got}, weft's type {weft_type} "
                 f"has {want}")
        experts = tag(weft_type, r"moe_mlp<\d+, (\d+),", None)
        if experts is not None and getattr(read, "num_local_experts", None) != int(experts[0]):
            fail(f"{name}: transformers reads num_local_experts {getattr(read, 'num_local_experts', None)}, weft's type "
                 f"has {experts[0]} experts")
        print(f"ok: {name}: transformers {transformers.__version__} reads {got}"
              + (f", {experts[0]} experts" if experts else "") + f": {weft_type}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
