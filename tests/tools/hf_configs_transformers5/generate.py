#!/usr/bin/env python3
"""Writes the config.json files of tests/tools/hf_configs_transformers5/ with transformers itself.

Each <name>.json is what transformers 5 saves for a tiny model of one family weft loads
(`config.save_pretrained`, then renamed): the rotary settings in the nested `rope_parameters`
(GPT-NeoX's rotated fraction inside it as `partial_rotary_factor`, Gemma 3's one entry per layer
type) and Qwen3-MoE's expert count as `num_local_experts`. legacy/<name>.json is the same config in
the spelling transformers 4 wrote (`rope_theta` and `rope_scaling` at the top level, GPT-NeoX's
`rotary_emb_base` and `rotary_pct`, Gemma 3's `rope_local_base_freq`, Qwen3-MoE's `num_experts`);
the script checks that transformers reads each legacy file back to the same settings.

Generated with transformers 5.25.0 (the version each file's "transformers_version" records):

  pip install 'transformers>=5'   # torch is not needed for configs
  python3 tests/tools/hf_configs_transformers5/generate.py

tests/tools/hf_model_type_check.py reads them (the weft types hf_model_type writes, and the
config.json check of load_hf_weights on each).
"""

import json
import os
import sys
import tempfile

import transformers
from transformers import (AutoConfig, GPT2Config, GPTNeoXConfig, Gemma3TextConfig, LlamaConfig, MistralConfig,
                          MixtralConfig, Qwen2Config, Qwen3Config, Qwen3MoeConfig)

HERE = os.path.dirname(os.path.abspath(__file__))

SMALL = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=1024)

CONFIGS = {
    "llama": LlamaConfig(**SMALL, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}),
    "llama31": LlamaConfig(**SMALL, tie_word_embeddings=True,
                           rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 512}),
    "mistral": MistralConfig(**SMALL, sliding_window=64, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "qwen2": Qwen2Config(**SMALL, tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "qwen2_window": Qwen2Config(**SMALL, use_sliding_window=True, sliding_window=128, max_window_layers=0,
                                rope_parameters={"rope_type": "default", "rope_theta": 20000.0}),
    "qwen3": Qwen3Config(**SMALL, head_dim=16, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "qwen3_moe": Qwen3MoeConfig(**SMALL, head_dim=16, num_local_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
                                norm_topk_prob=True, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "mixtral": MixtralConfig(**SMALL, num_local_experts=4, num_experts_per_tok=2),
    "gpt2": GPT2Config(vocab_size=64, n_positions=128, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0),
    "gpt_neox": GPTNeoXConfig(vocab_size=64, hidden_size=32, intermediate_size=128, num_hidden_layers=2,
                              num_attention_heads=4, max_position_embeddings=256,
                              rope_parameters={"rope_type": "default", "rope_theta": 20000.0, "partial_rotary_factor": 0.5}),
    "gemma3_text": Gemma3TextConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=4,
                                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16,
                                    sliding_window=16, max_position_embeddings=1024,
                                    layer_types=["sliding_attention", "full_attention"] * 2,
                                    rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0,
                                                                        "rope_theta": 1000000.0},
                                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
    "gemma3_text_bases": Gemma3TextConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=4,
                                          num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                          query_pre_attn_scalar=16, sliding_window=16, max_position_embeddings=1024,
                                          layer_types=["sliding_attention", "full_attention"] * 2,
                                          rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                                                           "sliding_attention": {"rope_type": "default",
                                                                                 "rope_theta": 20000.0}}),
}


def legacy(cfg):
    """The same config in transformers 4's spelling."""
    c = dict(cfg)
    rp = c.pop("rope_parameters", None)
    if c["model_type"] == "gpt_neox":
        c["rotary_emb_base"] = rp["rope_theta"]
        c["rotary_pct"] = rp["partial_rotary_factor"]
    elif c["model_type"] == "gemma3_text":
        full, local = rp["full_attention"], rp["sliding_attention"]
        c["rope_theta"] = full["rope_theta"]
        c["rope_local_base_freq"] = local["rope_theta"]
        c["rope_scaling"] = None if full["rope_type"] == "default" else {k: v for k, v in full.items() if k != "rope_theta"}
    elif rp is not None:
        c["rope_theta"] = rp["rope_theta"]
        c["rope_scaling"] = None if rp["rope_type"] == "default" else {k: v for k, v in rp.items() if k != "rope_theta"}
    if c["model_type"] == "qwen3_moe":
        c["num_experts"] = c.pop("num_local_experts")
    return c


def read_back(path):
    """What transformers makes of a config.json: the rope settings and the expert count."""
    c = AutoConfig.from_pretrained(os.path.dirname(path))
    return getattr(c, "rope_parameters", None), getattr(c, "num_local_experts", None)


def main():
    if int(transformers.__version__.split(".")[0]) < 5:
        print(f"transformers {transformers.__version__}: these files are what transformers 5 writes")
        return 1
    for name, config in CONFIGS.items():
        with tempfile.TemporaryDirectory() as d:
            config.save_pretrained(d)
            with open(os.path.join(d, "config.json")) as fh:
                written = json.load(fh)
            new = read_back(os.path.join(d, "config.json"))
            with open(os.path.join(d, "config.json"), "w") as fh:
                json.dump(legacy(written), fh, indent=2, sort_keys=True)
            old = read_back(os.path.join(d, "config.json"))
        if old != new:
            print(f"{name}: transformers reads the legacy spelling as {old}, the new one as {new}")
            return 1
        with open(os.path.join(HERE, name + ".json"), "w") as fh:
            json.dump(written, fh, indent=2, sort_keys=True)
            fh.write("\n")
        with open(os.path.join(HERE, "legacy", name + ".json"), "w") as fh:
            json.dump(legacy(written), fh, indent=2, sort_keys=True)
            fh.write("\n")
        print(f"{name}: {json.dumps(written.get('rope_parameters'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
