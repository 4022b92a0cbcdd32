#pragma once
// ---- manifest.json: what a checkpoint directory holds, written last ----
// Model signature and structure, step, sampler position, the strategy it was saved under, and
// every file's size with an FNV-1a 64 of its header and of each tensor. Written and read with
// nlohmann-json (io/json.hpp: duplicate keys, fractions and NUL bytes are errors).
#include "weft/data/batch_sampler.hpp"     // sampler_state
#include "weft/io/checkpoint_error.hpp"    // checkpoint_error
#include "weft/io/checkpoint_files.hpp"    // ckpt_read_small
#include "weft/io/json.hpp"                // json, parse_json
#include "weft/parallel/schedule.hpp"      // tag_kind

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::detail {

// ---- the manifest ----

struct ckpt_manifest_tensor {
  std::string name, dtype, digest;
  std::vector<std::int64_t> shape;
};
struct ckpt_manifest_file {
  std::string name, head_digest;
  std::uint64_t bytes = 0;
  std::vector<ckpt_manifest_tensor> tensors;
};
struct ckpt_manifest {
  std::string model, structure, strategy, config_digest;
  std::uint64_t step = 0;
  sampler_state sampler{};
  std::vector<ckpt_manifest_file> files;
};

// The strategy a checkpoint was saved under, as JSON text (manifest "saved_under").
template <class Plan>
std::string ckpt_strategy_text(std::size_t dp, std::size_t world) {
  using S = typename Plan::strategy_type;
  constexpr const char* schedules[] = {"gpipe", "1f1b", "interleaved"};
  io::detail::json s = {{"world", world},       {"dp", dp},
                        {"tp", Plan::tp},       {"pp", Plan::pp},
                        {"zero", S::zero_stage}, {"sequence_parallel", S::sequence_parallel}};
  if constexpr (requires { Plan::ep; })
    if constexpr (Plan::ep > 1) s["ep"] = Plan::ep;
  if constexpr (Plan::pp > 1) {
    s["schedule"] = schedules[static_cast<int>(tag_kind<typename S::schedule_type>::value)];
    s["microbatches"] = S::microbatches;
    s["chunks"] = S::schedule_type::chunks;
  }
  return s.dump();
}

inline std::string ckpt_manifest_json(const ckpt_manifest& m) {
  using io::detail::json;
  json files = json::array();
  for (const auto& f : m.files) {
    json tensors = json::array();
    for (const auto& t : f.tensors)
      tensors.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"fnv1a64", t.digest}});
    files.push_back({{"name", f.name}, {"bytes", f.bytes}, {"header_fnv1a64", f.head_digest}, {"tensors", std::move(tensors)}});
  }
  const json o = {{"format", "weft-checkpoint"},
                  {"version", 1},
                  {"model", m.model},
                  {"structure", m.structure},
                  {"step", m.step},
                  {"sampler", {{"seed", m.sampler.seed}, {"step", m.sampler.step}}},
                  {"rng", nullptr},
                  {"saved_under", io::detail::parse_json(m.strategy)},
                  {"config", {{"name", "config.json"}, {"fnv1a64", m.config_digest}}},
                  {"files", std::move(files)}};
  return o.dump(2) + "\n";
}

inline ckpt_manifest ckpt_parse_manifest(const std::filesystem::path& file) {
  namespace d = io::detail;
  const std::string text = ckpt_read_small(file);
  const std::string where = "weft::load_checkpoint: " + file.string();
  d::json root;
  try {
    root = d::parse_json(text, {.max_depth = 16, .integers_only = true});
  } catch (const d::json_error& e) {
    throw checkpoint_error(where + ": invalid JSON" +
                           (e.offset == d::json_error::npos ? std::string() : " at byte " + std::to_string(e.offset)) +
                           ": " + e.what + " (truncated or corrupted manifest)");
  }
  enum class K { string, integer, object, array };
  constexpr std::string_view kind_names[] = {"a string", "a number", "an object", "an array"};
  const auto need = [&](const d::json& obj, std::string_view key, K k) -> const d::json& {
    const auto it = obj.is_object() ? obj.find(key) : obj.end();
    const bool ok = it != obj.end() && (k == K::string    ? it->is_string()
                                        : k == K::integer ? it->is_number_unsigned()
                                        : k == K::object  ? it->is_object()
                                                          : it->is_array());
    if (!ok)
      throw checkpoint_error(where + ": '" + std::string(key) + "' is missing or not " +
                             std::string(kind_names[static_cast<int>(k)]));
    return *it;
  };
  const auto str = [&](const d::json& obj, std::string_view key) { return need(obj, key, K::string).get<std::string>(); };
  const auto num = [&](const d::json& obj, std::string_view key) { return need(obj, key, K::integer).get<std::uint64_t>(); };
  if (str(root, "format") != "weft-checkpoint" || num(root, "version") != 1)
    throw checkpoint_error(where + " is not a version-1 weft checkpoint manifest");
  ckpt_manifest m;
  m.model = str(root, "model");
  m.structure = str(root, "structure");
  m.step = num(root, "step");
  const auto& sampler = need(root, "sampler", K::object);
  m.sampler.seed = num(sampler, "seed");
  m.sampler.step = num(sampler, "step");
  m.config_digest = str(need(root, "config", K::object), "fnv1a64");
  for (const auto& f : need(root, "files", K::array)) {
    ckpt_manifest_file mf;
    mf.name = str(f, "name");
    mf.bytes = num(f, "bytes");
    mf.head_digest = str(f, "header_fnv1a64");
    for (const auto& t : need(f, "tensors", K::array)) {
      ckpt_manifest_tensor mt;
      mt.name = str(t, "name");
      mt.dtype = str(t, "dtype");
      mt.digest = str(t, "fnv1a64");
      for (const auto& x : need(t, "shape", K::array)) {
        if (!x.is_number_unsigned()) throw checkpoint_error(where + ": a shape entry of '" + mt.name + "' is not a non-negative integer");
        mt.shape.push_back(static_cast<std::int64_t>(x.get<std::uint64_t>()));
      }
      mf.tensors.push_back(std::move(mt));
    }
    m.files.push_back(std::move(mf));
  }
  return m;
}

}  // namespace weft::detail
