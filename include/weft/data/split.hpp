#pragma once
// ---- split: train and validation as two contiguous ranges ----
// The validation range is the *last* fraction of the tokens, as in nanoGPT's prepare
// scripts; contiguous ranges keep a document from leaking across the boundary except at
// the one cut. Windows sampled from one range never read tokens of the other.
#include "weft/data/token_view.hpp"  // token_view

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace weft {

/// The two halves returned by `split`.
struct token_split {
  token_view train;       ///< the first (1 - val_fraction) of the tokens
  token_view validation;  ///< the last floor(size * val_fraction) tokens
};

/// Splits `all` into train and validation; `val_fraction` in [0, 1).
/// Throws std::invalid_argument for a fraction outside [0, 1).
inline token_split split(token_view all, double val_fraction) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))  // also rejects NaN
    throw std::invalid_argument("weft::split: val_fraction " + std::to_string(val_fraction) +
                                " is outside [0, 1). Pass e.g. 0.1 to keep the last 10% for validation.");
  const std::size_t n = all.size();
  std::size_t val = static_cast<std::size_t>(std::floor(static_cast<double>(n) * val_fraction));
  if (val > n) val = n;
  return {all.subview(0, n - val), all.subview(n - val, val)};
}

}  // namespace weft
