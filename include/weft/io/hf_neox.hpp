#pragma once
// ---- Hugging Face GPT-NeoX weights: load and save gpt_neox<…> in transformers' layout ----
// `#include <weft/io/hf_neox.hpp>`. EleutherAI's Pythia suite and GPT-NeoX-20B
// (GPTNeoXForCausalLM) store one tensor per weft parameter:
//
//   weft                                Hugging Face (gpt_neox.layers.{i}.…)
//   embed.weight                        gpt_neox.embed_in.weight
//   layers.{i}.ln_1.weight|bias         input_layernorm.weight|bias
//   layers.{i}.attn.c_attn.weight|bias  attention.query_key_value.weight|bias (rows re-ordered, below)
//   layers.{i}.attn.c_proj.weight|bias  attention.dense.weight|bias
//   layers.{i}.ln_2.weight|bias         post_attention_layernorm.weight|bias
//   layers.{i}.mlp.c_fc.weight|bias     mlp.dense_h_to_4h.weight|bias
//   layers.{i}.mlp.c_proj.weight|bias   mlp.dense_4h_to_h.weight|bias
//   norm.weight|bias                    gpt_neox.final_layer_norm.weight|bias
//   head.weight                         embed_out.weight
//
// Every weight is (out, in) in both. query_key_value's rows are grouped by head, as transformers
// views them (heads, 3, head_size): head j's q, k and v rows follow each other; weft's c_attn
// holds all q rows, then all k, then all v. So file row (j·3 + t)·D + d is weft row
// (t·H + j)·D + d (t = 0, 1, 2 for q, k, v), for the weight's rows and the bias alike.
// The rotary convention is the same (rotate-half within the first rotary_ndims of each head).
//
//   load_hf_weights(step, path)   path: a .safetensors file, or a directory holding
//                                 model.safetensors or model.safetensors.index.json (shards)
//   save_hf_weights(step, dir)    dir/model.safetensors and dir/config.json
//
// These overloads take a gpt_neox<…> step (io/hf_llama.hpp's take a llama<…>). Loading first checks
// the config.json beside the weights, where there is one (model_type, heads, rotary_pct,
// rotary_emb_base, layer_norm_eps, use_parallel_residual, hidden_act, tie_word_embeddings, ...:
// what the tensors' shapes cannot show), then every tensor (present, shape, float dtype) before it
// writes a parameter, so a file of another model leaves the step untouched. A file tensor the
// model has no parameter for is an error, except the buffers older checkpoints carry
// (attention.bias, attention.masked_bias, attention.rotary_emb.inv_freq: the causal mask and the
// rotary frequencies, which weft computes).
#include "weft/exec/training_step.hpp"     // training_step
#include "weft/io/checkpoint.hpp"          // checkpoint_error, st_dtype_name, st_float_dtype
#include "weft/io/checkpoint_model.hpp"    // structured_model_t, model_signature
#include "weft/io/hf_config.hpp"           // hf_read_rope: rope_parameters and the older spellings
#include "weft/io/hf_llama.hpp"            // hf_weight_files, hf_config_path, hf_number, hf_part_shape; the llama overloads
#include "weft/io/json.hpp"                // json
#include "weft/io/safetensors_reader.hpp"  // safetensors_file
#include "weft/io/safetensors_writer.hpp"  // safetensors_writer
#include "weft/ops/cast.hpp"               // cast

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft {

namespace detail {

template <class M>
inline constexpr bool is_neox_family = requires { std::string_view(M::family); typename M::config; } &&
                                       std::string_view(M::family) == "gpt_neox";

// The Hugging Face name of parameter `name` of a gpt_neox, or "" for a name it does not know.
inline std::string hf_neox_name(const std::string& n) {
  if (n == "embed.weight") return "gpt_neox.embed_in.weight";
  if (n == "norm.weight") return "gpt_neox.final_layer_norm.weight";
  if (n == "norm.bias") return "gpt_neox.final_layer_norm.bias";
  if (n == "head.weight") return "embed_out.weight";
  if (!n.starts_with("layers.")) return {};
  const std::size_t dot = n.find('.', 7);
  if (dot == std::string::npos) return {};
  const std::string l = "gpt_neox.layers." + n.substr(7, dot - 7) + ".", rest = n.substr(dot + 1);
  const std::size_t kind_at = rest.rfind('.');
  if (kind_at == std::string::npos) return {};
  const std::string part = rest.substr(0, kind_at), kind = rest.substr(kind_at);  // kind: ".weight" | ".bias"
  if (kind != ".weight" && kind != ".bias") return {};
  if (part == "ln_1") return l + "input_layernorm" + kind;
  if (part == "ln_2") return l + "post_attention_layernorm" + kind;
  if (part == "attn.c_attn") return l + "attention.query_key_value" + kind;
  if (part == "attn.c_proj") return l + "attention.dense" + kind;
  if (part == "mlp.c_fc") return l + "mlp.dense_h_to_4h" + kind;
  if (part == "mlp.c_proj") return l + "mlp.dense_4h_to_h" + kind;
  return {};
}

// Whether `name` is query_key_value's weight or bias, whose rows are grouped by head in the file.
inline bool hf_neox_interleaved(const std::string& hf_name) {
  return hf_name.ends_with("attention.query_key_value.weight") || hf_name.ends_with("attention.query_key_value.bias");
}

// weft's c_attn row of file row `r` of query_key_value: (j·3 + t)·D + d -> (t·H + j)·D + d.
template <class M>
constexpr std::size_t hf_neox_qkv_row(std::size_t r) {
  constexpr std::size_t H = M::heads, D = M::head_dim;
  const std::size_t j = r / (3 * D), t = (r / D) % 3, d = r % D;
  return (t * H + j) * D + d;
}

// The one part of parameter `p` of gpt_neox M (empty for a name it does not know): query_key_value's
// rows in the file's order, grouped by head.
template <class M>
std::vector<hf_tensor_part> hf_neox_parts(const param_info& p) {
  const std::string name = hf_neox_name(p.name);
  if (name.empty()) return {};
  hf_tensor_part part{name, p.shape.empty() ? 1 : p.shape[0]};
  if (hf_neox_interleaved(name)) {
    part.row_order.resize(part.rows);
    for (std::size_t r = 0; r < part.rows; ++r) part.row_order[r] = hf_neox_qkv_row<M>(r);
  }
  return {part};
}

// Buffers of older checkpoints that hold no weight: the causal mask, its fill value and the rotary
// frequencies (transformers recomputes them; so does weft).
inline bool hf_neox_buffer(const std::string& n) {
  return n.ends_with("attention.bias") || n.ends_with("attention.masked_bias") || n.ends_with("rotary_emb.inv_freq");
}

// Checks what config.json says about the function the weights compute against gpt_neox model M:
// the heads (the shapes cannot tell them from the head size), the rotated part of each head, the
// rotary base, the LayerNorm epsilon, and the architecture's switches weft has one answer to
// (use_parallel_residual true, exact GELU, untied head, biases, no rope_scaling). Throws a one-line
// checkpoint_error that names the tag to change; the rotary settings are read in either spelling
// (io/hf_config.hpp), absent ones as GPTNeoXConfig's defaults; any other field the file lacks is not
// checked.
template <class M>
void check_hf_neox_config(const std::filesystem::path& file) {
  using Cfg = typename M::config;
  std::ifstream in(file);
  const io::detail::json j = io::detail::json::parse(in, nullptr, false);
  const std::string where = "weft::load_hf_weights: " + file.string();
  if (j.is_discarded() || !j.is_object()) throw checkpoint_error(where + " is not a JSON object");
  auto number = [&](const char* key, double& out) {
    if (!j.contains(key) || j[key].is_null()) return false;
    if (!j[key].is_number()) throw checkpoint_error(where + ": \"" + key + "\" is not a number");
    out = j[key].get<double>();
    return true;
  };
  auto flag = [&](const char* key, bool& out) {
    if (!j.contains(key) || j[key].is_null()) return false;
    if (!j[key].is_boolean()) throw checkpoint_error(where + ": \"" + key + "\" is not true or false");
    out = j[key].get<bool>();
    return true;
  };
  auto refuse = [&](const std::string& what, const std::string& fix) {
    throw checkpoint_error(where + ": " + what + "; " + fix + " (this model: gpt_neox, " + std::to_string(M::width) +
                           " wide, " + std::to_string(M::heads) + " heads)");
  };
  if (j.contains("model_type") && j["model_type"].is_string() && j["model_type"].get<std::string>() != "gpt_neox")
    refuse("model_type is \"" + j["model_type"].get<std::string>() + "\"",
           "weft reads gpt_neox checkpoints into gpt_neox<> (llama-family ones with io/hf_llama.hpp into llama<>)");
  double v = 0;
  if (number("num_attention_heads", v) && v != double(M::heads))
    refuse("num_attention_heads is " + hf_number(v) + ", this model has " + std::to_string(M::heads),
           "give the neox heads<" + hf_number(v) + ">");
  // the rotary settings (io/hf_config.hpp): rope_parameters with its partial_rotary_factor
  // (transformers 5), or rotary_emb_base / rope_theta and rotary_pct (older files); one given in
  // neither is GPTNeoXConfig's default (base 10000, a quarter of each head)
  const hf_rope rope = hf_read_rope(j, where, hf_rope_spelling_of("gpt_neox"));
  if (rope.type != "default")
    refuse(hf_rope_type_field(rope) + " is \"" + rope.type + "\"", "weft's gpt_neox does not rescale its rotary frequencies");
  if (!rope.unknown.empty()) refuse("\"" + rope.unknown + "\" is a rotary field weft does not read", "remove it or convert the checkpoint");
  const double head_size = double(M::head_dim), pct = rope.partial_rotary_factor.value;
  const std::string pct_field = rope.partial_rotary_factor.found() ? rope.partial_rotary_factor.field : "rotary_pct (absent: 0.25)";
  if (static_cast<std::size_t>(head_size * pct) != Cfg::rotary_dims)
    refuse(pct_field + " is " + hf_config_text(pct) + " (" + std::to_string(static_cast<std::size_t>(head_size * pct)) +
               " of each head's " + std::to_string(M::head_dim) + " elements rotate), this model rotates " +
               std::to_string(Cfg::rotary_dims),
           "give the neox rotary_pct<" + hf_config_text(pct) + ">");
  if (rope.theta.value != double(Cfg::rope_theta))
    refuse((rope.theta.found() ? rope.theta.field : std::string("rotary_emb_base (absent: 10000)")) + " is " +
               hf_config_text(rope.theta.value) + ", this model's is " + std::to_string(Cfg::rope_theta),
           "give the neox rope_theta<" + hf_config_text(rope.theta.value) + ">");
  if (number("layer_norm_eps", v) && std::abs(v - Cfg::norm_epsilon) > 1e-9 * Cfg::norm_epsilon)
    refuse("layer_norm_eps is " + hf_number(v) + ", this model's is " + hf_number(Cfg::norm_epsilon),
           "give the neox norm_eps<" + hf_number(v) + ">");
  bool b = true;
  if (flag("use_parallel_residual", b) && !b)
    refuse("use_parallel_residual is false (x + attn, then + mlp, one after the other)",
           "weft's gpt_neox is the parallel form of every published GPT-NeoX and Pythia checkpoint; compose block<> "
           "with layernorm and gelu_mlp for the sequential one");
  if (j.contains("hidden_act") && j["hidden_act"].is_string() && j["hidden_act"].get<std::string>() != "gelu")
    refuse("hidden_act is \"" + j["hidden_act"].get<std::string>() + "\"",
           "a gpt_neox's MLP is the exact (erf) GELU, hidden_act \"gelu\"");
  if (flag("tie_word_embeddings", b) && b)
    refuse("tie_word_embeddings is true", "a gpt_neox's embed_out is its own weight, untied");
  if (flag("attention_bias", b) && !b)
    refuse("attention_bias is false", "a gpt_neox's query_key_value and dense have biases");
}

template <class Plan>
using hf_neox_model = structured_model_t<Plan>;

template <class Plan>
inline constexpr bool hf_neox_plan = is_neox_family<hf_neox_model<Plan>>;

}  // namespace detail

/// Loads a Hugging Face GPT-NeoX checkpoint (Pythia, GPT-NeoX-20B) into a gpt_neox<…> step.
template <class Plan>
  requires detail::hf_neox_plan<Plan>
void load_hf_weights(training_step<Plan>& st, const std::filesystem::path& path) {
  using M = detail::hf_neox_model<Plan>;
  if (const auto config = detail::hf_config_path(path); !config.empty()) detail::check_hf_neox_config<M>(config);
  detail::hf_load_parts(st, path, [](const param_info& p) { return detail::hf_neox_parts<M>(p); }, "gpt_neox",
                        [](const std::string& n) { return detail::hf_neox_buffer(n); }, "");
}

/// Writes a gpt_neox<…> step's weights as a Hugging Face checkpoint: dir/model.safetensors (the
/// names above, query_key_value's rows grouped by head, the element type's dtype) and
/// dir/config.json (GPTNeoXForCausalLM).
template <class Plan>
  requires detail::hf_neox_plan<Plan>
void save_hf_weights(const training_step<Plan>& st, const std::filesystem::path& dir) {
  using M = detail::hf_neox_model<Plan>;
  using Cfg = typename M::config;
  using T = typename Plan::value_type;
  detail::hf_save_parts(st, dir, [](const param_info& p) { return detail::hf_neox_parts<M>(p); });

  io::detail::json c = {{"architectures", {"GPTNeoXForCausalLM"}},
                        {"model_type", "gpt_neox"},
                        {"vocab_size", M::vocab_size},
                        {"hidden_size", M::width},
                        {"intermediate_size", M::ffn},
                        {"num_hidden_layers", M::depth},
                        {"num_attention_heads", M::heads},
                        {"max_position_embeddings", M::context_length},
                        {"rotary_pct", Cfg::rotary_fraction},
                        {"rotary_emb_base", Cfg::rope_theta},
                        {"layer_norm_eps", Cfg::norm_epsilon},
                        {"use_parallel_residual", true},
                        {"hidden_act", "gelu"},
                        {"attention_bias", true},
                        {"attention_dropout", 0.0},
                        {"hidden_dropout", 0.0},
                        {"tie_word_embeddings", false},
                        {"torch_dtype", sizeof(T) == 8 ? "float64" : sizeof(T) == 4 ? "float32" : "bfloat16"}};
  std::ofstream out(dir / "config.json");
  out << c.dump(2) << '\n';
  if (!out) throw checkpoint_error("weft::save_hf_weights: cannot write " + (dir / "config.json").string());
}

}  // namespace weft
