#pragma once
// ---- plan: the static memory plan and counts of one rank ----
// plan<Model, batch<micro<B>, seq<S>>, precision<T>?> places every buffer a training step uses
// at a byte offset fixed at compile time, in one arena:
//   parameters | gradients | AdamW first moment | second moment | kept activations |
//   logits (also their gradient, in place) | workspace | per-token losses | token ids | targets
// so a step allocates nothing, and `bytes_per_rank` is known before launch (static_assert it).
#include "weft/core/diagnostics.hpp"  // diag::at_most
#include "weft/model/layer.hpp"       // language_model, param_info, npos_param
#include "weft/parallel/batch.hpp"    // batch, micro, seq

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft {

/// Element type of parameters, gradients, optimizer state and activations.
template <class T>
struct precision {
  using type = T;
  using weft_precision_tag = void;
};

/// An upper bound on the plan's bytes per rank, checked at compile time.
template <std::size_t Bytes>
struct memory_budget {
  static constexpr std::size_t bytes = Bytes;
  using weft_budget_tag = void;
};

inline constexpr std::size_t operator""_GiB(unsigned long long n) { return static_cast<std::size_t>(n) << 30; }
inline constexpr std::size_t operator""_MiB(unsigned long long n) { return static_cast<std::size_t>(n) << 20; }

namespace detail {
template <class... Os>
struct find_precision {
  using type = float;
};
// A precision option ends the search; any other option (memory_budget, ...) is skipped. Two
// specialisations, because conditional_t would name `O::type` for options that have none.
template <class O, class... Os>
struct find_precision<O, Os...> {
  using type = typename find_precision<Os...>::type;
};
template <class O, class... Os>
  requires requires { typename O::weft_precision_tag; }
struct find_precision<O, Os...> {
  using type = typename O::type;
};
// Bytes of the first memory_budget option, else no limit. `if constexpr`, so that `Os::bytes` is
// only named for options that have it (a ?: would instantiate it for every option).
template <class O>
constexpr std::size_t budget_of() {
  if constexpr (requires { typename O::weft_budget_tag; }) return O::bytes;
  else return static_cast<std::size_t>(-1);
}
template <class... Os>
constexpr std::size_t find_budget() {
  std::size_t b = static_cast<std::size_t>(-1);
  ((b == static_cast<std::size_t>(-1) ? (b = budget_of<Os>(), 0) : 0), ...);
  return b;
}
constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
}  // namespace detail

/// One region of the arena.
struct plan_section {
  std::string_view name;
  std::size_t offset;  ///< bytes from the arena's start (64-byte aligned)
  std::size_t bytes;
  std::size_t elements;
};

/// The static plan of one rank for `Model` on micro-batches `Batch`.
template <language_model Model, class Batch, class... Options>
struct plan {
  using model = Model;
  using batch_type = Batch;
  using value_type = typename detail::find_precision<Options...>::type;
  using T = value_type;

  static constexpr std::size_t alignment = 64;
  static constexpr std::size_t B = Batch::sequences;
  static constexpr std::size_t S = Batch::length;
  static constexpr std::size_t rows = B * S;
  static constexpr std::size_t vocab_size = Model::out_width;

  // ---- validation at the user's line ----
  static constexpr bool seq_fits_context = diag::at_most<S, Model::context_length>;
  static_assert(seq_fits_context, "weft::plan: seq<S> is longer than the model's context. Use seq<S> <= context<N>, or raise context<N>.");

  // ---- element counts ----
  static constexpr std::size_t param_count = Model::param_count;
  static constexpr std::size_t kept_count = Model::template kept_count<B, S>;
  static constexpr std::size_t scratch_count = Model::template scratch_count<B, S>;
  static constexpr std::size_t logits_count = rows * vocab_size;

  // ---- the arena, section by section ----
  enum section_id : std::size_t { params, grads, adam_m, adam_v, kept, logits, scratch, losses, tokens, targets, n_sections };
  static constexpr std::array<std::string_view, n_sections> section_names{
      "parameters", "gradients", "adamw m", "adamw v", "kept activations", "logits / dlogits", "workspace",
      "losses", "token ids", "targets"};
  static constexpr std::array<std::size_t, n_sections> section_elements{
      param_count, param_count, param_count, param_count, kept_count, logits_count, scratch_count, rows, rows, rows};
  static constexpr std::array<std::size_t, n_sections> section_element_bytes{
      sizeof(T), sizeof(T), sizeof(T), sizeof(T), sizeof(T), sizeof(T), sizeof(T), sizeof(T),
      sizeof(std::int32_t), sizeof(std::int32_t)};
  static constexpr std::array<std::size_t, n_sections> offsets = [] {
    std::array<std::size_t, n_sections> o{};
    std::size_t acc = 0;
    for (std::size_t i = 0; i < n_sections; ++i) {
      o[i] = acc;
      acc = detail::align_up(acc + section_elements[i] * section_element_bytes[i], alignment);
    }
    return o;
  }();
  /// Total bytes of the arena: everything a training step touches besides code and BLAS buffers.
  static constexpr std::size_t bytes_per_rank =
      offsets[n_sections - 1] + detail::align_up(rows * sizeof(std::int32_t), alignment);

  static constexpr std::size_t budget = detail::find_budget<Options...>();
  static constexpr bool within_budget = diag::at_most<bytes_per_rank, budget>;
  static_assert(within_budget, "weft::plan: the memory plan exceeds the declared memory_budget. Reduce the micro-batch, the sequence or the model, or raise memory_budget<>.");

  static constexpr std::size_t bytes_of(section_id s) { return section_elements[s] * section_element_bytes[s]; }
  static constexpr plan_section section(section_id s) { return {section_names[s], offsets[s], bytes_of(s), section_elements[s]}; }

  /// Byte offset of a parameter (by dotted path) inside the arena; a compile-time constant.
  static constexpr std::size_t param_offset_bytes(std::string_view path) {
    const std::size_t e = Model::find_param(path);
    return e == npos_param ? npos_param : offsets[params] + e * sizeof(T);
  }

  // ---- FLOPs (PaLM's count: 6·N per token for the matmuls, 12·L·H·Q·T for attention) ----
  static constexpr std::size_t lookup_params = Model::lookup_param_count;  // embedding rows read, not multiplied
  static constexpr std::size_t flops_per_token =
      6 * (param_count - lookup_params) + 12 * Model::depth * Model::heads * (Model::width / Model::heads) * S;
  static constexpr std::size_t flops_per_step_micro = flops_per_token * rows;

  /// Every parameter with its name, offset and shape (run time: names are strings).
  static std::vector<param_info> parameters(std::size_t depth = Model::depth) {
    std::vector<param_info> v;
    Model::visit_params("", 0, init_context{depth}, [&](const param_info& p) { v.push_back(p); });
    return v;
  }

  /// Prints the per-rank table: counts, bytes per category, total.
  static void report(std::FILE* out = stdout) {
    std::fprintf(out, "weft plan: %zu parameters, micro-batch %zu x %zu tokens, %s\n", param_count, B, S,
                 sizeof(T) == 8 ? "f64" : sizeof(T) == 4 ? "f32" : "16-bit");
    std::fprintf(out, "  %-20s %14s %14s %14s\n", "section", "offset (B)", "elements", "MiB");
    for (std::size_t i = 0; i < n_sections; ++i)
      std::fprintf(out, "  %-20.*s %14zu %14zu %14.2f\n", static_cast<int>(section_names[i].size()),
                   section_names[i].data(), offsets[i], section_elements[i],
                   static_cast<double>(bytes_of(static_cast<section_id>(i))) / (1 << 20));
    std::fprintf(out, "  %-20s %14s %14s %14.2f\n", "total", "", "", static_cast<double>(bytes_per_rank) / (1 << 20));
    std::fprintf(out, "  model states (params+grads+adamw) %.2f MiB, activations+workspace %.2f MiB\n",
                 static_cast<double>(4 * param_count * sizeof(T)) / (1 << 20),
                 static_cast<double>((kept_count + logits_count + scratch_count) * sizeof(T)) / (1 << 20));
  }
};

}  // namespace weft
