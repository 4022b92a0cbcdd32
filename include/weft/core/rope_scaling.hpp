#pragma once
// ---- how a rotary embedding's frequencies are rescaled for a longer context ----
// A scaling is a type with `enabled` and `apply(inv_freq)`, the new inverse frequency of a
// rotated pair from its unscaled one (Base^(-2i/R)); the host table and the CUDA kernel call the
// same function, in double (a plain constexpr function, which device code may call under nvcc's
// --expt-relaxed-constexpr, set by weft::cuda). Used as the third argument of rotary<Base, Dims,
// Scaling> and by ops::rope_forward/backward.
#include <cstddef>

namespace weft {

/// The frequencies as they are.
struct no_rope_scaling {
  static constexpr bool enabled = false;
  template <class F>
  static constexpr F apply(F inv_freq) {
    return inv_freq;
  }
};

/// LLaMA 3.1's frequency-dependent scaling (Hugging Face's rope_type "llama3"): pairs whose
/// wavelength 2π/inv_freq is shorter than OriginalContext / HighFreqFactor keep their frequency,
/// those longer than OriginalContext / LowFreqFactor turn Factor times slower, and the band
/// between blends the two by (OriginalContext / wavelength - LowFreqFactor) / (HighFreqFactor -
/// LowFreqFactor). LLaMA 3.1: llama3_rope_scaling<8> (low 1, high 4, original context 8192);
/// LLaMA 3.2: llama3_rope_scaling<32>.
template <std::size_t Factor, std::size_t LowFreqFactor = 1, std::size_t HighFreqFactor = 4,
          std::size_t OriginalContext = 8192>
struct llama3_rope_scaling {
  static constexpr bool factors_valid =
      Factor >= 1 && LowFreqFactor >= 1 && HighFreqFactor > LowFreqFactor && OriginalContext >= 1;
  static_assert(factors_valid, "weft::llama3_rope_scaling: the factors are out of range. Give Factor >= 1, "
                               "1 <= LowFreqFactor < HighFreqFactor and OriginalContext >= 1 (LLaMA 3.1: "
                               "llama3_rope_scaling<8, 1, 4, 8192>).");
  static constexpr bool enabled = true;
  static constexpr std::size_t factor = Factor, low_freq_factor = LowFreqFactor, high_freq_factor = HighFreqFactor,
                               original_context = OriginalContext;

  template <class F>
  static constexpr F apply(F inv_freq) {
    const F wavelength = F(6.283185307179586) / inv_freq;
    const F context = F(OriginalContext);
    if (wavelength < context / F(HighFreqFactor)) return inv_freq;             // high frequencies: kept
    if (wavelength > context / F(LowFreqFactor)) return inv_freq / F(Factor);  // low frequencies: slowed
    const F smooth = (context / wavelength - F(LowFreqFactor)) / F(HighFreqFactor - LowFreqFactor);
    return (F(1) - smooth) * inv_freq / F(Factor) + smooth * inv_freq;
  }
};

/// Linear position interpolation (Hugging Face's rope_type "linear"): every pair turns Factor
/// times slower, positions / Factor ≡ inv_freq / Factor. Gemma 3 4B, 12B and 27B:
/// linear_rope_scaling<8> on their global layers.
template <std::size_t Factor>
struct linear_rope_scaling {
  static constexpr bool factor_valid = Factor >= 1;
  static_assert(factor_valid, "weft::linear_rope_scaling: the factor is 0. Give the configs' rope_scaling factor, at least 1 (Gemma 3 4B and up: linear_rope_scaling<8>).");
  static constexpr bool enabled = true;
  static constexpr std::size_t factor = Factor, linear_factor = Factor;

  template <class F>
  static constexpr F apply(F inv_freq) {
    return inv_freq / F(Factor > 0 ? Factor : 1);
  }
};

}  // namespace weft
