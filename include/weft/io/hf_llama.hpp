#pragma once
// ---- Hugging Face LLaMA-family weights: load and save llama<…> in transformers' layout ----
// `#include <weft/io/hf_llama.hpp>`. Fine-tuning starts from a published checkpoint: LLaMA 2/3/3.1/
// 3.2 (LlamaForCausalLM), Mistral (MistralForCausalLM), Qwen 2/2.5 (Qwen2ForCausalLM) and Qwen 3
// (Qwen3ForCausalLM) store the same tensors under the same names, beside what their configs add
// (q/k/v biases, q/k norms). weft packs some of them into one parameter:
//
//   weft                                Hugging Face (model.layers.{i}.…)
//   embed.weight                        model.embed_tokens.weight
//   layers.{i}.ln_1.weight              input_layernorm.weight
//   layers.{i}.attn.c_attn.weight|bias  self_attn.q_proj, k_proj, v_proj (.weight|.bias), rows stacked
//   layers.{i}.attn.qk_norm.q_weight    self_attn.q_norm.weight (k_weight: k_norm.weight)
//   layers.{i}.attn.c_proj.weight       self_attn.o_proj.weight
//   layers.{i}.ln_2.weight              post_attention_layernorm.weight
//   layers.{i}.mlp.gate_up.weight       mlp.gate_proj.weight, mlp.up_proj.weight, rows stacked
//   layers.{i}.mlp.down.weight          mlp.down_proj.weight
//   norm.weight                         model.norm.weight
//   head.weight                         lm_head.weight (absent with tie_word_embeddings<>)
//
// Every weight is (out, in) in both, so a part is a run of rows of weft's parameter. The rotary
// convention is the same (rotate-half: transformers' checkpoints are already permuted for it).
//
//   load_hf_weights(step, path)   path: a .safetensors file, or a directory holding
//                                 model.safetensors or model.safetensors.index.json (shards)
//   save_hf_weights(step, dir)    dir/model.safetensors and dir/config.json
//
// (Mixtral and Qwen3-MoE, moe_llama<…>: io/hf_moe_llama.hpp, with the detail helpers below.)
//
// Loading first checks the config.json beside the weights, where there is one (the heads, head_dim,
// rms_norm_eps, the rotary settings in either spelling (io/hf_config.hpp: transformers 5's
// rope_parameters or rope_theta / rope_scaling), sliding_window and hidden_act against the model's
// type: what the tensors' shapes cannot show), then every tensor (present, shape, float dtype) before it
// writes a parameter, so a file of another model leaves the step untouched, and names the fix
// where there is one (a checkpoint without lm_head.weight ties its head: tie_word_embeddings<>). A file tensor the model has no
// parameter for (a bias, a norm) is an error too: silently dropping weights would change the model.
#include "weft/io/checkpoint.hpp"          // checkpoint_error, st_dtype_name, st_float_dtype
#include "weft/io/checkpoint_model.hpp"    // structured_model_t, model_signature
#include "weft/io/hf_config.hpp"           // hf_read_rope: rope_parameters and the older spellings
#include "weft/io/json.hpp"                // json
#include "weft/io/safetensors_reader.hpp"  // safetensors_file
#include "weft/io/safetensors_writer.hpp"  // safetensors_writer
#include "weft/exec/training_step.hpp"     // training_step
#include "weft/ops/cast.hpp"               // cast

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft {

/// A run of a weft parameter's elements that is one tensor in a Hugging Face file. The parts of
/// a parameter follow each other in its elements, first part first. A part is `rows` rows of the
/// parameter (its shape: rows, then the parameter's other extents) unless `shape` is given: then
/// it is that many elements, in that shape (one expert's (F, C) block of an (E, 2F, C) parameter).
/// A part's rows may also stand in another order in the file (row_order).
struct hf_tensor_part {
  std::string name;
  std::size_t rows = 0;
  std::vector<std::int64_t> shape = {};
  /// Where the file's rows go, when its order is not the parameter's: file row r is row
  /// row_order[r] of the part (GPT-NeoX's query_key_value, grouped by head); empty: in order.
  std::vector<std::size_t> row_order = {};
};

namespace detail {

template <class M>
inline constexpr bool is_llama_family = requires { std::string_view(M::family); typename M::config; } &&
                                        std::string_view(M::family) == "llama";

// The parts of parameter `p` of llama model M, first rows first; empty for a name it does not know.
template <class M>
std::vector<hf_tensor_part> hf_llama_parts(const param_info& p) {
  constexpr std::size_t H = M::heads, KVH = M::kv_heads, D = M::head_dim, F = M::ffn;
  const std::string& n = p.name;
  const std::size_t rows = p.shape.empty() ? 1 : p.shape[0];
  if (n == "embed.weight") return {{"model.embed_tokens.weight", rows}};
  if (n == "norm.weight") return {{"model.norm.weight", rows}};
  if (n == "head.weight") return {{"lm_head.weight", rows}};
  if (!n.starts_with("layers.")) return {};
  const std::size_t dot = n.find('.', 7);
  if (dot == std::string::npos) return {};
  const std::string l = "model.layers." + n.substr(7, dot - 7) + ".", rest = n.substr(dot + 1);
  if (rest == "ln_1.weight") return {{l + "input_layernorm.weight", rows}};
  if (rest == "ln_2.weight") return {{l + "post_attention_layernorm.weight", rows}};
  if (rest == "attn.c_attn.weight" || rest == "attn.c_attn.bias") {
    const std::string kind = rest.ends_with("bias") ? ".bias" : ".weight";
    return {{l + "self_attn.q_proj" + kind, H * D}, {l + "self_attn.k_proj" + kind, KVH * D},
            {l + "self_attn.v_proj" + kind, KVH * D}};
  }
  if (rest == "attn.qk_norm.q_weight") return {{l + "self_attn.q_norm.weight", rows}};
  if (rest == "attn.qk_norm.k_weight") return {{l + "self_attn.k_norm.weight", rows}};
  if (rest == "attn.c_proj.weight") return {{l + "self_attn.o_proj.weight", rows}};
  if (rest == "mlp.gate_up.weight") return {{l + "mlp.gate_proj.weight", F}, {l + "mlp.up_proj.weight", F}};
  if (rest == "mlp.down.weight") return {{l + "mlp.down_proj.weight", rows}};
  return {};
}

// The shape of a part: its rows, then the parameter's other extents.
inline std::vector<std::int64_t> hf_part_shape(const param_info& p, std::size_t rows) {
  std::vector<std::int64_t> s{static_cast<std::int64_t>(rows)};
  for (std::size_t i = 1; i < p.shape.size(); ++i) s.push_back(static_cast<std::int64_t>(p.shape[i]));
  return s;
}

// The shape of part `part` of parameter `p` in the file (its own, or its rows and p's other extents).
inline std::vector<std::int64_t> hf_part_shape(const param_info& p, const hf_tensor_part& part) {
  return part.shape.empty() ? hf_part_shape(p, part.rows) : part.shape;
}

// The elements of a part: the product of its shape.
inline std::size_t hf_part_elements(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (const std::int64_t e : shape) n *= static_cast<std::size_t>(e);
  return n;
}

// The files of a checkpoint: one .safetensors, or a directory with model.safetensors or the shards
// that model.safetensors.index.json's weight_map names.
class hf_weight_files {
 public:
  explicit hf_weight_files(const std::filesystem::path& path) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(path)) {
      add(path);
      return;
    }
    const fs::path index = path / "model.safetensors.index.json";
    if (fs::exists(index)) {
      std::ifstream in(index);
      const io::detail::json j = io::detail::json::parse(in, nullptr, false);
      if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
        throw checkpoint_error("weft::load_hf_weights: " + index.string() + " has no weight_map object");
      std::map<std::string, std::size_t> file_of;
      for (const auto& [name, file] : j["weight_map"].items()) {
        const std::string f = file.get<std::string>();
        if (!file_of.contains(f)) file_of[f] = add(path / f);
      }
      return;
    }
    if (!fs::exists(path / "model.safetensors"))
      throw checkpoint_error("weft::load_hf_weights: " + path.string() +
                             " has neither model.safetensors nor model.safetensors.index.json");
    add(path / "model.safetensors");
  }
  /// The file holding tensor `name`, or null.
  const safetensors_file* find(const std::string& name) const {
    const auto it = where_.find(name);
    return it == where_.end() ? nullptr : &files_[it->second];
  }
  /// Every tensor name of every file.
  std::vector<std::string> names() const {
    std::vector<std::string> r;
    for (const auto& [n, i] : where_) r.push_back(n);
    return r;
  }
  std::string describe() const { return files_.size() == 1 ? files_[0].path() : files_[0].path() + " and its shards"; }

 private:
  std::size_t add(const std::filesystem::path& file) {
    files_.push_back(safetensors_file::open(file));
    const std::size_t i = files_.size() - 1;
    for (const std::string& n : files_[i].names()) where_[n] = i;
    return i;
  }
  std::vector<safetensors_file> files_;
  std::map<std::string, std::size_t> where_;
};

template <class Plan>
using hf_llama_model = structured_model_t<Plan>;

// The config.json beside a checkpoint (in its directory, or the file's), or none.
inline std::filesystem::path hf_config_path(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const fs::path c = (fs::is_directory(path) ? path : path.parent_path()) / "config.json";
  return fs::exists(c) ? c : fs::path{};
}

// Shortest decimal text of a double ("1e-06", "500000").
inline std::string hf_number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// config.json as a JSON object, or a one-line checkpoint_error.
inline io::detail::json hf_read_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  io::detail::json j = io::detail::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw checkpoint_error("weft::load_hf_weights: " + file.string() + " is not a JSON object");
  return j;
}

// Reads config.json's number `key` into `out`; false when absent or null.
inline bool hf_config_number(const io::detail::json& j, const std::string& where, const char* key, double& out) {
  if (!j.contains(key) || j[key].is_null()) return false;
  if (!j[key].is_number()) throw checkpoint_error(where + ": \"" + key + "\" is not a number");
  out = j[key].get<double>();
  return true;
}

// A one-line refusal of config.json `where` for model M: what is wrong, then the fix.
template <class M>
[[noreturn]] void hf_config_refuse(const std::string& where, const std::string& what, const std::string& fix) {
  throw checkpoint_error(where + ": " + what + "; " + fix + " (this model: " + std::string(M::family) + ", " +
                         std::to_string(M::width) + " wide, " + std::to_string(M::heads) + " heads)");
}

// Checks what config.json `j` says about the attention, norms and activation of llama-bodied model M
// (llama<> or moe_llama<>): the sizes the tensors' shapes cannot tell apart (heads against head
// size), rms_norm_eps, rope_theta and rope_scaling, the sliding window (as it acts on M's context)
// and the activation. Throws a one-line checkpoint_error that names the tag to change; the rotary
// settings the file lacks are transformers' defaults for its model_type, any other field it lacks
// is not checked. model_type is the caller's to check.
template <class M>
void check_hf_llama_fields(const io::detail::json& j, const std::string& where) {
  using Cfg = typename M::config;
  auto number = [&](const char* key, double& out) { return hf_config_number(j, where, key, out); };
  auto refuse = [&](const std::string& what, const std::string& fix) { hf_config_refuse<M>(where, what, fix); };
  double v = 0;
  if (number("num_attention_heads", v) && v != double(M::heads))
    refuse("num_attention_heads is " + hf_number(v) + ", this model has " + std::to_string(M::heads),
           "give the llama heads<" + hf_number(v) + ">");
  if (number("num_key_value_heads", v) && v != double(M::kv_heads))
    refuse("num_key_value_heads is " + hf_number(v) + ", this model has " + std::to_string(M::kv_heads),
           "give the llama kv_heads<" + hf_number(v) + ">");
  if (number("head_dim", v) && v != double(M::head_dim))
    refuse("head_dim is " + hf_number(v) + ", this model has " + std::to_string(M::head_dim),
           "give the llama head_dim<" + hf_number(v) + ">");
  if (number("rms_norm_eps", v) && std::abs(v - Cfg::norm_epsilon) > 1e-9 * Cfg::norm_epsilon)
    refuse("rms_norm_eps is " + hf_number(v) + ", this model's is " + hf_number(Cfg::norm_epsilon),
           "give the llama norm_eps<" + hf_number(v) + ">");
  if (j.contains("hidden_act") && j["hidden_act"].is_string() && j["hidden_act"].get<std::string>() != "silu")
    refuse("hidden_act is \"" + j["hidden_act"].get<std::string>() + "\"", "a llama's MLP is SwiGLU (silu)");
  // the rotary settings (io/hf_config.hpp): rope_parameters (transformers 5) or rope_theta and
  // rope_scaling (older files); a base given in neither is transformers' default for the model_type
  // (a file without model_type: this loader's llama, or mixtral / qwen3_moe for a moe_llama)
  std::string model_type = requires { typename M::moe_type; } ? (Cfg::qk_normalised ? "qwen3_moe" : "mixtral") : "llama";
  if (j.contains("model_type") && j["model_type"].is_string()) model_type = j["model_type"].get<std::string>();
  const hf_rope rope = hf_read_rope(j, where, hf_rope_spelling_of(model_type));
  using Sc = typename Cfg::rope_scaling_type;
  if (rope.type != "default" && rope.type != "llama3")
    refuse(hf_rope_type_field(rope) + " is \"" + rope.type + "\"", "weft scales rotary frequencies as LLaMA 3.1 only (llama3)");
  if (!rope.unknown.empty()) refuse("\"" + rope.unknown + "\" is a rotary field weft does not read", "remove it or convert the checkpoint");
  if (rope.partial_rotary_factor.value != 1)
    refuse(rope.partial_rotary_factor.field + " is " + hf_config_text(rope.partial_rotary_factor.value),
           "weft's llama rotates every element of each head");
  if (rope.theta.value != double(Cfg::rope_theta))
    refuse((rope.theta.found() ? rope.theta.field + " is " : "it gives no rope_theta (" + model_type + "'s default is ") +
               hf_config_text(rope.theta.value) + (rope.theta.found() ? "" : ")") + ", this model's is " +
               std::to_string(Cfg::rope_theta),
           "give the llama rope_theta<" + hf_config_text(rope.theta.value) + ">");
  if (rope.type == "llama3") {
    if constexpr (!Sc::enabled) {
      refuse(hf_rope_type_field(rope) + " is llama3", "give the llama rope_scaling<llama3_rope_scaling<factor, low, high, original>>");
    } else {
      auto field = [&](const hf_rope_value& f, const char* name, double model) {
        if (!f.found())
          refuse(hf_rope_type_field(rope) + " is \"llama3\" without " + name,
                 "give LLaMA 3.1's factor, low_freq_factor, high_freq_factor and original_max_position_embeddings");
        if (f.value != model)
          refuse(f.field + " is " + hf_config_text(f.value) + ", this model's is " + hf_config_text(model),
                 "give the llama rope_scaling<llama3_rope_scaling<factor, low, high, original>> with the file's values");
      };
      field(rope.factor, "factor", double(Sc::factor));
      field(rope.low_freq_factor, "low_freq_factor", double(Sc::low_freq_factor));
      field(rope.high_freq_factor, "high_freq_factor", double(Sc::high_freq_factor));
      field(rope.original_max_position_embeddings, "original_max_position_embeddings", double(Sc::original_context));
    }
  }
  if constexpr (Sc::enabled)
    if (rope.type != "llama3") refuse("it has no llama3 rope_scaling", "build the llama without rope_scaling<>");
  // the sliding window, as it acts on this model's sequences (a window of the context or more is none);
  // Qwen's configs carry a window that applies only with use_sliding_window (false when absent),
  // and then on the layers from max_window_layers on (none when that is the depth, all when 0)
  double window = 0;
  number("sliding_window", window);
  const bool qwen = j.contains("model_type") && j["model_type"].is_string() &&
                    j["model_type"].get<std::string>().starts_with("qwen");
  if (qwen) {
    const bool on = j.contains("use_sliding_window") && j["use_sliding_window"].is_boolean() &&
                    j["use_sliding_window"].get<bool>();
    double first = 0;
    number("max_window_layers", first);
    if (on && j.contains("layer_types") && !j["layer_types"].is_null()) {  // transformers 5: the list decides
      const auto& types = j["layer_types"];
      if (!types.is_array() || types.size() != M::depth)
        refuse("layer_types is not a list of " + std::to_string(M::depth) + " layer types", "give one per layer");
      std::size_t sliding = 0;
      for (const auto& lt : types) {
        if (!lt.is_string() || (lt.get<std::string>() != "sliding_attention" && lt.get<std::string>() != "full_attention"))
          refuse("layer_types has " + lt.dump(), "weft reads full_attention and sliding_attention");
        sliding += lt.get<std::string>() == "sliding_attention";
      }
      if (sliding != 0 && sliding != M::depth)
        refuse("its sliding window applies to " + std::to_string(sliding) + " of " + std::to_string(M::depth) +
                   " layers only (layer_types)",
               "weft's llama windows every layer or none");
      first = sliding == 0 ? double(M::depth) : 0;
    }
    if (on && first > 0 && first < double(M::depth))
      refuse("its sliding window applies to layers " + hf_number(first) + " on only (max_window_layers)",
             "weft's llama windows every layer or none");
    if (!on || first >= double(M::depth)) window = 0;
  }
  auto effective = [](double w) { return w <= 0 || w >= double(M::context_length) ? 0.0 : w; };
  if (effective(window) != effective(double(Cfg::sliding_window)))
    refuse(window > 0 ? "its sliding window is " + hf_number(window) + " keys" : std::string("it has no sliding window"),
           window > 0 ? "give the llama sliding_window<" + hf_number(window) + ">"
                      : std::string("build the llama without sliding_window<>"));
}

// Checks config.json `file` against llama model M: model_type (llama, mistral, qwen2 or qwen3),
// then check_hf_llama_fields.
template <class M>
void check_hf_config(const std::filesystem::path& file) {
  const io::detail::json j = hf_read_config(file);
  const std::string where = "weft::load_hf_weights: " + file.string();
  if (j.contains("model_type") && j["model_type"].is_string()) {
    const std::string t = j["model_type"].get<std::string>();
    if (t != "llama" && t != "mistral" && t != "qwen2" && t != "qwen3")
      hf_config_refuse<M>(where, "model_type is \"" + t + "\"", "weft reads the llama, mistral, qwen2 and qwen3 layouts");
  }
  check_hf_llama_fields<M>(j, where);
}

template <class Plan>
void check_hf_llama() {
  static_assert(is_llama_family<hf_llama_model<Plan>>,
                "weft::load_hf_weights/save_hf_weights: the model is not a llama<llama_config<…>> (the "
                "Hugging Face LLaMA-family layout). Load gpt<> models with load_weights.");
  if constexpr (is_llama_family<hf_llama_model<Plan>>) {
    // q/k norms make the checkpoint a Qwen 3 one, and transformers' Qwen 3 (as its LLaMA) puts
    // attention_bias on q, k, v and o_proj alike: only Qwen 2 has q/k/v biases without o_proj's
    using Cfg = typename hf_llama_model<Plan>::config;
    static constexpr bool no_qwen3_biases = !(Cfg::qk_normalised && Cfg::attention_bias);
    static_assert(no_qwen3_biases,
                  "weft::load_hf_weights/save_hf_weights: a llama with query_key_norm<> is a Qwen 3 checkpoint, and "
                  "transformers' Qwen 3 with attention_bias has an o_proj bias too, which weft's llama does not have. "
                  "Build it without qkv_bias<> (Qwen 3), or without query_key_norm<> (Qwen 2's q/k/v biases).");
  }
}

// The pad_token_id of the config.json beside `path`, for a model of vocabulary V: the id, or -1
// where there is no config.json, no pad_token_id or a null one. transformers builds the embedding
// of LLaMA, Mistral, Qwen 2/3, Mixtral, Qwen3-MoE and Gemma 3 as nn.Embedding(vocab, width,
// padding_idx=pad_token_id): that row gets no gradient from its lookups, and neither does weft's
// once load_hf_weights gives the step the id (training_step::set_padding_token).
template <std::size_t V>
std::int64_t hf_padding_token(const std::filesystem::path& path) {
  const std::filesystem::path file = hf_config_path(path);
  if (file.empty()) return -1;
  const io::detail::json j = hf_read_config(file);
  if (!j.contains("pad_token_id") || j["pad_token_id"].is_null()) return -1;
  const auto& v = j["pad_token_id"];
  const std::string where = "weft::load_hf_weights: " + file.string() + ": pad_token_id is " + v.dump();
  if (!v.is_number_integer()) throw checkpoint_error(where + ", not a token id");
  const std::int64_t id = v.get<std::int64_t>();
  if (id < 0 || id >= static_cast<std::int64_t>(V))
    throw checkpoint_error(where + ", outside this model's vocabulary of " + std::to_string(V));
  return id;
}

// ---- the shared loader and writer: a model's parameters as named parts ----

// Loads the checkpoint at `path` into st, each parameter p from the tensors parts_of(p) names
// (io/hf_llama.hpp's top says what is checked before anything is written). `family` names the
// model kind in messages ("llama").
// Tensors of a llama-family file that hold no weight (transformers recomputes them).
struct hf_llama_buffer {
  bool operator()(const std::string& n) const { return n.ends_with("rotary_emb.inv_freq"); }
};

// The file's rows of a part read into its place: in order, or scattered by part.row_order.
template <class Master>
void hf_read_part(const safetensors_file& f, const hf_tensor_part& part, Master* dst, std::size_t count) {
  if (part.row_order.empty()) {
    f.read_as(part.name, std::span<Master>(dst, count));
    return;
  }
  std::vector<Master> rows(count);
  f.read_as(part.name, std::span<Master>(rows));
  const std::size_t cols = count / part.row_order.size();
  for (std::size_t r = 0; r < part.row_order.size(); ++r)
    std::copy_n(rows.data() + r * cols, cols, dst + part.row_order[r] * cols);
}

// `extra_hint`: what the message on a file tensor without a parameter adds; `is_buffer`: names
// of file tensors that hold no weight and are passed over.
template <class Plan, class PartsOf, class IsBuffer = hf_llama_buffer>
void hf_load_parts(training_step<Plan>& st, const std::filesystem::path& path, PartsOf parts_of, const char* family,
                   IsBuffer is_buffer = {},
                   const char* extra_hint = "; a q/k/v bias needs qkv_bias<>, q/k norms query_key_norm<>") {
  using T = typename Plan::value_type;
  using Master = typename Plan::master_type;  // T unless mixed precision
  const hf_weight_files files(path);
  struct read_job {
    const safetensors_file* file;
    hf_tensor_part part;
    std::size_t offset, count;  // in the parameter block
  };
  std::vector<read_job> jobs;
  std::set<std::string> used;
  // 1. every tensor present, of the right shape and a float dtype, before anything is written
  for (const param_info& p : st.parameter_infos()) {
    const std::vector<hf_tensor_part> parts = parts_of(p);
    if (parts.empty())
      throw checkpoint_error("weft::load_hf_weights: parameter '" + p.name + "' has no Hugging Face name");
    std::size_t at = 0;  // elements into the parameter
    for (const hf_tensor_part& part : parts) {
      const safetensors_file* f = files.find(part.name);
      if (f == nullptr)
        throw checkpoint_error(
            "weft::load_hf_weights: " + files.describe() + " has no tensor '" + part.name + "'" +
            (part.name == "lm_head.weight" ? "; the checkpoint ties its head to the embedding: build the " +
                                                 std::string(family) + " with tie_word_embeddings<>"
                                           : "; it was saved for another model (this one: " + model_signature<Plan>() +
                                                 ")"));
      const auto& info = f->info(part.name);
      const std::vector<std::int64_t> shape = hf_part_shape(p, part);
      if (info.shape != shape)
        throw checkpoint_error("weft::load_hf_weights: " + f->path() + ": tensor '" + part.name + "' has shape " +
                               io::detail::shape_string(info.shape) + ", this model needs " +
                               io::detail::shape_string(shape) + " (this model: " + model_signature<Plan>() + ")");
      if (!st_float_dtype(info.dtype))
        throw checkpoint_error("weft::load_hf_weights: " + f->path() + ": tensor '" + part.name + "' has dtype " +
                               info.dtype + "; parameters load from F32, F64, F16 or BF16");
      const std::size_t count = hf_part_elements(shape);
      if (at + count > p.size)
        throw checkpoint_error("weft::load_hf_weights: the Hugging Face parts of '" + p.name + "' overrun it");
      if (!part.row_order.empty() && (shape.empty() || part.row_order.size() != static_cast<std::size_t>(shape[0])))
        throw checkpoint_error("weft::load_hf_weights: the row order of '" + part.name + "' does not match its rows");
      jobs.push_back({f, part, p.offset + at, count});
      used.insert(part.name);
      at += count;
    }
    if (at != p.size)  // a parts function that leaves elements unread would keep the old values there
      throw checkpoint_error("weft::load_hf_weights: the Hugging Face parts of '" + p.name + "' cover " +
                             std::to_string(at) + " of its " + std::to_string(p.size) + " elements");
  }
  // A tensor the model would drop (a bias, a norm, an untied head it does not have) changes what
  // the checkpoint computes: refused. A tied model may find lm_head.weight (some exports keep
  // the copy); it must then equal the embedding, which the model uses in its place.
  for (const std::string& n : files.names()) {
    if (used.contains(n) || is_buffer(n)) continue;
    if (n == "lm_head.weight" && used.contains("model.embed_tokens.weight")) {
      const safetensors_file* head = files.find(n);
      const safetensors_file* embed = files.find("model.embed_tokens.weight");
      if (head->info(n).shape == embed->info("model.embed_tokens.weight").shape &&
          head->read_as<double>(n) == embed->read_as<double>("model.embed_tokens.weight"))
        continue;
      throw checkpoint_error("weft::load_hf_weights: " + files.describe() +
                             " has an lm_head.weight that differs from its embedding, but this model ties its head: "
                             "build the " + std::string(family) + " without tie_word_embeddings<>");
    }
    throw checkpoint_error("weft::load_hf_weights: " + files.describe() + " has tensor '" + n +
                           "' that this model has no parameter for (this model: " + model_signature<Plan>() + ")" +
                           extra_hint);
  }
  // 2. the values, in the master type (then rounded once into the parameters under mixed precision)
  std::vector<Master> whole;
  Master* dst = nullptr;
  if constexpr (std::is_same_v<T, Master>) {
    dst = st.params().data();
  } else if (!st.master().empty()) {
    dst = st.master().data();
  } else {
    whole.resize(st.params().size());
    dst = whole.data();
  }
  for (const read_job& j : jobs) hf_read_part(*j.file, j.part, dst + j.offset, j.count);
  if constexpr (!std::is_same_v<T, Master>)
    ops::cast(host_context{}, flat(host_context{}, st.params().data(), st.params().size()),
              flat(host_context{}, static_cast<const Master*>(dst), st.params().size()));
}

// Writes st's parameters as dir/model.safetensors, each parameter p as the tensors parts_of(p).
template <class Plan, class PartsOf>
void hf_save_parts(const training_step<Plan>& st, const std::filesystem::path& dir, PartsOf parts_of) {
  using T = typename Plan::value_type;
  std::filesystem::create_directories(dir);
  safetensors_writer w;
  std::vector<std::vector<T>> reordered;  // parts in the file's row order, alive until written
  for (const param_info& p : st.parameter_infos()) {
    std::size_t at = 0;  // elements into the parameter
    for (const hf_tensor_part& part : parts_of(p)) {
      const std::vector<std::int64_t> shape = hf_part_shape(p, part);
      const std::size_t count = hf_part_elements(shape);
      const T* src = st.params().data() + p.offset + at;
      if (!part.row_order.empty()) {
        std::vector<T>& rows = reordered.emplace_back(count);
        const std::size_t cols = count / part.row_order.size();
        for (std::size_t r = 0; r < part.row_order.size(); ++r)
          std::copy_n(src + part.row_order[r] * cols, cols, rows.data() + r * cols);
        src = rows.data();
      }
      w.add(part.name, st_dtype_name<T>(), shape, src, count * sizeof(T));
      at += count;
    }
  }
  w.set_metadata("format", "pt");
  w.write(dir / "model.safetensors");
}

// The config.json fields of llama-bodied model M (llama<> or moe_llama<>) with element type T that
// do not depend on the model_type: sizes, rotary positions, norms, window, head tying, dtype.
template <class M, class T>
io::detail::json hf_llama_config_json() {
  using Cfg = typename M::config;
  io::detail::json c = {{"vocab_size", M::vocab_size},
                        {"hidden_size", M::width},
                        {"intermediate_size", M::ffn},
                        {"num_hidden_layers", M::depth},
                        {"num_attention_heads", M::heads},
                        {"num_key_value_heads", M::kv_heads},
                        {"head_dim", M::head_dim},
                        {"max_position_embeddings", M::context_length},
                        {"rms_norm_eps", Cfg::norm_epsilon},
                        {"rope_theta", static_cast<double>(Cfg::rope_theta)},
                        {"hidden_act", "silu"},
                        {"attention_bias", Cfg::attention_bias},
                        {"tie_word_embeddings", Cfg::tied_embeddings},
                        {"torch_dtype", sizeof(T) == 8 ? "float64" : sizeof(T) == 4 ? "float32" : "bfloat16"}};
  using Sc = typename Cfg::rope_scaling_type;
  if constexpr (Sc::enabled)
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", static_cast<double>(Sc::factor)},
                         {"low_freq_factor", static_cast<double>(Sc::low_freq_factor)},
                         {"high_freq_factor", static_cast<double>(Sc::high_freq_factor)},
                         {"original_max_position_embeddings", Sc::original_context}};
  if constexpr (Cfg::sliding_window != 0) {
    c["sliding_window"] = Cfg::sliding_window;
    if constexpr (Cfg::qk_normalised || Cfg::attention_bias) {  // Qwen's switch, and every layer from 0 on
      c["use_sliding_window"] = true;
      c["max_window_layers"] = 0;
    }
  }
  return c;
}

// Writes config.json `c` as dir/config.json.
inline void hf_write_config(const io::detail::json& c, const std::filesystem::path& dir) {
  std::ofstream out(dir / "config.json");
  out << c.dump(2) << '\n';
  if (!out) throw checkpoint_error("weft::save_hf_weights: cannot write " + (dir / "config.json").string());
}

}  // namespace detail

/// Loads a Hugging Face LLaMA-family checkpoint (LLaMA, Mistral, Qwen 2/3) into a llama<…> step.
template <class Plan>
void load_hf_weights(training_step<Plan>& st, const std::filesystem::path& path) {
  detail::check_hf_llama<Plan>();
  using M = detail::hf_llama_model<Plan>;
  if (const auto config = detail::hf_config_path(path); !config.empty()) detail::check_hf_config<M>(config);
  const std::int64_t pad = detail::hf_padding_token<M::vocab_size>(path);
  detail::hf_load_parts(st, path, [](const param_info& p) { return detail::hf_llama_parts<M>(p); }, "llama");
  st.set_padding_token(pad);
}

/// Writes a llama<…> step's weights as a Hugging Face checkpoint: dir/model.safetensors (the
/// names above, the element type's dtype) and dir/config.json (model_type llama, mistral with a
/// sliding window, qwen2 with q/k/v biases, qwen3 with q/k norms).
template <class Plan>
void save_hf_weights(const training_step<Plan>& st, const std::filesystem::path& dir) {
  detail::check_hf_llama<Plan>();
  using M = detail::hf_llama_model<Plan>;
  using Cfg = typename M::config;
  using T = typename Plan::value_type;
  detail::hf_save_parts(st, dir, [](const param_info& p) { return detail::hf_llama_parts<M>(p); });
  const char* type = Cfg::qk_normalised ? "qwen3" : Cfg::attention_bias ? "qwen2" : Cfg::sliding_window ? "mistral" : "llama";
  const char* arch = Cfg::qk_normalised    ? "Qwen3ForCausalLM"
                     : Cfg::attention_bias ? "Qwen2ForCausalLM"
                     : Cfg::sliding_window ? "MistralForCausalLM"
                                           : "LlamaForCausalLM";
  io::detail::json c = detail::hf_llama_config_json<M, T>();
  c["architectures"] = {arch};
  c["model_type"] = type;
  if (st.padding_token() >= 0) c["pad_token_id"] = st.padding_token();
  detail::hf_write_config(c, dir);
}

}  // namespace weft
