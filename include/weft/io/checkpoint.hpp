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
//   manifest.json          written last: model, structure, step, position, the strategy it was
//                          saved under, and an FNV-1a 64 of every file header and tensor
// One engine writes it (namespace detail below): every rank of a distributed save runs it on its
// own slices (distributed_checkpoint.hpp); save_checkpoint(training_step, ...) runs it in a world
// of one. Two ways to save from one process:
//   save_checkpoint(st, world, root, cs, opt)  atomic (checkpoint_dirs.hpp): root/step-<n>/ via a
//                                              temporary directory, root/latest names the newest,
//                                              keep_last rotates; a crash leaves the last good one
//   save_checkpoint(st, dir, cs)               rewrites `dir` in place (not atomic: a crash
//                                              half-way leaves files without their manifest)
// load_checkpoint(training_step, path) takes a root (its `latest`) or a checkpoint directory and
// loads only what its manifest verifies (sizes and FNV-1a checksums of every header, tensor and
// config.json): a directory without manifest.json — a save that did not finish — is refused with
// one line, never loaded unverified. (Hugging Face files without weft's optimizer state load
// with load_weights.)
// Mixed precision (precision<bf16, f32>): the files hold the f32 master weights as the model's
// tensors and the f32 moments, so a checkpoint of a mixed run is the checkpoint of an f32 run
// (either loads into the other); loading sets the master and the bf16 parameters as its rounded
// copy, as training keeps them.
// Resuming restores all of it, so the loss curve continues bit for bit. Loading checks the
// model, every tensor's presence, shape and dtype, and the step first; on error the training
// step is left unchanged.
#include "weft/comm/communicator.hpp"          // communicator, reduce_op
#include "weft/comm/single.hpp"                // single_world (a save from one process)
#include "weft/model/ep_moe_mlp.hpp"           // is_expert_parameter (an expert rank's slice)
#include "weft/model/structure.hpp"            // structure_of, structure_digest
#include "weft/parallel/tensor_parallel.hpp"   // shard_indices
#include "weft/data/batch_sampler.hpp"        // sampler_state
#include "weft/io/checkpoint_dirs.hpp"         // checkpoint_options, ckpt_save_step_dir, ckpt_resolve
#include "weft/io/checkpoint_error.hpp"        // checkpoint_error
#include "weft/io/checkpoint_files.hpp"        // fnv1a64, ckpt_agree, ckpt_fd, ckpt_read_small
#include "weft/io/checkpoint_manifest.hpp"     // ckpt_manifest, ckpt_manifest_json, ckpt_parse_manifest
#include "weft/io/checkpoint_model.hpp"        // model_signature, export_name, write_hf_config
#include "weft/io/safetensors.hpp"             // safetensors_writer, safetensors_file
#include "weft/ops/cast.hpp"                   // cast (mixed precision: the parameters from the master)
#include "weft/exec/training_step.hpp"        // training_step

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

/// Where training stands besides the tensors.
struct checkpoint_state {
  sampler_state sampler{};
  /// The dynamic loss scale of an f16 run and its good steps since the last change (set by
  /// save_checkpoint from the step; 0: none). Restored by load_checkpoint, so that an f16 run
  /// resumes with the scale it had.
  double loss_scale = 0;
  std::size_t loss_scale_good_steps = 0;
};

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
                           io::detail::shape_string(info.shape) + ", this model needs " +
                           io::detail::shape_string(export_shape(p)) + " (this model: " +
                           model_signature<Plan>() + ")");
  if (!st_float_dtype(info.dtype))
    throw checkpoint_error("weft::load_weights: " + f.path() + ": tensor '" + name + "' has dtype " + info.dtype +
                           "; parameters load from F32, F64, F16 or BF16");
  return name;
}

// load_weights from an open file: checks every tensor first, so that a file that does not fit
// leaves the parameters untouched.
// The name in `f` of every parameter, after checking them all and the structure.
template <class Plan>
std::vector<std::string> checked_weight_names(const safetensors_file& f) {
  std::vector<std::string> names;
  for (const param_info& p : Plan::parameters()) names.push_back(checked_weight_name<Plan>(f, p));
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
  return names;
}

// Under mixed precision the values are read in the master type: into the master weights (when
// the step has them) and, rounded once, into the parameters.
template <class Plan>
void load_weights_from(training_step<Plan>& st, const safetensors_file& f) {
  using T = typename Plan::value_type;
  using M = typename Plan::master_type;  // T unless mixed precision
  const std::vector<std::string> names = checked_weight_names<Plan>(f);
  std::vector<M> tmp, whole;
  std::size_t i = 0;
  for (const param_info& p : st.parameter_infos()) {
    const std::string& name = names[i++];
    M* dst = nullptr;
    if constexpr (std::is_same_v<T, M>) {
      dst = st.params().data() + p.offset;
    } else {
      whole.resize(p.size);
      dst = st.master().empty() ? whole.data() : st.master().data() + p.offset;
    }
    if (p.export_as == export_layout::transposed && p.shape.size() == 2) {
      tmp.resize(p.size);
      f.read_as(name, std::span<M>(tmp));
      const std::size_t rows = p.shape[0], cols = p.shape[1];  // file (in=cols, out=rows)
      for (std::size_t c = 0; c < cols; ++c)
        for (std::size_t r = 0; r < rows; ++r) dst[r * cols + c] = tmp[c * rows + r];
    } else {
      f.read_as(name, std::span<M>(dst, p.size));
    }
    if constexpr (!std::is_same_v<T, M>) ops::cast(host_context{},
                                                   flat(host_context{}, st.params().data() + p.offset, p.size),
                                                   flat(host_context{}, dst, p.size));
  }
}

// A double written so that it reads back exactly (the shortest round-trip form).
inline std::string ckpt_double_text(double x) {
  char b[64];
  const auto r = std::to_chars(b, b + sizeof b, x);
  return std::string(b, r.ptr);
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
// The loss scale in an optimizer file's metadata, if any, into `cs`.
inline void ckpt_read_loss_scale(const std::map<std::string, std::string>& md, checkpoint_state& cs,
                                 const std::string& file) {
  const auto it = md.find("loss_scale");
  if (it == md.end()) return;
  double v = 0;
  const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc{} || end != it->second.data() + it->second.size() || !(v > 0))
    throw checkpoint_error("weft::load_checkpoint: " + file + ": metadata 'loss_scale' is '" + it->second +
                           "', not a positive number");
  const auto g = md.find("loss_scale_good_steps");
  cs.loss_scale = v;
  cs.loss_scale_good_steps = g == md.end() ? 0 : parse_count(g->second, "loss_scale_good_steps", file);
}

}  // namespace detail

namespace detail {
// ==== the checkpoint engine: the same code writes a checkpoint from one process or from N ====

// ---- the logical files: names, shapes and byte ranges of every tensor ----

enum class ckpt_kind : std::uint8_t { param, m, v };

struct ckpt_tensor {
  std::string name;                  // in the file
  std::string dtype;                 // "F32" / "F64"
  std::vector<std::int64_t> shape;   // in the file
  std::uint64_t begin = 0, end = 0;  // absolute byte range in the file
  bool transposed = false;           // weft (rows, cols) stored (cols, rows)
  std::size_t rows = 0, cols = 0;
  std::size_t elem = 0;  // bytes per element
  // Byte offset in the file of element `i` of the weft-layout tensor.
  std::uint64_t at(std::size_t i) const {
    if (!transposed) return begin + static_cast<std::uint64_t>(i) * elem;
    return begin + (static_cast<std::uint64_t>(i % cols) * rows + i / cols) * elem;
  }
};
struct ckpt_file {
  std::string name;  // "model.safetensors", "optimizer.safetensors"
  std::string head;  // the bytes before the data
  std::uint64_t size = 0;
  std::vector<ckpt_tensor> tensors;  // model: one per parameter; optimizer: m, v per parameter
};
// Index of the tensor for (kind, parameter w) in its file.
inline std::size_t ckpt_tensor_index(ckpt_kind k, std::size_t w) {
  return k == ckpt_kind::param ? w : 2 * w + (k == ckpt_kind::v ? 1 : 0);
}

template <class T>
constexpr bool ckpt_float_v = std::is_same_v<T, float> || std::is_same_v<T, double>;

// The files a save of `Plan` at `step` writes: the same on every rank (the headers hold step and
// sampler position, which the caller has made equal everywhere).
template <class Plan>
std::array<ckpt_file, 2> ckpt_plan_files(std::uint64_t step, const checkpoint_state& cs) {
  using T = typename Plan::master_type;  // the files hold the master weights (T unless mixed precision)
  using M = typename Plan::model;
  const auto whole = Plan::parameters();
  const std::string dtype(st_dtype_name<T>());
  const auto never = [](safetensors_sink&) {};  // the layout only: write() is never called
  safetensors_writer mw, ow;
  for (const param_info& p : whole) {
    mw.add(export_name<M>(p.name), dtype, export_shape(p), never);
    const std::vector<std::int64_t> shape(p.shape.begin(), p.shape.end());
    ow.add("m." + p.name, dtype, shape, never);
    ow.add("v." + p.name, dtype, shape, never);
  }
  // The metadata of save_checkpoint (checkpoint.hpp), so that either loader reads either save.
  mw.set_metadata("format", "pt");
  mw.set_metadata("weft_model", model_signature<Plan>());
  mw.set_metadata("weft_structure", model_structure<Plan>());
  mw.set_metadata("weft_structure_text", model_structure_text<Plan>());
  mw.set_metadata("step", std::to_string(step));
  ow.set_metadata("weft_model", model_signature<Plan>());
  ow.set_metadata("step", std::to_string(step));
  ow.set_metadata("sampler_seed", std::to_string(cs.sampler.seed));
  ow.set_metadata("sampler_step", std::to_string(cs.sampler.step));
  if (cs.loss_scale > 0) {  // f16 with dynamic loss scaling
    ow.set_metadata("loss_scale", ckpt_double_text(cs.loss_scale));
    ow.set_metadata("loss_scale_good_steps", std::to_string(cs.loss_scale_good_steps));
  }
  std::array<ckpt_file, 2> files;
  files[0].name = "model.safetensors";
  files[1].name = "optimizer.safetensors";
  const auto fill = [&](ckpt_file& f, const safetensors_writer& w) {
    const auto l = w.layout();
    f.head = l.head;
    f.size = l.size;
    for (const param_info& p : whole) {
      const bool model = &f == &files[0];
      const std::vector<std::string> names =
          model ? std::vector<std::string>{export_name<M>(p.name)} : std::vector<std::string>{"m." + p.name, "v." + p.name};
      for (const std::string& n : names) {
        ckpt_tensor t;
        t.name = n;
        t.dtype = dtype;
        t.shape = model ? export_shape(p) : std::vector<std::int64_t>(p.shape.begin(), p.shape.end());
        const auto& r = l.tensors.find(n)->second;
        t.begin = r.first;
        t.end = r.second;
        t.transposed = model && p.export_as == export_layout::transposed && p.shape.size() == 2;
        t.rows = p.shape.empty() ? 1 : p.shape.front();
        t.cols = p.shape.empty() ? 1 : p.size / t.rows;
        t.elem = sizeof(T);
        f.tensors.push_back(std::move(t));
      }
    }
  };
  fill(files[0], mw);
  fill(files[1], ow);
  return files;
}

// ---- what one rank holds: its local parameter block and where each element belongs ----

// T: the files' element type, the master type (f32 under precision<bf16, f32>).
template <class T>
struct ckpt_local {
  std::vector<param_info> infos;     // the local parameters: single-process names, local offsets
  std::size_t size = 0;              // elements of the local parameter block
  std::size_t tp = 1, tp_rank = 0;   // the shard maps' arguments
  std::size_t ep = 1, ep_rank = 0;   // expert parallelism: this rank holds experts [r·E/ep, (r+1)·E/ep)
  std::vector<char> counted;         // per local element: written by this rank if in its dp shard
  std::size_t shard_begin = 0, shard_end = 0;  // this dp rank's run of the local block
  std::span<T> params;               // the local block (every element, every rank), in T: the parameters,
                                     // or the local step's master weights (mixed precision, ZeRO-0);
                                     // empty under mixed precision with ZeRO >= 1 (the master is a shard)
  std::span<T> master;               // the shard's master copy (ZeRO-3; mixed precision, ZeRO >= 1); else empty
  std::span<T> m, v;                 // moments: of the whole block, or of the shard (ZeRO >= 1)
  std::size_t moment_base = 0;       // local element of m[0]
};

inline std::map<std::string, std::size_t, std::less<>> ckpt_whole_index(const std::vector<param_info>& whole) {
  std::map<std::string, std::size_t, std::less<>> m;
  for (std::size_t i = 0; i < whole.size(); ++i) m[whole[i].name] = i;
  return m;
}
// The single-process element of each element of local parameter `p`. On expert rank `ep_rank`
// of `ep`, an expert tensor (is_expert_parameter) is the contiguous block ep_rank of the whole
// tensor's leading (expert) axis; its tp shard map (replicated under tp) is taken within the block.
// A parameter the local step holds whole (tp_role replicated: the expert-parallel MoE layer, which
// tensor parallelism replicates) maps as under tp = 1, whatever role the logical one has.
inline std::vector<std::size_t> ckpt_shard_map(const param_info& whole, const param_info& p, std::size_t tp,
                                               std::size_t tp_rank, std::size_t ep = 1, std::size_t ep_rank = 0) {
  if (p.tp_role == role::replicated) tp = 1;
  std::vector<std::size_t> idx;
  if (ep > 1 && is_expert_parameter(p)) {
    if (whole.shape.empty() || whole.shape.front() % ep != 0 || whole.size % ep != 0)
      throw checkpoint_error("weft::checkpoint: the experts of '" + p.name + "' (leading axis " +
                             std::to_string(whole.shape.empty() ? 0 : whole.shape.front()) +
                             ") do not split over ep " + std::to_string(ep));
    param_info block = whole;  // this rank's experts, as a tensor of their own
    block.shape.front() /= ep;
    block.size /= ep;
    idx = shard_indices(block, tp, tp_rank);
    for (auto& i : idx) i += ep_rank * block.size;
  } else {
    idx = shard_indices(whole, tp, tp_rank);
  }
  if (idx.size() != p.size)
    throw checkpoint_error("weft::checkpoint: the shard of '" + p.name + "' has " + std::to_string(p.size) +
                           " elements but its shard map " + std::to_string(idx.size()));
  return idx;
}

// Writes this rank's elements of `f` (the kinds it holds) into the open file, coalesced.
template <class T>
void ckpt_write_slices(const ckpt_fd& out, const ckpt_file& f, bool model_file, const ckpt_local<T>& v,
                       const std::vector<param_info>& whole, int rank) {
  const auto index = ckpt_whole_index(whole);
  std::vector<std::pair<std::uint64_t, T>> items;  // (byte offset in the file, value)
  for (const param_info& p : v.infos) {
    const std::size_t w = index.at(p.name);
    const auto idx = ckpt_shard_map(whole[w], p, v.tp, v.tp_rank, v.ep, v.ep_rank);
    const std::size_t b = std::max(p.offset, v.shard_begin), e = std::min(p.offset + p.size, v.shard_end);
    for (std::size_t x = b; x < e; ++x) {
      if (!v.counted[x]) continue;
      const std::size_t logical = idx[x - p.offset];
      if (model_file) {
        const T value = v.master.empty() ? v.params[x] : v.master[x - v.shard_begin];
        items.emplace_back(f.tensors[ckpt_tensor_index(ckpt_kind::param, w)].at(logical), value);
      } else {
        items.emplace_back(f.tensors[ckpt_tensor_index(ckpt_kind::m, w)].at(logical), v.m[x - v.moment_base]);
        items.emplace_back(f.tensors[ckpt_tensor_index(ckpt_kind::v, w)].at(logical), v.v[x - v.moment_base]);
      }
    }
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<T> run;
  for (std::size_t i = 0; i < items.size();) {
    std::size_t j = i + 1;
    while (j < items.size() && items[j].first == items[j - 1].first + sizeof(T)) ++j;
    run.resize(j - i);
    for (std::size_t k = i; k < j; ++k) run[k - i] = items[k].second;
    out.pwrite_all(run.data(), run.size() * sizeof(T), items[i].first);
    ckpt_kill_point(rank, "a run of slices written");
    i = j;
  }
}

// ---- reading: this rank's elements, checked, into buffers ----

template <class T>
struct ckpt_staged {
  std::vector<T> params, m, v;
  std::uint64_t step = 0;
  checkpoint_state state{};
};

// Reads the elements (pos -> dest) from `f`, coalesced; converts F32/F64 to T.
template <class T>
void ckpt_read_runs(const ckpt_fd& f, std::vector<std::pair<std::uint64_t, T*>>& items, std::size_t elem) {
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<unsigned char> buf;
  for (std::size_t i = 0; i < items.size();) {
    std::size_t j = i + 1;
    while (j < items.size() && (items[j].first == items[j - 1].first || items[j].first == items[j - 1].first + elem)) ++j;
    const std::uint64_t b = items[i].first, e = items[j - 1].first + elem;
    buf.resize(static_cast<std::size_t>(e - b));
    f.pread_all(buf.data(), buf.size(), b);
    for (std::size_t k = i; k < j; ++k) {
      const unsigned char* p = buf.data() + (items[k].first - b);
      if (elem == 8) {
        double d;
        std::memcpy(&d, p, 8);
        *items[k].second = static_cast<T>(d);
      } else {
        float s;
        std::memcpy(&s, p, 4);
        *items[k].second = static_cast<T>(s);
      }
    }
    i = j;
  }
}

// Checks what every rank can check alone: the manifest against this model, the files against the
// manifest (sizes, headers: names, shapes, dtypes). Returns the files' tensor tables.
template <class Plan>
std::array<ckpt_file, 2> ckpt_check_files(const std::filesystem::path& dir, const ckpt_manifest& man) {
  using M = typename Plan::model;
  const std::string where = "weft::load_checkpoint: " + dir.string();
  if (man.model != model_signature<Plan>())
    throw checkpoint_error(where + " holds a different model (" + man.model + "); this program trains " +
                           model_signature<Plan>());
  if (man.structure != model_structure<Plan>())
    throw checkpoint_error(where + " was saved from a model of structure " + man.structure +
                           ", this program's model has structure " + model_structure<Plan>());
  const auto whole = Plan::parameters();
  std::array<ckpt_file, 2> files;
  files[0].name = "model.safetensors";
  files[1].name = "optimizer.safetensors";
  for (ckpt_file& cf : files) {
    const std::filesystem::path path = dir / cf.name;
    const ckpt_manifest_file* mf = nullptr;
    for (const auto& x : man.files)
      if (x.name == cf.name) mf = &x;
    if (!mf) throw checkpoint_error(where + "/manifest.json does not list " + cf.name);
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    if (ec) throw checkpoint_error(where + ": " + cf.name + " is missing (" + ec.message() + ")");
    if (bytes != mf->bytes)
      throw checkpoint_error("weft::load_checkpoint: " + path.string() + " has " + std::to_string(bytes) +
                             " bytes, the manifest says " + std::to_string(mf->bytes) + " (truncated or replaced file)");
    const safetensors_file sf = safetensors_file::open(path);  // validates the header against the size
    const bool model = &cf == &files[0];
    cf.size = bytes;
    cf.head.assign(8 + static_cast<std::size_t>(sf.header_length()), '\0');
    for (const param_info& p : whole) {
      std::vector<std::string> names;
      if (model) names.push_back(export_name<M>(p.name));
      else names = {"m." + p.name, "v." + p.name};
      for (const std::string& n : names) {
        const std::vector<std::int64_t> shape =
            model ? export_shape(p) : std::vector<std::int64_t>(p.shape.begin(), p.shape.end());
        if (!sf.contains(n))
          throw checkpoint_error("weft::load_checkpoint: " + path.string() + " has no tensor '" + n +
                                 "'; it was saved for another model (this one: " + model_signature<Plan>() + ")");
        const auto& info = sf.info(n);
        if (info.shape != shape)
          throw checkpoint_error("weft::load_checkpoint: " + path.string() + ": tensor '" + n + "' has shape " +
                                 io::detail::shape_string(info.shape) + ", this model needs " +
                                 io::detail::shape_string(shape) + " (this model: " + model_signature<Plan>() + ")");
        if (info.dtype != "F32" && info.dtype != "F64")
          throw checkpoint_error("weft::load_checkpoint: " + path.string() + ": tensor '" + n + "' has dtype " +
                                 info.dtype + "; distributed checkpoints hold F32 or F64");
        ckpt_tensor t;
        t.name = n;
        t.dtype = info.dtype;
        t.shape = shape;
        t.begin = 8 + sf.header_length() + info.data_begin;
        t.end = 8 + sf.header_length() + info.data_end;
        t.transposed = model && p.export_as == export_layout::transposed && p.shape.size() == 2;
        t.rows = p.shape.empty() ? 1 : p.shape.front();
        t.cols = p.shape.empty() ? 1 : p.size / t.rows;
        t.elem = info.dtype == "F64" ? 8 : 4;
        const ckpt_manifest_tensor* mt = nullptr;
        for (const auto& x : mf->tensors)
          if (x.name == n) mt = &x;
        if (!mt || mt->shape != shape || mt->dtype != info.dtype)
          throw checkpoint_error("weft::load_checkpoint: " + path.string() + ": tensor '" + n +
                                 "' does not match the manifest (missing there, or another shape or dtype)");
        cf.tensors.push_back(std::move(t));
      }
    }
    // The step in the headers: a file of another save is refused.
    const auto st = sf.metadata().find("step");
    if (st == sf.metadata().end() || st->second != std::to_string(man.step))
      throw checkpoint_error("weft::load_checkpoint: " + path.string() + " is of step " +
                             (st == sf.metadata().end() ? std::string("?") : st->second) + " but the manifest of step " +
                             std::to_string(man.step) + " (files of different saves)");
  }
  return files;
}


// ---- writing one checkpoint directory, from every rank of `world` ----

// What a training_step holds: everything (a world of one).
template <class Plan>
ckpt_local<typename Plan::master_type> ckpt_local_of(const training_step<Plan>& st) {
  ckpt_local<typename Plan::master_type> v;
  v.infos = st.parameter_infos();
  if constexpr (Plan::mixed_precision) v.params = st.master();
  else v.params = st.params();
  v.size = st.params().size();
  v.counted.assign(v.size, 1);
  v.shard_end = v.size;
  v.m = st.adam_m();
  v.v = st.adam_v();
  return v;
}

// Collective over `world`: writes step `n`'s checkpoint files into the existing directory `dir`
// — model.safetensors, optimizer.safetensors, config.json, then manifest.json — each rank its
// own slices of `local`. Every file goes to "<name>.tmp" first; rank 0 renames them once all are
// written, fsynced and checksummed, and writes the manifest last. `cs` and `strategy` (the
// manifest's saved_under) must be the same on every rank. Failures: a checkpoint_error on every rank.
template <class Plan, communicator Comm>
void ckpt_write_files(Comm& world, const ckpt_local<typename Plan::master_type>& local, const std::filesystem::path& dir,
                      std::uint64_t n, const checkpoint_state& cs, const std::string& strategy) {
  namespace fs = std::filesystem;
  const auto files = ckpt_plan_files<Plan>(n, cs);
  const auto tmp = [&](const std::string& name) { return dir / (name + ".tmp"); };

  ckpt_kill_arm(world.rank(), n);  // the fault tests' hook (checkpoint_files.hpp); off unless set

  // 1. Rank 0: the headers, the files at their full size (no data yet), config.json.
  ckpt_agree(world, world.rank() != 0 ? std::string() : ckpt_try([&] {
    for (const auto& f : files) {
      ckpt_fd out(tmp(f.name), O_WRONLY | O_CREAT | O_TRUNC);
      if (::ftruncate(out.fd, static_cast<off_t>(f.size)) != 0)
        throw checkpoint_error("weft::save_checkpoint: cannot size " + out.path + ": " + std::strerror(errno));
      out.pwrite_all(f.head.data(), f.head.size(), 0);
    }
    write_hf_config<Plan>(tmp("config.json"));
    ckpt_kill_point(0, "headers and config.json written");
  }));

  // 2. Every rank: its slices, then fsync.
  const auto whole = Plan::parameters();
  ckpt_agree(world, ckpt_try([&] {
    for (std::size_t i = 0; i < files.size(); ++i) {
      ckpt_fd out(tmp(files[i].name), O_WRONLY);
      ckpt_write_slices(out, files[i], i == 0, local, whole, world.rank());
      out.sync();
    }
  }));

  // 3. Checksums, in parallel: tensor i by rank i mod N, the headers and config.json by rank 0.
  std::size_t count = 0;
  for (const auto& f : files) count += f.tensors.size();
  std::vector<std::int64_t> digests(count + files.size() + 1, 0);
  ckpt_agree(world, ckpt_try([&] {
    std::size_t i = 0;
    for (std::size_t fi = 0; fi < files.size(); ++fi) {
      ckpt_fd in(tmp(files[fi].name), O_RDONLY);
      for (const auto& t : files[fi].tensors) {
        if (static_cast<int>(i % static_cast<std::size_t>(world.size())) == world.rank())
          digests[i] = static_cast<std::int64_t>(ckpt_digest(in, t.begin, t.end));
        ++i;
      }
      if (world.rank() == 0)
        digests[count + fi] = static_cast<std::int64_t>(fnv1a64(files[fi].head.data(), files[fi].head.size()));
    }
    if (world.rank() == 0) {
      const std::string config = ckpt_read_small(tmp("config.json"));
      digests[count + files.size()] = static_cast<std::int64_t>(fnv1a64(config.data(), config.size()));
    }
  }));
  world.all_reduce(std::span<std::int64_t>(digests), reduce_op::sum);  // one rank gave each, the others 0

  // 4. Rank 0: the files under their names, the manifest last.
  ckpt_agree(world, world.rank() != 0 ? std::string() : ckpt_try([&] {
    ckpt_manifest m;
    m.model = model_signature<Plan>();
    m.structure = model_structure<Plan>();
    m.strategy = strategy;
    m.step = n;
    m.sampler = cs.sampler;
    m.config_digest = hex64(static_cast<std::uint64_t>(digests[count + files.size()]));
    std::size_t i = 0;
    for (std::size_t fi = 0; fi < files.size(); ++fi) {
      ckpt_manifest_file mf;
      mf.name = files[fi].name;
      mf.bytes = files[fi].size;
      mf.head_digest = hex64(static_cast<std::uint64_t>(digests[count + fi]));
      for (const auto& t : files[fi].tensors)
        mf.tensors.push_back({t.name, t.dtype, hex64(static_cast<std::uint64_t>(digests[i++])), t.shape});
      m.files.push_back(std::move(mf));
    }
    {
      ckpt_fd cfg(tmp("config.json"), O_RDONLY);
      cfg.sync();
    }
    // An older manifest goes first: it would not describe the new files.
    // (Rewriting a directory in place, as save_checkpoint(st, dir) does, is not atomic: a crash
    // from here to the manifest leaves files without one, which load_checkpoint refuses. A save
    // into a root writes a fresh temporary directory instead: checkpoint_dirs.hpp.)
    std::error_code ec;
    fs::remove(dir / "manifest.json", ec);
    ckpt_sync_dir(dir);
    ckpt_kill_point(0, "the old manifest removed");
    for (const std::string name : {"model.safetensors", "optimizer.safetensors", "config.json"}) {
      if (::rename(tmp(name).c_str(), (dir / name).c_str()) != 0)
        throw checkpoint_error("weft::save_checkpoint: cannot rename " + tmp(name).string() + ": " + std::strerror(errno));
      ckpt_kill_point(0, "a file renamed into place");
    }
    ckpt_sync_dir(dir);
    ckpt_write_small(dir, "manifest.json", ckpt_manifest_json(m));
    ckpt_kill_point(0, "the manifest written");
  }));
}

// Checks the files of `dir` against its manifest.json (sizes and checksums) and the manifest
// against what the files' headers say (model, step, data position); no manifest is an error:
// files that cannot be verified are never loaded.
inline void ckpt_verify_against_manifest(const std::filesystem::path& dir, const std::string& model,
                                         const std::string& structure, std::uint64_t step, const sampler_state& sampler) {
  std::error_code ec;
  if (!std::filesystem::exists(dir / "manifest.json", ec))
    throw checkpoint_error("weft::load_checkpoint: " + dir.string() +
                           " has no manifest.json, so its files cannot be verified (a save that did not finish, or "
                           "files not written by save_checkpoint): refusing to load it; resume from another "
                           "checkpoint, or load the weights alone with load_weights");
  const ckpt_manifest man = ckpt_parse_manifest(dir / "manifest.json");
  if (man.model != model || man.structure != structure || man.step != step || man.sampler.seed != sampler.seed ||
      man.sampler.step != sampler.step)
    throw checkpoint_error("weft::load_checkpoint: " + (dir / "manifest.json").string() + " (model " + man.model +
                           ", step " + std::to_string(man.step) + ") does not describe the files beside it (model " +
                           model + ", step " + std::to_string(step) + "; files of different saves)");
  for (const auto& mf : man.files) {
    const std::filesystem::path path = dir / mf.name;
    const auto bytes = std::filesystem::file_size(path, ec);
    if (ec || bytes != mf.bytes)
      throw checkpoint_error("weft::load_checkpoint: " + path.string() + " has " + (ec ? std::string("no") : std::to_string(bytes)) +
                             " bytes, the manifest says " + std::to_string(mf.bytes) + " (truncated or replaced file)");
    const safetensors_file sf = safetensors_file::open(path);
    const ckpt_fd in(path, O_RDONLY);
    if (hex64(ckpt_digest(in, 0, 8 + sf.header_length())) != mf.head_digest)
      throw checkpoint_error("weft::load_checkpoint: " + path.string() + ": the header's checksum does not match the manifest (corrupted file)");
    for (const auto& t : mf.tensors) {
      if (!sf.contains(t.name)) throw checkpoint_error("weft::load_checkpoint: " + path.string() + " has no tensor '" + t.name + "'");
      const auto& info = sf.info(t.name);
      const std::uint64_t at = 8 + sf.header_length();
      if (hex64(ckpt_digest(in, at + info.data_begin, at + info.data_end)) != t.digest)
        throw checkpoint_error("weft::load_checkpoint: " + path.string() + ": tensor '" + t.name +
                               "' does not match its checksum in the manifest (corrupted file)");
    }
  }
  const std::string config = ckpt_read_small(dir / "config.json");
  if (hex64(fnv1a64(config.data(), config.size())) != man.config_digest)
    throw checkpoint_error("weft::load_checkpoint: " + (dir / "config.json").string() +
                           " does not match its checksum in the manifest (corrupted file)");
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

/// Saves parameters, config, optimizer state, position and manifest.json into directory `dir`
/// (created): the code every rank of a distributed save runs (distributed_checkpoint.hpp), in a
/// world of one. Each file is written under a temporary name and renamed; the manifest is last.
template <class Plan>
void save_checkpoint(const training_step<Plan>& st, const std::filesystem::path& dir, const checkpoint_state& cs = {}) {
  static_assert(detail::ckpt_float_v<typename Plan::master_type>,
                "weft::save_checkpoint: checkpoints hold f32 or f64 weights: an f16 or bf16 plan needs f32 master weights. Use precision<float>, precision<double> or precision<bf16, f32>.");
  static_assert(Plan::optimizer_state_in_arena,
                "weft::save_checkpoint: this training_step's optimizer state is held by data_parallel_step (ZeRO >= 1). Save the distributed step (distributed_checkpoint.hpp).");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw checkpoint_error("weft::save_checkpoint: cannot create " + dir.string() + " (" + ec.message() + ")");
  single_world world;
  checkpoint_state with_scale = cs;
  with_scale.loss_scale = st.loss_scale_state().active() ? st.loss_scale_state().scale() : 0.0;
  with_scale.loss_scale_good_steps = st.loss_scale_state().good_steps();
  detail::ckpt_write_files<Plan>(world, detail::ckpt_local_of(st), dir, st.step_count(), with_scale,
                                 "{\"world\": 1, \"dp\": 1, \"tp\": 1, \"pp\": 1, \"zero\": 0, \"sequence_parallel\": false}");
}

/// Saves atomically into root/step-<n>/ and points root/latest at it: the distributed engine's
/// scheme (checkpoint_dirs.hpp) in a world of one. The files are written into a temporary
/// directory, fsynced and checksummed, and renamed into place; only then is `latest` replaced and
/// are all but the newest opt.keep_last step directories removed (0: all stay). A crash at any
/// point leaves the last good checkpoint. Returns the step directory (Hugging Face's
/// from_pretrained loads it: model.safetensors and config.json).
template <class Plan>
std::filesystem::path save_checkpoint(const training_step<Plan>& st, single_world& world, const std::filesystem::path& root,
                                      const checkpoint_state& cs = {}, const checkpoint_options& opt = {}) {
  static_assert(detail::ckpt_float_v<typename Plan::master_type>,
                "weft::save_checkpoint: checkpoints hold f32 or f64 weights: an f16 or bf16 plan needs f32 master weights. Use precision<float>, precision<double> or precision<bf16, f32>.");
  static_assert(Plan::optimizer_state_in_arena,
                "weft::save_checkpoint: this training_step's optimizer state is held by data_parallel_step (ZeRO >= 1). Save the distributed step (distributed_checkpoint.hpp).");
  checkpoint_state with_scale = cs;
  with_scale.loss_scale = st.loss_scale_state().active() ? st.loss_scale_state().scale() : 0.0;
  with_scale.loss_scale_good_steps = st.loss_scale_state().good_steps();
  const std::uint64_t n = st.step_count();
  return detail::ckpt_save_step_dir(world, root, n, opt, [&](const std::filesystem::path& tmp) {
    detail::ckpt_write_files<Plan>(world, detail::ckpt_local_of(st), tmp, n, with_scale,
                                   "{\"world\": 1, \"dp\": 1, \"tp\": 1, \"pp\": 1, \"zero\": 0, \"sequence_parallel\": false}");
  });
}

/// Restores what save_checkpoint wrote; returns the saved position for the data sampler.
/// `path` is a checkpoint directory or a root of step directories (its `latest`, else its newest
/// step directory with a manifest). Only files that manifest.json verifies load: a directory
/// without one (a save that did not finish) is refused. Checks everything (model, tensors, shapes,
/// step, sizes, checksums) before changing `st`: on error it is unchanged.
template <class Plan>
checkpoint_state load_checkpoint(training_step<Plan>& st, const std::filesystem::path& path) {
  using T = typename Plan::master_type;  // the master weights and moments (T unless mixed precision)
  static_assert(detail::ckpt_float_v<T>,
                "weft::load_checkpoint: checkpoints hold f32 or f64 weights: an f16 or bf16 plan needs f32 master weights. Use precision<float>, precision<double> or precision<bf16, f32>.");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw checkpoint_error("weft::load_checkpoint: " + path.string() + " does not exist (no checkpoint there)");
  if (!std::filesystem::is_directory(path, ec))
    throw checkpoint_error("weft::load_checkpoint: " + path.string() +
                           " is not a directory; a checkpoint is a directory written by save_checkpoint");
  const std::filesystem::path dir = detail::ckpt_resolve(path, /*plain_ok=*/true);
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
  detail::ckpt_read_loss_scale(md, cs, opt_path.string());
  // The moments: present, in weft's shapes, floating point.
  for (const param_info& p : st.parameter_infos()) {
    const std::vector<std::int64_t> shape(p.shape.begin(), p.shape.end());
    for (const std::string& name : {"m." + p.name, "v." + p.name}) {
      if (!opt.contains(name))
        throw checkpoint_error("weft::load_checkpoint: " + opt_path.string() + " has no tensor '" + name + "'");
      const auto& info = opt.info(name);
      if (info.shape != shape || !detail::st_float_dtype(info.dtype))
        throw checkpoint_error("weft::load_checkpoint: " + opt_path.string() + ": tensor '" + name + "' is " +
                               info.dtype + " " + io::detail::shape_string(info.shape) + ", this model needs " +
                               std::string(detail::st_dtype_name<T>()) + " " + io::detail::shape_string(shape));
    }
  }
  const safetensors_file model = safetensors_file::open(model_path);
  const auto ms = model.metadata().find("step");
  if (ms != model.metadata().end() && ms->second != std::to_string(step))
    throw checkpoint_error("weft::load_checkpoint: " + dir.string() + ": model.safetensors is of step " + ms->second +
                           " but optimizer.safetensors of step " + std::to_string(step) +
                           " (an interrupted save?)");
  // The manifest, required: sizes and checksums too (all checks above first, so that a file of
  // another model is reported as such).
  detail::checked_weight_names<Plan>(model);
  detail::ckpt_verify_against_manifest(dir, detail::model_signature<Plan>(), detail::model_structure<Plan>(), step,
                                       cs.sampler);
  detail::load_weights_from(st, model);  // checks all its tensors before writing any
  for (const param_info& p : st.parameter_infos()) {
    opt.read_as("m." + p.name, std::span<T>(st.adam_m().data() + p.offset, p.size));
    opt.read_as("v." + p.name, std::span<T>(st.adam_v().data() + p.offset, p.size));
  }
  st.set_step_count(static_cast<std::size_t>(step));
  if (cs.loss_scale > 0) st.restore_loss_scale(cs.loss_scale, cs.loss_scale_good_steps);
  return cs;
}

}  // namespace weft
