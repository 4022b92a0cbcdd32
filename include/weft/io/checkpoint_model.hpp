#pragma once
// ---- what a checkpoint says about its model ----
// The signature and structure a load must match, the names and layouts tensors are exported
// under (Hugging Face GPT-2's for `gpt` models, or a model's export_name hook), and config.json
// (GPT2Config, a model's write_config hook, or weft's description), written with nlohmann-json.
#include "weft/core/dtype.hpp"          // bf16, f16
#include "weft/io/checkpoint_error.hpp"  // checkpoint_error
#include "weft/io/json.hpp"              // json (config.json)
#include "weft/model/layer.hpp"          // param_info
#include "weft/model/param.hpp"          // export_layout
#include "weft/model/structure.hpp"      // structure_of, structure_digest

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft::detail {

// The safetensors dtype of an element type weft saves.
template <class T>
constexpr std::string_view st_dtype_name() {
  if constexpr (std::is_same_v<T, double>) return "F64";
  else if constexpr (std::is_same_v<T, float>) return "F32";
  else if constexpr (std::is_same_v<T, bf16>) return "BF16";
  else if constexpr (std::is_same_v<T, f16>) return "F16";
  else static_assert(sizeof(T) == 0, "weft: safetensors holds f64, f32, bf16 or f16 parameters.");
}

// The optional facts of a model (a language_model need not name its family, kv heads or ffn).
template <class M>
std::string model_family() {
  if constexpr (requires { std::string_view(M::family); }) return std::string(std::string_view(M::family));
  else return "weft";
}
template <class M>
std::string optional_size(const char* key) {
  const std::string k(key);
  if constexpr (requires { std::size_t(M::kv_heads); })
    if (k == "kv_heads") return " kv_heads=" + std::to_string(M::kv_heads);
  if constexpr (requires { std::size_t(M::ffn); })
    if (k == "ffn") return " ffn=" + std::to_string(M::ffn);
  return {};
}

// A short description of the model that must match on load.
template <class Plan>
std::string model_signature() {
  using M = typename Plan::model;
  return model_family<M>() + " vocab=" + std::to_string(M::vocab_size) + " context=" +
         std::to_string(M::context_length) + " width=" + std::to_string(M::width) + " heads=" +
         std::to_string(M::heads) + optional_size<M>("kv_heads") + " depth=" + std::to_string(M::depth) +
         optional_size<M>("ffn") + " params=" + std::to_string(Plan::param_count);
}

// The model as written (before recomputation, which does not change what it computes).
template <class Plan>
struct structured_model {
  using type = typename Plan::model;
};
template <class Plan>
  requires requires { typename Plan::model_type; }
struct structured_model<Plan> {
  using type = typename Plan::model_type;
};
template <class Plan>
using structured_model_t = typename structured_model<Plan>::type;

/// The canonical text of the plan's model structure, and its hash (model/structure.hpp).
template <class Plan>
const std::string& model_structure_text() {
  static const std::string text = structure_of<structured_model_t<Plan>>();
  return text;
}
template <class Plan>
const std::string& model_structure() {
  static const std::string hash = structure_digest(model_structure_text<Plan>());
  return hash;
}

// Where two structure texts first differ, as "…context…" of each (for one-line messages).
inline std::string structure_difference(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const std::size_t from = i > 40 ? i - 40 : 0;
  auto cut = [&](const std::string& s) { return "'" + (from ? std::string("...") : "") + s.substr(from, 80) + "...'"; };
  return "first difference at character " + std::to_string(i) + ": file " + cut(a) + ", this model " + cut(b);
}

// The name of parameter `p` in files: the model's export_name hook, else weft's name.
template <class M>
std::string export_name(const std::string& weft_name) {
  if constexpr (requires { { M::export_name(std::string_view{}) } -> std::convertible_to<std::string>; })
    return M::export_name(weft_name);
  else return weft_name;
}

// A GPT-2 config's layer_norm_epsilon: the model's norm_eps<> (1e-5 without a config that says).
template <class M>
constexpr double gpt2_epsilon() {
  if constexpr (requires { double(M::config::norm_epsilon); }) return M::config::norm_epsilon;
  else return 1e-5;
}

inline std::vector<std::int64_t> export_shape(const param_info& p) {
  std::vector<std::int64_t> s(p.shape.begin(), p.shape.end());
  if (p.export_as == export_layout::transposed && s.size() == 2) std::swap(s[0], s[1]);
  return s;
}

template <class Plan>
void write_hf_config(const std::filesystem::path& file) {
  using M = typename Plan::model;
  std::ofstream out(file);
  // gpt<> has them; a user's model may not; GPT-2's config has no sliding window to say
  constexpr bool gpt2_facts = requires { std::size_t(M::ffn); } && !requires { requires M::config::sliding_window != 0; };
  if constexpr (requires(std::ostream& o) { M::write_config(o); }) {
    M::write_config(out);  // the model's own hook
  } else if (gpt2_facts && model_family<M>() == "gpt2") {
    // Hugging Face GPT-2's keys, in the order transformers writes them.
    const io::detail::json config = {
        {"model_type", "gpt2"},
        {"architectures", {"GPT2LMHeadModel"}},
        {"vocab_size", M::vocab_size},
        {"n_positions", M::context_length},
        {"n_ctx", M::context_length},
        {"n_embd", M::width},
        {"n_layer", M::depth},
        {"n_head", M::heads},
        {"n_inner", std::stoull(optional_size<M>("ffn").substr(5))},
        {"activation_function", "gelu_new"},
        {"layer_norm_epsilon", gpt2_epsilon<M>()},
        {"tie_word_embeddings", true},
        {"torch_dtype", sizeof(typename Plan::value_type) == 8 ? "float64" : "float32"}};
    out << config.dump(2) << '\n';
  } else {
    const io::detail::json config = {{"weft_model", model_signature<Plan>()},
                                     {"weft_structure", model_structure<Plan>()}};
    out << config.dump(2) << '\n';
  }
  if (!out) throw checkpoint_error("weft::save_checkpoint: cannot write " + file.string());
}

}  // namespace weft::detail
