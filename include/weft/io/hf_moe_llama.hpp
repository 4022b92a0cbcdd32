#pragma once
// ---- Hugging Face Mixtral and Qwen3-MoE weights: load and save moe_llama<…> in transformers' layout ----
// `#include <weft/io/hf_moe_llama.hpp>`. Mixtral (MixtralForCausalLM, model_type "mixtral") and
// Qwen3-MoE (Qwen3MoeForCausalLM, "qwen3_moe") are LLaMA bodies whose MLPs are top-k routed SwiGLU
// experts: moe_llama<llama_config<…>, moe_mlp<C, E, K, F, swiglu_experts>>. Which names a model
// gets follows from its type: with query_key_norm<> (Qwen 3's q/k norms) Qwen3-MoE's, otherwise
// Mixtral's. Attention, norms, embedding and head are named as io/hf_llama.hpp's table says; the
// MLP of layer i (model.layers.{i}.…, expert j = 0 … E-1):
//
//   weft (layers.{i}.mlp.…)        Mixtral: block_sparse_moe.…     Qwen3-MoE: mlp.…          shape
//   gate.weight (E, C)             gate.weight                     gate.weight               (E, C)
//   experts.gate_up_proj (E, 2F, C)
//     expert j, rows 0 … F-1       experts.{j}.w1.weight           experts.{j}.gate_proj.weight  (F, C)
//     expert j, rows F … 2F-1      experts.{j}.w3.weight           experts.{j}.up_proj.weight    (F, C)
//   experts.down_proj (E, C, F)
//     expert j                     experts.{j}.w2.weight           experts.{j}.down_proj.weight  (C, F)
//
// That is the per-expert ("classic") layout of the published checkpoints, which transformers 4.36
// to 4.57 keep as one module per expert (transformers 5 fuses them on loading). Each expert's
// gate, up and down blocks are runs of weft's stacked parameters, so a part is an (F, C) or
// (C, F) block at a running element offset (hf_tensor_part's shape).
//
// Both routers are weft's (ops/topk_router.hpp): softmax over the E experts, the K largest, their
// probabilities renormalised to sum 1 — Mixtral always, Qwen3-MoE with norm_topk_prob true (a
// checkpoint with false, or without the field, whose default is false, is refused).
//
//   load_hf_weights(step, path)   path: a .safetensors file, or a directory holding
//                                 model.safetensors or model.safetensors.index.json (shards)
//   save_hf_weights(step, dir)    dir/model.safetensors and dir/config.json
//
// Loading first checks the config.json beside the weights, where there is one: model_type (mixtral
// or qwen3_moe, matching the q/k norms), the expert count (num_local_experts / num_experts), top-k
// (num_experts_per_tok), the experts' width (intermediate_size / moe_intermediate_size), Qwen3-MoE's
// norm_topk_prob (true), decoder_sparse_step (1) and mlp_only_layers (empty), no shared expert, then
// io/hf_llama.hpp's llama fields; then every tensor, before it writes a parameter.
// router_aux_loss_coef is a training weight, not part of the function, and is not checked; saving
// writes weft's aux weight / K (weft's load-balancing loss is transformers' divided by K). The
// coefficient means transformers' pooled loss: build the moe_mlp with pooled_aux_loss for it
// (model/moe.hpp, docs/moe.md). pad_token_id is read and written (nn.Embedding's padding_idx).
#include "weft/exec/training_step.hpp"  // training_step
#include "weft/io/checkpoint.hpp"       // checkpoint_error
#include "weft/io/checkpoint_model.hpp" // structured_model_t
#include "weft/io/hf_config.hpp"         // hf_expert_count: num_local_experts or num_experts
#include "weft/io/hf_llama.hpp"         // hf_tensor_part, hf_llama_parts, hf_load_parts, hf_save_parts, check_hf_llama_fields
#include "weft/io/json.hpp"             // json

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

namespace detail {

template <class M>
inline constexpr bool is_moe_llama_family = requires {
  std::string_view(M::family);
  typename M::config;
  typename M::moe_type;
} && std::string_view(M::family) == "moe_llama";

template <class Plan>
inline constexpr bool hf_moe_llama_plan = is_moe_llama_family<structured_model_t<Plan>>;

// The parts of parameter `p` of moe_llama model M: the MoE MLP's per expert, the rest as llama's.
template <class M>
std::vector<hf_tensor_part> hf_moe_llama_parts(const param_info& p) {
  constexpr bool qwen = M::config::qk_normalised;  // Qwen3-MoE's names, else Mixtral's
  const std::string& n = p.name;
  const std::size_t mlp_at = n.find(".mlp.");
  if (!n.starts_with("layers.") || mlp_at == std::string::npos) return hf_llama_parts<M>(p);
  const std::string l = "model.layers." + n.substr(7, mlp_at - 7) + (qwen ? ".mlp." : ".block_sparse_moe.");
  const std::string rest = n.substr(mlp_at + 5);
  if (rest == "gate.weight") return {{l + "gate.weight", p.shape.empty() ? 1 : p.shape[0]}};
  if (p.shape.size() != 3) return {};
  const std::size_t E = p.shape[0];
  const auto R = static_cast<std::int64_t>(p.shape[1]), Cin = static_cast<std::int64_t>(p.shape[2]);
  std::vector<hf_tensor_part> parts;
  if (rest == "experts.gate_up_proj") {  // (E, 2F, C): per expert [gate F rows | up F rows]
    for (std::size_t j = 0; j < E; ++j) {
      const std::string e = l + "experts." + std::to_string(j) + ".";
      parts.push_back({e + (qwen ? "gate_proj.weight" : "w1.weight"), 0, {R / 2, Cin}});
      parts.push_back({e + (qwen ? "up_proj.weight" : "w3.weight"), 0, {R / 2, Cin}});
    }
  } else if (rest == "experts.down_proj") {  // (E, C, F): per expert (C, F)
    for (std::size_t j = 0; j < E; ++j)
      parts.push_back({l + "experts." + std::to_string(j) + "." + (qwen ? "down_proj.weight" : "w2.weight"), 0, {R, Cin}});
  }
  return parts;
}

// What the Hugging Face MoE layouts cannot hold, at the user's line.
template <class Plan>
void check_hf_moe_llama() {
  using M = structured_model_t<Plan>;
  using Moe = typename M::moe_type;
  static constexpr bool swiglu = Moe::swiglu;
  static_assert(swiglu,
                "weft::load_hf_weights/save_hf_weights: Mixtral's and Qwen3-MoE's experts are SwiGLU, this moe_mlp's are "
                "GELU. Build it as moe_mlp<width, E, K, F, swiglu_experts>.");
  static constexpr bool no_shared = !Moe::has_shared;
  static_assert(no_shared,
                "weft::load_hf_weights/save_hf_weights: Mixtral and Qwen3-MoE have no shared expert. Build the moe_mlp "
                "without shared_expert<…>.");
  static constexpr bool no_bias = !M::config::attention_bias;
  static_assert(no_bias,
                "weft::load_hf_weights/save_hf_weights: Mixtral and Qwen3-MoE have no q/k/v biases. Build the "
                "llama_config without qkv_bias<>.");
}

// Checks config.json `file` against moe_llama model M: the model type and its naming, the experts,
// top-k and their width, Qwen3-MoE's routing switches, then the llama fields (check_hf_llama_fields).
template <class M>
void check_hf_moe_llama_config(const std::filesystem::path& file) {
  using Moe = typename M::moe_type;
  constexpr bool qwen = M::config::qk_normalised;
  const io::detail::json j = hf_read_config(file);
  const std::string where = "weft::load_hf_weights: " + file.string();
  auto refuse = [&](const std::string& what, const std::string& fix) { hf_config_refuse<M>(where, what, fix); };
  auto number = [&](const char* key, double& out) { return hf_config_number(j, where, key, out); };
  if (j.contains("model_type") && j["model_type"].is_string()) {
    const std::string t = j["model_type"].get<std::string>();
    if (t == "qwen2_moe")
      refuse("model_type is \"qwen2_moe\" (a shared expert beside the routed ones)",
             "weft reads the mixtral and qwen3_moe layouts, whose experts are all routed");
    if (t != "mixtral" && t != "qwen3_moe")
      refuse("model_type is \"" + t + "\"", "weft reads the mixtral and qwen3_moe layouts into moe_llama");
    if (t == "qwen3_moe" && !qwen) refuse("model_type is \"qwen3_moe\" (q/k norms)", "give the llama query_key_norm<>");
    if (t == "mixtral" && qwen)
      refuse("model_type is \"mixtral\" (no q/k norms)", "build the llama without query_key_norm<>");
  }
  const std::string moe = "moe_mlp<" + std::to_string(M::width) + ", ";
  double v = 0;
  // the expert count: num_local_experts (transformers 5's name for both) or Qwen3-MoE's older num_experts
  std::string experts;
  if (v = hf_expert_count(j, where, qwen, &experts); v >= 0 && v != double(Moe::experts))
    refuse(experts + " is " + hf_number(v) + ", this model has " + std::to_string(Moe::experts),
           "build it with " + moe + hf_number(v) + ", " + std::to_string(Moe::top_k) + ", " + std::to_string(Moe::ffn) +
               ", swiglu_experts>");
  if (number("num_experts_per_tok", v) && v != double(Moe::top_k))
    refuse("num_experts_per_tok is " + hf_number(v) + ", this model routes to " + std::to_string(Moe::top_k),
           "build it with " + moe + std::to_string(Moe::experts) + ", " + hf_number(v) + ", " + std::to_string(Moe::ffn) +
               ", swiglu_experts>");
  const char* ffn = qwen ? "moe_intermediate_size" : "intermediate_size";
  if (number(ffn, v) && v != double(Moe::ffn))
    refuse(std::string(ffn) + " is " + hf_number(v) + ", this model's experts are " + std::to_string(Moe::ffn) + " wide",
           "build it with " + moe + std::to_string(Moe::experts) + ", " + std::to_string(Moe::top_k) + ", " +
               hf_number(v) + ", swiglu_experts>");
  if (number("shared_expert_intermediate_size", v) && v > 0)
    refuse("it has a shared expert (shared_expert_intermediate_size " + hf_number(v) + ")",
           "weft reads the mixtral and qwen3_moe layouts, whose experts are all routed");
  if constexpr (qwen) {
    // transformers' Qwen3MoeConfig defaults: norm_topk_prob false, decoder_sparse_step 1, mlp_only_layers []
    const bool renormalised = j.contains("norm_topk_prob") && j["norm_topk_prob"].is_boolean() &&
                              j["norm_topk_prob"].get<bool>();
    if (!renormalised)
      refuse(std::string("norm_topk_prob is ") +
                 (!j.contains("norm_topk_prob") ? "absent (default false)"
                  : j["norm_topk_prob"].is_boolean() ? "false" : j["norm_topk_prob"].dump()) +
                 ": its top-k gates are not renormalised",
             "weft's router always renormalises them to sum 1 and cannot compute this checkpoint");
    if (number("decoder_sparse_step", v) && v != 1)
      refuse("decoder_sparse_step is " + hf_number(v) + " (experts on every " + hf_number(v) + "th layer only)",
             "weft's moe_llama has experts on every layer; only decoder_sparse_step 1 loads");
    if (j.contains("mlp_only_layers") && j["mlp_only_layers"].is_array() && !j["mlp_only_layers"].empty())
      refuse("mlp_only_layers is " + j["mlp_only_layers"].dump() + " (dense MLPs on those layers)",
             "weft's moe_llama has experts on every layer; only an empty mlp_only_layers loads");
  }
  check_hf_llama_fields<M>(j, where);
}

}  // namespace detail

/// Loads a Hugging Face Mixtral or Qwen3-MoE checkpoint into a moe_llama<…> step (Qwen3-MoE's
/// names when the llama_config has query_key_norm<>, Mixtral's otherwise).
template <class Plan>
  requires detail::hf_moe_llama_plan<Plan>
void load_hf_weights(training_step<Plan>& st, const std::filesystem::path& path) {
  detail::check_hf_moe_llama<Plan>();
  using M = detail::structured_model_t<Plan>;
  if (const auto config = detail::hf_config_path(path); !config.empty()) detail::check_hf_moe_llama_config<M>(config);
  const std::int64_t pad = detail::hf_padding_token<M::vocab_size>(path);  // nn.Embedding's padding_idx
  detail::hf_load_parts(st, path, [](const param_info& p) { return detail::hf_moe_llama_parts<M>(p); }, "llama");
  st.set_padding_token(pad);
}

/// Writes a moe_llama<…> step's weights as a Hugging Face checkpoint: dir/model.safetensors (the
/// names above, the element type's dtype) and dir/config.json (MixtralForCausalLM, or
/// Qwen3MoeForCausalLM with q/k norms).
template <class Plan>
  requires detail::hf_moe_llama_plan<Plan>
void save_hf_weights(const training_step<Plan>& st, const std::filesystem::path& dir) {
  detail::check_hf_moe_llama<Plan>();
  using M = detail::structured_model_t<Plan>;
  using Moe = typename M::moe_type;
  using Cfg = typename M::config;
  using T = typename Plan::value_type;
  constexpr bool qwen = Cfg::qk_normalised;
  detail::hf_save_parts(st, dir, [](const param_info& p) { return detail::hf_moe_llama_parts<M>(p); });
  io::detail::json c = detail::hf_llama_config_json<M, T>();
  c["architectures"] = {qwen ? "Qwen3MoeForCausalLM" : "MixtralForCausalLM"};
  c["model_type"] = qwen ? "qwen3_moe" : "mixtral";
  c[qwen ? "num_experts" : "num_local_experts"] = Moe::experts;
  c["num_experts_per_tok"] = Moe::top_k;
  c["intermediate_size"] = Moe::ffn;
  if constexpr (qwen) {
    c["moe_intermediate_size"] = Moe::ffn;
    c["norm_topk_prob"] = true;
    c["decoder_sparse_step"] = 1;
    c["mlp_only_layers"] = io::detail::json::array();
  }
  // weft's aux loss is transformers' divided by K (ops/topk_router.hpp): the same weight is alpha / K
  c["router_aux_loss_coef"] = Moe::aux_alpha / static_cast<double>(Moe::top_k);
  c["output_router_logits"] = false;
  // MixtralConfig's default window is 4096: say there is none
  if constexpr (Cfg::sliding_window == 0) c["sliding_window"] = nullptr;
  if (st.padding_token() >= 0) c["pad_token_id"] = st.padding_token();
  detail::hf_write_config(c, dir);
}

}  // namespace weft
