#!/usr/bin/env python3
"""The transformers tier: weft's Hugging Face checkpoints against transformers itself.

Needs the PyPI packages `torch`, `transformers`, `safetensors` and `numpy` (torch runs on the CPU
only). Unlike the numpy cross-checks (hf_*_crosscheck.py), nothing of transformers is written out
here: transformers builds each model from its own config class, writes it with save_pretrained and
reads weft's files with from_pretrained.

  hf_transformers_tier.py <family> <sample binary> <scratch dir>
      family: llama, mistral, qwen2, qwen3, mixtral, qwen3_moe, gpt_neox, gemma3 (the sample is
      hf_llama_sample, hf_moe_sample, hf_neox_sample or hf_gemma3_sample) or gpt2
      (gpt2_checkpoint_sample). For the family's tiny model, with the sizes of the weft sample's:
      (a) transformers builds a random model (every weight, norm gain and bias drawn at random),
          pad_token_id 3 (a token of the batch), and writes it with save_pretrained (safetensors);
      (b) weft loads it (`sample load`): its logits equal transformers' for the same tokens;
      (c) weft loads it and runs one forward and backward (`sample grad`): its mean cross-entropy
          and load-balancing loss equal transformers' (the aux loss of output_router_logits=True
          times router_aux_loss_coef), their sum the `loss` transformers returns for the same
          targets (labels with shift_labels: no shift), and every gradient of that loss, which
          weft writes under transformers' names, equals the one transformers writes the same way
          (save_pretrained of the model with its .grad as weights: per-expert tensors for the MoE
          families), the embedding row of pad_token_id included (nn.Embedding's padding_idx
          leaves it without a gradient from its lookups);
      (d) weft trains its own model and saves it (`sample save`): transformers loads the
          directory with no missing, unexpected or mismatched tensor, and its logits equal weft's.

Tolerances (f32 on both sides): logits and losses within 1e-5 of the larger of 1 and their
largest magnitude; a gradient within 1e-5 of the larger of 1e-3 and its largest magnitude.
Exit status 0 when everything matches; 1 on the first mismatch (printed); 2 on usage errors;
77 when a package is missing (a failure under WEFT_REQUIRE_REFERENCES=1).
"""

import json
import math
import os
import subprocess
import sys

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the CPU only, also where a GPU is present
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from reference_skip import require  # noqa: E402

require(["numpy", "torch", "transformers", "safetensors.torch"],
        "python3 -m pip install torch transformers safetensors numpy")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file  # noqa: E402


class Mismatch(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


PAD = 3  # pad_token_id of every config: token (7 i + 3) mod vocab at i = 0

# ---- the families: transformers' config for the weft sample's model ----
# rope_parameters as transformers 5 writes them; every size equals the sample's (tests/io/hf_*_sample.cpp).

LLAMA_BODY = dict(vocab_size=50, max_position_embeddings=12, hidden_size=24, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=2, intermediate_size=40, pad_token_id=PAD,
                  tie_word_embeddings=False)
LLAMA3_ROPE = dict(rope_type="llama3", rope_theta=500000.0, factor=4.0, low_freq_factor=1.0, high_freq_factor=4.0,
                   original_max_position_embeddings=8)

FAMILIES = {
    "llama": dict(args=["llama"], model_type="llama", batch=(2, 12),
                  config=dict(LLAMA_BODY, rms_norm_eps=1e-5, rope_parameters=LLAMA3_ROPE)),
    "mistral": dict(args=["mistral"], model_type="mistral", batch=(2, 12),
                    config=dict(LLAMA_BODY, rms_norm_eps=1e-3, sliding_window=5,
                                rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    "qwen2": dict(args=["qwen2"], model_type="qwen2", batch=(2, 12),
                  config=dict(LLAMA_BODY, rms_norm_eps=1e-6, tie_word_embeddings=True,
                              rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    "qwen3": dict(args=["qwen3"], model_type="qwen3", batch=(2, 12),
                  config=dict(LLAMA_BODY, head_dim=8, rms_norm_eps=1e-3, use_sliding_window=True,
                              sliding_window=5, max_window_layers=0, rope_parameters=LLAMA3_ROPE)),
    "mixtral": dict(args=["mixtral"], mode_first=True, model_type="mixtral", batch=(2, 12),
                    config=dict(LLAMA_BODY, intermediate_size=16, num_local_experts=4, num_experts_per_tok=2,
                                router_aux_loss_coef=0.02, sliding_window=5, rms_norm_eps=1e-5,
                                rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    "qwen3_moe": dict(args=["qwen3_moe"], mode_first=True, model_type="qwen3_moe", batch=(2, 12),
                      config=dict(LLAMA_BODY, head_dim=8, moe_intermediate_size=12, num_experts=4,
                                  num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
                                  mlp_only_layers=[], router_aux_loss_coef=0.005, rms_norm_eps=1e-3,
                                  rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    "gpt_neox": dict(args=[], model_type="gpt_neox", batch=(2, 12),
                     config=dict(vocab_size=50, max_position_embeddings=12, hidden_size=24, num_attention_heads=3,
                                 num_hidden_layers=2, intermediate_size=40, layer_norm_eps=1e-3,
                                 use_parallel_residual=True, hidden_act="gelu", pad_token_id=PAD,
                                 tie_word_embeddings=False,
                                 rope_parameters=dict(rope_type="default", rope_theta=1000.0,
                                                      partial_rotary_factor=0.5))),
    "gemma3": dict(args=[], model_type="gemma3_text", batch=(2, 8),
                   config=dict(vocab_size=40, max_position_embeddings=8, hidden_size=16, num_attention_heads=2,
                               num_key_value_heads=1, num_hidden_layers=4, intermediate_size=24, head_dim=8,
                               sliding_window=3, query_pre_attn_scalar=8, rms_norm_eps=1e-3, pad_token_id=PAD,
                               layer_types=["sliding_attention", "full_attention"] * 2,
                               final_logit_softcapping=None, attn_logit_softcapping=None,
                               hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                               rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=50.0),
                                                "full_attention": dict(rope_type="linear", rope_theta=1000.0,
                                                                       factor=2.0)})),
    "gpt2": dict(args=[], model_type="gpt2", batch=(2, 12),
                 config=dict(vocab_size=50, n_positions=12, n_embd=24, n_head=3, n_layer=2,
                             layer_norm_epsilon=1e-5, activation_function="gelu_new", tie_word_embeddings=True,
                             resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
}


def sample_cmd(fam, binary, mode, *args):
    f = FAMILIES[fam]
    if f.get("mode_first"):
        return [binary, mode, *f["args"], *args]
    return [binary, *f["args"], mode, *args]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise Mismatch(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")


def tokens_of(fam):
    B, S = FAMILIES[fam]["batch"]
    V = FAMILIES[fam]["config"]["vocab_size"]
    i = np.arange(B * S)
    return (torch.from_numpy(((7 * i + 3) % V).reshape(B, S)).long(),
            torch.from_numpy(((5 * i + 2) % V).reshape(B, S)).long())


def close(a, b, tol, what, floor=1.0):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    expect(a.shape == b.shape, f"{what}: shape {a.shape} against {b.shape}")
    scale = max(floor, float(np.max(np.abs(b))) if b.size else 0.0)
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    expect(err <= tol * scale, f"{what}: differs by {err:.3g} (tolerance {tol * scale:.3g})")
    return err


def random_model(fam, directory):
    f = FAMILIES[fam]
    torch.manual_seed(1234)
    config = transformers.AutoConfig.for_model(f["model_type"], **f["config"])
    if fam in ("mixtral", "qwen3_moe"):
        config.output_router_logits = True
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    g = torch.Generator().manual_seed(4321)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if "norm" in name or name.startswith(("ln", "transformer.ln")) or ".ln_" in name:
                p.copy_((0.0 if fam == "gemma3" else 1.0) + 0.3 * noise)  # gains away from 1 (Gemma: 1 + w)
            elif name.endswith("bias"):
                p.copy_(0.3 * noise)
            else:
                p.copy_(0.3 * noise)
    model.eval()
    model.save_pretrained(directory, safe_serialization=True)
    return model


def logits_of(model, tokens):
    with torch.no_grad():
        return model(input_ids=tokens).logits.float().numpy()


def read_logits(path, shape):
    return np.fromfile(path, dtype=np.float32).reshape(shape)


def check_family(fam, binary, scratch):
    os.makedirs(scratch, exist_ok=True)
    f = FAMILIES[fam]
    V = f["config"]["vocab_size"]
    B, S = f["batch"]
    tokens, targets = tokens_of(fam)
    expect(PAD in tokens.flatten().tolist() or fam == "gpt2", "the batch holds no pad token")

    # (a) transformers writes a random model
    hf_dir = os.path.join(scratch, "transformers")
    model = random_model(fam, hf_dir)
    files = sorted(os.listdir(hf_dir))
    expect(any(n.endswith(".safetensors") for n in files), f"save_pretrained wrote no safetensors: {files}")
    ref = logits_of(model, tokens)

    # (b) weft loads it: the same logits
    prefix = os.path.join(scratch, "loaded")
    load_path = hf_dir if fam != "gpt2" else os.path.join(hf_dir, "model.safetensors")
    run(sample_cmd(fam, binary, "load", load_path, prefix))
    err = close(read_logits(prefix + ".logits.bin", ref.shape), ref, 1e-5, f"{fam}: weft's logits of transformers' file")
    print(f"ok   {fam}: transformers' checkpoint loads in weft, logits within {err:.2g}")

    # (c) the loss and gradients of one batch
    gdir = os.path.join(scratch, "grad")
    run(sample_cmd(fam, binary, "grad", load_path, gdir))
    with open(os.path.join(gdir, "loss.txt")) as fh:
        weft_ce, weft_aux = (float(x) for x in fh.read().split())
    model.zero_grad()  # (eval mode: no dropout, no router jitter; gradients flow all the same)
    # transformers' own loss: its causal-LM loss with the targets as given (shift_labels: no
    # shift), plus router_aux_loss_coef x aux_loss for the MoE families (output_router_logits)
    out = model(input_ids=tokens, labels=targets, shift_labels=targets,
                **({"output_router_logits": True} if fam in ("mixtral", "qwen3_moe") else {}))
    ce = torch.nn.functional.cross_entropy(out.logits.float().reshape(-1, V), targets.reshape(-1))
    aux = torch.zeros(())
    if fam in ("mixtral", "qwen3_moe"):
        aux = model.config.router_aux_loss_coef * out.aux_loss
    close([weft_ce], [ce.item()], 1e-5, f"{fam}: weft's cross-entropy")
    close([weft_aux], [aux.item()], 1e-5, f"{fam}: weft's load-balancing loss (coef x transformers' aux_loss)")
    close([weft_ce + weft_aux], [out.loss.item()], 1e-5, f"{fam}: weft's loss against transformers' loss")
    out.loss.backward()
    # transformers' gradients in its own file layout (MoE experts one tensor each, as
    # save_pretrained writes them): a copy of the model whose parameters are the gradients
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.grad if p.grad is not None else torch.zeros_like(p))
    ref_dir = os.path.join(scratch, "transformers_grad")
    model.save_pretrained(ref_dir, safe_serialization=True)
    grads = load_file(os.path.join(gdir, "grad", "model.safetensors"))
    ref_grads = load_file(os.path.join(ref_dir, "model.safetensors"))
    if fam == "gpt2":  # weft's gpt checkpoints name GPT2Model's tensors (no "transformer.")
        ref_grads = {k.removeprefix("transformer."): v for k, v in ref_grads.items()}
    expect(set(grads) == set(ref_grads), f"{fam}: weft's gradient tensors differ from transformers': "
           f"{sorted(set(grads) ^ set(ref_grads))}")
    worst = 0.0
    for name in sorted(ref_grads):
        worst = max(worst, close(grads[name].float().numpy(), ref_grads[name].float().numpy(), 1e-5,
                                 f"{fam}: the gradient of {name}", floor=1e-3))
    print(f"ok   {fam}: loss {weft_ce:.6f} + aux {weft_aux:.6g} and all {len(ref_grads)} gradients match "
          f"(within {worst:.2g})")

    # (d) weft's own checkpoint loads in transformers
    sdir = os.path.join(scratch, "weft")
    run(sample_cmd(fam, binary, "save", sdir))
    saved = os.path.join(sdir, "hf" if fam != "gpt2" else "ckpt")
    loaded, info = transformers.AutoModelForCausalLM.from_pretrained(saved, dtype=torch.float32,
                                                                     output_loading_info=True)
    for key in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        expect(not info.get(key), f"{fam}: transformers reports {key} loading weft's checkpoint: {info.get(key)}")
    expect(loaded.config.model_type == f["model_type"],
           f"{fam}: weft's config.json is read as {loaded.config.model_type}")
    loaded.eval()
    weft_logits = read_logits(os.path.join(sdir, "saved.logits.bin"), (B, S, V))
    err = close(logits_of(loaded, tokens), weft_logits, 1e-5, f"{fam}: transformers' logits of weft's checkpoint")
    print(f"ok   {fam}: weft's checkpoint loads in transformers, logits within {err:.2g}")


def main(argv):
    if len(argv) != 4 or argv[1] not in FAMILIES:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    try:
        check_family(argv[1], argv[2], argv[3])
    except Mismatch as e:
        print(f"FAIL {e}")
        return 1
    print(f"{argv[1]}: transformers {transformers.__version__}, torch {torch.__version__}: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
