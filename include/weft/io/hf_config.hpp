#pragma once
// ---- the fields of a Hugging Face config.json that transformers has spelt more than one way ----
// `#include <weft/io/hf_config.hpp>`. Shared by hf_model_type (io/hf_model_type.hpp) and the
// config.json checks of load_hf_weights (io/hf_llama.hpp, hf_moe_llama.hpp, hf_neox.hpp,
// hf_gemma3.hpp), so both read a file the same way.
//
// The rotary settings. transformers 5 (and 4.56 on) writes them in one nested object,
//
//   "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
//                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
//
// GPT-NeoX's rotated fraction inside it ("partial_rotary_factor": 0.25), and Gemma 3 one entry per
// layer type ({"full_attention": {…}, "sliding_attention": {…}}). Older files spell the same
// settings at the top level: rope_theta and rope_scaling ({"rope_type" or "type": …, "factor": …}),
// GPT-NeoX's rotary_emb_base and rotary_pct, Gemma 3's rope_local_base_freq (its sliding layers'
// base). hf_read_rope reads both spellings: a setting given in both must agree, and one given in
// neither is transformers' own default for the model type (LlamaConfig's rope_theta 10000,
// MixtralConfig's 1000000, …), which is what transformers builds from that file. A rope object
// with a key weft does not read, a per-layer-type rope_parameters where the model has one rotary
// setting (or a flat one where it has two), or a value that is not a number is a one-line
// checkpoint_error naming the field; the callers refuse a rope_type they cannot compute.
//
// The expert count: transformers 5's Qwen3MoeConfig writes num_local_experts (Mixtral's name),
// older files num_experts (hf_expert_count reads either; both must agree).
#include "weft/io/checkpoint_error.hpp"  // checkpoint_error
#include "weft/io/json.hpp"              // json

#include <charconv>
#include <string>
#include <vector>

namespace weft::detail {

// Decimal text of a double: a whole number as one ("1000000"), else the shortest ("1e-06", "0.25").
inline std::string hf_config_text(double v) {
  if (v == static_cast<double>(static_cast<long long>(v)) && v > -1e15 && v < 1e15)
    return std::to_string(static_cast<long long>(v));
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// One rotary setting: its value and the field it was read from ("rope_parameters.rope_theta",
/// "rope_theta", …); field is empty when the config gives none (value: transformers' default, or 0).
struct hf_rope_value {
  double value = 0;
  std::string field;
  bool found() const { return !field.empty(); }
};

/// The rotary settings of one kind of layer, as hf_read_rope finds them.
struct hf_rope {
  std::string type = "default";  // rope_type (or rope_scaling's older "type")
  std::string type_field;        // where type was read; empty: none given ("default")
  hf_rope_value theta, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings, partial_rotary_factor;
  std::string unknown;  // the first field of a rope object weft does not read ("rope_parameters.beta_fast"); empty: none
};

/// Which spellings a family uses. layer: "" for one rotary setting for every layer, else the
/// rope_parameters entry ("full_attention", "sliding_attention"); theta_keys: the top-level names
/// of the base (older files); partial_keys: the top-level names of the rotated fraction;
/// rope_scaling: whether the top-level rope_scaling applies to these layers; default_theta and
/// default_partial: transformers' defaults for the model type when no spelling gives them.
struct hf_rope_spelling {
  std::string layer;
  std::vector<std::string> theta_keys;
  std::vector<std::string> partial_keys;
  bool rope_scaling = true;
  double default_theta = 10000;
  double default_partial = 1;
};

namespace hf_rope_detail {

inline void throw_at(const std::string& where, const std::string& why) { throw checkpoint_error(where + ": " + why); }

// `got` gives a value read from `field`; it must agree with what `into` already holds from another spelling.
inline void take(hf_rope_value& into, double value, const std::string& field, const std::string& where) {
  if (into.found() && into.value != value)
    throw_at(where, field + " is " + hf_config_text(value) + " but " + into.field + " is " + hf_config_text(into.value) +
                        "; two spellings of one setting must agree");
  if (!into.found()) into = {value, field};
}

inline double number_at(const io::detail::json& v, const std::string& field, const std::string& where) {
  if (!v.is_number()) throw_at(where, "\"" + field + "\" is " + v.dump() + ", not a number");
  return v.get<double>();
}

// Reads one rope object (rope_parameters, its per-layer entry, or rope_scaling) named `name` into r.
inline void read_object(const io::detail::json& o, const std::string& name, const std::string& where, hf_rope& r) {
  if (!o.is_object()) throw_at(where, "\"" + name + "\" is " + o.dump() + ", not an object");
  for (const auto& [key, v] : o.items()) {
    const std::string field = name + "." + key;
    if (key == "rope_type" || key == "type") {
      if (!v.is_string()) throw_at(where, "\"" + field + "\" is " + v.dump() + ", not a string");
      const std::string t = v.get<std::string>();
      if (!r.type_field.empty() && r.type != t)
        throw_at(where, field + " is \"" + t + "\" but " + r.type_field + " is \"" + r.type +
                            "\"; two spellings of one setting must agree");
      if (r.type_field.empty()) r.type = t, r.type_field = field;
    } else if (key == "rope_theta") {
      take(r.theta, number_at(v, field, where), field, where);
    } else if (key == "factor") {
      take(r.factor, number_at(v, field, where), field, where);
    } else if (key == "low_freq_factor") {
      take(r.low_freq_factor, number_at(v, field, where), field, where);
    } else if (key == "high_freq_factor") {
      take(r.high_freq_factor, number_at(v, field, where), field, where);
    } else if (key == "original_max_position_embeddings") {
      take(r.original_max_position_embeddings, number_at(v, field, where), field, where);
    } else if (key == "partial_rotary_factor") {
      take(r.partial_rotary_factor, number_at(v, field, where), field, where);
    } else if (r.unknown.empty()) {
      r.unknown = field;
    }
  }
}

}  // namespace hf_rope_detail

/// The rotary settings of config.json `j` for the layers `s` names, from rope_parameters and the
/// older top-level fields (the top of the file). `where` begins every message ("weft::hf_model_type:
/// config.json"). theta and partial_rotary_factor are always set (from a field or the default);
/// the scaling factors only where a field gives them.
inline hf_rope hf_read_rope(const io::detail::json& j, const std::string& where, const hf_rope_spelling& s) {
  using namespace hf_rope_detail;
  hf_rope r;
  auto given = [&](const std::string& key) { return j.contains(key) && !j[key].is_null(); };
  if (given("rope_parameters")) {
    const auto& p = j["rope_parameters"];
    if (!p.is_object()) throw_at(where, "\"rope_parameters\" is " + p.dump() + ", not an object");
    if (s.layer.empty()) {
      read_object(p, "rope_parameters", where, r);  // a per-layer-type entry is an unknown key here
    } else {
      if (!p.contains(s.layer))
        throw_at(where, "\"rope_parameters\" has no \"" + s.layer +
                            "\" entry; this model's rotary settings differ by layer type, one rope_parameters entry "
                            "each (full_attention, sliding_attention)");
      for (const auto& [key, v] : p.items())
        if (key != "full_attention" && key != "sliding_attention" && r.unknown.empty()) r.unknown = "rope_parameters." + key;
      read_object(p[s.layer], "rope_parameters." + s.layer, where, r);
    }
  }
  for (const std::string& key : s.theta_keys)
    if (given(key)) take(r.theta, number_at(j[key], key, where), key, where);
  for (const std::string& key : s.partial_keys)
    if (given(key)) take(r.partial_rotary_factor, number_at(j[key], key, where), key, where);
  if (s.rope_scaling && given("rope_scaling")) read_object(j["rope_scaling"], "rope_scaling", where, r);
  if (!r.theta.found()) r.theta.value = s.default_theta;
  if (!r.partial_rotary_factor.found()) r.partial_rotary_factor.value = s.default_partial;
  return r;
}

/// transformers' spellings and defaults for the rotary settings of `model_type` (llama, mistral,
/// qwen2, qwen3, mixtral, qwen3_moe, gpt_neox; gemma3_text's two: hf_gemma3_rope_spelling).
inline hf_rope_spelling hf_rope_spelling_of(const std::string& model_type) {
  if (model_type == "gpt_neox") return {"", {"rotary_emb_base", "rope_theta"}, {"rotary_pct"}, true, 10000, 0.25};
  return {"", {"rope_theta"}, {"partial_rotary_factor"}, true, model_type == "mixtral" ? 1000000.0 : 10000.0, 1};
}

/// Gemma 3's: its global layers' (full_attention: rope_theta, rope_scaling, default 1000000) or its
/// sliding layers' (sliding_attention: rope_local_base_freq, never scaled, default 10000).
inline hf_rope_spelling hf_gemma3_rope_spelling(bool global) {
  if (global) return {"full_attention", {"rope_theta"}, {}, true, 1000000, 1};
  return {"sliding_attention", {"rope_local_base_freq"}, {}, false, 10000, 1};
}

/// The field of a rope_type: where it was read, or (none given) "rope_parameters.rope_type".
inline std::string hf_rope_type_field(const hf_rope& r) {
  return r.type_field.empty() ? std::string("rope_parameters.rope_type") : r.type_field;
}

/// The expert count of a mixtral or qwen3_moe config: num_local_experts (transformers 5, and
/// Mixtral's always) or, for qwen3_moe, num_experts (its name before transformers 5), as a number
/// (-1: none given); `field` receives the name it was read from.
inline double hf_expert_count(const io::detail::json& j, const std::string& where, bool qwen, std::string* field = nullptr) {
  hf_rope_value n;
  for (const std::string key : {"num_local_experts", "num_experts"})
    if ((qwen || key == "num_local_experts") && j.contains(key) && !j[key].is_null())
      hf_rope_detail::take(n, hf_rope_detail::number_at(j[key], key, where), key, where);
  if (field != nullptr) *field = n.field;
  return n.found() ? n.value : -1;
}

}  // namespace weft::detail
