#pragma once
// ---- parameters as types ----
// A layer publishes its parameters as a `param_list` of `param<Name, Shape, Role, Init>`.
// The list gives every parameter a compile-time element offset inside the layer's block,
// so a whole model's parameters live in one buffer at offsets known before launch.
// `Role` says how tensor parallelism cuts the parameter (Megatron's column/row splits,
// vocabulary-parallel embeddings, replicated norms and biases).
#include "weft/core/diagnostics.hpp"   // diag::name_unique
#include "weft/core/fixed_string.hpp"  // fixed_string
#include "weft/core/shape.hpp"         // shape, shape_like

#include <array>
#include <cmath>
#include <cstddef>
#include <string_view>

namespace weft {

// ---- tensor-parallel roles ----

/// How tensor parallelism shards a parameter.
enum class role {
  replicated,  ///< every rank holds all of it (norms, row-parallel biases, positions)
  column,      ///< split along the output axis (first axis of a (out, in) weight; its bias too)
  row,         ///< split along the input axis (second axis of a (out, in) weight)
  vocab,       ///< split along the vocabulary axis (embedding table, untied LM head)
};

constexpr std::string_view role_name(role r) {
  switch (r) {
    case role::replicated: return "replicated";
    case role::column: return "column";
    case role::row: return "row";
    case role::vocab: return "vocab";
  }
  return "?";
}

// ---- initialisers ----

/// What an initialiser may depend on besides the parameter itself.
struct init_context {
  std::size_t depth = 1;  ///< number of transformer blocks (GPT-2 scales residual projections by it)
};

namespace init {
/// All zeros (biases).
struct zeros {
  static constexpr bool random = false;
  static constexpr double constant = 0.0;
  static double stddev(const init_context&) { return 0.0; }
};
/// All ones (norm gains).
struct ones {
  static constexpr bool random = false;
  static constexpr double constant = 1.0;
  static double stddev(const init_context&) { return 0.0; }
};
/// Normal(0, PerMille/1000): GPT-2 uses 0.02.
template <int PerMille = 20>
struct normal {
  static constexpr bool random = true;
  static constexpr double constant = 0.0;
  static double stddev(const init_context&) { return PerMille / 1000.0; }
};
/// Normal(0, PerMille/1000 / sqrt(2·depth)): GPT-2's scaled init of residual projections.
template <int PerMille = 20>
struct normal_residual {
  static constexpr bool random = true;
  static constexpr double constant = 0.0;
  static double stddev(const init_context& c) {
    return PerMille / 1000.0 / std::sqrt(2.0 * static_cast<double>(c.depth));
  }
};
}  // namespace init

/// How a parameter is written to a checkpoint (Hugging Face GPT-2's Conv1D keeps (in, out)).
enum class export_layout { as_is, transposed };

/// One parameter: a name, a shape of named axes, a role, an initialiser.
/// Weight decay applies to matrices (rank >= 2) and not to norms and biases, as in nanoGPT.
template <fixed_string Name, shape_like Shape, role Role = role::replicated, class Init = init::zeros,
          export_layout Export = export_layout::as_is>
struct param {
  static constexpr auto name = Name;
  using shape_type = Shape;
  static constexpr role tp_role = Role;
  using init_type = Init;
  static constexpr export_layout export_as = Export;
  static constexpr std::size_t size = Shape::product;
  static constexpr bool decay = (Shape::rank >= 2);
  static_assert(Shape::is_static, "weft::param: a parameter's shape must be fully static. Give every axis a size.");
};

/// The parameters of one layer, at consecutive element offsets.
template <class... Ps>
struct param_list {
  static constexpr std::size_t count = sizeof...(Ps);
  /// Total number of elements.
  static constexpr std::size_t size = (std::size_t{0} + ... + Ps::size);

  static constexpr bool unique_names = [] {
    std::array<std::string_view, sizeof...(Ps)> n{Ps::name.view()...};
    for (std::size_t i = 0; i < n.size(); ++i)
      for (std::size_t j = i + 1; j < n.size(); ++j)
        if (n[i] == n[j]) return false;
    return true;
  }();
  static_assert(unique_names, "weft::param_list: two parameters of a layer share a name. Name each parameter once.");

  /// Element offsets, in declaration order.
  static constexpr std::array<std::size_t, sizeof...(Ps)> offsets = [] {
    std::array<std::size_t, sizeof...(Ps)> o{};
    std::size_t acc = 0, i = 0;
    ((o[i++] = acc, acc += Ps::size), ...);
    return o;
  }();

  template <fixed_string Name>
  static consteval std::size_t index_of() {
    constexpr bool found = diag::name_found<Name, ((Ps::name.view() == Name.view()) || ... || false)>;
    static_assert(found, "weft::param_list: the layer has no parameter of this name. Use a name the layer declares.");
    std::size_t i = 0, r = 0;
    ((Ps::name.view() == Name.view() ? (r = i, ++i) : ++i), ...);
    return r;
  }

  /// Element offset of parameter `Name` inside the layer's block.
  template <fixed_string Name>
  static constexpr std::size_t offset_of = offsets[index_of<Name>()];

  /// Offset of a parameter by run-time name; `npos` when absent (used by path look-ups).
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  static constexpr std::size_t find([[maybe_unused]] std::string_view n) {  // unused when the list is empty
    std::size_t i = 0, r = npos;
    ((Ps::name.view() == n ? (r = offsets[i], ++i) : ++i), ...);
    return r;
  }

  /// Calls f(param_type{}, offset) for each parameter.
  template <class F>
  static constexpr void for_each(F&& f) {
    std::size_t i = 0;
    (f(Ps{}, offsets[i++]), ...);
  }
};

}  // namespace weft
