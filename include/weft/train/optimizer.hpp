#pragma once
// ---- AdamW settings and the learning-rate schedule ----
#include <cmath>
#include <cstddef>

namespace weft {

/// AdamW with decoupled weight decay (Loshchilov & Hutter); decay skips norms and biases.
/// Doubles, rounded once to the update's compute type (f32 for f32 and bf16 weights; an f64
/// run uses exactly these values, as torch.optim.AdamW in float64 does).
struct adamw {
  double lr = 6e-4;  ///< peak learning rate
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

/// Linear warm-up from lr/warmup to lr over `warmup` steps, then cosine decay to
/// min_ratio·lr at step `total` (constant afterwards). total == 0: constant after warm-up.
struct lr_schedule {
  std::size_t warmup = 0;
  std::size_t total = 0;
  float min_ratio = 0.1f;

  /// Learning rate of (0-based) step `step` for peak rate `peak`.
  double at(std::size_t step, double peak) const {
    if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
    if (total == 0 || total <= warmup) return peak;
    if (step >= total) return peak * min_ratio;
    const double progress = static_cast<double>(step - warmup) / static_cast<double>(total - warmup);
    const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));  // 1 -> 0
    return peak * (min_ratio + (1.0 - min_ratio) * cosine);
  }
};

}  // namespace weft
