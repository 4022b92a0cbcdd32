#pragma once
// ---- the weft type of a Hugging Face config.json ----
// `#include <weft/io/hf_model_type.hpp>`. weft's models are types, so a published checkpoint
// needs its type written out before it can be loaded; hf_model_type(config) writes it from the
// config.json transformers saves beside the weights:
//
//   model_type              weft type
//   llama, mistral,         llama<llama_config<vocab<…>, context<…>, width<…>, heads<…>[, kv_heads<…>],
//   qwen2, qwen3                                depth<…>, ffn<…>[, head_dim<…>][, rope_theta<…>]
//                                               [, rope_scaling<llama3_rope_scaling<…>>][, sliding_window<…>]
//                                               [, qkv_bias<>][, query_key_norm<>][, tie_word_embeddings<>]
//                                               [, norm_eps<…>]>>
//   mixtral, qwen3_moe      moe_llama<llama_config<… as above, without ffn<…>; qwen3_moe: query_key_norm<>>,
//                                     moe_mlp<width, experts, top-k, expert ffn, swiglu_experts[, aux_loss_weight<…>], pooled_aux_loss>>
//   gpt2                    gpt<gpt_config<vocab<…>, context<…>, width<…>, heads<…>, depth<…>[, ffn<…>]
//                                           [, norm_eps<…>]>>
//   gpt_neox                gpt_neox<neox_config<vocab<…>, context<…>, width<…>, heads<…>, depth<…>[, ffn<…>]
//                                                [, rope_theta<…>][, rotary_pct<…>][, norm_eps<…>]>>
//   gemma3_text             gemma3<gemma3_config<vocab<…>, context<…>, width<…>, heads<…>[, kv_heads<…>], depth<…>,
//                                             ffn<…>[, head_dim<…>][, sliding_window<…>][, layer_pattern<…>]
//                                             [, rope_theta<…>][, rope_local_base_freq<…>]
//                                             [, rope_scaling<linear_rope_scaling<…>>][, norm_eps<…>]>>
//
// The rotary settings and Qwen3-MoE's expert count are read in transformers 5's spelling
// (rope_parameters, with GPT-NeoX's partial_rotary_factor and Gemma 3's per-layer-type entries;
// num_local_experts) and the older one (rope_theta, rope_scaling, rotary_emb_base, rotary_pct,
// rope_local_base_freq; num_experts) by io/hf_config.hpp, which the loaders' config checks share:
// spellings that disagree, a rope field weft does not read or cannot interpret, are refused in one
// line naming the field; a setting given in neither is transformers' default for the model type.
//
// The optional tags appear only where the config departs from the tag's default, so the text is
// the shortest spelling of the type; the loaders (io/hf_llama.hpp, io/hf_moe_llama.hpp, io/hf_neox.hpp,
// io/hf_gemma3.hpp, and load_weights for GPT-2) then accept the weights and their config.json. A config that describes something weft cannot build (another model
// type, an activation other than silu or gelu_new, a rope_scaling other than LLaMA 3.1's, a bias
// on o_proj, a fractional rope_theta, Qwen3-MoE's norm_topk_prob false, dense layers among the expert
// ones, a shared expert) is refused with a one-line checkpoint_error that says why.
// `hf_model_type <config.json | checkpoint dir>` (tools/hf_model_type.cpp) prints it.
#include "weft/io/checkpoint_error.hpp"  // checkpoint_error
#include "weft/io/hf_config.hpp"         // hf_read_rope, hf_expert_count: the fields spelt more than one way
#include "weft/io/json.hpp"              // json

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace weft {

namespace detail {

// The shortest decimal text of a double that reads back to it ("1e-06").
inline std::string shortest_double(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Reads the fields of one config.json for hf_model_type, with weft's one-line refusals.
class hf_config_reader {
 public:
  hf_config_reader(const io::detail::json& j, std::string where) : j_(j), where_(std::move(where)) {}

  [[noreturn]] void refuse(const std::string& why) const { throw checkpoint_error(prefix() + ": " + why); }
  // What every message begins with ("weft::hf_model_type: config.json").
  std::string prefix() const { return "weft::hf_model_type: " + where_; }
  const io::detail::json& config() const { return j_; }
  // The rotary settings of these layers (io/hf_config.hpp), with the rope object's unknown fields refused
  // once the caller has checked the type.
  hf_rope rope(const hf_rope_spelling& s) const { return hf_read_rope(j_, prefix(), s); }
  void refuse_unknown(const hf_rope& r) const {
    if (!r.unknown.empty()) refuse("\"" + r.unknown + "\" is a rotary field weft does not read");
  }
  // A rotary setting as a whole number (weft's tags take integers).
  std::uint64_t whole(const hf_rope_value& v, const std::string& what) const {
    const double d = v.value;
    if (!(d >= 0) || d != std::floor(d) || d > 9.0e15)
      refuse("\"" + (v.found() ? v.field : what) + "\" is " + shortest_double(d) +
             ", not a whole number (weft's tag takes an integer)");
    return static_cast<std::uint64_t>(d);
  }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  // A count: a non-negative integer (an integral float such as 1000000.0 is accepted).
  std::uint64_t count(const char* key) const {
    if (!has(key)) refuse(std::string("\"") + key + "\" is missing");
    return count_of(j_[key], key);
  }
  std::uint64_t count_or(const char* key, std::uint64_t fallback) const { return has(key) ? count(key) : fallback; }
  double number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_number()) refuse(std::string("\"") + key + "\" is not a number");
    return j_[key].get<double>();
  }
  bool flag_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) refuse(std::string("\"") + key + "\" is not true or false");
    return j_[key].get<bool>();
  }
  std::string text_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) refuse(std::string("\"") + key + "\" is not a string");
    return j_[key].get<std::string>();
  }
  const io::detail::json& at(const char* key) const { return j_[key]; }
  std::uint64_t count_of(const io::detail::json& v, const std::string& what) const {
    if (!v.is_number()) refuse("\"" + what + "\" is not a number");
    const double d = v.get<double>();
    if (!(d >= 0) || d != std::floor(d) || d > 9.0e15)
      refuse("\"" + what + "\" is " + shortest_double(d) + ", not a whole number (weft's tag takes an integer)");
    return static_cast<std::uint64_t>(d);
  }

 private:
  const io::detail::json& j_;
  std::string where_;
};

inline std::string tag(const char* name, std::uint64_t v) { return std::string(name) + "<" + std::to_string(v) + ">"; }

// The moe_mlp of a mixtral or qwen3_moe config: moe_mlp<width, E, K, F, swiglu_experts[, aux_loss_weight<…>], pooled_aux_loss>.
// transformers' router_aux_loss_coef weighs a loss K times weft's (ops/topk_router.hpp), so weft's
// weight is coef · K (weft's default 0.01 is left out); the loss is transformers' one pooled over
// the layers (pooled_aux_loss, docs/moe.md), not weft's default sum of per-layer losses.
inline std::string hf_moe_mlp_type(const hf_config_reader& c, const std::string& model_type, std::uint64_t width) {
  const bool qwen = model_type == "qwen3_moe";
  std::string experts_field;
  const double experts_given = hf_expert_count(c.config(), c.prefix(), qwen, &experts_field);
  if (experts_given < 0)
    c.refuse(qwen ? "\"num_local_experts\" (or the older \"num_experts\") is missing" : "\"num_local_experts\" is missing");
  const std::uint64_t experts = c.count_of(c.at(experts_field.c_str()), experts_field);
  const std::uint64_t top_k = c.count("num_experts_per_tok");
  const std::uint64_t ffn = c.count(qwen ? "moe_intermediate_size" : "intermediate_size");
  if (experts == 0 || top_k == 0 || top_k > experts)
    c.refuse("num_experts_per_tok is " + std::to_string(top_k) + " of " + std::to_string(experts) +
             " experts; weft's moe_mlp routes each token to 1 to all of its experts");
  if (c.has("shared_expert_intermediate_size") && c.count("shared_expert_intermediate_size") > 0)
    c.refuse("it has a shared expert (shared_expert_intermediate_size); weft reads mixtral and qwen3_moe experts, all routed");
  if (qwen) {  // transformers' Qwen3MoeConfig defaults: norm_topk_prob false, decoder_sparse_step 1, mlp_only_layers []
    if (!c.flag_or("norm_topk_prob", false))
      c.refuse("norm_topk_prob is false or absent (the top-k gates are not renormalised); weft's router always renormalises "
               "them to sum 1");
    if (const std::uint64_t step = c.count_or("decoder_sparse_step", 1); step != 1)
      c.refuse("decoder_sparse_step is " + std::to_string(step) + " (experts on some layers only); weft's moe_llama has "
               "experts on every layer");
    if (c.has("mlp_only_layers")) {
      const auto& dense = c.at("mlp_only_layers");
      if (!dense.is_array()) c.refuse("\"mlp_only_layers\" is not a list");
      if (!dense.empty())
        c.refuse("mlp_only_layers is " + dense.dump() + " (dense MLPs on those layers); weft's moe_llama has experts on "
                 "every layer");
    }
  }
  std::string t = "moe_mlp<" + std::to_string(width) + ", " + std::to_string(experts) + ", " + std::to_string(top_k) +
                  ", " + std::to_string(ffn) + ", swiglu_experts";
  if (c.has("router_aux_loss_coef")) {
    const double alpha = c.number_or("router_aux_loss_coef", 0) * static_cast<double>(top_k);
    if (!(alpha >= 0)) c.refuse("router_aux_loss_coef is negative");
    // alpha as Num / Den, the smallest power-of-ten Den from 1000 on that holds it
    std::uint64_t den = 1000;
    while (den < 1000000000 && std::abs(std::round(alpha * double(den)) - alpha * double(den)) > 1e-6) den *= 10;
    const auto num = static_cast<std::uint64_t>(std::llround(alpha * double(den)));
    if (num * 100 != den)  // weft's default, 1 / 100
      t += ", aux_loss_weight<" + std::to_string(num) + (den == 1000 ? "" : ", " + std::to_string(den)) + ">";
  }
  return t + ", pooled_aux_loss>";
}

inline std::string hf_llama_type(const hf_config_reader& c, const std::string& model_type) {
  const bool moe = model_type == "mixtral" || model_type == "qwen3_moe";
  const std::uint64_t width = c.count("hidden_size"), heads = c.count("num_attention_heads");
  const std::uint64_t kv_heads = c.count_or("num_key_value_heads", heads), depth = c.count("num_hidden_layers");
  const std::uint64_t context = c.count("max_position_embeddings"), vocab = c.count("vocab_size");
  const std::uint64_t ffn = moe ? 0 : c.count("intermediate_size");  // a moe_llama's MLP is its moe_mlp
  if (heads == 0) c.refuse("\"num_attention_heads\" is 0");
  if (const std::string act = c.text_or("hidden_act", "silu"); act != "silu")
    c.refuse("hidden_act is \"" + act + "\"; a llama's MLP is SwiGLU (silu)");
  if (c.flag_or("mlp_bias", false)) c.refuse("mlp_bias is true; weft's llama MLP has no biases");
  const bool qwen3 = model_type == "qwen3" || model_type == "qwen3_moe";
  const bool qwen = model_type == "qwen2" || qwen3;
  // LLaMA's attention_bias puts a bias on q, k, v and o; Qwen 2's q/k/v bias is unconditional
  const bool attention_bias = c.flag_or("attention_bias", false);
  if (attention_bias && !qwen)
    c.refuse("attention_bias is true (a bias on q, k, v and o_proj); weft's llama has q/k/v biases only (qkv_bias<>)");
  if (attention_bias && qwen3)
    c.refuse("attention_bias is true; weft's Qwen 3 shape has q/k norms and no biases");

  std::string t = std::string(moe ? "moe_llama" : "llama") + "<llama_config<" + tag("vocab", vocab) + ", " + tag("context", context) + ", " +
                  tag("width", width) + ", " + tag("heads", heads);
  if (kv_heads != heads) t += ", " + tag("kv_heads", kv_heads);
  t += ", " + tag("depth", depth);
  if (!moe) t += ", " + tag("ffn", ffn);
  if (c.has("head_dim")) {
    const std::uint64_t d = c.count("head_dim");
    if (d * heads != width) t += ", " + tag("head_dim", d);
  }
  // the rotary settings: rope_parameters (transformers 5) or rope_theta and rope_scaling (older files)
  const hf_rope rope = c.rope(hf_rope_spelling_of(model_type));
  if (rope.type != "default" && rope.type != "llama3")
    c.refuse(hf_rope_type_field(rope) + " is \"" + rope.type + "\"; weft scales rotary frequencies as LLaMA 3.1 only (llama3)");
  c.refuse_unknown(rope);
  if (rope.partial_rotary_factor.value != 1)
    c.refuse(rope.partial_rotary_factor.field + " is " + shortest_double(rope.partial_rotary_factor.value) +
             "; weft's llama rotates every element of each head (1)");
  if (const std::uint64_t theta = c.whole(rope.theta, "rope_theta"); theta != 10000) t += ", " + tag("rope_theta", theta);
  if (rope.type == "llama3") {
    auto field = [&](const hf_rope_value& v, const char* name) {
      if (!v.found())
        c.refuse(hf_rope_type_field(rope) + " is \"llama3\" without " + name +
                 " (LLaMA 3.1's scaling needs factor, low_freq_factor, high_freq_factor and original_max_position_embeddings)");
      return std::to_string(c.whole(v, name));
    };
    t += ", rope_scaling<llama3_rope_scaling<" + field(rope.factor, "factor") + ", " +
         field(rope.low_freq_factor, "low_freq_factor") + ", " + field(rope.high_freq_factor, "high_freq_factor") + ", " +
         field(rope.original_max_position_embeddings, "original_max_position_embeddings") + ">>";
  }
  // the window as the model applies it: Mistral's when set; Qwen's only with use_sliding_window,
  // and then on the layers from max_window_layers on (none when it is the depth, all when 0)
  std::uint64_t window = 0;
  if (model_type == "mistral" || model_type == "mixtral") window = c.count_or("sliding_window", 0);
  // (transformers 5 writes the layers as layer_types, which then decides)
  if (qwen && c.flag_or("use_sliding_window", false) && c.has("layer_types")) {
    const auto& types = c.at("layer_types");
    if (!types.is_array() || types.size() != depth)
      c.refuse("\"layer_types\" is not a list of " + std::to_string(depth) + " layer types");
    std::uint64_t sliding = 0;
    for (const auto& lt : types) {
      if (!lt.is_string() || (lt.get<std::string>() != "sliding_attention" && lt.get<std::string>() != "full_attention"))
        c.refuse("\"layer_types\" has " + lt.dump() + "; weft reads full_attention and sliding_attention");
      sliding += lt.get<std::string>() == "sliding_attention";
    }
    if (sliding != 0 && sliding != depth)
      c.refuse("the sliding window applies to some layers only (" + std::to_string(sliding) + " of " +
               std::to_string(depth) + " in layer_types); weft's llama_config windows every layer or none");
    if (sliding == depth) {
      if (!c.has("sliding_window")) c.refuse("layer_types makes every layer sliding_attention but \"sliding_window\" is missing");
      window = c.count("sliding_window");
    }
  } else if (qwen && c.flag_or("use_sliding_window", false)) {
    const std::uint64_t first = c.count_or("max_window_layers", 0);
    if (first > 0 && first < depth)
      c.refuse("the sliding window applies to some layers only (layers " + std::to_string(first) + " to " +
               std::to_string(depth - 1) + ", from max_window_layers); weft's llama_config windows every layer or none");
    if (first == 0) window = c.count_or("sliding_window", 0);
  }
  if (window != 0 && window < context) t += ", " + tag("sliding_window", window);
  if (model_type == "qwen2") t += ", qkv_bias<>";
  if (qwen3) t += ", query_key_norm<>";
  if (c.flag_or("tie_word_embeddings", false)) t += ", tie_word_embeddings<>";
  if (const double eps = c.number_or("rms_norm_eps", 1e-5); eps != 1e-5) t += ", norm_eps<" + shortest_double(eps) + ">";
  if (moe) return t + ">, " + hf_moe_mlp_type(c, model_type, width) + ">";
  return t + ">>";
}

inline std::string hf_gpt2_type(const hf_config_reader& c) {
  const std::uint64_t width = c.count("n_embd");
  if (const std::string act = c.text_or("activation_function", "gelu_new"); act != "gelu_new")
    c.refuse("activation_function is \"" + act + "\"; weft's gpt uses GPT-2's tanh GELU (gelu_new)");
  if (!c.flag_or("tie_word_embeddings", true)) c.refuse("tie_word_embeddings is false; GPT-2's head is tied to wte");
  std::string t = "gpt<gpt_config<" + tag("vocab", c.count("vocab_size")) + ", " + tag("context", c.count("n_positions")) +
                  ", " + tag("width", width) + ", " + tag("heads", c.count("n_head")) + ", " + tag("depth", c.count("n_layer"));
  if (c.has("n_inner") && c.count("n_inner") != 4 * width) t += ", " + tag("ffn", c.count("n_inner"));
  if (const double eps = c.number_or("layer_norm_epsilon", 1e-5); eps != 1e-5)
    t += ", norm_eps<" + shortest_double(eps) + ">";
  return t + ">>";
}

inline std::string hf_neox_type(const hf_config_reader& c) {
  const std::uint64_t width = c.count("hidden_size");
  if (const std::string act = c.text_or("hidden_act", "gelu"); act != "gelu")
    c.refuse("hidden_act is \"" + act + "\"; weft's gpt_neox uses the exact GELU (gelu)");
  if (!c.flag_or("use_parallel_residual", true))
    c.refuse("use_parallel_residual is false; weft's gpt_neox has the parallel residual of every published GPT-NeoX");
  if (c.flag_or("tie_word_embeddings", false)) c.refuse("tie_word_embeddings is true; weft's gpt_neox has an untied head");
  if (c.flag_or("attention_bias", true) == false) c.refuse("attention_bias is false; weft's gpt_neox has attention biases");
  const hf_rope rope = c.rope(hf_rope_spelling_of("gpt_neox"));
  if (rope.type != "default")
    c.refuse(hf_rope_type_field(rope) + " is \"" + rope.type + "\"; weft's gpt_neox does not rescale its rotary frequencies");
  c.refuse_unknown(rope);
  const double pct = rope.partial_rotary_factor.value;
  if (!(pct > 0 && pct <= 1))
    c.refuse(rope.partial_rotary_factor.field + " is " + shortest_double(pct) + "; the rotated fraction of a head is in (0, 1]");
  std::string t = "gpt_neox<neox_config<" + tag("vocab", c.count("vocab_size")) + ", " +
                  tag("context", c.count("max_position_embeddings")) + ", " + tag("width", width) + ", " +
                  tag("heads", c.count("num_attention_heads")) + ", " + tag("depth", c.count("num_hidden_layers"));
  if (c.has("intermediate_size") && c.count("intermediate_size") != 4 * width) t += ", " + tag("ffn", c.count("intermediate_size"));
  if (const std::uint64_t theta = c.whole(rope.theta, "rotary_emb_base"); theta != 10000) t += ", " + tag("rope_theta", theta);
  if (pct != 0.25) t += ", rotary_pct<" + shortest_double(pct) + ">";
  if (const double eps = c.number_or("layer_norm_eps", 1e-5); eps != 1e-5) t += ", norm_eps<" + shortest_double(eps) + ">";
  return t + ">>";
}

// The layer pattern of a gemma3_text config: sliding_window_pattern (older configs; transformers'
// default 6), or the period of its layer_types list, which must be weft's (layer i global exactly
// when (i + 1) % P == 0).
inline std::uint64_t hf_gemma3_pattern(const hf_config_reader& c, std::uint64_t depth) {
  std::uint64_t pattern = c.count_or("sliding_window_pattern", 6);
  if (!c.has("layer_types")) return pattern;
  const auto& types = c.at("layer_types");
  if (!types.is_array() || types.size() != depth)
    c.refuse("\"layer_types\" is not a list of " + std::to_string(depth) + " layer types");
  std::uint64_t first = 0;
  while (first < depth && !(types[first].is_string() && types[first].get<std::string>() == "full_attention")) ++first;
  const std::uint64_t p = first + 1;
  for (std::uint64_t i = 0; i < depth; ++i) {
    const bool full = types[i].is_string() && types[i].get<std::string>() == "full_attention";
    const bool sliding = types[i].is_string() && types[i].get<std::string>() == "sliding_attention";
    if ((!full && !sliding) || full != ((i + 1) % p == 0))
      c.refuse("layer_types is not periodic (full_attention exactly on layers i with (i + 1) % P == 0); weft's gemma3 "
               "makes every layer_pattern-th layer global");
  }
  if (p <= depth) return p;             // the period the list shows
  return pattern > depth ? pattern : p;  // no global layer: any pattern beyond the depth
}

inline std::string hf_gemma3_type(const hf_config_reader& c) {
  const std::uint64_t heads = c.count("num_attention_heads"), depth = c.count("num_hidden_layers");
  const std::uint64_t kv_heads = c.count_or("num_key_value_heads", heads), head_dim = c.count_or("head_dim", 256);
  if (const std::string act = c.text_or("hidden_activation", "gelu_pytorch_tanh"); act != "gelu_pytorch_tanh")
    c.refuse("hidden_activation is \"" + act + "\"; weft's gemma3 MLP is GeGLU with the tanh GELU (gelu_pytorch_tanh)");
  if (c.has("final_logit_softcapping") || c.has("attn_logit_softcapping"))
    c.refuse("it has logit soft-capping (final_logit_softcapping or attn_logit_softcapping); weft's gemma3 has none, as "
             "Gemma 3");
  if (!c.flag_or("tie_word_embeddings", true)) c.refuse("tie_word_embeddings is false; a gemma3's head is tied to its embedding");
  if (c.flag_or("attention_bias", false)) c.refuse("attention_bias is true; a gemma3's projections have no biases");
  if (c.flag_or("use_bidirectional_attention", false))
    c.refuse("use_bidirectional_attention is true (EmbeddingGemma's attention); weft's gemma3 is causal");
  if (const std::uint64_t s = c.count_or("query_pre_attn_scalar", 256); s != head_dim)
    c.refuse("query_pre_attn_scalar is " + std::to_string(s) + ", not head_dim " + std::to_string(head_dim) +
             "; weft's gemma3 scales attention scores by 1/sqrt(head_dim)");
  std::string t = "gemma3<gemma3_config<" + tag("vocab", c.count("vocab_size")) + ", " +
                  tag("context", c.count("max_position_embeddings")) + ", " + tag("width", c.count("hidden_size")) + ", " +
                  tag("heads", heads);
  if (kv_heads != heads) t += ", " + tag("kv_heads", kv_heads);
  t += ", " + tag("depth", depth) + ", " + tag("ffn", c.count("intermediate_size"));
  if (head_dim != 256) t += ", " + tag("head_dim", head_dim);
  if (const std::uint64_t w = c.count_or("sliding_window", 4096); w != 512) t += ", " + tag("sliding_window", w);
  if (const std::uint64_t p = hf_gemma3_pattern(c, depth); p != 6) t += ", " + tag("layer_pattern", p);
  // the rotary settings of the global (full_attention) and sliding layers: rope_parameters' two entries
  // (transformers 5), or rope_theta, rope_scaling and rope_local_base_freq (older files)
  const hf_rope global = c.rope(hf_gemma3_rope_spelling(true)), local = c.rope(hf_gemma3_rope_spelling(false));
  if (global.type != "default" && global.type != "linear")
    c.refuse(hf_rope_type_field(global) + " is \"" + global.type +
             "\"; weft's gemma3 scales its global layers' frequencies linearly only");
  if (local.type != "default")
    c.refuse(hf_rope_type_field(local) + " is \"" + local.type + "\"; weft's gemma3 does not scale its sliding layers' frequencies");
  c.refuse_unknown(global);
  c.refuse_unknown(local);
  if (const std::uint64_t theta = c.whole(global.theta, "rope_theta"); theta != 1000000) t += ", " + tag("rope_theta", theta);
  if (const std::uint64_t base = c.whole(local.theta, "rope_local_base_freq"); base != 10000)
    t += ", " + tag("rope_local_base_freq", base);
  if (global.type == "linear") {
    if (!global.factor.found()) c.refuse(hf_rope_type_field(global) + " is \"linear\" without a factor");
    t += ", rope_scaling<linear_rope_scaling<" + std::to_string(c.whole(global.factor, "factor")) + ">>";
  }
  if (const double eps = c.number_or("rms_norm_eps", 1e-6); eps != 1e-6) t += ", norm_eps<" + shortest_double(eps) + ">";
  return t + ">>";
}

}  // namespace detail

/// The weft model type that a Hugging Face config.json describes, as C++ text (see the top of the
/// file); `where` names the file in messages. Throws checkpoint_error for what weft cannot build.
inline std::string hf_model_type(const io::detail::json& config, const std::string& where = "config.json") {
  const detail::hf_config_reader c(config, where);
  if (!config.is_object()) c.refuse("not a JSON object");
  const std::string type = c.text_or("model_type", "");
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3" || type == "mixtral" || type == "qwen3_moe")
    return detail::hf_llama_type(c, type);
  if (type == "qwen2_moe")
    c.refuse("model_type is \"qwen2_moe\" (a shared expert beside the routed ones); weft reads mixtral and qwen3_moe "
             "experts, all routed");
  if (type == "gpt2") return detail::hf_gpt2_type(c);
  if (type == "gpt_neox") return detail::hf_neox_type(c);
  if (type == "gemma3_text") return detail::hf_gemma3_type(c);
  if (type == "gemma3")
    c.refuse("model_type is \"gemma3\" (Gemma3ForConditionalGeneration, text and vision); weft writes the type of its "
             "text_config (model_type gemma3_text), saved as a Gemma3ForCausalLM");
  c.refuse(type.empty() ? std::string("it has no \"model_type\"")
                        : "model_type is \"" + type +
                              "\"; weft writes types for llama, mistral, qwen2, qwen3, mixtral, qwen3_moe, gpt2, gpt_neox and "
                                  "gemma3_text");
}

/// `type` with every name qualified by `weft::` (each name in hf_model_type's text is weft's: a
/// template followed by '<', or a tag type such as swiglu_experts), for use outside `using namespace weft`.
inline std::string qualified_model_type(const std::string& type) {
  std::string r;
  for (std::size_t i = 0; i < type.size();) {
    const bool starts = (std::isalpha(static_cast<unsigned char>(type[i])) || type[i] == '_') &&
                        (i == 0 || !(std::isalnum(static_cast<unsigned char>(type[i - 1])) || type[i - 1] == '_'));
    if (!starts) {
      r += type[i++];
      continue;
    }
    std::size_t j = i;
    while (j < type.size() && (std::isalnum(static_cast<unsigned char>(type[j])) || type[j] == '_')) ++j;
    r += "weft::";
    r.append(type, i, j - i);
    i = j;
  }
  return r;
}

/// hf_model_type of a config.json file, or of the config.json in a checkpoint directory.
inline std::string hf_model_type(const std::filesystem::path& path) {
  const std::filesystem::path file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  std::ifstream in(file);
  if (!in) throw checkpoint_error("weft::hf_model_type: cannot read " + file.string());
  const io::detail::json j = io::detail::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw checkpoint_error("weft::hf_model_type: " + file.string() + " is not valid JSON");
  return hf_model_type(j, file.string());
}

}  // namespace weft
