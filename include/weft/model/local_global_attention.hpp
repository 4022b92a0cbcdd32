#pragma once
// ---- an attention core whose form depends on the block's depth (Gemma 3's local and global layers) ----
// local_global_attention<Pattern, Local, Global> is two attention cores with the same widths and
// no parameters (causal_attention<…> of two windows and rotary bases, or their flash / selective
// forms), chosen at run time by the index of the block it runs in (frame::layer, which
// repeat<N, Block, First> sets to First + i): block i runs Global when (i + 1) % Pattern == 0 and
// Local otherwise, as transformers' Gemma 3 (sliding_window_pattern; its layer_types). So the
// blocks of a model stay one type, one repeat<N, Block> — what pipelines (each stage a
// repeat<n, Block, first>, the model-wide indices), ZeRO-3's block windows, recomputation and
// tensor parallelism need — while their attention differs.
//
// Memory: it keeps and uses as workspace the larger of the two forms' needs (causal_attention's
// are the same for both: the (batch, heads, seq, seq) probabilities and the rotated q|k|v).
// Tensor parallelism and recomputation map both forms (parallel/tensor_parallel.hpp,
// parallel/recompute.hpp); the structure text names both (model/structure.hpp).
#include "weft/core/diagnostics.hpp"  // diag::at_least, diag::equal
#include "weft/model/layer.hpp"       // stateless_layer, frame

#include <algorithm>
#include <cstddef>

namespace weft {

/// Local attention in blocks i with (i + 1) % Pattern != 0, Global attention in the others
/// (every Pattern-th block, counting from 1). Pattern = 1: every block global.
template <std::size_t Pattern, class Local, class Global>
struct local_global_attention : stateless_layer {
  static constexpr bool pattern_positive = diag::at_least<Pattern, 1>;
  static_assert(pattern_positive, "weft::local_global_attention: the pattern is 0. Give a Pattern of at least 1 (Gemma 3: 6, every sixth layer global).");
  static constexpr bool same_widths = Local::in_width == Global::in_width && Local::out_width == Global::out_width;
  static_assert(same_widths, "weft::local_global_attention: the local and global forms have different widths. Give two attention cores of the same heads, kv heads and head size.");
  static constexpr bool no_params = Local::param_count == 0 && Global::param_count == 0;
  static_assert(no_params, "weft::local_global_attention: a form has parameters. Give two parameter-free attention cores (causal_attention<…>); put projections and norms around the layer.");
  using local_type = Local;
  using global_type = Global;
  static constexpr std::size_t pattern = Pattern > 0 ? Pattern : 1;
  static constexpr std::size_t in_width = Local::in_width;
  static constexpr std::size_t out_width = Local::out_width;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count =
      std::max(Local::template kept_count<B, S>, Global::template kept_count<B, S>);
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count =
      std::max(Local::template scratch_count<B, S>, Global::template scratch_count<B, S>);

  /// Whether the block with index `layer` in the model's stack runs the global form.
  static constexpr bool is_global(std::size_t layer) { return (layer + 1) % pattern == 0; }
  /// Global blocks among the first `depth`: depth / Pattern.
  static constexpr std::size_t global_layers(std::size_t depth) { return depth / pattern; }

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    if (is_global(f.layer)) Global::forward(f, in, out);
    else Local::forward(f, in, out);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    if (is_global(f.layer)) Global::backward(f, in, dout, din);
    else Local::backward(f, in, dout, din);
  }
};

}  // namespace weft
