#pragma once
// ---- Hugging Face Gemma 3 text weights: load and save gemma3<…> in transformers' layout ----
// `#include <weft/io/hf_gemma3.hpp>`. Gemma 3's text checkpoints (Gemma3ForCausalLM, model_type
// "gemma3_text": gemma-3-1b, and the text towers of the larger ones saved on their own) store:
//
//   weft                                      Hugging Face (model.layers.{i}.…)
//   embed.weight                              model.embed_tokens.weight (the head's too: tied)
//   layers.{i}.input_layernorm.weight         input_layernorm.weight
//   layers.{i}.self_attn.c_attn.weight        self_attn.q_proj, k_proj, v_proj (.weight), rows stacked
//   layers.{i}.self_attn.qk_norm.q_weight     self_attn.q_norm.weight (k_weight: k_norm.weight)
//   layers.{i}.self_attn.c_proj.weight        self_attn.o_proj.weight
//   layers.{i}.post_attention_layernorm.weight   post_attention_layernorm.weight
//   layers.{i}.pre_feedforward_layernorm.weight  pre_feedforward_layernorm.weight
//   layers.{i}.post_feedforward_layernorm.weight post_feedforward_layernorm.weight
//   layers.{i}.mlp.gate_up.weight             mlp.gate_proj.weight, mlp.up_proj.weight, rows stacked
//   layers.{i}.mlp.down.weight                mlp.down_proj.weight
//   norm.weight                               model.norm.weight
//
// Every weight is (out, in) in both. Every RMSNorm weight is Gemma's w of x̂·(1 + w) in both (weft's
// unit-offset norms store w, initialised to 0), so it loads unchanged. The rotary convention is the
// same (rotate-half). A file with an lm_head.weight equal to its embedding loads (some exports keep
// the copy); one that differs is refused.
//
//   load_hf_weights(step, path)   path: a .safetensors file, or a directory holding
//                                 model.safetensors or model.safetensors.index.json (shards)
//   save_hf_weights(step, dir)    dir/model.safetensors and dir/config.json (Gemma3ForCausalLM)
//
// Loading first checks the config.json beside the weights, where there is one, against the model's
// type (what the tensors' shapes cannot show): model_type gemma3_text, the sizes and heads,
// head_dim, sliding_window, the layer pattern (sliding_window_pattern, or a layer_types list, which
// must be weft's periodic one), rope_theta, rope_local_base_freq, rope_scaling (none or linear),
// rms_norm_eps, query_pre_attn_scalar (= head_dim), hidden_activation gelu_pytorch_tanh, no logit
// soft-capping, a tied head. A mismatch is a one-line checkpoint_error naming the gemma3_config tag
// to give; a field the file lacks is not checked. Then every tensor, as io/hf_llama.hpp does.
#include "weft/core/rope_scaling.hpp"   // linear_rope_scaling
#include "weft/exec/training_step.hpp"  // training_step
#include "weft/io/checkpoint.hpp"       // checkpoint_error
#include "weft/io/checkpoint_model.hpp" // structured_model_t
#include "weft/io/hf_config.hpp"         // hf_read_rope: rope_parameters and the older spellings
#include "weft/io/hf_llama.hpp"         // hf_tensor_part, hf_load_parts, hf_save_parts, hf_config_*, hf_write_config
#include "weft/io/json.hpp"             // json

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft {

namespace detail {

template <class M>
inline constexpr bool is_gemma3_family = requires { std::string_view(M::family); typename M::config; } &&
                                         std::string_view(M::family) == "gemma3";

// The parts of parameter `p` of gemma3 model M, first rows first; empty for a name it does not know.
template <class M>
std::vector<hf_tensor_part> hf_gemma3_parts(const param_info& p) {
  constexpr std::size_t H = M::heads, KVH = M::kv_heads, D = M::head_dim, F = M::ffn;
  const std::string& n = p.name;
  const std::size_t rows = p.shape.empty() ? 1 : p.shape[0];
  if (n == "embed.weight") return {{"model.embed_tokens.weight", rows}};
  if (n == "norm.weight") return {{"model.norm.weight", rows}};
  if (!n.starts_with("layers.")) return {};
  const std::size_t dot = n.find('.', 7);
  if (dot == std::string::npos) return {};
  const std::string l = "model.layers." + n.substr(7, dot - 7) + ".", rest = n.substr(dot + 1);
  for (const char* norm : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                           "post_feedforward_layernorm"})
    if (rest == std::string(norm) + ".weight") return {{l + rest, rows}};
  if (rest == "self_attn.c_attn.weight")
    return {{l + "self_attn.q_proj.weight", H * D}, {l + "self_attn.k_proj.weight", KVH * D},
            {l + "self_attn.v_proj.weight", KVH * D}};
  if (rest == "self_attn.qk_norm.q_weight") return {{l + "self_attn.q_norm.weight", rows}};
  if (rest == "self_attn.qk_norm.k_weight") return {{l + "self_attn.k_norm.weight", rows}};
  if (rest == "self_attn.c_proj.weight") return {{l + "self_attn.o_proj.weight", rows}};
  if (rest == "mlp.gate_up.weight") return {{l + "mlp.gate_proj.weight", F}, {l + "mlp.up_proj.weight", F}};
  if (rest == "mlp.down.weight") return {{l + "mlp.down_proj.weight", rows}};
  return {};
}

// The linear factor of gemma3 model M's rope scaling: 0 for none; -1 for a scaling that is not linear.
template <class M>
constexpr double hf_gemma3_linear_factor() {
  using Sc = typename M::config::rope_scaling_type;
  if constexpr (!Sc::enabled) {
    return 0;
  } else if constexpr (requires { Sc::factor; }) {
    if constexpr (std::is_same_v<Sc, linear_rope_scaling<Sc::factor>>) return double(Sc::factor);
    else return -1;
  } else {
    return -1;
  }
}

// The layer pattern a layer_types list describes: P when layer i is "full_attention" exactly when
// (i + 1) % P == 0; 0 when it is not periodic so; `depth + 1` when no layer is full (any P > depth).
inline std::size_t hf_gemma3_pattern_of(const io::detail::json& types) {
  const std::size_t n = types.size();
  std::size_t first = 0;
  while (first < n && !(types[first].is_string() && types[first].get<std::string>() == "full_attention")) ++first;
  const std::size_t p = first + 1;
  for (std::size_t i = 0; i < n; ++i) {
    if (!types[i].is_string()) return 0;
    const std::string t = types[i].get<std::string>();
    if (t != "full_attention" && t != "sliding_attention") return 0;
    if ((t == "full_attention") != ((i + 1) % p == 0)) return 0;
  }
  return p;
}

// Checks config.json `file` against gemma3 model M (the top of the file says what).
template <class M>
void check_hf_gemma3_config(const std::filesystem::path& file) {
  using Cfg = typename M::config;
  const io::detail::json j = hf_read_config(file);
  const std::string where = "weft::load_hf_weights: " + file.string();
  auto number = [&](const char* key, double& out) { return hf_config_number(j, where, key, out); };
  auto refuse = [&](const std::string& what, const std::string& fix) { hf_config_refuse<M>(where, what, fix); };
  auto is_null = [&](const char* key) { return !j.contains(key) || j[key].is_null(); };
  if (j.contains("model_type") && j["model_type"].is_string() && j["model_type"].get<std::string>() != "gemma3_text")
    refuse("model_type is \"" + j["model_type"].get<std::string>() + "\"",
           "weft reads Gemma 3 text checkpoints (gemma3_text, Gemma3ForCausalLM) into gemma3<>");
  double v = 0;
  struct size_field {
    const char* key;
    std::size_t model;
    const char* tag;
  };
  for (const size_field& s : {size_field{"vocab_size", M::vocab_size, "vocab"}, size_field{"hidden_size", M::width, "width"},
                              size_field{"intermediate_size", M::ffn, "ffn"},
                              size_field{"num_hidden_layers", M::depth, "depth"},
                              size_field{"num_attention_heads", M::heads, "heads"},
                              size_field{"num_key_value_heads", M::kv_heads, "kv_heads"},
                              size_field{"head_dim", M::head_dim, "head_dim"},
                              size_field{"sliding_window", Cfg::sliding_window, "sliding_window"},
                              size_field{"sliding_window_pattern", Cfg::pattern, "layer_pattern"}})
    if (number(s.key, v) && v != double(s.model))
      refuse(std::string(s.key) + " is " + hf_number(v) + ", this model's is " + std::to_string(s.model),
             "give the gemma3_config " + std::string(s.tag) + "<" + hf_number(v) + ">");
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const auto& types = j["layer_types"];
    if (!types.is_array() || types.size() != M::depth)
      refuse("layer_types is not a list of " + std::to_string(M::depth) + " layer types", "give one per layer");
    const std::size_t p = hf_gemma3_pattern_of(types);
    if (p == 0)
      refuse("layer_types is not periodic (full_attention exactly on every P-th layer)",
             "weft's gemma3 makes layer i global when (i + 1) % layer_pattern == 0");
    const bool same = p == Cfg::pattern || (p > M::depth && Cfg::pattern > M::depth);
    if (!same)
      refuse("layer_types makes layer i global when (i + 1) % " + std::to_string(p) + " == 0, this model when (i + 1) % " +
                 std::to_string(Cfg::pattern) + " == 0",
             "give the gemma3_config layer_pattern<" + std::to_string(p) + ">");
  }
  if (number("query_pre_attn_scalar", v) && v != double(M::head_dim))
    refuse("query_pre_attn_scalar is " + hf_number(v) + ", not head_dim " + std::to_string(M::head_dim),
           "weft's gemma3 scales attention scores by 1/sqrt(head_dim)");
  if (number("rms_norm_eps", v) && std::abs(v - Cfg::norm_epsilon) > 1e-9 * Cfg::norm_epsilon)
    refuse("rms_norm_eps is " + hf_number(v) + ", this model's is " + hf_number(Cfg::norm_epsilon),
           "give the gemma3_config norm_eps<" + hf_number(v) + ">");
  for (const char* key : {"hidden_activation", "hidden_act"})
    if (j.contains(key) && j[key].is_string() && j[key].get<std::string>() != "gelu_pytorch_tanh")
      refuse(std::string(key) + " is \"" + j[key].get<std::string>() + "\"",
             "a gemma3's MLP is GeGLU with the tanh GELU (gelu_pytorch_tanh)");
  for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"})
    if (!is_null(key)) refuse(std::string(key) + " is set", "weft's gemma3 has no logit soft-capping (Gemma 3's is null)");
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean() && !j["tie_word_embeddings"].get<bool>())
    refuse("tie_word_embeddings is false", "a gemma3's head is tied to its embedding");
  if (j.contains("attention_bias") && j["attention_bias"].is_boolean() && j["attention_bias"].get<bool>())
    refuse("attention_bias is true", "a gemma3's projections have no biases");
  if (j.contains("use_bidirectional_attention") && j["use_bidirectional_attention"].is_boolean() &&
      j["use_bidirectional_attention"].get<bool>())
    refuse("use_bidirectional_attention is true (EmbeddingGemma's attention)", "weft's gemma3 is causal");
  // the rotary settings of the global and the sliding layers (io/hf_config.hpp): rope_parameters'
  // full_attention and sliding_attention entries (transformers 5), or rope_theta, rope_scaling and
  // rope_local_base_freq (older files); a base given in neither is Gemma3TextConfig's default
  const hf_rope global = hf_read_rope(j, where, hf_gemma3_rope_spelling(true));
  const hf_rope local = hf_read_rope(j, where, hf_gemma3_rope_spelling(false));
  for (const hf_rope* r : {&global, &local}) {
    const bool is_global = r == &global;
    if (r->type != "default" && (r->type != "linear" || !is_global))
      refuse(hf_rope_type_field(*r) + " is \"" + r->type + "\"",
             is_global ? "weft's gemma3 scales its global layers' frequencies linearly only"
                       : "weft's gemma3 does not scale its sliding layers' frequencies");
    if (!r->unknown.empty())
      refuse("\"" + r->unknown + "\" is a rotary field weft does not read", "remove it or convert the checkpoint");
    const char* tag = is_global ? "rope_theta" : "rope_local_base_freq";
    const double model = is_global ? double(Cfg::rope_theta) : double(Cfg::rope_local_base);
    if (r->theta.value != model)
      refuse((r->theta.found() ? r->theta.field : std::string(tag) + " (absent: " + hf_config_text(r->theta.value) + ")") +
                 " is " + hf_config_text(r->theta.value) + ", this model's is " + hf_config_text(model),
             "give the gemma3_config " + std::string(tag) + "<" + hf_config_text(r->theta.value) + ">");
  }
  // the global layers' scaling: none ("default"), or linear with the model's factor
  constexpr double model_factor = hf_gemma3_linear_factor<M>();
  double factor = 0;
  if (global.type == "linear") {
    if (!global.factor.found()) refuse(hf_rope_type_field(global) + " is linear without a factor", "give its factor");
    factor = global.factor.value;
  }
  if (factor != model_factor)
    refuse(factor == 0 ? std::string("it has no rope_scaling") : hf_rope_type_field(global) + " is linear with factor " + hf_config_text(factor),
           factor == 0 ? std::string("build the gemma3 without rope_scaling<>")
                       : "give the gemma3_config rope_scaling<linear_rope_scaling<" + hf_config_text(factor) + ">>");
}

template <class Plan>
inline constexpr bool hf_gemma3_plan = is_gemma3_family<structured_model_t<Plan>>;

}  // namespace detail

/// Loads a Hugging Face Gemma 3 text checkpoint (Gemma3ForCausalLM) into a gemma3<…> step.
template <class Plan>
  requires detail::hf_gemma3_plan<Plan>
void load_hf_weights(training_step<Plan>& st, const std::filesystem::path& path) {
  using M = detail::structured_model_t<Plan>;
  if (const auto config = detail::hf_config_path(path); !config.empty()) detail::check_hf_gemma3_config<M>(config);
  const std::int64_t pad = detail::hf_padding_token<M::vocab_size>(path);  // nn.Embedding's padding_idx
  detail::hf_load_parts(st, path, [](const param_info& p) { return detail::hf_gemma3_parts<M>(p); }, "gemma3",
                        detail::hf_llama_buffer{}, "");
  st.set_padding_token(pad);
}

/// Writes a gemma3<…> step's weights as a Hugging Face checkpoint: dir/model.safetensors (the names
/// above, the element type's dtype, no lm_head.weight: tied) and dir/config.json (Gemma3ForCausalLM).
template <class Plan>
  requires detail::hf_gemma3_plan<Plan>
void save_hf_weights(const training_step<Plan>& st, const std::filesystem::path& dir) {
  using M = detail::structured_model_t<Plan>;
  using Cfg = typename M::config;
  using T = typename Plan::value_type;
  detail::hf_save_parts(st, dir, [](const param_info& p) { return detail::hf_gemma3_parts<M>(p); });
  io::detail::json types = io::detail::json::array();
  for (std::size_t i = 0; i < M::depth; ++i) types.push_back((i + 1) % Cfg::pattern == 0 ? "full_attention" : "sliding_attention");
  io::detail::json c = {{"architectures", {"Gemma3ForCausalLM"}},
                        {"model_type", "gemma3_text"},
                        {"vocab_size", M::vocab_size},
                        {"hidden_size", M::width},
                        {"intermediate_size", M::ffn},
                        {"num_hidden_layers", M::depth},
                        {"num_attention_heads", M::heads},
                        {"num_key_value_heads", M::kv_heads},
                        {"head_dim", M::head_dim},
                        {"max_position_embeddings", M::context_length},
                        {"sliding_window", Cfg::sliding_window},
                        {"sliding_window_pattern", Cfg::pattern},
                        {"layer_types", types},
                        {"rope_theta", static_cast<double>(Cfg::rope_theta)},
                        {"rope_local_base_freq", static_cast<double>(Cfg::rope_local_base)},
                        {"rope_scaling", nullptr},
                        {"rms_norm_eps", Cfg::norm_epsilon},
                        {"query_pre_attn_scalar", Cfg::query_scalar},
                        {"hidden_activation", "gelu_pytorch_tanh"},
                        {"final_logit_softcapping", nullptr},
                        {"attn_logit_softcapping", nullptr},
                        {"attention_bias", false},
                        {"tie_word_embeddings", true},
                        {"torch_dtype", sizeof(T) == 8 ? "float64" : sizeof(T) == 4 ? "float32" : "bfloat16"}};
  constexpr double factor = detail::hf_gemma3_linear_factor<M>();
  static_assert(factor >= 0, "weft::save_hf_weights: this gemma3's rope_scaling is not linear; Gemma 3 configs describe linear scaling only.");
  if constexpr (factor > 0) c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", factor}};
  if (st.padding_token() >= 0) c["pad_token_id"] = st.padding_token();
  detail::hf_write_config(c, dir);
}

}  // namespace weft
