#pragma once
// ---- checkpoints: safetensors with Hugging Face names, optimizer state and position alongside ----
// A checkpoint is a directory:
//   model.safetensors      the parameters, by their dotted names; for `gpt` models exactly
//                          Hugging Face GPT-2's names and layouts (Conv1D weights as (in, out)),
//                          so transformers' GPT2LMHeadModel.from_pretrained(dir) loads it;
//                          metadata "step" (matched against the optimizer's on load), and
//                          "weft_structure" / "weft_structure_text": the hash and text of the
//                          model's structure (model/structure.hpp), which loading must match
//   config.json            the Hugging Face config for gpt models (model_type "gpt2"); for other
//                          models weft's description, or what the model's write_config hook writes
// Hooks a model type may define for other frameworks (both optional):
//   static std::string export_name(std::string_view weft_name)   the tensor's name in the files
//   static void write_config(std::ostream& out)                   the whole config.json
//   optimizer.safetensors  AdamW moments "m.<name>", "v.<name>" in weft's layout, and in its
//                          metadata the step count and the data sampler's position
// Resuming restores all of it, so the loss curve continues bit for bit. Loading checks the
// model, every tensor's presence, shape and dtype, and the step first; on error the training
// step is left unchanged.
#include "weft/model/structure.hpp"        // structure_of, structure_digest
#include "weft/train/batch_sampler.hpp"     // sampler_state
#include "weft/train/checkpoint_error.hpp"  // checkpoint_error
#include "weft/train/safetensors.hpp"       // safetensors_writer, safetensors_file
#include "weft/train/training_step.hpp"     // training_step

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace weft {

/// Where training stands besides the tensors.
struct checkpoint_state {
  sampler_state sampler{};
};

namespace detail {
template <class T>
constexpr std::string_view st_dtype_name() {
  if constexpr (sizeof(T) == 8) return "F64";
  else return "F32";
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

inline std::vector<std::int64_t> export_shape(const param_info& p) {
  std::vector<std::int64_t> s(p.shape.begin(), p.shape.end());
  if (p.export_as == export_layout::transposed && s.size() == 2) std::swap(s[0], s[1]);
  return s;
}

template <class Plan>
void write_hf_config(const std::filesystem::path& file) {
  using M = typename Plan::model;
  std::ofstream out(file);
  constexpr bool gpt2_facts = requires { std::size_t(M::ffn); };  // gpt<> has them; a user's model may not
  if constexpr (requires(std::ostream& o) { M::write_config(o); }) {
    M::write_config(out);  // the model's own hook
  } else if (gpt2_facts && model_family<M>() == "gpt2") {
    out << "{\n  \"model_type\": \"gpt2\",\n  \"architectures\": [\"GPT2LMHeadModel\"],\n"
        << "  \"vocab_size\": " << M::vocab_size << ",\n  \"n_positions\": " << M::context_length
        << ",\n  \"n_ctx\": " << M::context_length << ",\n  \"n_embd\": " << M::width << ",\n  \"n_layer\": " << M::depth
        << ",\n  \"n_head\": " << M::heads << ",\n  \"n_inner\": " << optional_size<M>("ffn").substr(5)
        << ",\n  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
        << "  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"" << (sizeof(typename Plan::value_type) == 8 ? "float64" : "float32")
        << "\"\n}\n";
  } else {
    out << "{\n  \"weft_model\": \"" << model_signature<Plan>() << "\",\n  \"weft_structure\": \""
        << model_structure<Plan>() << "\"\n}\n";
  }
  if (!out) throw checkpoint_error("weft::save_checkpoint: cannot write " + file.string());
}
}  // namespace detail

namespace detail {
// The floating-point dtypes load_weights converts from.
inline bool st_float_dtype(std::string_view d) { return d == "F32" || d == "F64" || d == "F16" || d == "BF16"; }

// save_weights with extra metadata entries (save_checkpoint adds the step).
template <class Plan>
void save_weights_with(const training_step<Plan>& st, const std::filesystem::path& file,
                       const std::vector<std::pair<std::string, std::string>>& extra_metadata) {
  using T = typename Plan::value_type;
  safetensors_writer w;
  using M = typename Plan::model;
  for (const param_info& p : st.parameter_infos()) {
    const T* src = st.params().data() + p.offset;
    if (p.export_as == export_layout::transposed && p.shape.size() == 2) {
      const std::size_t rows = p.shape[0], cols = p.shape[1];  // weft (out, in) -> file (in, out)
      w.add(export_name<M>(p.name), st_dtype_name<T>(), export_shape(p), [src, rows, cols](safetensors_sink& sink) {
        std::vector<T> line(rows);
        for (std::size_t c = 0; c < cols; ++c) {
          for (std::size_t r = 0; r < rows; ++r) line[r] = src[r * cols + c];
          sink.write(std::span<const T>(line));
        }
      });
    } else {
      w.add(export_name<M>(p.name), st_dtype_name<T>(), export_shape(p), src, p.size * sizeof(T));
    }
  }
  w.set_metadata("format", "pt");  // what transformers expects of a PyTorch-layout file
  w.set_metadata("weft_model", model_signature<Plan>());
  w.set_metadata("weft_structure", model_structure<Plan>());
  w.set_metadata("weft_structure_text", model_structure_text<Plan>());
  for (const auto& [k, v] : extra_metadata) w.set_metadata(k, v);
  w.write(file);
}

// The name of parameter `p` in `f` (as is, or under GPT2LMHeadModel's "transformer." prefix),
// after checking that it is there with the right shape and a float dtype.
template <class Plan>
std::string checked_weight_name(const safetensors_file& f, const param_info& p) {
  std::string name = export_name<typename Plan::model>(p.name);
  if (!f.contains(name) && f.contains("transformer." + name)) name = "transformer." + name;
  if (!f.contains(name))
    throw checkpoint_error("weft::load_weights: " + f.path() + " has no tensor '" + name +
                           "'; it was saved for another model (this one: " + model_signature<Plan>() + ")");
  const auto& info = f.info(name);
  if (info.shape != export_shape(p))
    throw checkpoint_error("weft::load_weights: " + f.path() + ": tensor '" + name + "' has shape " +
                           train::detail::shape_string(info.shape) + ", this model needs " +
                           train::detail::shape_string(export_shape(p)) + " (this model: " +
                           model_signature<Plan>() + ")");
  if (!st_float_dtype(info.dtype))
    throw checkpoint_error("weft::load_weights: " + f.path() + ": tensor '" + name + "' has dtype " + info.dtype +
                           "; parameters load from F32, F64, F16 or BF16");
  return name;
}

// load_weights from an open file: checks every tensor first, so that a file that does not fit
// leaves the parameters untouched.
template <class Plan>
void load_weights_from(training_step<Plan>& st, const safetensors_file& f) {
  using T = typename Plan::value_type;
  std::vector<std::string> names;
  names.reserve(st.parameter_infos().size());
  for (const param_info& p : st.parameter_infos()) names.push_back(checked_weight_name<Plan>(f, p));
  // A file weft wrote names the structure it was saved from: another structure is refused even
  // where every tensor fits (a squared-ReLU MLP and a GELU one have the same tensors). Checked
  // after the tensors, so that a tensor of another shape is reported as such.
  const auto& md = f.metadata();
  if (const auto it = md.find("weft_structure"); it != md.end() && it->second != model_structure<Plan>()) {
    const auto text = md.find("weft_structure_text");
    throw checkpoint_error("weft::load_weights: " + f.path() + " was saved from a model of structure " + it->second +
                           ", this program's model has structure " + model_structure<Plan>() +
                           (text != md.end() ? " (" + structure_difference(text->second, model_structure_text<Plan>()) + ")"
                                             : std::string()));
  }
  std::vector<T> tmp;
  std::size_t i = 0;
  for (const param_info& p : st.parameter_infos()) {
    const std::string& name = names[i++];
    T* dst = st.params().data() + p.offset;
    if (p.export_as == export_layout::transposed && p.shape.size() == 2) {
      tmp.resize(p.size);
      f.read_as(name, std::span<T>(tmp));
      const std::size_t rows = p.shape[0], cols = p.shape[1];  // file (in=cols, out=rows)
      for (std::size_t c = 0; c < cols; ++c)
        for (std::size_t r = 0; r < rows; ++r) dst[r * cols + c] = tmp[c * rows + r];
    } else {
      f.read_as(name, std::span<T>(dst, p.size));
    }
  }
}

// A non-negative integer from checkpoint metadata.
inline std::uint64_t parse_count(const std::string& text, const std::string& key, const std::string& file) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    throw checkpoint_error("weft::load_checkpoint: " + file + ": metadata '" + key + "' is '" + text +
                           "', not a non-negative integer");
  return v;
}
}  // namespace detail

/// Writes the parameters alone to one safetensors file (Hugging Face names and layouts).
template <class Plan>
void save_weights(const training_step<Plan>& st, const std::filesystem::path& file) {
  detail::save_weights_with(st, file, {});
}

/// Reads parameters from a safetensors file written by weft or by PyTorch/transformers
/// (a "transformer." prefix is accepted; GPT-2's attention-mask buffers are ignored).
/// Every parameter must be present with its shape; F32, F64, F16 and BF16 are converted; other
/// tensors are ignored. All are checked before any is read: on error the parameters are unchanged.
template <class Plan>
void load_weights(training_step<Plan>& st, const std::filesystem::path& file) {
  detail::load_weights_from(st, safetensors_file::open(file));
}

/// Saves parameters, config, optimizer state and position into directory `dir` (created).
template <class Plan>
void save_checkpoint(const training_step<Plan>& st, const std::filesystem::path& dir, const checkpoint_state& cs = {}) {
  using T = typename Plan::value_type;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw checkpoint_error("weft::save_checkpoint: cannot create " + dir.string() + " (" + ec.message() + ")");
  // The step in both files tells a torn save (a crash between the two writes) on load.
  detail::save_weights_with(st, dir / "model.safetensors", {{"step", std::to_string(st.step_count())}});
  detail::write_hf_config<Plan>(dir / "config.json");
  safetensors_writer w;
  for (const param_info& p : st.parameter_infos()) {
    const std::vector<std::int64_t> shape(p.shape.begin(), p.shape.end());
    w.add("m." + p.name, detail::st_dtype_name<T>(), shape, st.adam_m().data() + p.offset, p.size * sizeof(T));
    w.add("v." + p.name, detail::st_dtype_name<T>(), shape, st.adam_v().data() + p.offset, p.size * sizeof(T));
  }
  w.set_metadata("weft_model", detail::model_signature<Plan>());
  w.set_metadata("step", std::to_string(st.step_count()));
  w.set_metadata("sampler_seed", std::to_string(cs.sampler.seed));
  w.set_metadata("sampler_step", std::to_string(cs.sampler.step));
  w.write(dir / "optimizer.safetensors");
}

/// Restores what save_checkpoint wrote; returns the saved position for the data sampler.
/// Checks everything (model, tensors, shapes, step) before changing `st`: on error it is unchanged.
template <class Plan>
checkpoint_state load_checkpoint(training_step<Plan>& st, const std::filesystem::path& dir) {
  using T = typename Plan::value_type;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec))
    throw checkpoint_error("weft::load_checkpoint: " + dir.string() + " does not exist (no checkpoint there)");
  if (!std::filesystem::is_directory(dir, ec))
    throw checkpoint_error("weft::load_checkpoint: " + dir.string() +
                           " is not a directory; a checkpoint is a directory written by save_checkpoint");
  const std::filesystem::path opt_path = dir / "optimizer.safetensors", model_path = dir / "model.safetensors";
  if (!std::filesystem::exists(opt_path, ec))
    throw checkpoint_error("weft::load_checkpoint: " + dir.string() +
                           " has no optimizer.safetensors (weights only? load them with load_weights)");
  const safetensors_file opt = safetensors_file::open(opt_path);
  const auto& md = opt.metadata();
  auto get = [&](const std::string& key) -> std::string {
    const auto it = md.find(key);
    if (it == md.end())
      throw checkpoint_error("weft::load_checkpoint: " + opt_path.string() + " lacks metadata '" + key + "'");
    return it->second;
  };
  if (get("weft_model") != detail::model_signature<Plan>())
    throw checkpoint_error("weft::load_checkpoint: " + dir.string() + " holds a different model (" + get("weft_model") +
                           "); this program trains " + detail::model_signature<Plan>());
  checkpoint_state cs;
  const std::uint64_t step = detail::parse_count(get("step"), "step", opt_path.string());
  cs.sampler.seed = detail::parse_count(get("sampler_seed"), "sampler_seed", opt_path.string());
  cs.sampler.step = detail::parse_count(get("sampler_step"), "sampler_step", opt_path.string());
  // The moments: present, in weft's shapes, floating point.
  for (const param_info& p : st.parameter_infos()) {
    const std::vector<std::int64_t> shape(p.shape.begin(), p.shape.end());
    for (const std::string& name : {"m." + p.name, "v." + p.name}) {
      if (!opt.contains(name))
        throw checkpoint_error("weft::load_checkpoint: " + opt_path.string() + " has no tensor '" + name + "'");
      const auto& info = opt.info(name);
      if (info.shape != shape || !detail::st_float_dtype(info.dtype))
        throw checkpoint_error("weft::load_checkpoint: " + opt_path.string() + ": tensor '" + name + "' is " +
                               info.dtype + " " + train::detail::shape_string(info.shape) + ", this model needs " +
                               std::string(detail::st_dtype_name<T>()) + " " + train::detail::shape_string(shape));
    }
  }
  const safetensors_file model = safetensors_file::open(model_path);
  const auto ms = model.metadata().find("step");
  if (ms != model.metadata().end() && ms->second != std::to_string(step))
    throw checkpoint_error("weft::load_checkpoint: " + dir.string() + ": model.safetensors is of step " + ms->second +
                           " but optimizer.safetensors of step " + std::to_string(step) +
                           " (an interrupted save?)");
  detail::load_weights_from(st, model);  // checks all its tensors before writing any
  for (const param_info& p : st.parameter_infos()) {
    opt.read_as("m." + p.name, std::span<T>(st.adam_m().data() + p.offset, p.size));
    opt.read_as("v." + p.name, std::span<T>(st.adam_v().data() + p.offset, p.size));
  }
  st.set_step_count(static_cast<std::size_t>(step));
  return cs;
}

}  // namespace weft
