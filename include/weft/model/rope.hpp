#pragma once
// ---- position encodings applied inside attention ----
#include "weft/core/rope_scaling.hpp"  // no_rope_scaling, llama3_rope_scaling

#include <cstddef>

namespace weft {

/// No position encoding inside attention (GPT-2 adds learned positions at the input).
struct no_rope {
  static constexpr bool enabled = false;
  static constexpr std::size_t base = 0;
  using scaling = no_rope_scaling;
  template <std::size_t D>
  static constexpr std::size_t dims = 0;
  template <std::size_t D>
  static constexpr bool fits = true;
};

/// Rotary position embedding on queries and keys, rotate-half convention (HF LLaMA, GPT-NeoX).
/// `Base` is the configs' `rope_theta`: 10000 (LLaMA 1/2, GPT-NeoX, Mistral 7B v0.1), 500000
/// (LLaMA 3), 1000000 (Qwen 2, Code Llama). `Dims` rotates only the first Dims elements of each
/// head (partial rotary: GPT-NeoX's rotary_pct, Phi's partial_rotary_factor; the angles then use
/// Dims as the exponent's denominator, as those models do); 0 rotates the whole head. `Scaling`
/// rescales the frequencies for a longer context: `llama3_rope_scaling<8>` is LLaMA 3.1's
/// (core/rope_scaling.hpp).
template <std::size_t Base = 10000, std::size_t Dims = 0, class Scaling = no_rope_scaling>
struct rotary {
  static_assert(Base >= 2, "weft::rotary: the base (rope_theta) is below 2, so the angles would not fall with "
                           "the dimension. Use the model's rope_theta: 10000 for LLaMA 2, 500000 for LLaMA 3.");
  static constexpr bool enabled = true;
  static constexpr std::size_t base = Base;
  using scaling = Scaling;
  /// The rotated elements of a head of size D.
  template <std::size_t D>
  static constexpr std::size_t dims = Dims == 0 ? D : Dims;
  /// Whether Dims fits a head of size D (even, at most D).
  template <std::size_t D>
  static constexpr bool fits = dims<D> % 2 == 0 && dims<D> <= D;
};

/// LLaMA's rotary embedding: base 10000 over the whole head.
using rope = rotary<>;

}  // namespace weft
